#include "coordinator/report/store_rows.h"

namespace rankscope::store_rows {

using sqlite::Connection;
using sqlite::Statement;

Status Corrupt(const std::string& path, const std::string& what) {
  return Status::Error("session database " + path + " is corrupt: " + what);
}

bool HasTable(const Connection& db, const char* table) {
  Statement q(db, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?");
  q.Text(table);
  return q.Next() && q.ColumnInt(0) > 0;
}

bool HasColumn(const Connection& db, const char* table, const char* column) {
  Statement q(db, "SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?");
  q.Text(table).Text(column);
  return q.Next() && q.ColumnInt(0) > 0;
}

std::string CollectiveColumns(int version) {
  return std::string(
             "comm_id, seq, op, nonblocking, root, comm_size, comm_rank, bytes, enter_ns, "
             "exit_ns, tid, ") +
         (version >= 3   ? "source, launched_ns"
          : version >= 2 ? "source, 0"
                         : "0, 0");
}

Result<CollectiveRecord> CollectiveRow(const Statement& q, int first, const std::string& path) {
  const int64_t op = q.ColumnInt(first + 2);
  if (op < 0 || op > kMaxCollectiveOp) {
    return Corrupt(path, "collectives.op " + std::to_string(op) + " is not an operation");
  }
  CollectiveRecord c;
  c.comm_id = static_cast<uint64_t>(q.ColumnInt(first));
  c.seq = static_cast<uint64_t>(q.ColumnInt(first + 1));
  c.op = static_cast<CollectiveOp>(op);
  c.nonblocking = q.ColumnInt(first + 3) != 0;
  c.root = static_cast<int32_t>(q.ColumnInt(first + 4));
  c.comm_size = static_cast<int32_t>(q.ColumnInt(first + 5));
  c.comm_rank = static_cast<int32_t>(q.ColumnInt(first + 6));
  c.bytes = q.ColumnInt(first + 7);
  c.enter = q.ColumnInt(first + 8);
  c.exit = q.ColumnInt(first + 9);
  c.tid = static_cast<uint32_t>(q.ColumnInt(first + 10));
  const int64_t source = q.ColumnInt(first + 11);
  if (source != 0 && source != 1) {
    return Corrupt(path, "collectives.source " + std::to_string(source) + " is not 0 or 1");
  }
  c.source = static_cast<CollectiveRecord::Source>(source);
  c.launched = q.ColumnInt(first + 12);
  return c;
}

std::string P2PColumns(const Connection& db) {
  // p2p.world_peer and table mpi_calls came within schema version 3 (old readers skip them): a
  // file written before has neither, and its peers stay unknown as world ranks.
  // p2p.spin_start_ns came later within it; without it the chains read each record's enter.
  return std::string("kind, completed, peer, tag, comm_id, bytes, enter_ns, exit_ns, tid, ") +
         (HasColumn(db, "p2p", "world_peer") ? "world_peer, " : "-1, ") +
         (HasColumn(db, "p2p", "spin_start_ns") ? "spin_start_ns" : "0");
}

Result<P2PRecord> P2PRow(const Statement& q, int first, const std::string& path) {
  const int64_t kind = q.ColumnInt(first);
  const int64_t completed = q.ColumnInt(first + 1);
  auto valid = [](int64_t k) { return k >= static_cast<int>(P2PKind::kSend) && k <= kMaxP2PKind; };
  if (!valid(kind) || !valid(completed)) {
    return Corrupt(path, "p2p.kind " + std::to_string(kind) + "/" + std::to_string(completed) +
                             " is not a p2p kind");
  }
  P2PRecord p;
  p.kind = static_cast<P2PKind>(kind);
  p.completed = static_cast<P2PKind>(completed);
  p.peer = static_cast<int32_t>(q.ColumnInt(first + 2));
  p.tag = static_cast<int32_t>(q.ColumnInt(first + 3));
  p.comm_id = static_cast<uint64_t>(q.ColumnInt(first + 4));
  p.bytes = q.ColumnInt(first + 5);
  p.enter = q.ColumnInt(first + 6);
  p.exit = q.ColumnInt(first + 7);
  p.tid = static_cast<uint32_t>(q.ColumnInt(first + 8));
  p.world_peer =
      q.ColumnIsNull(first + 9) ? kUnknownWorldPeer : static_cast<int32_t>(q.ColumnInt(first + 9));
  p.spin_start = q.ColumnIsNull(first + 10) ? 0 : q.ColumnInt(first + 10);
  return p;
}

std::string MpiCallColumns() { return "call, comm_id, peer, bytes, enter_ns, exit_ns, tid"; }

Result<MpiCallRecord> MpiCallRow(const Statement& q, int first, const std::string& path) {
  const int64_t call = q.ColumnInt(first);
  if (call < 0 || call > kMaxMpiCall) {
    return Corrupt(path, "mpi_calls.call " + std::to_string(call) + " is not an MPI call");
  }
  MpiCallRecord m;
  m.call = static_cast<MpiCall>(call);
  m.comm_id = static_cast<uint64_t>(q.ColumnInt(first + 1));
  m.peer = static_cast<int32_t>(q.ColumnInt(first + 2));
  m.bytes = q.ColumnInt(first + 3);
  m.enter = q.ColumnInt(first + 4);
  m.exit = q.ColumnInt(first + 5);
  m.tid = static_cast<uint32_t>(q.ColumnInt(first + 6));
  return m;
}

std::string RangeColumns() { return "domain, name, start_ns, end_ns, tid, depth"; }

RangeRecord RangeRow(const Statement& q, int first) {
  return {q.ColumnText(first),
          q.ColumnText(first + 1),
          q.ColumnInt(first + 2),
          q.ColumnInt(first + 3),
          static_cast<uint32_t>(q.ColumnInt(first + 4)),
          static_cast<uint32_t>(q.ColumnInt(first + 5))};
}

Result<std::vector<std::string>> GpuNames(const Connection& db) {
  std::vector<std::string> names;
  Statement q(db, "SELECT id, name FROM gpu_names ORDER BY id");
  while (q.Next()) {
    if (q.ColumnInt(0) != static_cast<int64_t>(names.size())) {
      return Corrupt(db.path(), "gpu_names ids are not 0, 1, 2, ...");
    }
    names.push_back(q.ColumnText(1));
  }
  if (!q.status().ok()) return Corrupt(db.path(), q.status().message());
  return names;
}

std::string GpuColumns() {
  return "kind, device, context, stream, correlation_id, start_ns, end_ns, bytes, copy_kind, "
         "sync_kind, tid, grid_x, grid_y, grid_z, block_x, block_y, block_z, name_id";
}

Result<GpuActivityRecord> GpuRow(const Statement& q, int first, const std::string& path,
                                 const std::vector<std::string>& names) {
  const int64_t kind = q.ColumnInt(first);
  const int64_t name_id = q.ColumnInt(first + 17);
  if (kind < 1 || kind > kMaxGpuActivityKind) {
    return Corrupt(path, "gpu_activity.kind " + std::to_string(kind) + " is not a kind");
  }
  if (name_id < 0 || name_id >= static_cast<int64_t>(names.size())) {
    return Corrupt(
        path, "gpu_activity.name_id " + std::to_string(name_id) + " is not in table gpu_names");
  }
  GpuActivityRecord g;
  g.kind = static_cast<GpuActivityKind>(kind);
  g.device = static_cast<uint32_t>(q.ColumnInt(first + 1));
  g.context = static_cast<uint32_t>(q.ColumnInt(first + 2));
  g.stream = static_cast<uint32_t>(q.ColumnInt(first + 3));
  g.correlation_id = static_cast<uint32_t>(q.ColumnInt(first + 4));
  g.start = q.ColumnInt(first + 5);
  g.end = q.ColumnInt(first + 6);
  g.bytes = q.ColumnInt(first + 7);
  g.copy_kind = static_cast<uint8_t>(q.ColumnInt(first + 8));
  g.sync_kind = static_cast<uint8_t>(q.ColumnInt(first + 9));
  g.tid = static_cast<uint32_t>(q.ColumnInt(first + 10));
  for (int i = 0; i < 3; ++i) {
    g.grid[i] = static_cast<int32_t>(q.ColumnInt(first + 11 + i));
    g.block[i] = static_cast<int32_t>(q.ColumnInt(first + 14 + i));
  }
  g.name = names[static_cast<size_t>(name_id)];
  return g;
}

std::string GpuStatsColumns() {
  return "window_start_ns, window_ns, kind, device, stream, sub_kind, name_id, count, total_ns, "
         "min_ns, p50_ns, max_ns, bytes";
}

Result<GpuStats> GpuStatsRow(const Statement& q, int first, const std::string& path,
                             const std::vector<std::string>& names) {
  const int64_t kind = q.ColumnInt(first + 2);
  const int64_t name_id = q.ColumnInt(first + 6);
  if (kind < 1 || kind > kMaxGpuActivityKind) {
    return Corrupt(path, "gpu_stats.kind " + std::to_string(kind) + " is not a kind");
  }
  if (name_id < 0 || name_id >= static_cast<int64_t>(names.size())) {
    return Corrupt(path,
                   "gpu_stats.name_id " + std::to_string(name_id) + " is not in table gpu_names");
  }
  GpuStats g;
  g.window_start = q.ColumnInt(first);
  g.window = q.ColumnInt(first + 1);
  g.key.kind = static_cast<GpuActivityKind>(kind);
  g.key.device = static_cast<uint32_t>(q.ColumnInt(first + 3));
  g.key.stream = static_cast<uint32_t>(q.ColumnInt(first + 4));
  g.key.sub_kind = static_cast<uint8_t>(q.ColumnInt(first + 5));
  g.key.name = names[static_cast<size_t>(name_id)];
  g.count = q.ColumnInt(first + 7);
  g.total = q.ColumnInt(first + 8);
  g.min = q.ColumnInt(first + 9);
  g.p50 = q.ColumnInt(first + 10);
  g.max = q.ColumnInt(first + 11);
  g.bytes = q.ColumnInt(first + 12);
  return g;
}

}  // namespace rankscope::store_rows
