#include "coordinator/report/session_store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <concepts>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "coordinator/attempts.h"
#include "coordinator/nccl_instances.h"
#include "coordinator/report/gpu_json.h"
#include "coordinator/report/live_findings_json.h"
#include "coordinator/report/report_json.h"
#include "coordinator/report/sqlite_db.h"
#include "coordinator/report/store_rows.h"
#include "core/records.h"
#include "core/version.h"

namespace rankscope {

namespace {

using nlohmann::json;

using sqlite::Connection;
using sqlite::Statement;

// ---- Layout --------------------------------------------------------------------------------

// No indexes: offline readers scan by rank, and rows are written in rank order already.
constexpr char kSchema[] = R"sql(
CREATE TABLE meta (key TEXT PRIMARY KEY, value);
CREATE TABLE ranks (
  idx INTEGER PRIMARY KEY, rank INTEGER, local_rank INTEGER, world_size INTEGER, node TEXT,
  host TEXT, launcher TEXT, job_id TEXT, agent_pid INTEGER, program_pid INTEGER,
  restart_count INTEGER, program TEXT, clock_ref_local INTEGER, clock_offset_ns INTEGER,
  clock_drift_ppm REAL, clock_uncertainty_ns INTEGER, clock_samples_used INTEGER,
  clock_samples_total INTEGER, clock_fitted INTEGER, clock_error TEXT, notices TEXT,
  dropped_records INTEGER, exit_code INTEGER, term_signal INTEGER, finished INTEGER,
  exit_unseen INTEGER, exit_time INTEGER);
CREATE TABLE clock_samples (rank_idx INTEGER, t1 INTEGER, t2 INTEGER, t3 INTEGER, t4 INTEGER);
CREATE TABLE collectives (
  rank_idx INTEGER, comm_id INTEGER, seq INTEGER, op INTEGER, op_name TEXT, nonblocking INTEGER,
  root INTEGER, comm_size INTEGER, comm_rank INTEGER, bytes INTEGER, enter_ns INTEGER,
  exit_ns INTEGER, tid INTEGER, source INTEGER, launched_ns INTEGER);
CREATE TABLE p2p (
  rank_idx INTEGER, kind INTEGER, completed INTEGER, peer INTEGER, tag INTEGER, comm_id INTEGER,
  bytes INTEGER, enter_ns INTEGER, exit_ns INTEGER, tid INTEGER, world_peer INTEGER,
  spin_start_ns INTEGER);
CREATE TABLE mpi_calls (
  rank_idx INTEGER, call INTEGER, call_name TEXT, comm_id INTEGER, peer INTEGER, bytes INTEGER,
  enter_ns INTEGER, exit_ns INTEGER, tid INTEGER);
CREATE TABLE ranges (
  rank_idx INTEGER, domain TEXT, name TEXT, start_ns INTEGER, end_ns INTEGER, tid INTEGER,
  depth INTEGER);
CREATE TABLE marks (rank_idx INTEGER, domain TEXT, name TEXT, time_ns INTEGER, tid INTEGER);
CREATE TABLE findings (idx INTEGER PRIMARY KEY, kind TEXT, severity TEXT, finding TEXT);
CREATE TABLE rank_gpu (rank_idx INTEGER, nccl TEXT, topology_source TEXT, topology_xml TEXT,
                       nvml TEXT, nvml_error TEXT);
CREATE TABLE gpu_names (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE rank_proc (
  rank_idx INTEGER, rchar INTEGER, wchar INTEGER, read_bytes INTEGER, write_bytes INTEGER,
  cpu_user_ns INTEGER, cpu_system_ns INTEGER, blkio_delay_ns INTEGER, processes INTEGER,
  samples INTEGER, io_unreadable INTEGER, sched_cpu_ns INTEGER, run_delay_ns INTEGER,
  voluntary_switches INTEGER, involuntary_switches INTEGER, threads INTEGER,
  sched_unreadable INTEGER, sampled_wall_ns INTEGER, cgroup_version INTEGER, cgroup_path TEXT,
  cgroup_limit_path TEXT, cgroup_quota_us INTEGER, cgroup_period_us INTEGER,
  cgroup_nr_periods INTEGER, cgroup_nr_throttled INTEGER, cgroup_throttled_ns INTEGER,
  cgroup_counters_unreadable INTEGER);
CREATE TABLE rank_main_thread (
  rank_idx INTEGER, samples INTEGER, running INTEGER, stopped INTEGER, blocked_in TEXT);
CREATE TABLE gpu_activity (
  rank_idx INTEGER, kind INTEGER, device INTEGER, context INTEGER, stream INTEGER,
  correlation_id INTEGER, start_ns INTEGER, end_ns INTEGER, bytes INTEGER, copy_kind INTEGER,
  sync_kind INTEGER, tid INTEGER, grid_x INTEGER, grid_y INTEGER, grid_z INTEGER,
  block_x INTEGER, block_y INTEGER, block_z INTEGER, name_id INTEGER);
CREATE TABLE gpu_stats (
  rank_idx INTEGER, window_start_ns INTEGER, window_ns INTEGER, kind INTEGER, device INTEGER,
  stream INTEGER, sub_kind INTEGER, name_id INTEGER, count INTEGER, total_ns INTEGER,
  min_ns INTEGER, p50_ns INTEGER, max_ns INTEGER, bytes INTEGER);
CREATE TABLE kernel_pieces (
  rank_idx INTEGER, from_ns INTEGER, to_ns INTEGER, name_id INTEGER, time_ns INTEGER);
CREATE TABLE nccl_compute (rank_idx INTEGER, from_ns INTEGER, to_ns INTEGER);
CREATE TABLE rank_gpu_summary (
  rank_idx INTEGER, compute_kernels_summed INTEGER, nccl_compute_late INTEGER);
CREATE TABLE rank_tool (
  rank_idx INTEGER, tool TEXT, path TEXT, host TEXT, csv TEXT, error TEXT, same_run INTEGER);
CREATE TABLE launch_latency (
  rank_idx INTEGER, row INTEGER, window_start_ns INTEGER, window_ns INTEGER, bucket INTEGER,
  count INTEGER, sum_ns INTEGER);
)sql";

std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

Status WriteMeta(const Connection& db, const Session& s) {
  Statement insert(db, "INSERT INTO meta (key, value) VALUES (?, ?)");
  auto put = [&](const char* key, const std::string& value) {
    return insert.Text(key).Text(value).Run();
  };
  RETURN_IF_ERROR(put("schema_version", std::to_string(kSessionStoreSchemaVersion)));
  RETURN_IF_ERROR(put("created_by", std::string("rankscope ") + kRankscopeVersion));
  RETURN_IF_ERROR(put("session_id", s.session_id));
  RETURN_IF_ERROR(put("job_id", s.job_id));
  RETURN_IF_ERROR(put("launcher", s.launcher));
  RETURN_IF_ERROR(put("command", Dump(s.command)));
  RETURN_IF_ERROR(put("world_size", std::to_string(s.world_size)));
  RETURN_IF_ERROR(put("start_ns", std::to_string(s.start)));
  RETURN_IF_ERROR(put("end_ns", std::to_string(s.end)));
  if (s.launcher_exit_code.has_value()) {
    RETURN_IF_ERROR(put("launcher_exit_code", std::to_string(*s.launcher_exit_code)));
  } else {
    RETURN_IF_ERROR(insert.Text("launcher_exit_code").Null().Run());
  }
  RETURN_IF_ERROR(put("partial", s.partial ? "1" : "0"));
  RETURN_IF_ERROR(put("partial_reasons", Dump(s.partial_reasons)));
  RETURN_IF_ERROR(put("analysis_notes", Dump(s.analysis_notes)));
  if (!s.live_findings.empty()) {
    RETURN_IF_ERROR(put("live_findings", Dump(LiveFindingsJson(s.live_findings))));
  }
  if (!s.live_stalls.empty()) {
    RETURN_IF_ERROR(put("live_stalls", Dump(StallFindingsJson(s.live_stalls))));
  }
  return put("aligned", s.aligned ? "1" : "0");
}

// The inserts of a rank's MPI records and ranges (tables collectives, p2p, mpi_calls, ranges):
// what a session database holds of a rank that grows with the run, written by SaveSession and
// appended batch by batch by RecordSpill.
class RecordInserts {
 public:
  explicit RecordInserts(const Connection& db)
      : collective_(db,
                    "INSERT INTO collectives VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
        p2p_(db, "INSERT INTO p2p VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
        mpi_call_(db, "INSERT INTO mpi_calls VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"),
        range_(db, "INSERT INTO ranges VALUES (?, ?, ?, ?, ?, ?, ?)") {}

  Status status() const {
    for (const Statement* st : {&collective_, &p2p_, &mpi_call_, &range_}) {
      RETURN_IF_ERROR(st->status());
    }
    return Status::Ok();
  }

  // Rank `idx`'s records of `r`, in their order.
  Status Write(int64_t idx, const RankData& r) {
    for (const CollectiveRecord& x : r.collectives) {
      collective_.Int(idx).Int(x.comm_id).Int(x.seq).Int(static_cast<int>(x.op));
      collective_.Text(std::string(CollectiveOpName(x.op))).Int(x.nonblocking ? 1 : 0);
      collective_.Int(x.root).Int(x.comm_size).Int(x.comm_rank).Int(x.bytes).Int(x.enter);
      collective_.Int(x.exit).Int(x.tid).Int(static_cast<int>(x.source));
      RETURN_IF_ERROR(collective_.Int(x.launched).Run());
    }
    for (const P2PRecord& x : r.p2p) {
      p2p_.Int(idx).Int(static_cast<int>(x.kind)).Int(static_cast<int>(x.completed)).Int(x.peer);
      p2p_.Int(x.tag).Int(x.comm_id).Int(x.bytes).Int(x.enter).Int(x.exit).Int(x.tid);
      RETURN_IF_ERROR(p2p_.Int(x.world_peer).Int(x.spin_start).Run());
    }
    for (const MpiCallRecord& x : r.mpi_calls) {
      mpi_call_.Int(idx).Int(static_cast<int>(x.call)).Text(std::string(MpiCallName(x.call)));
      mpi_call_.Int(x.comm_id).Int(x.peer).Int(x.bytes).Int(x.enter).Int(x.exit);
      RETURN_IF_ERROR(mpi_call_.Int(x.tid).Run());
    }
    for (const RangeRecord& x : r.ranges) {
      range_.Int(idx).Text(x.domain).Text(x.name).Int(x.start).Int(x.end).Int(x.tid);
      RETURN_IF_ERROR(range_.Int(x.depth).Run());
    }
    return Status::Ok();
  }

 private:
  Statement collective_;
  Statement p2p_;
  Statement mpi_call_;
  Statement range_;
};

Status WriteRanks(const Connection& db, const Session& s, bool mpi_records) {
  Statement rank_row(db,
                     "INSERT INTO ranks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                     "?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  Statement sample(db, "INSERT INTO clock_samples VALUES (?, ?, ?, ?, ?)");
  RecordInserts records(db);
  Statement mark(db, "INSERT INTO marks VALUES (?, ?, ?, ?, ?)");
  Statement gpu(db, "INSERT INTO rank_gpu VALUES (?, ?, ?, ?, ?, ?)");
  Statement activity(db,
                     "INSERT INTO gpu_activity VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                     "?, ?, ?, ?, ?)");
  Statement name_row(db, "INSERT INTO gpu_names VALUES (?, ?)");
  Statement stats(db, "INSERT INTO gpu_stats VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  Statement latency(db, "INSERT INTO launch_latency VALUES (?, ?, ?, ?, ?, ?, ?)");
  Statement piece(db, "INSERT INTO kernel_pieces VALUES (?, ?, ?, ?, ?)");
  Statement compute_span(db, "INSERT INTO nccl_compute VALUES (?, ?, ?)");
  Statement gpu_summary(db, "INSERT INTO rank_gpu_summary VALUES (?, ?, ?)");
  Statement proc(db,
                 "INSERT INTO rank_proc VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                 "?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  Statement main_thread(db, "INSERT INTO rank_main_thread VALUES (?, ?, ?, ?, ?)");
  Statement tool(db, "INSERT INTO rank_tool VALUES (?, ?, ?, ?, ?, ?, ?)");
  for (const Statement* st :
       {&rank_row, &sample, &mark, &gpu, &activity, &name_row, &stats, &latency, &piece,
        &compute_span, &gpu_summary, &proc, &main_thread, &tool}) {
    RETURN_IF_ERROR(st->status());
  }
  RETURN_IF_ERROR(records.status());

  // Kernel and API names repeat millions of times: stored once each, by id.
  std::unordered_map<std::string_view, int64_t> name_ids;
  // Earlier torchrun attempts are stored like the last one (their restart count tells them apart).
  std::vector<const RankData*> all;
  for (const RankData& r : s.ranks) all.push_back(&r);
  for (const RankData& r : s.earlier_attempts) all.push_back(&r);
  for (size_t idx = 0; idx < all.size(); ++idx) {
    const RankData& r = *all[idx];
    const ClockModel& c = r.clock;
    rank_row.Int(idx).Int(r.id.rank).Int(r.id.local_rank).Int(r.id.world_size).Text(r.id.node);
    rank_row.Text(r.id.host).Text(r.id.launcher).Text(r.id.job_id).Int(r.id.agent_pid);
    rank_row.Int(r.id.program_pid).Int(r.id.restart_count).Text(Dump(r.id.program));
    rank_row.Int(c.ref_local).Int(c.offset_ns).Real(c.drift_ppm).Int(c.uncertainty_ns);
    rank_row.Int(c.samples_used).Int(c.samples_total).Int(r.clock_fitted ? 1 : 0);
    rank_row.Text(r.clock_error).Text(Dump(r.notices)).Int(r.dropped_records);
    rank_row.OptionalInt(r.exit_code).Int(r.term_signal).Int(r.finished ? 1 : 0);
    rank_row.Int(r.exit_unseen ? 1 : 0).Int(r.exit_time);
    RETURN_IF_ERROR(rank_row.Run());

    for (const ClockSample& x : r.clock_samples) {
      RETURN_IF_ERROR(sample.Int(idx).Int(x.t1).Int(x.t2).Int(x.t3).Int(x.t4).Run());
    }
    if (mpi_records) RETURN_IF_ERROR(records.Write(static_cast<int64_t>(idx), r));
    for (const MarkRecord& x : r.marks) {
      RETURN_IF_ERROR(mark.Int(idx).Text(x.domain).Text(x.name).Int(x.time).Int(x.tid).Run());
    }
    for (const GpuActivityRecord& x : r.gpu) {
      auto [it, inserted] = name_ids.try_emplace(x.name, static_cast<int64_t>(name_ids.size()));
      if (inserted) RETURN_IF_ERROR(name_row.Int(it->second).Text(x.name).Run());
      activity.Int(idx).Int(static_cast<int>(x.kind)).Int(x.device).Int(x.context).Int(x.stream);
      activity.Int(x.correlation_id).Int(x.start).Int(x.end).Int(x.bytes).Int(x.copy_kind);
      activity.Int(x.sync_kind).Int(x.tid).Int(x.grid[0]).Int(x.grid[1]).Int(x.grid[2]);
      activity.Int(x.block[0]).Int(x.block[1]).Int(x.block[2]);
      RETURN_IF_ERROR(activity.Int(it->second).Run());
    }
    for (const GpuStats& x : r.gpu_stats) {
      auto [it, inserted] = name_ids.try_emplace(x.key.name, static_cast<int64_t>(name_ids.size()));
      if (inserted) RETURN_IF_ERROR(name_row.Int(it->second).Text(x.key.name).Run());
      stats.Int(idx).Int(x.window_start).Int(x.window).Int(static_cast<int>(x.key.kind));
      stats.Int(x.key.device).Int(x.key.stream).Int(x.key.sub_kind).Int(it->second);
      stats.Int(x.count).Int(x.total).Int(x.min).Int(x.p50).Int(x.max);
      RETURN_IF_ERROR(stats.Int(x.bytes).Run());
    }
    // Only exact pieces are kept: a file's pieces are always ones the analyses may read.
    for (const KernelPiece& x : r.kernel_pieces) {
      if (r.kernel_pieces_late > 0) break;
      auto [it, inserted] = name_ids.try_emplace(x.name, static_cast<int64_t>(name_ids.size()));
      if (inserted) RETURN_IF_ERROR(name_row.Int(it->second).Text(x.name).Run());
      RETURN_IF_ERROR(piece.Int(idx).Int(x.from).Int(x.to).Int(it->second).Int(x.time).Run());
    }
    for (const auto& [from, to] : r.nccl_compute) {
      RETURN_IF_ERROR(compute_span.Int(idx).Int(from).Int(to).Run());
    }
    if (r.compute_kernels_summed || r.nccl_compute_late > 0) {
      gpu_summary.Int(idx).Int(r.compute_kernels_summed ? 1 : 0);
      RETURN_IF_ERROR(gpu_summary.Int(static_cast<int64_t>(r.nccl_compute_late)).Run());
    }
    // A row per bucket; `row` keeps a window's late rows apart from its first.
    for (size_t row = 0; row < r.launch_latency.size(); ++row) {
      const LaunchLatency& x = r.launch_latency[row];
      for (const LatencyBucketCount& b : x.buckets) {
        latency.Int(idx).Int(static_cast<int64_t>(row)).Int(x.window_start).Int(x.window);
        RETURN_IF_ERROR(latency.Int(b.bucket).Int(b.count).Int(b.sum).Run());
      }
    }
    if (const std::optional<ToolRun>& t = r.tool_run) {
      tool.Int(idx).Text(t->tool).Text(t->path).Text(t->host).Text(t->csv);
      RETURN_IF_ERROR(tool.Text(t->error).Int(t->same_run ? 1 : 0).Run());
    }
    if (r.nccl || !r.topology_xml.empty() || r.nvml || !r.nvml_error.empty()) {
      gpu.Int(idx);
      if (r.nccl) {
        gpu.Text(Dump(RankNcclToJson(*r.nccl)));
      } else {
        gpu.Null();
      }
      gpu.Text(r.topology_source).Text(r.topology_xml);
      if (r.nvml) {
        gpu.Text(Dump(NvmlToJson(*r.nvml)));
      } else {
        gpu.Null();
      }
      RETURN_IF_ERROR(gpu.Text(r.nvml_error).Run());
    }
    if (r.proc) {
      const ProcessTreeStats& x = *r.proc;
      proc.Int(idx).Int(static_cast<int64_t>(x.rchar)).Int(static_cast<int64_t>(x.wchar));
      proc.Int(static_cast<int64_t>(x.read_bytes)).Int(static_cast<int64_t>(x.write_bytes));
      proc.Int(x.cpu_user_ns).Int(x.cpu_system_ns).Int(x.blkio_delay_ns).Int(x.processes);
      proc.Int(x.samples).Int(x.io_unreadable ? 1 : 0);
      proc.Int(x.sched_cpu_ns).Int(x.run_delay_ns);
      proc.Int(static_cast<int64_t>(x.voluntary_switches));
      proc.Int(static_cast<int64_t>(x.involuntary_switches)).Int(x.threads);
      proc.Int(x.sched_unreadable ? 1 : 0).Int(x.sampled_wall_ns);
      if (x.cpu_cgroup) {
        const CpuCgroupStats& cg = *x.cpu_cgroup;
        proc.Int(cg.version).Text(cg.path).Text(cg.limit_path).Int(cg.quota_us).Int(cg.period_us);
        proc.Int(static_cast<int64_t>(cg.nr_periods)).Int(static_cast<int64_t>(cg.nr_throttled));
        proc.Int(cg.throttled_ns).Int(cg.counters_unreadable ? 1 : 0);
      } else {
        for (int i = 0; i < 9; ++i) proc.Null();
      }
      RETURN_IF_ERROR(proc.Run());
      const MainThreadStates& m = x.main_thread;
      if (m.samples > 0) {
        main_thread.Int(idx).Int(m.samples).Int(m.running).Int(m.stopped);
        RETURN_IF_ERROR(
            main_thread
                .Text(json(m.blocked_in).dump(-1, ' ', false, json::error_handler_t::replace))
                .Run());
      }
    }
  }
  return Status::Ok();
}

Status WriteFindings(const Connection& db, const std::vector<Finding>& findings) {
  Statement insert(db, "INSERT INTO findings VALUES (?, ?, ?, ?)");
  for (size_t i = 0; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    insert.Int(i)
        .Text(std::string(f.KindName()))
        .Text(SeverityName(f.severity))
        .Text(Dump(FindingToJson(f)));
    RETURN_IF_ERROR(insert.Run());
  }
  return insert.status();
}

// The MPI records and ranges of `from` (a session database of this schema version) into `db`,
// each row to the rank of the same rank and restart count among `s`'s, in the source's order.
Status CopyRecords(Connection& db, const Session& s, const std::string& from) {
  Statement attach(db, "ATTACH DATABASE ? AS src");
  attach.Text(from);
  RETURN_IF_ERROR(attach.Run());
  {
    // The record tables are the same since version 6 (7 added GPU summary tables only).
    Statement version(db, "SELECT value FROM src.meta WHERE key = 'schema_version'");
    const std::string v = version.Next() ? version.ColumnText(0) : "";
    if (v != "6" && v != std::to_string(kSessionStoreSchemaVersion)) {
      return Status::Error(from + " is not a session database of schema version 6 to " +
                           std::to_string(kSessionStoreSchemaVersion));
    }
  }
  bool from_aligned = true;
  {
    Statement aligned(db, "SELECT value FROM src.meta WHERE key = 'aligned'");
    if (!aligned.Next()) return Status::Error(from + " has no meta 'aligned'");
    from_aligned = aligned.ColumnText(0) == "1";
  }
  // Records in the ranks' clocks into an aligned session: each time moved as AlignSession
  // moves it, by the rank's model (indexed by the new ranks.idx), in the copy itself.
  std::vector<ClockModel> models;
  for (const RankData& r : s.ranks) models.push_back(r.clock);
  for (const RankData& r : s.earlier_attempts) models.push_back(r.clock);
  const bool align = !from_aligned && s.aligned;
  if (align) {
    auto to_coordinator = [](sqlite3_context* ctx, int, sqlite3_value** args) {
      const auto* of = static_cast<const std::vector<ClockModel>*>(sqlite3_user_data(ctx));
      if (sqlite3_value_type(args[1]) == SQLITE_NULL) return sqlite3_result_null(ctx);
      const int64_t idx = sqlite3_value_int64(args[0]);
      const TimeNs t = sqlite3_value_int64(args[1]);
      if (idx < 0 || idx >= static_cast<int64_t>(of->size())) return sqlite3_result_int64(ctx, t);
      sqlite3_result_int64(ctx, (*of)[static_cast<size_t>(idx)].ToCoordinator(t));
    };
    // SQLite owns its copy of the models and frees it with the connection.
    auto* owned = new std::vector<ClockModel>(models);
    if (sqlite3_create_function_v2(
            db.get(), "rs_to_coordinator", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, owned,
            to_coordinator, nullptr, nullptr,
            [](void* p) { delete static_cast<std::vector<ClockModel>*>(p); }) != SQLITE_OK) {
      return Status::Error(std::string("cannot align the copied records: ") +
                           sqlite3_errmsg(db.get()));
    }
  }
  // The time columns, and whether 0 there means "not recorded" (kept as 0, as ToCoordinator does).
  const std::map<std::string, bool> times = {{"enter_ns", false},   {"exit_ns", false},
                                             {"start_ns", false},   {"end_ns", false},
                                             {"launched_ns", true}, {"spin_start_ns", true}};
  RETURN_IF_ERROR(db.Exec("CREATE TEMP TABLE idx_map (old INTEGER PRIMARY KEY, new INTEGER)"));
  std::map<std::pair<int, int>, int64_t> new_idx;  // (restart count, rank) -> ranks.idx here
  int64_t idx = 0;
  for (const RankData& r : s.ranks) new_idx[{r.id.restart_count, r.id.rank}] = idx++;
  for (const RankData& r : s.earlier_attempts) new_idx[{r.id.restart_count, r.id.rank}] = idx++;
  {
    Statement ranks(db, "SELECT idx, rank, restart_count FROM src.ranks");
    Statement map(db, "INSERT INTO temp.idx_map VALUES (?, ?)");
    while (ranks.Next()) {
      auto it = new_idx.find(
          {static_cast<int>(ranks.ColumnInt(2)), static_cast<int>(ranks.ColumnInt(1))});
      if (it != new_idx.end()) RETURN_IF_ERROR(map.Int(ranks.ColumnInt(0)).Int(it->second).Run());
    }
    RETURN_IF_ERROR(ranks.status());
  }
  for (const char* table : {"collectives", "p2p", "mpi_calls", "ranges"}) {
    std::string columns, selected;
    {
      Statement info(db, "SELECT name FROM pragma_table_info(?) WHERE name != 'rank_idx'");
      info.Text(table);
      while (info.Next()) {
        const std::string name = info.ColumnText(0);
        columns += ", " + name;
        auto time = times.find(name);
        if (!align || time == times.end()) {
          selected += ", s." + name;
        } else if (time->second) {
          selected += ", CASE WHEN s." + name + " = 0 THEN 0 ELSE rs_to_coordinator(m.new, s." +
                      name + ") END";
        } else {
          selected += ", rs_to_coordinator(m.new, s." + name + ")";
        }
      }
      RETURN_IF_ERROR(info.status());
    }
    const std::string copy = std::string("INSERT INTO main.") + table + " (rank_idx" + columns +
                             ") SELECT m.new" + selected + " FROM src." + table +
                             " s JOIN temp.idx_map m ON m.old = s.rank_idx ORDER BY s.rowid";
    RETURN_IF_ERROR(db.Exec(copy.c_str()));
  }
  return Status::Ok();
}

Status WriteDatabase(const std::string& path, const Session& session,
                     const std::vector<Finding>& findings, const SaveOptions& options) {
  Connection db(path);
  RETURN_IF_ERROR(db.Open(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  // The file is private until renamed: no journal is needed (a failure discards the file), and
  // no sync either, as for the other session files (see WriteFileAtomically).
  RETURN_IF_ERROR(db.Exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"));
  RETURN_IF_ERROR(db.Exec(kSchema));
  const bool copy = !options.records_from.empty();
  RETURN_IF_ERROR(db.Exec("BEGIN"));
  RETURN_IF_ERROR(WriteMeta(db, session));
  RETURN_IF_ERROR(WriteRanks(db, session, /*mpi_records=*/!copy));
  RETURN_IF_ERROR(WriteFindings(db, findings));
  RETURN_IF_ERROR(db.Exec("COMMIT"));
  if (copy) {  // ATTACH is refused inside a transaction
    RETURN_IF_ERROR(CopyRecords(db, session, options.records_from));
  }
  return db.Close();
}

// ---- Reading -------------------------------------------------------------------------------

using store_rows::Corrupt;
using store_rows::HasColumn;
using store_rows::HasTable;

// Opens `path` read-only and checks that it is a rankscope session database of our version.
Status OpenForReading(Connection& db, std::map<std::string, std::optional<std::string>>& meta) {
  const std::string& path = db.path();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return Status::Error("cannot open session database " + path +
                         ": no such file (pass the session.sqlite of a rankscope session folder)");
  }
  Status opened = db.Open(SQLITE_OPEN_READONLY);
  if (!opened.ok()) {
    return Status::Error("cannot open session database " + path + ": " + opened.message());
  }
  Statement query(db, "SELECT key, value FROM meta");
  if (!query.status().ok()) {
    std::string why = (query.prepare_code() & 0xff) == SQLITE_NOTADB
                          ? "it is not an SQLite file"
                          : std::string(sqlite3_errmsg(db.get()));
    return Status::Error(path + " is not a rankscope session database (" + why + ")");
  }
  while (query.Next()) {
    meta[query.ColumnText(0)] =
        query.ColumnIsNull(1) ? std::nullopt : std::optional<std::string>(query.ColumnText(1));
  }
  if (!query.status().ok()) return Corrupt(path, query.status().message());
  auto version = meta.find("schema_version");
  if (version == meta.end() || !version->second.has_value()) {
    return Status::Error(path + " is not a rankscope session database (no schema_version)");
  }
  bool readable = false;
  for (int v = kOldestReadableSchemaVersion; v <= kSessionStoreSchemaVersion; ++v) {
    if (*version->second == std::to_string(v)) readable = true;
  }
  if (!readable) {
    return Status::Error(
        "session database " + path + " has schema version " + *version->second +
        "; this rankscope reads versions " + std::to_string(kOldestReadableSchemaVersion) + " to " +
        std::to_string(kSessionStoreSchemaVersion) + " (open it with the rankscope that wrote it)");
  }
  return Status::Ok();
}

class MetaReader {
 public:
  MetaReader(const std::string& path, const std::map<std::string, std::optional<std::string>>& meta)
      : path_(path), meta_(meta) {}

  Status Text(const char* key, std::string* out) const {
    auto it = meta_.find(key);
    if (it == meta_.end() || !it->second.has_value()) return Missing(key);
    *out = *it->second;
    return Status::Ok();
  }

  template <typename T>
  Status Int(const char* key, T* out) const {
    auto it = meta_.find(key);
    if (it == meta_.end() || !it->second.has_value()) return Missing(key);
    return ParseInt(*it->second, key, out);
  }

  template <typename T>
  Status OptionalInt(const char* key, std::optional<T>* out) const {
    auto it = meta_.find(key);
    if (it == meta_.end()) return Missing(key);
    if (!it->second.has_value()) {
      out->reset();
      return Status::Ok();
    }
    T value{};
    RETURN_IF_ERROR(ParseInt(*it->second, key, &value));
    *out = value;
    return Status::Ok();
  }

  Status Bool(const char* key, bool* out) const {
    int value = 0;
    RETURN_IF_ERROR(Int(key, &value));
    *out = value != 0;
    return Status::Ok();
  }

 private:
  template <typename T>
  Status ParseInt(const std::string& text, const char* key, T* out) const {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
    if (ec != std::errc() || end != text.data() + text.size()) {
      return Corrupt(path_, std::string("meta '") + key + "' is not an integer: '" + text + "'");
    }
    return Status::Ok();
  }
  Status Missing(const char* key) const {
    return Corrupt(path_, std::string("meta '") + key + "' is missing");
  }

  const std::string& path_;
  const std::map<std::string, std::optional<std::string>>& meta_;
};

Status ParseStringList(const std::string& path, const std::string& text, const char* what,
                       std::vector<std::string>* out) {
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_array()) return Corrupt(path, std::string(what) + " is not a JSON array");
  out->clear();
  for (const json& item : parsed) {
    if (!item.is_string()) return Corrupt(path, std::string(what) + " holds a non-string");
    out->push_back(item.get<std::string>());
  }
  return Status::Ok();
}

Status ReadMeta(const std::string& path,
                const std::map<std::string, std::optional<std::string>>& meta, Session* s) {
  MetaReader m(path, meta);
  std::string command, reasons;
  RETURN_IF_ERROR(m.Text("session_id", &s->session_id));
  RETURN_IF_ERROR(m.Text("job_id", &s->job_id));
  RETURN_IF_ERROR(m.Text("launcher", &s->launcher));
  RETURN_IF_ERROR(m.Text("command", &command));
  RETURN_IF_ERROR(ParseStringList(path, command, "meta 'command'", &s->command));
  RETURN_IF_ERROR(m.Int("world_size", &s->world_size));
  if (s->world_size < 0 || s->world_size > kMaxWorldSize) {
    return Corrupt(path, "meta 'world_size' " + std::to_string(s->world_size) +
                             " is not a job's (at most " + std::to_string(kMaxWorldSize) + ")");
  }
  RETURN_IF_ERROR(m.Int("start_ns", &s->start));
  RETURN_IF_ERROR(m.Int("end_ns", &s->end));
  RETURN_IF_ERROR(m.OptionalInt("launcher_exit_code", &s->launcher_exit_code));
  RETURN_IF_ERROR(m.Bool("partial", &s->partial));
  RETURN_IF_ERROR(m.Text("partial_reasons", &reasons));
  RETURN_IF_ERROR(ParseStringList(path, reasons, "meta 'partial_reasons'", &s->partial_reasons));
  std::string notes;
  RETURN_IF_ERROR(m.Text("analysis_notes", &notes));
  RETURN_IF_ERROR(ParseStringList(path, notes, "meta 'analysis_notes'", &s->analysis_notes));
  // Absent in files of sessions without live findings (and in those made before them).
  if (auto it = meta.find("live_findings"); it != meta.end() && it->second.has_value()) {
    const json parsed = json::parse(*it->second, nullptr, /*allow_exceptions=*/false);
    Result<std::vector<LiveFinding>> live = LiveFindingsFromJson(parsed, "meta 'live_findings'");
    if (!live.ok()) return Corrupt(path, live.status().message());
    s->live_findings = std::move(live).value();
  }
  if (auto it = meta.find("live_stalls"); it != meta.end() && it->second.has_value()) {
    const json parsed = json::parse(*it->second, nullptr, /*allow_exceptions=*/false);
    Result<std::vector<StallFinding>> stalls = StallFindingsFromJson(parsed, "meta 'live_stalls'");
    if (!stalls.ok()) return Corrupt(path, stalls.status().message());
    s->live_stalls = std::move(stalls).value();
  }
  return m.Bool("aligned", &s->aligned);
}

Status ReadRanks(const Connection& db, int version, Session* s) {
  const std::string& path = db.path();
  const std::string sql = std::string(
                              "SELECT idx, rank, local_rank, world_size, node, host, launcher, "
                              "job_id, agent_pid, program_pid, restart_count, program, "
                              "clock_ref_local, clock_offset_ns, clock_drift_ppm, "
                              "clock_uncertainty_ns, clock_samples_used, clock_samples_total, "
                              "clock_fitted, clock_error, notices, dropped_records, exit_code, "
                              "term_signal, finished") +
                          (version >= 5 ? ", exit_unseen" : "") +
                          (version >= 6 ? ", exit_time" : "") + " FROM ranks ORDER BY idx";
  Statement q(db, sql.c_str());
  while (q.Next()) {
    if (q.ColumnInt(0) != static_cast<int64_t>(s->ranks.size())) {
      return Corrupt(path, "ranks.idx " + std::to_string(q.ColumnInt(0)) + " is out of sequence");
    }
    RankData r;
    int col = 1;
    auto next_int = [&] { return q.ColumnInt(col++); };
    r.id.rank = static_cast<int>(next_int());
    r.id.local_rank = static_cast<int>(next_int());
    r.id.world_size = static_cast<int>(next_int());
    r.id.node = q.ColumnText(col++);
    r.id.host = q.ColumnText(col++);
    r.id.launcher = q.ColumnText(col++);
    r.id.job_id = q.ColumnText(col++);
    r.id.agent_pid = static_cast<int>(next_int());
    r.id.program_pid = static_cast<int>(next_int());
    r.id.restart_count = static_cast<int>(next_int());
    RETURN_IF_ERROR(ParseStringList(path, q.ColumnText(col++), "ranks.program", &r.id.program));
    r.clock.ref_local = next_int();
    r.clock.offset_ns = next_int();
    r.clock.drift_ppm = q.ColumnReal(col++);
    r.clock.uncertainty_ns = next_int();
    r.clock.samples_used = static_cast<int>(next_int());
    r.clock.samples_total = static_cast<int>(next_int());
    r.clock_fitted = next_int() != 0;
    r.clock_error = q.ColumnText(col++);
    RETURN_IF_ERROR(ParseStringList(path, q.ColumnText(col++), "ranks.notices", &r.notices));
    r.dropped_records = static_cast<uint64_t>(next_int());
    if (q.ColumnIsNull(col)) {
      ++col;
    } else {
      r.exit_code = static_cast<int>(next_int());
    }
    r.term_signal = static_cast<int>(next_int());
    r.finished = next_int() != 0;
    if (version >= 5) r.exit_unseen = next_int() != 0;
    if (version >= 6) r.exit_time = next_int();
    s->ranks.push_back(std::move(r));
  }
  if (!q.status().ok()) return Corrupt(path, q.status().message());
  return Status::Ok();
}

// Runs `sql` (whose first column is rank_idx) and hands each row to `read_row` with the rank
// it belongs to.
template <typename ReadRow>
Status ReadRecords(const Connection& db, Session* s, const char* table, const char* sql,
                   ReadRow read_row) {
  Statement q(db, sql);
  while (q.Next()) {
    int64_t idx = q.ColumnInt(0);
    if (idx < 0 || idx >= static_cast<int64_t>(s->ranks.size())) {
      return Corrupt(db.path(), std::string(table) + " row names rank_idx " + std::to_string(idx) +
                                    ", which is not in table ranks");
    }
    RETURN_IF_ERROR(read_row(q, s->ranks[static_cast<size_t>(idx)]));
  }
  if (!q.status().ok()) return Corrupt(db.path(), q.status().message());
  return Status::Ok();
}

// A decoded row into its rank: `decode` gives the row's record or why it is corrupt.
template <typename Decode, typename Push>
Status ReadTable(const Connection& db, Session* s, const char* table, const std::string& columns,
                 Decode decode, Push push) {
  const std::string sql =
      "SELECT rank_idx, " + columns + " FROM " + std::string(table) + " ORDER BY rowid";
  return ReadRecords(db, s, table, sql.c_str(), [&](const Statement& q, RankData& r) {
    auto record = decode(q);
    if (!record.ok()) return record.status();
    push(r, std::move(record).value());
    return Status::Ok();
  });
}

Status ReadGpuActivity(const Connection& db, Session* s) {
  Result<std::vector<std::string>> names = store_rows::GpuNames(db);
  if (!names.ok()) return names.status();
  return ReadTable(
      db, s, "gpu_activity", store_rows::GpuColumns(),
      [&](const Statement& q) { return store_rows::GpuRow(q, 1, db.path(), names.value()); },
      [](RankData& r, GpuActivityRecord g) { r.gpu.push_back(std::move(g)); });
}

// Table gpu_stats (files before it have none: no rows).
Status ReadGpuStats(const Connection& db, Session* s) {
  if (!HasTable(db, "gpu_stats")) return Status::Ok();
  Result<std::vector<std::string>> names = store_rows::GpuNames(db);
  if (!names.ok()) return names.status();
  return ReadTable(
      db, s, "gpu_stats", store_rows::GpuStatsColumns(),
      [&](const Statement& q) { return store_rows::GpuStatsRow(q, 1, db.path(), names.value()); },
      [](RankData& r, GpuStats g) { r.gpu_stats.push_back(std::move(g)); });
}

// Table kernel_pieces (files before it have none).
Status ReadKernelPieces(const Connection& db, Session* s) {
  if (!HasTable(db, "kernel_pieces")) return Status::Ok();
  Result<std::vector<std::string>> names = store_rows::GpuNames(db);
  if (!names.ok()) return names.status();
  return ReadRecords(
      db, s, "kernel_pieces",
      "SELECT rank_idx, from_ns, to_ns, name_id, time_ns FROM kernel_pieces ORDER BY rowid",
      [&](const Statement& q, RankData& r) {
        const int64_t name_id = q.ColumnInt(3);
        if (name_id < 0 || name_id >= static_cast<int64_t>(names->size())) {
          return Corrupt(db.path(), "kernel_pieces.name_id " + std::to_string(name_id) +
                                        " is not in table gpu_names");
        }
        r.kernel_pieces.push_back({q.ColumnInt(1), q.ColumnInt(2),
                                   names.value()[static_cast<size_t>(name_id)], q.ColumnInt(4)});
        return Status::Ok();
      });
}

// Tables nccl_compute and rank_gpu_summary (files before them have none).
Status ReadNcclCompute(const Connection& db, Session* s) {
  if (HasTable(db, "nccl_compute")) {
    RETURN_IF_ERROR(ReadRecords(
        db, s, "nccl_compute", "SELECT rank_idx, from_ns, to_ns FROM nccl_compute ORDER BY rowid",
        [&](const Statement& q, RankData& r) {
          if (q.ColumnInt(2) < q.ColumnInt(1)) {
            return Corrupt(db.path(), "nccl_compute: a span ends before it starts");
          }
          r.nccl_compute.emplace_back(q.ColumnInt(1), q.ColumnInt(2));
          return Status::Ok();
        }));
  }
  if (!HasTable(db, "rank_gpu_summary")) return Status::Ok();
  return ReadRecords(db, s, "rank_gpu_summary",
                     "SELECT rank_idx, compute_kernels_summed, nccl_compute_late FROM "
                     "rank_gpu_summary ORDER BY rowid",
                     [&](const Statement& q, RankData& r) {
                       r.compute_kernels_summed = q.ColumnInt(1) != 0;
                       r.nccl_compute_late = static_cast<uint64_t>(q.ColumnInt(2));
                       return Status::Ok();
                     });
}

// Table launch_latency (files before it have none): a rank's rows, each from its buckets' rows.
Status ReadLaunchLatency(const Connection& db, Session* s) {
  if (!HasTable(db, "launch_latency")) return Status::Ok();
  std::map<const RankData*, int64_t> last_row;
  return ReadRecords(db, s, "launch_latency",
                     "SELECT rank_idx, row, window_start_ns, window_ns, bucket, count, sum_ns "
                     "FROM launch_latency ORDER BY rowid",
                     [&](const Statement& q, RankData& r) {
                       const int64_t row = q.ColumnInt(1);
                       auto [last, fresh] = last_row.try_emplace(&r, row);
                       if (fresh || last->second != row) r.launch_latency.emplace_back();
                       last->second = row;
                       LaunchLatency& l = r.launch_latency.back();
                       l.window_start = q.ColumnInt(2);
                       l.window = q.ColumnInt(3);
                       const auto bucket = static_cast<int32_t>(q.ColumnInt(4));
                       if (!l.buckets.empty() && bucket <= l.buckets.back().bucket) {
                         return Corrupt(db.path(), "launch_latency: buckets of row " +
                                                       std::to_string(row) + " not increasing");
                       }
                       l.buckets.push_back({bucket, q.ColumnInt(5), q.ColumnInt(6)});
                       return Status::Ok();
                     });
}

// Each table's rows into the session's ranks. rowid order is insertion order, which is each
// rank's record order.
Status ReadClockSamples(const Connection& db, Session* s) {
  return ReadRecords(
      db, s, "clock_samples", "SELECT rank_idx, t1, t2, t3, t4 FROM clock_samples ORDER BY rowid",
      [](const Statement& q, RankData& r) {
        r.clock_samples.push_back({q.ColumnInt(1), q.ColumnInt(2), q.ColumnInt(3), q.ColumnInt(4)});
        return Status::Ok();
      });
}

Status ReadCollectives(const Connection& db, Session* s, int version) {
  return ReadTable(
      db, s, "collectives", store_rows::CollectiveColumns(version),
      [&](const Statement& q) { return store_rows::CollectiveRow(q, 1, db.path()); },
      [](RankData& r, const CollectiveRecord& c) { r.collectives.push_back(c); });
}

Status ReadP2P(const Connection& db, Session* s) {
  return ReadTable(
      db, s, "p2p", store_rows::P2PColumns(db),
      [&](const Statement& q) { return store_rows::P2PRow(q, 1, db.path()); },
      [](RankData& r, const P2PRecord& p) { r.p2p.push_back(p); });
}

Status ReadMpiCalls(const Connection& db, Session* s) {
  if (!HasTable(db, "mpi_calls")) return Status::Ok();
  return ReadTable(
      db, s, "mpi_calls", store_rows::MpiCallColumns(),
      [&](const Statement& q) { return store_rows::MpiCallRow(q, 1, db.path()); },
      [](RankData& r, const MpiCallRecord& m) { r.mpi_calls.push_back(m); });
}

Status ReadRanges(const Connection& db, Session* s) {
  return ReadRecords(
      db, s, "ranges",
      ("SELECT rank_idx, " + store_rows::RangeColumns() + " FROM ranges ORDER BY rowid").c_str(),
      [](const Statement& q, RankData& r) {
        r.ranges.push_back(store_rows::RangeRow(q, 1));
        return Status::Ok();
      });
}

Status ReadMarks(const Connection& db, Session* s) {
  return ReadRecords(db, s, "marks",
                     "SELECT rank_idx, domain, name, time_ns, tid FROM marks ORDER BY rowid",
                     [](const Statement& q, RankData& r) {
                       r.marks.push_back({q.ColumnText(1), q.ColumnText(2), q.ColumnInt(3),
                                          static_cast<uint32_t>(q.ColumnInt(4))});
                       return Status::Ok();
                     });
}

Status ReadRankGpu(const Connection& db, Session* s, int version) {
  const std::string& path = db.path();
  return ReadRecords(
      db, s, "rank_gpu",
      version >= 2 ? "SELECT rank_idx, nccl, topology_source, topology_xml, nvml, nvml_error "
                     "FROM rank_gpu ORDER BY rowid"
                   : "SELECT rank_idx, nccl, topology_source, topology_xml, NULL, '' "
                     "FROM rank_gpu ORDER BY rowid",
      [&](const Statement& q, RankData& r) {
        if (!q.ColumnIsNull(1)) {
          json parsed = json::parse(q.ColumnText(1), nullptr, /*allow_exceptions=*/false);
          Result<RankNccl> nccl = RankNcclFromJson(parsed);
          if (!nccl.ok()) return Corrupt(path, "rank_gpu.nccl: " + nccl.status().message());
          r.nccl = std::move(nccl).value();
        }
        r.topology_source = q.ColumnText(2);
        r.topology_xml = q.ColumnText(3);
        if (!q.ColumnIsNull(4)) {
          json parsed = json::parse(q.ColumnText(4), nullptr, /*allow_exceptions=*/false);
          Result<NvmlSnapshot> nvml = NvmlFromJson(parsed);
          if (!nvml.ok()) return Corrupt(path, "rank_gpu.nvml: " + nvml.status().message());
          r.nvml = std::move(nvml).value();
        }
        r.nvml_error = q.ColumnText(5);
        return Status::Ok();
      });
}

Status ReadRankProc(const Connection& db, Session* s, int version) {
  if (version < 3) return Status::Ok();
  // The scheduler and cgroup columns came within schema version 3 (old readers skip them):
  // a file written before has none.
  const bool sched = HasColumn(db, "rank_proc", "run_delay_ns");
  return ReadRecords(
      db, s, "rank_proc",
      sched ? "SELECT rank_idx, rchar, wchar, read_bytes, write_bytes, cpu_user_ns, "
              "cpu_system_ns, blkio_delay_ns, processes, samples, io_unreadable, sched_cpu_ns, "
              "run_delay_ns, voluntary_switches, involuntary_switches, threads, "
              "sched_unreadable, sampled_wall_ns, cgroup_version, cgroup_path, "
              "cgroup_limit_path, cgroup_quota_us, cgroup_period_us, cgroup_nr_periods, "
              "cgroup_nr_throttled, cgroup_throttled_ns, cgroup_counters_unreadable "
              "FROM rank_proc ORDER BY rowid"
            : "SELECT rank_idx, rchar, wchar, read_bytes, write_bytes, cpu_user_ns, "
              "cpu_system_ns, blkio_delay_ns, processes, samples, io_unreadable "
              "FROM rank_proc ORDER BY rowid",
      [sched](const Statement& q, RankData& r) {
        ProcessTreeStats x;
        x.rchar = static_cast<uint64_t>(q.ColumnInt(1));
        x.wchar = static_cast<uint64_t>(q.ColumnInt(2));
        x.read_bytes = static_cast<uint64_t>(q.ColumnInt(3));
        x.write_bytes = static_cast<uint64_t>(q.ColumnInt(4));
        x.cpu_user_ns = q.ColumnInt(5);
        x.cpu_system_ns = q.ColumnInt(6);
        x.blkio_delay_ns = q.ColumnInt(7);
        x.processes = static_cast<int32_t>(q.ColumnInt(8));
        x.samples = static_cast<int32_t>(q.ColumnInt(9));
        x.io_unreadable = q.ColumnInt(10) != 0;
        if (sched) {
          x.sched_cpu_ns = q.ColumnInt(11);
          x.run_delay_ns = q.ColumnInt(12);
          x.voluntary_switches = static_cast<uint64_t>(q.ColumnInt(13));
          x.involuntary_switches = static_cast<uint64_t>(q.ColumnInt(14));
          x.threads = static_cast<int32_t>(q.ColumnInt(15));
          x.sched_unreadable = q.ColumnInt(16) != 0;
          x.sampled_wall_ns = q.ColumnInt(17);
        }
        if (sched && !q.ColumnIsNull(18)) {
          CpuCgroupStats c;
          c.version = static_cast<int>(q.ColumnInt(18));
          c.path = q.ColumnText(19);
          c.limit_path = q.ColumnText(20);
          c.quota_us = q.ColumnInt(21);
          c.period_us = q.ColumnInt(22);
          c.nr_periods = static_cast<uint64_t>(q.ColumnInt(23));
          c.nr_throttled = static_cast<uint64_t>(q.ColumnInt(24));
          c.throttled_ns = q.ColumnInt(25);
          c.counters_unreadable = q.ColumnInt(26) != 0;
          x.cpu_cgroup = std::move(c);
        }
        r.proc = std::move(x);
        return Status::Ok();
      });
}

// Added within schema version 3.
Status ReadMainThread(const Connection& db, Session* s) {
  if (!HasTable(db, "rank_main_thread")) return Status::Ok();
  const std::string& file = db.path();
  return ReadRecords(db, s, "rank_main_thread",
                     "SELECT rank_idx, samples, running, stopped, blocked_in FROM rank_main_thread "
                     "ORDER BY rowid",
                     [&file](const Statement& q, RankData& r) {
                       if (!r.proc)
                         return Corrupt(file, "rank_main_thread row for a rank without rank_proc");
                       MainThreadStates& m = r.proc->main_thread;
                       m.samples = static_cast<int32_t>(q.ColumnInt(1));
                       m.running = static_cast<int32_t>(q.ColumnInt(2));
                       m.stopped = static_cast<int32_t>(q.ColumnInt(3));
                       const json blocked =
                           json::parse(q.ColumnText(4), nullptr, /*allow_exceptions=*/false);
                       if (!blocked.is_object())
                         return Corrupt(file, "rank_main_thread.blocked_in is not JSON");
                       for (const auto& [where, n] : blocked.items()) {
                         if (!n.is_number_integer())
                           return Corrupt(file, "rank_main_thread.blocked_in count");
                         m.blocked_in[where] = n.get<int32_t>();
                       }
                       return Status::Ok();
                     });
}

// Added within schema version 7 (files before it have none: no rank ran under a tool).
Status ReadToolRuns(const Connection& db, Session* s) {
  if (!HasTable(db, "rank_tool")) return Status::Ok();
  return ReadRecords(db, s, "rank_tool",
                     "SELECT rank_idx, tool, path, host, csv, error, same_run FROM rank_tool "
                     "ORDER BY rowid",
                     [](const Statement& q, RankData& r) {
                       r.tool_run = ToolRun{q.ColumnText(1), q.ColumnText(2), q.ColumnText(3),
                                            q.ColumnText(4), q.ColumnText(5), q.ColumnInt(6) != 0};
                       return Status::Ok();
                     });
}

Status ReadAllRecords(const Connection& db, Session* s, int version, bool mpi_records) {
  RETURN_IF_ERROR(ReadClockSamples(db, s));
  if (mpi_records) {
    RETURN_IF_ERROR(ReadCollectives(db, s, version));
    RETURN_IF_ERROR(ReadP2P(db, s));
    RETURN_IF_ERROR(ReadMpiCalls(db, s));
    RETURN_IF_ERROR(ReadRanges(db, s));
  }
  RETURN_IF_ERROR(ReadMarks(db, s));
  RETURN_IF_ERROR(ReadRankGpu(db, s, version));
  RETURN_IF_ERROR(ReadRankProc(db, s, version));
  RETURN_IF_ERROR(ReadMainThread(db, s));
  RETURN_IF_ERROR(ReadToolRuns(db, s));
  RETURN_IF_ERROR(ReadGpuStats(db, s));
  RETURN_IF_ERROR(ReadLaunchLatency(db, s));
  RETURN_IF_ERROR(ReadKernelPieces(db, s));
  RETURN_IF_ERROR(ReadNcclCompute(db, s));
  return version >= 2 ? ReadGpuActivity(db, s) : Status::Ok();
}

}  // namespace

Status SaveSession(const std::string& path, const Session& session,
                   const std::vector<Finding>& findings, const SaveOptions& options) {
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  std::remove(temp.c_str());  // a leftover from a crashed run of this same pid
  Status status = WriteDatabase(temp, session, findings, options);
  if (status.ok() && std::rename(temp.c_str(), path.c_str()) != 0) {
    status = Status::Error("rename from " + temp + " failed: " + std::strerror(errno));
  }
  if (status.ok()) return status;
  std::remove(temp.c_str());
  return Status::Error("cannot write session database " + path + ": " + status.message());
}

Result<int> SessionSchemaVersion(const std::string& path) {
  Connection db(path);
  std::map<std::string, std::optional<std::string>> meta;
  RETURN_IF_ERROR(OpenForReading(db, meta));
  return std::stoi(*meta["schema_version"]);
}

Result<Session> LoadSession(const std::string& path, const LoadOptions& options) {
  Connection db(path);
  std::map<std::string, std::optional<std::string>> meta;
  RETURN_IF_ERROR(OpenForReading(db, meta));
  Session session;
  RETURN_IF_ERROR(ReadMeta(path, meta, &session));
  const int version = std::stoi(*meta["schema_version"]);
  RETURN_IF_ERROR(ReadRanks(db, version, &session));
  RETURN_IF_ERROR(ReadAllRecords(db, &session, version, options.mpi_records));
  // Version 1 has no source column: records joined from NCCL are recognised by their
  // communicator key, which is a hash of an NCCL comm id this rank's log printed.
  for (RankData& r : session.ranks) {
    if (version >= 2 || !r.nccl) continue;
    std::set<uint64_t> nccl_keys;
    for (const NcclCommInfo& c : r.nccl->communicators) nccl_keys.insert(NcclCommKey(c.comm_id));
    for (CollectiveRecord& c : r.collectives) {
      if (nccl_keys.count(c.comm_id)) c.source = CollectiveRecord::Source::kNccl;
    }
  }
  SeparateAttempts(&session);  // earlier torchrun attempts are stored among the ranks
  return session;
}

Result<std::vector<Finding>> LoadFindings(const std::string& path) {
  Connection db(path);
  std::map<std::string, std::optional<std::string>> meta;
  RETURN_IF_ERROR(OpenForReading(db, meta));
  std::vector<Finding> findings;
  Statement q(db, "SELECT idx, finding FROM findings ORDER BY idx");
  while (q.Next()) {
    json parsed = json::parse(q.ColumnText(1), nullptr, /*allow_exceptions=*/false);
    Result<Finding> finding = FindingFromJson(parsed);
    if (!finding.ok()) {
      return Corrupt(path, "findings row " + std::to_string(q.ColumnInt(0)) + ": " +
                               finding.status().message());
    }
    findings.push_back(std::move(finding.value()));
  }
  if (!q.status().ok()) return Corrupt(path, q.status().message());
  return findings;
}

// ---- Records kept on disk as they arrive ---------------------------------------------------

// A spill's rank: only the identity the coordinator tells agents apart by.
constexpr char kSpillRankRow[] =
    "INSERT INTO ranks (idx, rank, restart_count, agent_pid) VALUES (?, ?, ?, ?)";

struct RecordSpill::State {
  explicit State(const std::string& path) : db(path) {}
  Connection db;
  std::unique_ptr<RecordInserts> inserts;
  std::unique_ptr<Statement> rank_row;
};

RecordSpill::RecordSpill(std::unique_ptr<State> state) : st_(std::move(state)) {}

RecordSpill::~RecordSpill() {
  if (st_ == nullptr) return;
  const std::string path = st_->db.path();
  (void)Close();
  std::remove(path.c_str());
}

Result<std::unique_ptr<RecordSpill>> RecordSpill::Create(const std::string& path) {
  std::remove(path.c_str());  // a leftover of a run killed before it removed its own
  auto st = std::make_unique<State>(path);
  auto fail = [&](const Status& s) {
    (void)st->db.Close();
    std::remove(path.c_str());
    return Status::Error("cannot keep records in " + path + ": " + s.message());
  };
  // No connection mutex: the coordinator calls it under its own lock (SQLite's took a quarter of
  // the ingest time, bench_coordinator's BM_UploadIngest/spilled).
  if (Status s = st->db.Open(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX);
      !s.ok()) {
    return fail(s);
  }
  // A private scratch file: no sync; the rollback journal in memory, so a batch that cannot be
  // written is undone whole. A bounded page cache: memory does not grow with the file.
  if (Status s = st->db.Exec("PRAGMA journal_mode=MEMORY; PRAGMA synchronous=OFF; "
                             "PRAGMA cache_size=-4096;");
      !s.ok()) {
    return fail(s);
  }
  if (Status s = st->db.Exec(kSchema); !s.ok()) return fail(s);
  {
    Statement meta(st->db, "INSERT INTO meta (key, value) VALUES (?, ?)");
    for (const auto& [key, value] :
         {std::pair<std::string, std::string>{"schema_version",
                                              std::to_string(kSessionStoreSchemaVersion)},
          {"created_by", std::string("rankscope ") + kRankscopeVersion},
          {"aligned", "0"}}) {
      if (Status s = meta.Text(key).Text(value).Run(); !s.ok()) return fail(s);
    }
  }
  st->inserts = std::make_unique<RecordInserts>(st->db);
  st->rank_row = std::make_unique<Statement>(st->db, kSpillRankRow);
  if (Status s = st->inserts->status(); !s.ok()) return fail(s);
  if (Status s = st->rank_row->status(); !s.ok()) return fail(s);
  return std::unique_ptr<RecordSpill>(new RecordSpill(std::move(st)));
}

const std::string& RecordSpill::path() const { return st_->db.path(); }

Status RecordSpill::AddRank(size_t idx, const RankIdentity& id) {
  if (st_->db.get() == nullptr) return Status::Error(path() + " is closed");
  Status s = st_->rank_row->Int(idx).Int(id.rank).Int(id.restart_count).Int(id.agent_pid).Run();
  if (!s.ok()) {
    // The statement keeps its error; a later rank may fit (space freed).
    st_->rank_row = std::make_unique<Statement>(st_->db, kSpillRankRow);
    return Status::Error("cannot write to " + path() + ": " + s.message());
  }
  return s;
}

Status RecordSpill::Append(size_t idx, RankData* rank) {
  if (st_->db.get() == nullptr) return Status::Error(path() + " is closed");
  Status s = st_->db.Exec("BEGIN");
  if (s.ok()) s = st_->inserts->Write(static_cast<int64_t>(idx), *rank);
  if (s.ok()) s = st_->db.Exec("COMMIT");
  if (!s.ok()) {
    (void)st_->db.Exec("ROLLBACK");
    // The statements keep their error; a later batch may fit (space freed).
    st_->inserts = std::make_unique<RecordInserts>(st_->db);
    return Status::Error("cannot write to " + path() + ": " + s.message());
  }
  rank->collectives = {};
  rank->p2p = {};
  rank->mpi_calls = {};
  rank->ranges = {};
  return Status::Ok();
}

Status RecordSpill::Close() {
  st_->inserts.reset();
  st_->rank_row.reset();
  return st_->db.Close();
}

Status LoadSpilledRecords(const std::string& path, Session* session) {
  Connection db(path);
  if (Status s = db.Open(SQLITE_OPEN_READONLY); !s.ok()) {
    return Status::Error("cannot open " + path + ": " + s.message());
  }
  // The file's ranks by the identity the coordinator told its agents apart by.
  using Key = std::tuple<int, int, int64_t>;  // rank, restart count, agent pid
  std::map<Key, size_t> idx_of;
  Session held;  // indexed by ranks.idx (a rank the file could not take leaves a gap)
  {
    constexpr int64_t kMostAgents = int64_t{1} << 24;
    Statement q(db, "SELECT idx, rank, restart_count, agent_pid FROM ranks ORDER BY idx");
    while (q.Next()) {
      const int64_t idx = q.ColumnInt(0);
      if (idx < 0 || idx >= kMostAgents) {
        return Corrupt(path, "ranks.idx " + std::to_string(idx) + " is not an agent's index");
      }
      idx_of[{static_cast<int>(q.ColumnInt(1)), static_cast<int>(q.ColumnInt(2)), q.ColumnInt(3)}] =
          static_cast<size_t>(idx);
      held.ranks.resize(std::max(held.ranks.size(), static_cast<size_t>(idx) + 1));
    }
    if (!q.status().ok()) return Corrupt(path, q.status().message());
  }
  RETURN_IF_ERROR(ReadCollectives(db, &held, kSessionStoreSchemaVersion));
  RETURN_IF_ERROR(ReadP2P(db, &held));
  RETURN_IF_ERROR(ReadMpiCalls(db, &held));
  RETURN_IF_ERROR(ReadRanges(db, &held));
  // The file holds what came first: a rank's records still in memory came after a batch the file
  // could not take.
  auto before = [](auto& from, auto& into) {
    from.insert(from.end(), std::make_move_iterator(into.begin()),
                std::make_move_iterator(into.end()));
    into = std::move(from);
  };
  for (auto* ranks : {&session->ranks, &session->earlier_attempts}) {
    for (RankData& r : *ranks) {
      auto it = idx_of.find({r.id.rank, r.id.restart_count, r.id.agent_pid});
      if (it == idx_of.end()) continue;
      RankData& from = held.ranks[it->second];
      before(from.collectives, r.collectives);
      before(from.p2p, r.p2p);
      before(from.mpi_calls, r.mpi_calls);
      before(from.ranges, r.ranges);
    }
  }
  return db.Close();
}

}  // namespace rankscope
