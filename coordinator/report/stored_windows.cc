#include "coordinator/report/stored_windows.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "coordinator/aligner.h"
#include "coordinator/nccl_instances.h"
#include "coordinator/report/sqlite_db.h"
#include "coordinator/report/store_rows.h"

namespace rankscope {

namespace {

using sqlite::Connection;
using sqlite::Statement;
using store_rows::Corrupt;

constexpr TimeNs kMin = std::numeric_limits<TimeNs>::min();
constexpr TimeNs kMax = std::numeric_limits<TimeNs>::max();

TimeNs SaturatingAdd(TimeNs t, DurationNs d) {
  if (d > 0 && t > kMax - d) return kMax;
  if (d < 0 && t < kMin - d) return kMin;
  return t + d;
}

// One kind of record: its table, how a row becomes a record in coordinator time, and the times
// that place it in windows.
// A kind's rows of one rank in aggregate (local time): how many, and how far from a span the end
// of a row that overlaps it can lie: after the span's end by the longest row, before its start
// by the most a row ends before it starts (none but a garbage row, which counts from its start).
struct RowStats {
  size_t count = 0;
  DurationNs after = 0;
  DurationNs before = 0;
};

template <typename Record>
struct Kind {
  std::string table;
  std::unique_ptr<Statement> members;  // rows of a rank whose key time is in a local interval
  std::unique_ptr<Statement> opens;    // rows begun in an interval and ending after its end
  std::unique_ptr<Statement> all;      // every row of a rank, in its order
  std::function<Result<Record>(const Statement&)> decode;  // columns from 1 on
  std::function<TimeNs(const Record&)> key;         // the time that puts it in a window: its end
  std::function<TimeNs(const Record&)> start, end;  // for those open at a cut
  std::function<void(size_t rank, Record*)> mend;   // what an old schema left out, when set
  std::vector<std::vector<std::pair<size_t, Record>>> open;  // per rank: open at the last cut
  std::optional<std::map<int64_t, RowStats>> stats;          // by ranks.idx: ReadStats, once
};

}  // namespace

struct StoredWindows::State {
  explicit State(const std::string& path) : db(path) {}
  Connection db;
  bool aligned = true;  // the file's times are coordinator time
  int version = 0;
  std::vector<int64_t> rank_idx;  // per rank of the session: its ranks.idx in the file
  std::vector<RankIdentity> ids;
  std::vector<ClockModel> clocks;
  // Per rank, the (start, end) of its marks and GPU activity, as the session given to Open holds
  // them (coordinator time): they are loaded with it, and a spill holds none in its file.
  std::vector<std::vector<std::pair<TimeNs, TimeNs>>> marks, gpu_times;
  // Schema version 1 has no collectives.source: per rank, the keys of the NCCL communicators
  // its log printed, whose records are NCCL's (as LoadSession marks them).
  std::vector<std::set<uint64_t>> nccl_keys;
  int world_size = 0;
  std::vector<std::string> gpu_names;
  Kind<CollectiveRecord> collectives;
  Kind<P2PRecord> p2p;
  Kind<MpiCallRecord> mpi_calls;
  Kind<RangeRecord> ranges;
  Kind<GpuActivityRecord> gpu;
  size_t next = 0;  // the window Next reads
  size_t peak_open = 0;

  const std::string& path() const { return db.path(); }

  // The rank's local time of coordinator time `t`: the model inverted (t = L + offset +
  // drift * (L - ref)), to within the rounding that margin() covers.
  TimeNs Local(size_t r, TimeNs t) const {
    if (aligned || t == kMin || t == kMax) return t;
    const ClockModel& m = clocks[r];
    const TimeNs since_ref = SaturatingAdd(SaturatingAdd(t, -m.offset_ns), -m.ref_local);
    const long double scaled = static_cast<long double>(since_ref) /
                               (1.0L + static_cast<long double>(m.drift_ppm) * 1e-6L);
    return SaturatingAdd(m.ref_local, static_cast<DurationNs>(std::llround(scaled)));
  }
  DurationNs margin() const { return aligned ? 0 : 1'000'000; }

  template <typename Record>
  Record Aligned(size_t r, Record record) const {
    if (!aligned) ToCoordinator(clocks[r], &record);
    return record;
  }
  TimeNs Aligned(size_t r, TimeNs t) const { return aligned ? t : clocks[r].ToCoordinator(t); }

  // The index of session rank by the file's ranks.idx; -1 for a rank not analysed (an earlier
  // torchrun attempt).
  std::map<int64_t, size_t> by_idx() const {
    std::map<int64_t, size_t> out;
    for (size_t r = 0; r < rank_idx.size(); ++r) out[rank_idx[r]] = r;
    return out;
  }
};

namespace {

Status Prepare(const Connection& db, const std::string& sql, std::unique_ptr<Statement>* out) {
  *out = std::make_unique<Statement>(db, sql.c_str());
  if (!(*out)->status().ok()) {
    return Status::Error("session database " + db.path() + ": " + (*out)->status().message());
  }
  return Status::Ok();
}

// The temporary index of `table` (each row's place among its rank's rows, and its times) and
// the kind's two queries.
template <typename Record>
Status SetUp(Connection& db, const std::string& table, const std::string& columns, const char* t0,
             const char* t1, bool with_opens, Kind<Record>* kind) {
  kind->table = table;
  const std::string ord = "ord_" + table;
  const std::string create =
      "CREATE TEMP TABLE " + ord + " AS SELECT rowid AS rid, rank_idx, ROW_NUMBER() OVER " +
      "(PARTITION BY rank_idx ORDER BY rowid) - 1 AS i, " + t0 + " AS t0, " + t1 + " AS t1 FROM " +
      "main." + table + "; CREATE INDEX temp." + ord + "_t1 ON " + ord + " (rank_idx, t1); " +
      (with_opens ? "CREATE INDEX temp." + ord + "_t0 ON " + ord + " (rank_idx, t0);" : "");
  if (Status s = db.Exec(create.c_str()); !s.ok()) {
    return Status::Error("session database " + db.path() + ": cannot index table " + table + ": " +
                         s.message());
  }
  {
    // A row of no rank in table ranks is corruption, as LoadSession says.
    Statement orphans(db, ("SELECT rank_idx FROM temp." + ord +
                           " WHERE rank_idx NOT IN (SELECT idx FROM main.ranks) LIMIT 1")
                              .c_str());
    if (orphans.Next()) {
      return Corrupt(db.path(), table + " row names rank_idx " +
                                    std::to_string(orphans.ColumnInt(0)) +
                                    ", which is not in table ranks");
    }
    if (!orphans.status().ok()) {
      return Corrupt(db.path(), table + ": " + orphans.status().message());
    }
  }
  const std::string select = "SELECT o.i, " + columns + " FROM temp." + ord + " o JOIN main." +
                             table + " ON main." + table +
                             ".rowid = o.rid WHERE o.rank_idx = ? AND ";
  RETURN_IF_ERROR(Prepare(db, select + "o.t1 > ? AND o.t1 <= ? ORDER BY o.i", &kind->members));
  RETURN_IF_ERROR(Prepare(db, select + "1 ORDER BY o.i", &kind->all));
  if (with_opens) {
    RETURN_IF_ERROR(
        Prepare(db, select + "o.t0 > ? AND o.t0 <= ? AND o.t1 > ? ORDER BY o.i", &kind->opens));
  }
  return Status::Ok();
}

// Rows of rank r with `query` bound to (rank_idx, values...), each decoded, moved to coordinator
// time and handed to `take` with its index.
template <typename Record, typename Take>
Status ReadRows(const StoredWindows::State& st, size_t r, Kind<Record>& kind, Statement& query,
                std::initializer_list<TimeNs> values, Take take) {
  query.Reset();
  query.Int(st.rank_idx[r]);
  for (TimeNs v : values) query.Int(v);
  while (query.Next()) {
    Result<Record> record = kind.decode(query);
    if (!record.ok()) return record.status();
    if (kind.mend) kind.mend(r, &record.value());
    take(static_cast<size_t>(query.ColumnInt(0)), st.Aligned(r, std::move(record).value()));
  }
  if (!query.status().ok()) return Corrupt(st.path(), kind.table + ": " + query.status().message());
  return Status::Ok();
}

// Rank r's records of `kind` in window (prev, cut] by their key, into `records` and `indices`.
template <typename Record>
Status ReadMembers(const StoredWindows::State& st, size_t r, TimeNs prev, TimeNs cut,
                   Kind<Record>& kind, std::vector<Record>* records, std::vector<size_t>* indices) {
  if (!kind.members) return Status::Ok();
  const TimeNs lo = SaturatingAdd(st.Local(r, prev), -st.margin());
  const TimeNs hi = SaturatingAdd(st.Local(r, cut), st.margin());
  return ReadRows(st, r, kind, *kind.members, {lo, hi}, [&](size_t i, Record record) {
    const TimeNs t = kind.key(record);
    if (t <= prev || t > cut) return;  // the margin's: a neighbour's
    records->push_back(std::move(record));
    indices->push_back(i);
  });
}

// Rank r's records of `kind` open at `cut` (begun at or before it, ending after it): those open
// at the previous cut that still are, and those begun since.
template <typename Record>
Status UpdateOpen(const StoredWindows::State& st, size_t r, TimeNs prev, TimeNs cut,
                  Kind<Record>& kind) {
  auto& open = kind.open[r];
  std::erase_if(open, [&](const auto& entry) { return kind.end(entry.second) <= cut; });
  if (cut == kMax) return Status::Ok();
  const TimeNs lo = SaturatingAdd(st.Local(r, prev), -st.margin());
  const TimeNs hi = SaturatingAdd(st.Local(r, cut), st.margin());
  const TimeNs ends_after = SaturatingAdd(st.Local(r, cut), -st.margin());
  RETURN_IF_ERROR(
      ReadRows(st, r, kind, *kind.opens, {lo, hi, ends_after}, [&](size_t i, Record record) {
        const TimeNs s = kind.start(record);
        if (s <= prev || s > cut || kind.end(record) <= cut) return;
        open.emplace_back(i, std::move(record));
      }));
  std::sort(open.begin(), open.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return Status::Ok();
}

template <typename Record, typename CutShort>
void CopyOpen(const Kind<Record>& kind, size_t r, TimeNs cut, CutShort cut_short,
              std::vector<Record>* records, std::vector<size_t>* indices) {
  for (const auto& [i, record] : kind.open[r]) {
    records->push_back(cut_short(record, cut));
    indices->push_back(i);
  }
}

Result<std::string> MetaValue(const Connection& db, const char* key) {
  Statement q(db, "SELECT value FROM meta WHERE key = ?");
  q.Text(key);
  if (!q.Next()) {
    return Status::Error(
        db.path() + " is not a rankscope session database (" +
        (q.status().ok() ? std::string("no meta '") + key + "'" : q.status().message()) + ")");
  }
  return q.ColumnText(0);
}

}  // namespace

StoredWindows::StoredWindows(std::unique_ptr<State> state) : state_(std::move(state)) {}
StoredWindows::~StoredWindows() = default;

Result<std::unique_ptr<StoredWindows>> StoredWindows::Open(const std::string& path,
                                                           const Session& session) {
  auto st = std::make_unique<State>(path);
  // No connection mutex: a reader is used by one thread at a time.
  if (Status s = st->db.Open(SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX); !s.ok()) {
    return Status::Error("cannot open session database " + path + ": " + s.message());
  }
  Result<std::string> version = MetaValue(st->db, "schema_version");
  if (!version.ok()) return version.status();
  Result<std::string> aligned = MetaValue(st->db, "aligned");
  if (!aligned.ok()) return aligned.status();
  st->version = std::atoi(version.value().c_str());
  st->aligned = aligned.value() == "1";
  st->world_size = WorldSize(session);

  // The session's ranks by their identity in the file's ranks table.
  std::map<std::pair<int, int>, int64_t> idx_of;  // (restart count, rank) -> ranks.idx
  Statement ranks(st->db, "SELECT idx, rank, restart_count FROM ranks");
  while (ranks.Next()) {
    const int rank = static_cast<int>(ranks.ColumnInt(1));
    const int restart = static_cast<int>(ranks.ColumnInt(2));
    if (!idx_of.emplace(std::make_pair(restart, rank), ranks.ColumnInt(0)).second) {
      return Corrupt(path, "ranks holds rank " + std::to_string(rank) + " (restart " +
                               std::to_string(restart) + ") twice");
    }
  }
  if (!ranks.status().ok()) return Corrupt(path, "ranks: " + ranks.status().message());
  for (const RankData& r : session.ranks) {
    auto it = idx_of.find({r.id.restart_count, r.id.rank});
    if (it == idx_of.end()) {
      return Status::Error("session database " + path + " has no rank " +
                           std::to_string(r.id.rank) + " (restart " +
                           std::to_string(r.id.restart_count) + ")");
    }
    st->rank_idx.push_back(it->second);
    st->ids.push_back(r.id);
    st->clocks.push_back(r.clock);
    auto& marks = st->marks.emplace_back();
    for (const MarkRecord& m : r.marks) marks.emplace_back(m.time, m.time);
    auto& gpu = st->gpu_times.emplace_back();
    for (const GpuActivityRecord& g : r.gpu) gpu.emplace_back(g.start, g.end);
    std::set<uint64_t>& keys = st->nccl_keys.emplace_back();
    if (st->version < 2 && r.nccl) {
      for (const NcclCommInfo& c : r.nccl->communicators) keys.insert(NcclCommKey(c.comm_id));
    }
  }

  // Temporary tables in a file, and a bounded page cache: memory does not grow with the file.
  RETURN_IF_ERROR(st->db.Exec(
      "PRAGMA temp_store = FILE; PRAGMA cache_size = -2048; PRAGMA temp.cache_size = -2048; "
      "PRAGMA threads = 2;"));
  const std::string& file = st->path();
  const size_t n = session.ranks.size();
  st->collectives.decode = [&file](const Statement& q) {
    return store_rows::CollectiveRow(q, 1, file);
  };
  st->collectives.mend = [keys = &st->nccl_keys](size_t r, CollectiveRecord* c) {
    if ((*keys)[r].count(c->comm_id)) c->source = CollectiveRecord::Source::kNccl;
  };
  st->collectives.key = [](const CollectiveRecord& c) { return c.exit; };
  st->collectives.start = [](const CollectiveRecord& c) { return c.enter; };
  st->collectives.end = st->collectives.key;
  st->collectives.open.resize(n);
  RETURN_IF_ERROR(SetUp(st->db, "collectives", store_rows::CollectiveColumns(st->version),
                        "enter_ns", "exit_ns", true, &st->collectives));
  st->p2p.decode = [&file](const Statement& q) { return store_rows::P2PRow(q, 1, file); };
  st->p2p.key = [](const P2PRecord& p) { return p.exit; };
  st->p2p.start = [](const P2PRecord& p) { return p.enter; };
  st->p2p.end = st->p2p.key;
  st->p2p.open.resize(n);
  RETURN_IF_ERROR(
      SetUp(st->db, "p2p", store_rows::P2PColumns(st->db), "enter_ns", "exit_ns", true, &st->p2p));
  if (store_rows::HasTable(st->db, "mpi_calls")) {
    st->mpi_calls.decode = [&file](const Statement& q) {
      return store_rows::MpiCallRow(q, 1, file);
    };
    st->mpi_calls.key = [](const MpiCallRecord& m) { return m.exit; };
    RETURN_IF_ERROR(SetUp(st->db, "mpi_calls", store_rows::MpiCallColumns(), "enter_ns", "exit_ns",
                          false, &st->mpi_calls));
  }
  st->ranges.decode = [](const Statement& q) -> Result<RangeRecord> {
    return store_rows::RangeRow(q, 1);
  };
  st->ranges.key = [](const RangeRecord& g) { return g.end; };
  st->ranges.start = [](const RangeRecord& g) { return g.start; };
  st->ranges.end = st->ranges.key;
  st->ranges.open.resize(n);
  RETURN_IF_ERROR(
      SetUp(st->db, "ranges", store_rows::RangeColumns(), "start_ns", "end_ns", true, &st->ranges));
  if (store_rows::HasTable(st->db, "gpu_activity")) {
    Result<std::vector<std::string>> names = store_rows::GpuNames(st->db);
    if (!names.ok()) return names.status();
    st->gpu_names = std::move(names).value();
    const std::vector<std::string>* gpu_names = &st->gpu_names;
    st->gpu.decode = [&file, gpu_names](const Statement& q) {
      return store_rows::GpuRow(q, 1, file, *gpu_names);
    };
    // CUPTI activity goes by the window it began in.
    st->gpu.key = [](const GpuActivityRecord& g) { return g.start; };
    RETURN_IF_ERROR(SetUp(st->db, "gpu_activity", store_rows::GpuColumns(), "end_ns", "start_ns",
                          false, &st->gpu));
  }
  return std::unique_ptr<StoredWindows>(new StoredWindows(std::move(st)));
}

Result<WindowPlan> StoredWindows::Plan(const WindowOptions& options) {
  State& st = *state_;
  const std::map<int64_t, size_t> by_idx = st.by_idx();
  const std::string& path = st.path();
  const auto world = static_cast<size_t>(st.world_size);
  PlanBuilder builder(st.rank_idx.size(), options);

  // Which communicator cuts windows: FindAnchors' choice, from each rank's counts.
  std::map<uint64_t, std::set<size_t>> callers;
  std::map<uint64_t, CommUse> uses;
  std::set<size_t> with_collectives;
  Statement counts(
      st.db,
      "SELECT rank_idx, comm_id, comm_size, op, nonblocking, COUNT(*) FROM collectives "
      "GROUP BY rank_idx, comm_id, comm_size, op, nonblocking");
  while (counts.Next()) {
    auto r = by_idx.find(counts.ColumnInt(0));
    if (r == by_idx.end()) continue;
    with_collectives.insert(r->second);
    const auto comm = static_cast<uint64_t>(counts.ColumnInt(1));
    const int64_t op = counts.ColumnInt(3);
    if (op < 0 || op > kMaxCollectiveOp) {
      return Corrupt(path, "collectives.op " + std::to_string(op) + " is not an operation");
    }
    if (counts.ColumnInt(2) != static_cast<int64_t>(world) || world < 2) continue;
    callers[comm].insert(r->second);
    if (AnchorsWindows(static_cast<CollectiveOp>(op), counts.ColumnInt(4) != 0)) {
      uses[comm].anchors += static_cast<size_t>(counts.ColumnInt(5));
    }
  }
  if (!counts.status().ok()) return Corrupt(path, "collectives: " + counts.status().message());
  for (auto& [comm, use] : uses) use.ranks = callers[comm].size();

  if (const std::optional<uint64_t> comm = ChooseWorldComm(uses, with_collectives.size())) {
    WorldAnchors stats;
    Statement span(st.db,
                   "SELECT rank_idx, MAX(seq), MIN(enter_ns), MAX(exit_ns) FROM collectives "
                   "WHERE comm_id = ? GROUP BY rank_idx");
    span.Int(*comm);
    while (span.Next()) {
      auto r = by_idx.find(span.ColumnInt(0));
      if (r == by_idx.end()) continue;
      stats.last_seq = std::max(stats.last_seq, static_cast<uint64_t>(span.ColumnInt(1)));
      stats.first = std::min(stats.first, st.Aligned(r->second, span.ColumnInt(2)));
      stats.last = std::max(stats.last, st.Aligned(r->second, span.ColumnInt(3)));
    }
    if (!span.status().ok()) return Corrupt(path, "collectives: " + span.status().message());
    builder.SetWorld(*comm, stats);

    // Its anchor instances in order; the exits of those the rule cuts at.
    Statement instances(st.db,
                        "SELECT seq, rank_idx, exit_ns, op, nonblocking FROM collectives "
                        "WHERE comm_id = ? ORDER BY seq, rowid");
    instances.Int(*comm);
    std::optional<uint64_t> seq;
    std::vector<std::optional<TimeNs>> exits(st.rank_idx.size());
    auto close = [&] {
      if (seq && builder.CutsAt(*seq)) builder.AddInstanceCut(*seq, exits);
      std::fill(exits.begin(), exits.end(), std::nullopt);
    };
    while (instances.Next()) {
      auto r = by_idx.find(instances.ColumnInt(1));
      if (r == by_idx.end()) continue;
      const auto op = static_cast<CollectiveOp>(instances.ColumnInt(3));
      if (!AnchorsWindows(op, instances.ColumnInt(4) != 0)) continue;
      const auto s = static_cast<uint64_t>(instances.ColumnInt(0));
      if (seq != s) {
        close();
        seq = s;
      }
      exits[r->second] = st.Aligned(r->second, instances.ColumnInt(2));
    }
    if (!instances.status().ok()) {
      return Corrupt(path, "collectives: " + instances.status().message());
    }
    close();
  }

  // The records' span, from each rank's earliest start and latest end of each kind.
  TimeNs first = kMax, last = 0;
  for (const char* table : {"collectives", "p2p", "mpi_calls", "ranges", "gpu_activity"}) {
    if (!store_rows::HasTable(st.db, table)) continue;
    // gpu_activity is indexed as (t0, t1) = (end, start): its key is its start.
    const bool gpu = std::string(table) == "gpu_activity";
    Statement span(
        st.db, (std::string("SELECT rank_idx, ") + (gpu ? "MIN(t1), MAX(t0)" : "MIN(t0), MAX(t1)") +
                " FROM temp.ord_" + table + " GROUP BY rank_idx")
                   .c_str());
    while (span.Next()) {
      auto r = by_idx.find(span.ColumnInt(0));
      if (r == by_idx.end()) continue;
      first = std::min(first, st.Aligned(r->second, span.ColumnInt(1)));
      last = std::max(last, st.Aligned(r->second, span.ColumnInt(2)));
    }
    if (!span.status().ok())
      return Corrupt(path, std::string(table) + ": " + span.status().message());
  }
  if (first == kMax) first = last = 0;
  return std::move(builder).Finish(first, last);
}

Result<std::vector<RankUpload>> StoredWindows::Next(const WindowPlan& plan) {
  State& st = *state_;
  const size_t w = st.next;
  if (w >= plan.size()) {
    return Status::Error("session database " + st.path() + ": no window " + std::to_string(w) +
                         " (the plan has " + std::to_string(plan.size()) + ")");
  }
  ++st.next;
  std::vector<RankUpload> out(st.rank_idx.size());
  size_t open = 0;
  for (size_t r = 0; r < out.size(); ++r) {
    RankUpload& u = out[r];
    const TimeNs cut = plan.cuts[w].at[r];
    const TimeNs prev = w == 0 ? kMin : plan.cuts[w - 1].at[r];
    u.cut = cut;
    u.records.id = st.ids[r];
    RETURN_IF_ERROR(ReadMembers(st, r, prev, cut, st.collectives, &u.records.collectives,
                                &u.index.collectives));
    RETURN_IF_ERROR(ReadMembers(st, r, prev, cut, st.p2p, &u.records.p2p, &u.index.p2p));
    RETURN_IF_ERROR(
        ReadMembers(st, r, prev, cut, st.mpi_calls, &u.records.mpi_calls, &u.index.mpi_calls));
    RETURN_IF_ERROR(ReadMembers(st, r, prev, cut, st.ranges, &u.records.ranges, &u.index.ranges));
    RETURN_IF_ERROR(ReadMembers(st, r, prev, cut, st.gpu, &u.records.gpu, &u.index.gpu));
    RETURN_IF_ERROR(UpdateOpen(st, r, prev, cut, st.ranges));
    RETURN_IF_ERROR(UpdateOpen(st, r, prev, cut, st.collectives));
    RETURN_IF_ERROR(UpdateOpen(st, r, prev, cut, st.p2p));
    CopyOpen(st.ranges, r, cut, RangeOpenAtCut, &u.open_ranges, &u.index.open_ranges);
    CopyOpen(st.collectives, r, cut, CollectiveOpenAtCut, &u.open_collectives,
             &u.index.open_collectives);
    CopyOpen(st.p2p, r, cut, CallOpenAtCut, &u.open_p2p, &u.index.open_p2p);
    open += u.open_ranges.size() + u.open_collectives.size() + u.open_p2p.size();
  }
  st.peak_open = std::max(st.peak_open, open);
  return out;
}

void StoredWindows::Rewind() {
  State& st = *state_;
  st.next = 0;
  auto clear = [](auto& kind) {
    for (auto& of_rank : kind.open) of_rank.clear();
  };
  clear(st.collectives);
  clear(st.p2p);
  clear(st.mpi_calls);
  clear(st.ranges);
  clear(st.gpu);
}

Result<RecordFacts> StoredWindows::Facts() {
  State& st = *state_;
  const std::map<int64_t, size_t> by_idx = st.by_idx();
  RecordFacts out;
  out.ranks.resize(st.rank_idx.size());
  const std::pair<const char*, size_t RankRecordFacts::*> tables[] = {
      {"collectives", &RankRecordFacts::collectives},
      {"p2p", &RankRecordFacts::p2p},
      {"mpi_calls", &RankRecordFacts::mpi_calls},
      {"ranges", &RankRecordFacts::ranges}};
  for (const auto& [table, count] : tables) {
    if (!store_rows::HasTable(st.db, table)) continue;
    Statement q(
        st.db,
        ("SELECT rank_idx, COUNT(*) FROM " + std::string(table) + " GROUP BY rank_idx").c_str());
    while (q.Next()) {
      auto r = by_idx.find(q.ColumnInt(0));
      if (r != by_idx.end()) out.ranks[r->second].*count = static_cast<size_t>(q.ColumnInt(1));
    }
    if (!q.status().ok())
      return Corrupt(st.path(), std::string(table) + ": " + q.status().message());
  }
  for (size_t r = 0; r < out.ranks.size(); ++r) {
    out.ranks[r].marks = st.marks[r].size();
    out.ranks[r].gpu = st.gpu_times[r].size();
  }
  // NVTX time by name and the step ranges, each range in coordinator time.
  Statement q(st.db, "SELECT rank_idx, name, start_ns, end_ns, depth FROM ranges ORDER BY rowid");
  RangeRecord range;
  while (q.Next()) {
    auto r = by_idx.find(q.ColumnInt(0));
    if (r == by_idx.end()) continue;
    range.name = q.ColumnText(1);
    range.start = st.Aligned(r->second, q.ColumnInt(2));
    range.end = st.Aligned(r->second, q.ColumnInt(3));
    range.depth = static_cast<uint32_t>(q.ColumnInt(4));
    RankRecordFacts& f = out.ranks[r->second];
    f.range_time[range.name] += std::max<DurationNs>(0, range.end - range.start);
    if (IsStepRange(range)) f.steps.emplace_back(range.start, range.end);
  }
  if (!q.status().ok()) return Corrupt(st.path(), "ranges: " + q.status().message());
  for (RankRecordFacts& f : out.ranks) {
    std::sort(f.steps.begin(), f.steps.end());
    if (f.steps.size() < 2) f.steps.clear();
  }
  return out;
}

Status StoredWindows::ForEachEvent(const TraceEventFn& fn) {
  State& st = *state_;
  const std::map<int64_t, size_t> by_idx = st.by_idx();
  const std::pair<const char*, const char*> tables[] = {{"ranges", "start_ns, end_ns"},
                                                        {"collectives", "enter_ns, exit_ns"},
                                                        {"p2p", "enter_ns, exit_ns"}};
  for (const auto& [table, times] : tables) {
    if (!store_rows::HasTable(st.db, table)) continue;
    Statement q(st.db, ("SELECT rank_idx, " + std::string(times) + " FROM " + table).c_str());
    while (q.Next()) {
      auto r = by_idx.find(q.ColumnInt(0));
      if (r == by_idx.end()) continue;
      fn(st.Aligned(r->second, q.ColumnInt(1)), st.Aligned(r->second, q.ColumnInt(2)));
    }
    if (!q.status().ok())
      return Corrupt(st.path(), std::string(table) + ": " + q.status().message());
  }
  for (const auto* held : {&st.gpu_times, &st.marks}) {
    for (const auto& of_rank : *held) {
      for (const auto& [start, end] : of_rank) fn(start, end);
    }
  }
  return Status::Ok();
}

namespace {

// Fills kind.stats with one pass over the kind's index, the first time it is asked for.
template <typename Record>
Status ReadStats(const StoredWindows::State& st, Kind<Record>& kind) {
  if (kind.stats) return Status::Ok();
  std::map<int64_t, RowStats> stats;
  if (kind.all) {
    Statement q(st.db, ("SELECT rank_idx, COUNT(*), MAX(t1 - t0), MAX(t0 - t1) FROM temp.ord_" +
                        kind.table + " GROUP BY rank_idx")
                           .c_str());
    while (q.Next()) {
      stats[q.ColumnInt(0)] = {static_cast<size_t>(q.ColumnInt(1)),
                               std::max<DurationNs>(q.ColumnInt(2), 0),
                               std::max<DurationNs>(q.ColumnInt(3), 0)};
    }
    if (!q.status().ok()) return Corrupt(st.path(), kind.table + ": " + q.status().message());
  }
  kind.stats = std::move(stats);
  return Status::Ok();
}

// kind.stats of rank r (none: no rows).
template <typename Record>
RowStats StatsOf(const StoredWindows::State& st, const Kind<Record>& kind, size_t r) {
  auto it = kind.stats->find(st.rank_idx[r]);
  return it == kind.stats->end() ? RowStats{} : it->second;
}

// Rank r's records of `kind` overlapping `spans` (all of them without), in its order. With
// spans, only the rows that end within a span's reach are read (the ending-time index), not
// the rank's every row (RowStats).
template <typename Record>
Status HoldKind(const StoredWindows::State& st, size_t r,
                const std::optional<StoredWindows::Spans>& spans, Kind<Record>& kind,
                std::vector<Record>* records, std::vector<size_t>* indices) {
  if (!kind.all) return Status::Ok();
  if (!spans) {
    return ReadRows(st, r, kind, *kind.all, {}, [&](size_t i, Record record) {
      records->push_back(std::move(record));
      if (indices != nullptr) indices->push_back(i);
    });
  }
  auto overlaps = [&](const Record& record) {
    const TimeNs start = kind.start(record);
    const TimeNs end = std::max(start, kind.end(record));
    auto it = std::lower_bound(spans->begin(), spans->end(), start,
                               [](const auto& span, TimeNs t) { return span.second < t; });
    return it != spans->end() && it->first <= end;
  };
  RETURN_IF_ERROR(ReadStats(st, kind));
  const RowStats reach = StatsOf(st, kind, r);
  // Local durations differ from coordinator ones by the drift (under 0.1 %): a thousandth more.
  const DurationNs after = SaturatingAdd(reach.after, reach.after / 1000 + 1);
  const DurationNs before = SaturatingAdd(reach.before, reach.before / 1000 + 1);
  std::vector<std::pair<size_t, Record>> held;
  for (const auto& [a, b] : *spans) {
    const TimeNs lo = SaturatingAdd(st.Local(r, a), -SaturatingAdd(before, st.margin() + 1));
    const TimeNs hi = SaturatingAdd(SaturatingAdd(st.Local(r, b), after), st.margin());
    RETURN_IF_ERROR(ReadRows(st, r, kind, *kind.members, {lo, hi}, [&](size_t i, Record record) {
      if (overlaps(record)) held.emplace_back(i, std::move(record));
    }));
  }
  // A row that overlaps two spans, or whose reach does, was read twice.
  std::stable_sort(held.begin(), held.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  for (size_t k = 0; k < held.size(); ++k) {
    if (k > 0 && held[k].first == held[k - 1].first) continue;
    records->push_back(std::move(held[k].second));
    if (indices != nullptr) indices->push_back(held[k].first);
  }
  return Status::Ok();
}

}  // namespace

Status StoredWindows::Hold(const std::optional<Spans>& spans, Session* session,
                           std::vector<std::vector<size_t>>* p2p_index) {
  State& st = *state_;
  if (session->ranks.size() != st.rank_idx.size()) {
    return Status::Error("session database " + st.path() + ": the session to fill has " +
                         std::to_string(session->ranks.size()) + " ranks, the reader " +
                         std::to_string(st.rank_idx.size()));
  }
  p2p_index->assign(st.rank_idx.size(), {});
  for (size_t r = 0; r < st.rank_idx.size(); ++r) {
    RankData& rank = session->ranks[r];
    rank.collectives.clear();
    rank.p2p.clear();
    rank.ranges.clear();
    RETURN_IF_ERROR(HoldKind(st, r, spans, st.collectives, &rank.collectives, nullptr));
    RETURN_IF_ERROR(HoldKind(st, r, spans, st.p2p, &rank.p2p, &(*p2p_index)[r]));
    RETURN_IF_ERROR(HoldKind(st, r, spans, st.ranges, &rank.ranges, nullptr));
    // Held until the writers are done, when memory peaks: no room left from the vectors' growth.
    rank.collectives.shrink_to_fit();
    rank.p2p.shrink_to_fit();
    rank.ranges.shrink_to_fit();
    (*p2p_index)[r].shrink_to_fit();
  }
  return Status::Ok();
}

Result<std::vector<StoredWindows::RowCounts>> StoredWindows::CountRows() {
  State& st = *state_;
  RETURN_IF_ERROR(ReadStats(st, st.collectives));
  RETURN_IF_ERROR(ReadStats(st, st.p2p));
  RETURN_IF_ERROR(ReadStats(st, st.mpi_calls));
  std::vector<RowCounts> out;
  for (size_t r = 0; r < st.rank_idx.size(); ++r) {
    out.push_back({StatsOf(st, st.collectives, r).count, StatsOf(st, st.p2p, r).count,
                   StatsOf(st, st.mpi_calls, r).count});
  }
  return out;
}

size_t StoredWindows::peak_open() const { return state_->peak_open; }

}  // namespace rankscope
