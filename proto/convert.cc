#include "proto/convert.h"

#include <algorithm>

#include "core/utf8.h"

namespace rankscope {

std::string ToText(const std::string& wire) { return ValidUtf8(wire); }

void ToProto(const CollectiveRecord& r, v1::Collective* out) {
  out->set_comm_id(r.comm_id);
  out->set_seq(r.seq);
  out->set_op(static_cast<uint32_t>(r.op));
  out->set_nonblocking(r.nonblocking);
  out->set_root(r.root);
  out->set_comm_size(r.comm_size);
  out->set_comm_rank(r.comm_rank);
  out->set_bytes(r.bytes);
  out->set_enter(r.enter);
  out->set_exit(r.exit);
  out->set_tid(r.tid);
}

void ToProto(const P2PRecord& r, v1::P2P* out) {
  out->set_kind(static_cast<uint32_t>(r.kind));
  out->set_completed(static_cast<uint32_t>(r.completed));
  out->set_peer(r.peer);
  out->set_tag(r.tag);
  out->set_comm_id(r.comm_id);
  out->set_bytes(r.bytes);
  out->set_enter(r.enter);
  out->set_exit(r.exit);
  out->set_tid(r.tid);
  if (r.world_peer != kUnknownWorldPeer) out->set_world_peer(r.world_peer);
  if (r.spin_start != 0) out->set_spin_start(r.spin_start);
}

void ToProto(const MpiCallRecord& r, v1::MpiCall* out) {
  out->set_call(static_cast<uint32_t>(r.call));
  out->set_comm_id(r.comm_id);
  out->set_peer(r.peer);
  out->set_bytes(r.bytes);
  out->set_enter(r.enter);
  out->set_exit(r.exit);
  out->set_tid(r.tid);
}

bool FromProto(const v1::MpiCall& p, MpiCallRecord* out) {
  const bool known = p.call() <= static_cast<uint32_t>(kMaxMpiCall);
  out->call = known ? static_cast<MpiCall>(p.call()) : MpiCall::kUnknown;
  out->comm_id = p.comm_id();
  out->peer = p.peer();
  out->bytes = p.bytes();
  out->enter = p.enter();
  out->exit = p.exit();
  out->tid = p.tid();
  return known;
}

void ToProto(const RangeRecord& r, v1::Range* out) {
  out->set_domain(r.domain);
  out->set_name(r.name);
  out->set_start(r.start);
  out->set_end(r.end);
  out->set_tid(r.tid);
  out->set_depth(r.depth);
}

void ToProto(const MarkRecord& r, v1::Mark* out) {
  out->set_domain(r.domain);
  out->set_name(r.name);
  out->set_time(r.time);
  out->set_tid(r.tid);
}

void ToProto(const ClockSample& s, v1::ClockSample* out) {
  out->set_t1(s.t1);
  out->set_t2(s.t2);
  out->set_t3(s.t3);
  out->set_t4(s.t4);
}

bool FromProto(const v1::Collective& p, CollectiveRecord* out) {
  bool known = p.op() <= static_cast<uint32_t>(kMaxCollectiveOp);
  out->comm_id = p.comm_id();
  out->seq = p.seq();
  out->op = known ? static_cast<CollectiveOp>(p.op()) : CollectiveOp::kUnknown;
  out->nonblocking = p.nonblocking();
  out->root = p.root();
  out->comm_size = p.comm_size();
  out->comm_rank = p.comm_rank();
  out->bytes = p.bytes();
  out->enter = p.enter();
  out->exit = p.exit();
  out->tid = p.tid();
  return known;
}

bool FromProto(const v1::P2P& p, P2PRecord* out) {
  auto kind_of = [](uint32_t k, bool* ok) {
    if (k >= 1 && k <= static_cast<uint32_t>(kMaxP2PKind)) return static_cast<P2PKind>(k);
    *ok = false;
    return P2PKind::kSend;
  };
  bool ok = true;
  out->kind = kind_of(p.kind(), &ok);
  out->completed = kind_of(p.completed(), &ok);
  out->peer = p.peer();
  out->tag = p.tag();
  out->comm_id = p.comm_id();
  out->bytes = p.bytes();
  out->enter = p.enter();
  out->exit = p.exit();
  out->tid = p.tid();
  out->world_peer = p.has_world_peer() ? p.world_peer() : kUnknownWorldPeer;
  out->spin_start = p.spin_start();
  return ok;
}

RangeRecord FromProto(const v1::Range& p) {
  return RangeRecord{ToText(p.domain()), ToText(p.name()), p.start(), p.end(), p.tid(), p.depth()};
}

MarkRecord FromProto(const v1::Mark& p) {
  return MarkRecord{ToText(p.domain()), ToText(p.name()), p.time(), p.tid()};
}

ClockSample FromProto(const v1::ClockSample& p) {
  return ClockSample{p.t1(), p.t2(), p.t3(), p.t4()};
}

void ToProto(const GpuActivityRecord& r, v1::GpuActivity* out) {
  out->set_kind(static_cast<uint32_t>(r.kind));
  out->set_device(r.device);
  out->set_context(r.context);
  out->set_stream(r.stream);
  out->set_correlation_id(r.correlation_id);
  out->set_start(r.start);
  out->set_end(r.end);
  out->set_bytes(r.bytes);
  out->set_copy_kind(r.copy_kind);
  out->set_sync_kind(r.sync_kind);
  out->set_tid(r.tid);
  if (r.kind == GpuActivityKind::kKernel) {
    for (int v : r.grid) out->add_grid(v);
    for (int v : r.block) out->add_block(v);
  }
  out->set_name(r.name);
}

bool FromProto(const v1::GpuActivity& p, GpuActivityRecord* out) {
  if (p.kind() < 1 || p.kind() > kMaxGpuActivityKind) return false;
  out->kind = static_cast<GpuActivityKind>(p.kind());
  out->device = p.device();
  out->context = p.context();
  out->stream = p.stream();
  out->correlation_id = p.correlation_id();
  out->start = p.start();
  out->end = p.end();
  out->bytes = p.bytes();
  out->copy_kind = static_cast<uint8_t>(p.copy_kind());
  out->sync_kind = static_cast<uint8_t>(p.sync_kind());
  out->tid = p.tid();
  for (int i = 0; i < 3 && i < p.grid_size(); ++i) out->grid[i] = p.grid(i);
  for (int i = 0; i < 3 && i < p.block_size(); ++i) out->block[i] = p.block(i);
  out->name = ToText(p.name());
  return true;
}

void ToProto(const GpuStats& s, v1::GpuStats* out) {
  out->set_window_start(s.window_start);
  out->set_window(s.window);
  out->set_kind(static_cast<uint32_t>(s.key.kind));
  out->set_device(s.key.device);
  out->set_stream(s.key.stream);
  out->set_sub_kind(s.key.sub_kind);
  out->set_name(s.key.name);
  out->set_count(s.count);
  out->set_total(s.total);
  out->set_min(s.min);
  out->set_p50(s.p50);
  out->set_max(s.max);
  out->set_bytes(s.bytes);
}

bool FromProto(const v1::GpuStats& p, GpuStats* out) {
  if (p.kind() < 1 || p.kind() > kMaxGpuActivityKind) return false;
  out->window_start = p.window_start();
  out->window = p.window();
  out->key.kind = static_cast<GpuActivityKind>(p.kind());
  out->key.device = p.device();
  out->key.stream = p.stream();
  out->key.sub_kind = static_cast<uint8_t>(p.sub_kind());
  out->key.name = ToText(p.name());
  out->count = p.count();
  out->total = p.total();
  out->min = p.min();
  out->p50 = p.p50();
  out->max = p.max();
  out->bytes = p.bytes();
  return true;
}

void ToProto(const LaunchLatency& l, v1::LaunchLatency* out) {
  out->set_window_start(l.window_start);
  out->set_window(l.window);
  for (const LatencyBucketCount& b : l.buckets) {
    out->add_bucket(b.bucket);
    out->add_count(b.count);
    out->add_sum(b.sum);
  }
}

bool FromProto(const v1::LaunchLatency& p, LaunchLatency* out) {
  if (p.count_size() != p.bucket_size() || p.sum_size() != p.bucket_size()) return false;
  out->window_start = p.window_start();
  out->window = p.window();
  out->buckets.clear();
  for (int i = 0; i < p.bucket_size(); ++i) {
    if (i > 0 && p.bucket(i) <= p.bucket(i - 1)) return false;
    out->buckets.push_back({p.bucket(i), p.count(i), p.sum(i)});
  }
  return true;
}

void ToProto(const KernelPiece& k, v1::KernelPiece* out) {
  out->set_from(k.from);
  out->set_to(k.to);
  out->set_name(k.name);
  out->set_time(k.time);
}

bool FromProto(const v1::KernelPiece& p, KernelPiece* out) {
  if (p.to() < p.from()) return false;
  out->from = p.from();
  out->to = p.to();
  out->name = ToText(p.name());
  out->time = p.time();
  return true;
}

void ToProto(const std::pair<TimeNs, TimeNs>& span, v1::ComputeSpan* out) {
  out->set_from(span.first);
  out->set_to(span.second);
}

bool FromProto(const v1::ComputeSpan& p, std::pair<TimeNs, TimeNs>* out) {
  if (p.to() < p.from()) return false;
  *out = {p.from(), p.to()};
  return true;
}

MainThreadStates FromProto(const v1::MainThreadStates& m) {
  MainThreadStates s;
  s.samples = m.samples();
  s.running = m.running();
  s.stopped = m.stopped();
  for (const auto& [where, n] : m.blocked_in()) s.blocked_in[ToText(where)] = n;
  return s;
}

v1::OpenMpiCall ToProto(const OpenCall& call, TimeNs now) {
  v1::OpenMpiCall p;
  p.set_inside_ns(std::max<TimeNs>(0, now - static_cast<TimeNs>(call.enter_ns)));
  p.set_enter_ns(static_cast<int64_t>(call.enter_ns));
  p.set_collective(call.kind == OpenCallKind::kCollective);
  p.set_op(call.op);
  p.set_comm_id(call.comm_id);
  p.set_seq(call.seq);
  p.set_comm_size(call.comm_size);
  p.set_peer(call.peer);
  p.set_polling(call.poll_ns != 0);
  return p;
}

v1::ProcessStats ToProto(const ProcessTreeStats& s) {
  v1::ProcessStats out;
  out.set_rchar(s.rchar);
  out.set_wchar(s.wchar);
  out.set_read_bytes(s.read_bytes);
  out.set_write_bytes(s.write_bytes);
  out.set_cpu_user_ns(s.cpu_user_ns);
  out.set_cpu_system_ns(s.cpu_system_ns);
  out.set_blkio_delay_ns(s.blkio_delay_ns);
  out.set_processes(s.processes);
  out.set_samples(s.samples);
  out.set_io_unreadable(s.io_unreadable);
  out.set_sched_cpu_ns(s.sched_cpu_ns);
  out.set_run_delay_ns(s.run_delay_ns);
  out.set_voluntary_switches(s.voluntary_switches);
  out.set_involuntary_switches(s.involuntary_switches);
  out.set_threads(s.threads);
  out.set_sched_unreadable(s.sched_unreadable);
  out.set_sampled_wall_ns(s.sampled_wall_ns);
  if (s.main_thread.samples > 0) {
    v1::MainThreadStates* m = out.mutable_main_thread();
    m->set_samples(s.main_thread.samples);
    m->set_running(s.main_thread.running);
    m->set_stopped(s.main_thread.stopped);
    for (const auto& [where, n] : s.main_thread.blocked_in)
      (*m->mutable_blocked_in())[ValidUtf8(where)] = n;
  }
  if (s.cpu_cgroup) {
    const CpuCgroupStats& c = *s.cpu_cgroup;
    v1::CpuCgroup* cg = out.mutable_cpu_cgroup();
    cg->set_version(c.version);
    cg->set_path(c.path);
    cg->set_limit_path(c.limit_path);
    cg->set_quota_us(c.quota_us);
    cg->set_period_us(c.period_us);
    cg->set_nr_periods(c.nr_periods);
    cg->set_nr_throttled(c.nr_throttled);
    cg->set_throttled_ns(c.throttled_ns);
    cg->set_counters_unreadable(c.counters_unreadable);
  }
  return out;
}

ProcessTreeStats FromProto(const v1::ProcessStats& p) {
  ProcessTreeStats s;
  s.rchar = p.rchar();
  s.wchar = p.wchar();
  s.read_bytes = p.read_bytes();
  s.write_bytes = p.write_bytes();
  s.cpu_user_ns = p.cpu_user_ns();
  s.cpu_system_ns = p.cpu_system_ns();
  s.blkio_delay_ns = p.blkio_delay_ns();
  s.processes = p.processes();
  s.samples = p.samples();
  s.io_unreadable = p.io_unreadable();
  s.sched_cpu_ns = p.sched_cpu_ns();
  s.run_delay_ns = p.run_delay_ns();
  s.voluntary_switches = p.voluntary_switches();
  s.involuntary_switches = p.involuntary_switches();
  s.threads = p.threads();
  s.sched_unreadable = p.sched_unreadable();
  s.sampled_wall_ns = p.sampled_wall_ns();
  if (p.has_main_thread()) s.main_thread = FromProto(p.main_thread());
  if (p.has_cpu_cgroup()) {
    const v1::CpuCgroup& cg = p.cpu_cgroup();
    CpuCgroupStats c;
    c.version = cg.version();
    c.path = ToText(cg.path());
    c.limit_path = ToText(cg.limit_path());
    c.quota_us = cg.quota_us();
    c.period_us = cg.period_us();
    c.nr_periods = cg.nr_periods();
    c.nr_throttled = cg.nr_throttled();
    c.throttled_ns = cg.throttled_ns();
    c.counters_unreadable = cg.counters_unreadable();
    s.cpu_cgroup = std::move(c);
  }
  return s;
}

v1::NvmlReport ToProto(const Result<NvmlSnapshot>& snapshot) {
  v1::NvmlReport out;
  if (!snapshot.ok()) {
    out.set_error(snapshot.status().message());
    return out;
  }
  out.set_driver_version(snapshot->driver_version);
  for (const NvmlGpu& g : snapshot->gpus) {
    v1::NvmlGpu* p = out.add_gpus();
    p->set_index(g.index);
    p->set_name(g.name);
    p->set_uuid(g.uuid);
    p->set_bus_id(g.bus_id);
    p->set_pcie_gen_current(g.pcie_gen_current);
    p->set_pcie_gen_max(g.pcie_gen_max);
    p->set_pcie_width_current(g.pcie_width_current);
    p->set_pcie_width_max(g.pcie_width_max);
    p->set_nvlinks_up(g.nvlinks_up);
    p->set_nvlinks_total(g.nvlinks_total);
    p->set_memory_bytes(g.memory_bytes);
  }
  return out;
}

Result<NvmlSnapshot> FromProto(const v1::NvmlReport& p) {
  if (!p.error().empty()) return Result<NvmlSnapshot>::Error(ToText(p.error()));
  NvmlSnapshot snapshot;
  snapshot.driver_version = ToText(p.driver_version());
  for (const v1::NvmlGpu& g : p.gpus()) {
    snapshot.gpus.push_back({g.index(), ToText(g.name()), ToText(g.uuid()), ToText(g.bus_id()),
                             g.pcie_gen_current(), g.pcie_gen_max(), g.pcie_width_current(),
                             g.pcie_width_max(), g.nvlinks_up(), g.nvlinks_total(),
                             g.memory_bytes()});
  }
  return snapshot;
}

v1::SweepCheck ToProto(const SweepCheckResult& r) {
  v1::SweepCheck p;
  p.set_name(r.name);
  p.set_subject(r.subject);
  p.set_value(r.value);
  p.set_unit(r.unit);
  p.set_error(r.error);
  p.set_detail(r.detail);
  p.set_model(r.model);
  return p;
}

SweepCheckResult FromProto(const v1::SweepCheck& p) {
  return SweepCheckResult{ToText(p.name()), ToText(p.subject()), p.value(),
                          ToText(p.unit()), ToText(p.error()),   ToText(p.detail()),
                          ToText(p.model())};
}

namespace {

// Model enums and their wire forms: the same values (an op, a transport kind), or NCCL's code
// + 1 (a data type, an algorithm, a protocol: NCCL's own codes start at 0, the wire's 0 is
// "unspecified"). A wire value this build does not know reads as kUnknown.
template <typename Model>
Model FromWire(int wire, int first_code, int last_code, int offset) {
  const int code = wire - offset;
  return code >= first_code && code <= last_code ? static_cast<Model>(code) : Model::kUnknown;
}

v1::NcclTransport ToProto(const NcclTransportInfo& t) {
  v1::NcclTransport out;
  out.set_channel(t.channel);
  out.set_peer(t.peer);
  out.set_kind(static_cast<v1::NcclTransportKind>(t.kind));
  out.set_via(t.via);
  out.set_gdrdma(t.gdrdma);
  if (t.net_dev >= 0) out.set_net_dev(t.net_dev);
  return out;
}

v1::NcclCall ToProto(const NcclCallInfo& c) {
  v1::NcclCall out;
  out.set_comm_id(c.comm_id);
  out.set_seq(c.seq);
  out.set_op(static_cast<v1::NcclOp>(c.op));
  if (c.op == NcclOp::kUnknown) out.set_op_name(c.op_name);
  out.set_count(c.count);
  out.set_datatype(static_cast<v1::NcclDataType>(static_cast<int>(c.datatype) + 1));
  out.set_bytes(c.bytes);
  out.set_root(c.root);
  out.set_algo(static_cast<v1::NcclAlgo>(static_cast<int>(c.algo) + 1));
  out.set_proto(static_cast<v1::NcclProto>(static_cast<int>(c.proto) + 1));
  out.set_channels(c.channels);
  return out;
}

}  // namespace

v1::NcclSummary ToProto(const RankNccl& n) {
  v1::NcclSummary out;
  out.set_nccl_version(n.version);
  out.set_log_file(n.log_file);
  out.set_skipped_lines(n.skipped_lines);
  for (const std::string& p : n.problems) out.add_problems(p);
  for (const NcclCommInfo& c : n.communicators) {
    v1::NcclCommunicator* p = out.add_communicators();
    p->set_comm_id(c.comm_id);
    p->set_rank(c.rank);
    p->set_nranks(c.nranks);
    p->set_nnodes(c.nnodes);
    p->set_channels(c.channels);
    p->set_bus_id(c.bus_id);
    p->set_cuda_dev(c.cuda_dev);
    for (const NcclTransportInfo& t : c.transports) *p->add_transports() = ToProto(t);
    for (int r : c.ring_order) p->add_ring_order(r);
  }
  for (const NcclCallInfo& c : n.calls) *out.add_calls() = ToProto(c);
  return out;
}

RankNccl FromProto(const v1::NcclSummary& p) {
  RankNccl n;
  n.version = ToText(p.nccl_version());
  n.log_file = ToText(p.log_file());
  n.skipped_lines = p.skipped_lines();
  for (const std::string& line : p.problems()) n.problems.push_back(ToText(line));
  for (const v1::NcclCommunicator& c : p.communicators()) {
    NcclCommInfo info{ToText(c.comm_id()), c.rank(),     c.nranks(), c.nnodes(), c.channels(),
                      ToText(c.bus_id()),  c.cuda_dev(), {},         {}};
    for (const v1::NcclTransport& t : c.transports()) {
      info.transports.push_back({t.channel(), t.peer(),
                                 FromWire<NcclTransportKind>(
                                     t.kind(), 0, static_cast<int>(NcclTransportKind::kCollNet), 0),
                                 ToText(t.via()), t.gdrdma(), t.has_net_dev() ? t.net_dev() : -1});
    }
    info.ring_order.assign(c.ring_order().begin(), c.ring_order().end());
    n.communicators.push_back(std::move(info));
  }
  for (const v1::NcclCall& c : p.calls()) {
    NcclCallInfo call;
    call.comm_id = ToText(c.comm_id());
    call.seq = c.seq();
    call.op = FromWire<NcclOp>(c.op(), 0, static_cast<int>(NcclOp::kSendRecv), 0);
    if (call.op == NcclOp::kUnknown) call.op_name = ToText(c.op_name());
    call.count = c.count();
    call.datatype =
        FromWire<NcclDataType>(c.datatype(), 0, static_cast<int>(NcclDataType::kFloat8e5m2), 1);
    call.bytes = c.bytes();
    call.root = c.root();
    call.algo = FromWire<NcclAlgo>(c.algo(), 0, static_cast<int>(NcclAlgo::kPat), 1);
    call.proto = FromWire<NcclProto>(c.proto(), 0, static_cast<int>(NcclProto::kSimple), 1);
    call.channels = c.channels();
    n.calls.push_back(std::move(call));
  }
  return n;
}

v1::Identity ToProto(const RankIdentity& id, const std::string& session_id) {
  v1::Identity out;
  out.set_session_id(session_id);
  out.set_job_id(id.job_id);
  out.set_launcher(id.launcher);
  out.set_rank(id.rank);
  out.set_local_rank(id.local_rank);
  out.set_world_size(id.world_size);
  out.set_node_name(id.node);
  out.set_host(id.host);
  out.set_agent_pid(id.agent_pid);
  out.set_program_pid(id.program_pid);
  out.set_restart_count(id.restart_count);
  for (const std::string& arg : id.program) out.add_program(arg);
  return out;
}

RankIdentity FromProto(const v1::Identity& p) {
  RankIdentity id;
  id.rank = p.rank();
  id.local_rank = p.local_rank();
  id.world_size = p.world_size();
  id.node = ToText(p.node_name());
  id.host = ToText(p.host());
  id.launcher = ToText(p.launcher());
  id.job_id = ToText(p.job_id());
  id.agent_pid = p.agent_pid();
  id.program_pid = p.program_pid();
  id.restart_count = p.restart_count();
  for (const std::string& arg : p.program()) id.program.push_back(ToText(arg));
  return id;
}

}  // namespace rankscope
