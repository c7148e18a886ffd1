// session.sqlite's record tables row by row: the columns to select from each for the file's
// schema version, and one row's record, checked. Shared by LoadSession (every row of a table at
// once) and StoredWindows (the rows of one window). Each decoder reads its columns from `first`
// on, in the order its Columns function lists them.
#pragma once

#include <string>
#include <vector>

#include "coordinator/report/sqlite_db.h"
#include "core/records.h"
#include "core/status.h"
#include "model/gpu/gpu_stats.h"

namespace rankscope::store_rows {

// "session database PATH is corrupt: WHAT".
Status Corrupt(const std::string& path, const std::string& what);

// Whether the database has `table` / `table`.`column`: what a schema version gained after files
// of it were written.
bool HasTable(const sqlite::Connection& db, const char* table);
bool HasColumn(const sqlite::Connection& db, const char* table, const char* column);

std::string CollectiveColumns(int version);
Result<CollectiveRecord> CollectiveRow(const sqlite::Statement& q, int first,
                                       const std::string& path);

std::string P2PColumns(const sqlite::Connection& db);
Result<P2PRecord> P2PRow(const sqlite::Statement& q, int first, const std::string& path);

std::string MpiCallColumns();
Result<MpiCallRecord> MpiCallRow(const sqlite::Statement& q, int first, const std::string& path);

std::string RangeColumns();
RangeRecord RangeRow(const sqlite::Statement& q, int first);

// gpu_names, read once: a gpu_activity row's name_id indexes it.
Result<std::vector<std::string>> GpuNames(const sqlite::Connection& db);
std::string GpuColumns();
Result<GpuActivityRecord> GpuRow(const sqlite::Statement& q, int first, const std::string& path,
                                 const std::vector<std::string>& names);
// Table gpu_stats's columns from window_start_ns on, and a row read from column `first`.
std::string GpuStatsColumns();
Result<GpuStats> GpuStatsRow(const sqlite::Statement& q, int first, const std::string& path,
                             const std::vector<std::string>& names);

}  // namespace rankscope::store_rows
