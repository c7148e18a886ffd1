#include "coordinator/sweep/sweep_history.h"

#include <cstdlib>
#include <filesystem>

#include "coordinator/report/sqlite_db.h"

namespace rankscope {

using sqlite::Connection;
using sqlite::Statement;

namespace {

constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS sweeps (id TEXT PRIMARY KEY, started_unix_s REAL, level TEXT);
CREATE TABLE IF NOT EXISTS results (
  sweep_id TEXT, node TEXT, check_key TEXT, name TEXT, subject TEXT, unit TEXT, value REAL,
  status TEXT);
CREATE INDEX IF NOT EXISTS results_by_sweep ON results (sweep_id);
)sql";

}  // namespace

SweepHistory::SweepHistory(std::unique_ptr<Connection> db) : db_(std::move(db)) {}
SweepHistory::~SweepHistory() = default;

Result<std::unique_ptr<SweepHistory>> SweepHistory::Open(const std::string& path) {
  using R = Result<std::unique_ptr<SweepHistory>>;
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  auto db = std::make_unique<Connection>(path);
  if (Status s = db->Open(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE); !s.ok()) {
    return R::Error(path + ": " + s.message());
  }
  // A timer's sweep and a manual one may meet: wait for the other's transaction.
  sqlite3_busy_timeout(db->get(), 30'000);
  if (Status s = db->Exec(kSchema); !s.ok()) return R::Error(path + ": " + s.message());
  // A file made by something else may have tables of these names with other columns.
  Statement probe(*db, "SELECT sweep_id, node, check_key, value FROM results LIMIT 1");
  if (!probe.status().ok()) {
    return R::Error(path + ": not a rankscope sweep history (" + probe.status().message() + ")");
  }
  return R(std::unique_ptr<SweepHistory>(new SweepHistory(std::move(db))));
}

Result<SweepPast> SweepHistory::Past(const std::string& level, int sweeps) {
  // Per node and check: a node swept only in some sweeps (a partition, a subset) still gets its
  // own last `sweeps` figures.
  Statement q(*db_,
              "SELECT node, check_key, value FROM ("
              " SELECT r.node, r.check_key, r.value, s.started_unix_s AS t, ROW_NUMBER() OVER ("
              "  PARTITION BY r.node, r.check_key ORDER BY s.started_unix_s DESC) AS n"
              " FROM results r JOIN sweeps s ON r.sweep_id = s.id"
              " WHERE s.level = ? AND r.value IS NOT NULL)"
              " WHERE n <= ? ORDER BY t");
  q.Text(level).Int(sweeps);
  SweepPast past;
  while (q.Next()) past[{q.ColumnText(0), q.ColumnText(1)}].push_back(q.ColumnReal(2));
  if (!q.status().ok()) {
    return Result<SweepPast>::Error(db_->path() + ": " + q.status().message());
  }
  return past;
}

Status SweepHistory::Record(const SweepRunInfo& run, const std::vector<NodeVerdict>& nodes) {
  RETURN_IF_ERROR(db_->Exec("BEGIN"));
  Statement sweep(*db_, "INSERT INTO sweeps VALUES (?, ?, ?)");
  RETURN_IF_ERROR(sweep.Text(run.id).Real(run.started_unix_s).Text(run.level).Run());
  Statement row(*db_, "INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  for (const NodeVerdict& n : nodes) {
    for (const CheckVerdict& c : n.checks) {
      row.Text(run.id).Text(n.node).Text(c.result.key()).Text(c.result.name);
      row.Text(c.result.subject).Text(c.result.unit);
      if (c.result.error.empty()) {
        row.Real(c.result.value);
      } else {
        row.Null();
      }
      RETURN_IF_ERROR(row.Text(SweepStatusName(c.status)).Run());
    }
  }
  if (Status s = db_->Exec("COMMIT"); !s.ok()) {
    (void)db_->Exec("ROLLBACK");
    return Status::Error(db_->path() + ": " + s.message());
  }
  return Status::Ok();
}

std::string DefaultSweepHistoryPath() {
  if (const char* data = std::getenv("XDG_DATA_HOME"); data != nullptr && data[0] != '\0') {
    return std::string(data) + "/rankscope/sweeps.sqlite";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.local/share/rankscope/sweeps.sqlite";
}

}  // namespace rankscope
