#include "coordinator/report/gpu_json.h"

#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "coordinator/nccl_instances.h"
#include "coordinator/node_topologies.h"
#include "core/robust_stats.h"
#include "model/gpu/gpu_stats.h"
#include "model/gpu/launch_latency.h"
#include "model/nccl/bus_bandwidth.h"
#include "model/nccl/nccl_log_parser.h"
#include "model/nccl/nccl_types.h"
#include "model/topology/topology.h"
#include "model/topology/topology_json.h"

namespace rankscope {
namespace {

using nlohmann::json;

// Back-to-back calls: see the shapes' gap_us below.
constexpr DurationNs kMaxBackToBackGap = 50 * kNsPerUs;

struct CommSummary {
  int nranks = -1;
  int nnodes = -1;
  int channels = -1;
  std::set<int> ranks_reporting;
  std::map<std::string, int> transports;
  bool gdrdma = false;
  std::vector<int> ring_order;
  std::map<uint64_t, std::set<int>> ranks_per_seq;
  // Per seq: the call's shape, with algorithm/protocol from whichever rank's log had them.
  std::map<uint64_t, const NcclCallInfo*> call_per_seq;
};

// A rank's launch latencies (kernel start - end of its launch call, by CUPTI correlation id): from
// the agent's per-window histograms where they came whole (its final batch came; within 1 % of
// the records' figures) or where its compute kernels' records are only partly there (summed: the
// rows so far, the run's end missing where the agent did not finish), else from the records.
json LaunchLatencyJson(const RankData& r) {
  if (ReadGpuRows(r) && !r.launch_latency.empty()) {
    const LatencyDistribution d = DistributionOf(r.launch_latency);
    if (d.samples == 0) return nullptr;
    return {{"samples", d.samples}, {"median_ns", d.median}, {"p99_ns", d.p99}};
  }
  std::unordered_map<uint32_t, TimeNs> launch_end;
  for (const GpuActivityRecord& g : r.gpu) {
    if (g.kind == GpuActivityKind::kRuntime && g.correlation_id != 0) {
      launch_end.emplace(g.correlation_id, g.end);
    }
  }
  std::vector<DurationNs> latency;
  for (const GpuActivityRecord& g : r.gpu) {
    if (g.kind != GpuActivityKind::kKernel) continue;
    if (auto it = launch_end.find(g.correlation_id);
        g.correlation_id != 0 && it != launch_end.end()) {
      latency.push_back(g.start - it->second);
    }
  }
  if (latency.empty()) return nullptr;
  const size_t n = latency.size();
  return {{"samples", n},
          {"median_ns", MedianNs(latency)},
          {"p99_ns", QuantileNs(std::move(latency), 0.99)}};
}

}  // namespace

// Kernels, their time (from the agent's per-window sums when there are any: KernelTotals), and
// launch latency: small means the GPU waits for the CPU (launch-bound), large means work queues.
// NCCL collectives' queue time (kernel start - launch) separately. Null without kernels.
json GpuRankJson(const RankData& r) {
  int64_t kernels = 0;
  DurationNs kernel_time = 0;
  for (const auto& [name, t] : KernelTotals(r.gpu, r.gpu_stats, ReadGpuRows(r))) {
    kernels += t.count;
    kernel_time += t.total;
  }
  if (kernels == 0) return nullptr;
  std::vector<DurationNs> nccl_queue;
  for (const CollectiveRecord& c : r.collectives) {
    if (c.source == CollectiveRecord::Source::kNccl && c.launched != 0) {
      nccl_queue.push_back(c.enter - c.launched);
    }
  }
  auto distribution = [](std::vector<DurationNs> v) {
    if (v.empty()) return json(nullptr);
    const size_t n = v.size();
    return json{{"samples", n}, {"median_ns", MedianNs(v)}, {"p99_ns", QuantileNs(v, 0.99)}};
  };
  return {{"kernels", kernels},
          {"kernel_time_ns", kernel_time},
          {"launch_latency", LaunchLatencyJson(r)},
          {"nccl_queue", distribution(std::move(nccl_queue))}};
}

GpuReport BuildGpuReport(const Session& session) {
  GpuReport out;
  out.nccl = NcclReportJson(session);
  for (const RankData& r : session.ranks) {
    if (json gpu = GpuRankJson(r); !gpu.is_null()) out.by_rank.emplace(r.id.rank, std::move(gpu));
  }
  return out;
}

json NcclReportJson(const Session& session) {
  std::map<std::string, CommSummary> comms;
  std::string version;
  for (const RankData& r : session.ranks) {
    if (!r.nccl) continue;
    if (version.empty()) version = r.nccl->version;
    for (const NcclCommInfo& c : r.nccl->communicators) {
      CommSummary& s = comms[c.comm_id];
      s.nranks = std::max(s.nranks, c.nranks);
      s.nnodes = std::max(s.nnodes, c.nnodes);
      s.channels = std::max(s.channels, c.channels);
      s.ranks_reporting.insert(r.id.rank);
      for (const NcclTransportInfo& t : c.transports) {
        ++s.transports[std::string(NcclTransportKindName(t.kind))];
        s.gdrdma |= t.gdrdma;
      }
      if (s.ring_order.empty()) s.ring_order = c.ring_order;
    }
    for (const NcclCallInfo& call : r.nccl->calls) {
      CommSummary& s = comms[call.comm_id];
      s.ranks_per_seq[call.seq].insert(r.id.rank);
      const NcclCallInfo*& known = s.call_per_seq[call.seq];
      if (known == nullptr || (!Tuned(*known) && Tuned(call))) known = &call;
    }
  }
  if (comms.empty()) return nullptr;

  const auto spans = NcclInstanceSpans(session);
  json out_comms = json::array();
  for (const auto& comm : comms) {
    const auto& id = comm.first;  // named, not bound: lambdas below capture them (clang 14)
    const auto& s = comm.second;
    // As the report names them (op, data type, bytes, algorithm, protocol; "" untuned), so the
    // shapes list in name order.
    using Shape = std::tuple<std::string, std::string, Bytes, std::string, std::string>;
    std::map<Shape, int> shapes;
    std::map<Shape, std::vector<double>> busbw;  // GB/s of the instances timed on every rank
    // Instances that ran back to back with the one before on the communicator's stream: the
    // GPU time between the two kernels (NCCL's per-call overhead) and the busbw of the whole
    // period, kernel plus that overhead, which is what a loop of calls achieves (nccl-tests).
    std::map<Shape, std::vector<double>> gaps_us;
    std::map<Shape, std::vector<double>> stream_busbw;
    int on_every_rank = 0;
    const uint64_t key = NcclCommKey(id);
    auto timed = [&](uint64_t seq) -> const NcclInstanceSpan* {
      auto span = spans.find({key, seq});
      if (span == spans.end() || span->second.members != s.nranks || s.nranks <= 0 ||
          span->second.last_exit <= span->second.last_enter) {
        return nullptr;
      }
      return &span->second;
    };
    // The smallest gap between consecutive timed instances is the per-call floor; a gap within
    // twice that (or the floor + 2 us), and under 50 us, means the call was already queued: back
    // to back. NCCL's own per-call gap is a few us (2 us on 2xH200 over NVLink).
    DurationNs floor = -1;
    for (const auto& [seq, call] : s.call_per_seq) {
      const NcclInstanceSpan* now = timed(seq);
      const NcclInstanceSpan* before = seq > 0 ? timed(seq - 1) : nullptr;
      if (now == nullptr || before == nullptr) continue;
      const DurationNs gap = std::max<DurationNs>(0, now->last_enter - before->last_exit);
      floor = floor < 0 ? gap : std::min(floor, gap);
    }
    for (const auto& [seq, call] : s.call_per_seq) {
      const Shape shape{std::string(OpName(*call)), std::string(NcclDataTypeName(call->datatype)),
                        call->bytes, std::string(AlgoName(*call)), std::string(ProtoName(*call))};
      ++shapes[shape];
      if (static_cast<int>(s.ranks_per_seq.at(seq).size()) == s.nranks) ++on_every_rank;
      const NcclInstanceSpan* now = timed(seq);
      if (now == nullptr) continue;
      const NcclOp op = call->op;
      const Bytes size = NcclTestsSizeBytes(op, call->bytes, s.nranks);
      busbw[shape].push_back(
          BusBandwidthGBps(op, size, now->last_exit - now->last_enter, s.nranks));
      const NcclInstanceSpan* before = seq > 0 ? timed(seq - 1) : nullptr;
      if (before == nullptr) continue;
      const DurationNs gap = std::max<DurationNs>(0, now->last_enter - before->last_exit);
      // The stream sat idle (the program did other work between the calls): not back to back.
      if (gap > std::min(std::max(2 * floor, floor + 2 * kNsPerUs), kMaxBackToBackGap)) continue;
      gaps_us[shape].push_back(static_cast<double>(gap) / 1e3);
      stream_busbw[shape].push_back(
          BusBandwidthGBps(op, size, now->last_exit - before->last_exit, s.nranks));
    }
    json shapes_json = json::array();
    for (const auto& [shape, n] : shapes) {
      const auto& [op, datatype, bytes, algo, proto] = shape;
      auto bw = busbw.find(shape);
      shapes_json.push_back(
          {{"op", op},
           {"datatype", datatype},
           {"bytes", bytes},
           {"algo", algo.empty() ? json(nullptr) : json(algo)},
           {"proto", proto.empty() ? json(nullptr) : json(proto)},
           {"calls", n},
           // nccl-tests' bus bandwidth, median over instances timed on every rank (GPU kernel
           // times, from the last rank's arrival to the last completion); null without CUPTI.
           {"busbw_gbps", bw == busbw.end() ? json(nullptr) : json(Median(bw->second))},
           {"timed_instances", bw == busbw.end() ? 0 : static_cast<int>(bw->second.size())},
           // Over the instances that followed the previous one back to back: the median GPU gap
           // between their kernels, and the busbw counting that gap (kernel end to kernel end).
           {"back_to_back_instances",
            gaps_us.count(shape) ? static_cast<int>(gaps_us.at(shape).size()) : 0},
           {"gap_us", gaps_us.count(shape) ? json(Median(gaps_us.at(shape))) : json(nullptr)},
           {"stream_busbw_gbps",
            stream_busbw.count(shape) ? json(Median(stream_busbw.at(shape))) : json(nullptr)}});
    }
    out_comms.push_back({{"comm_id", id},
                         {"nranks", s.nranks},
                         {"nnodes", s.nnodes < 0 ? json(nullptr) : json(s.nnodes)},
                         {"channels", s.channels < 0 ? json(nullptr) : json(s.channels)},
                         {"ranks_reporting", s.ranks_reporting},
                         {"transports", s.transports},
                         {"gdrdma", s.gdrdma},
                         {"ring_order_channel0", s.ring_order},
                         {"calls", s.call_per_seq.size()},
                         {"calls_on_every_rank", on_every_rank},
                         {"shapes", shapes_json}});
  }
  return {{"version", version}, {"communicators", out_comms}};
}

json TopologyReportJson(const Session& session) {
  json out = json::array();
  for (const auto& [node, dump] : ParseNodeTopologies(session)) {
    json entry = {{"node", node}, {"rank", dump.rank}, {"source", dump.source}};
    if (dump.topology) {
      // ordered_json -> json: the report is one document type.
      entry["topology"] = json::parse(
          TopologyToJson(*dump.topology).dump(-1, ' ', false, json::error_handler_t::replace));
    } else {
      entry["error"] = dump.error;
    }
    out.push_back(std::move(entry));
  }
  return out;
}

json NvmlToJson(const NvmlSnapshot& nvml) {
  json gpus = json::array();
  for (const NvmlGpu& g : nvml.gpus) {
    // Below its maximum while the job ran (the agent keeps the best link it saw).
    const bool degraded = (g.pcie_gen_current >= 0 && g.pcie_gen_current < g.pcie_gen_max) ||
                          (g.pcie_width_current >= 0 && g.pcie_width_current < g.pcie_width_max);
    gpus.push_back({{"index", g.index},
                    {"name", g.name},
                    {"uuid", g.uuid},
                    {"bus_id", g.bus_id},
                    {"pcie_gen_current", g.pcie_gen_current},
                    {"pcie_gen_max", g.pcie_gen_max},
                    {"pcie_width_current", g.pcie_width_current},
                    {"pcie_width_max", g.pcie_width_max},
                    {"pcie_degraded", degraded},
                    {"nvlinks_up", g.nvlinks_up},
                    {"nvlinks_total", g.nvlinks_total},
                    {"memory_bytes", g.memory_bytes}});
  }
  return {{"driver_version", nvml.driver_version}, {"gpus", gpus}};
}

Result<NvmlSnapshot> NvmlFromJson(const json& j) {
  if (!j.is_object() || !j.contains("gpus") || !j["gpus"].is_array()) {
    return Result<NvmlSnapshot>::Error("NVML entry is not {driver_version, gpus[]}");
  }
  NvmlSnapshot out;
  try {
    out.driver_version = j.at("driver_version").get<std::string>();
    for (const json& g : j["gpus"]) {
      out.gpus.push_back({g.at("index").get<uint32_t>(), g.at("name").get<std::string>(),
                          g.at("uuid").get<std::string>(), g.at("bus_id").get<std::string>(),
                          g.at("pcie_gen_current").get<int>(), g.at("pcie_gen_max").get<int>(),
                          g.at("pcie_width_current").get<int>(), g.at("pcie_width_max").get<int>(),
                          g.at("nvlinks_up").get<int>(), g.at("nvlinks_total").get<int>(),
                          g.at("memory_bytes").get<uint64_t>()});
    }
  } catch (const json::exception& e) {
    return Result<NvmlSnapshot>::Error(std::string("NVML entry: ") + e.what());
  }
  return out;
}

json NvmlReportJson(const Session& session) {
  json out = json::array();
  for (const RankData& r : session.ranks) {
    if (!r.nvml && r.nvml_error.empty()) continue;
    json entry = {{"node", r.id.node}, {"rank", r.id.rank}};
    if (r.nvml) {
      entry.update(NvmlToJson(*r.nvml));
    } else {
      entry["error"] = r.nvml_error;
    }
    out.push_back(std::move(entry));
  }
  return out;
}

json RankNcclToJson(const RankNccl& n) {
  json comms = json::array();
  for (const NcclCommInfo& c : n.communicators) {
    json transports = json::array();
    for (const NcclTransportInfo& t : c.transports) {
      transports.push_back(
          {t.channel, t.peer, NcclTransportKindName(t.kind), t.via, t.gdrdma, t.net_dev});
    }
    comms.push_back({{"comm_id", c.comm_id},
                     {"rank", c.rank},
                     {"nranks", c.nranks},
                     {"nnodes", c.nnodes},
                     {"channels", c.channels},
                     {"bus_id", c.bus_id},
                     {"cuda_dev", c.cuda_dev},
                     {"transports", transports},
                     {"ring_order", c.ring_order}});
  }
  json calls = json::array();
  for (const NcclCallInfo& c : n.calls) {
    calls.push_back({c.comm_id, c.seq, OpName(c), c.count, NcclDataTypeName(c.datatype), c.bytes,
                     c.root, AlgoName(c), ProtoName(c), c.channels});
  }
  return {{"version", n.version},   {"log_file", n.log_file}, {"skipped_lines", n.skipped_lines},
          {"problems", n.problems}, {"communicators", comms}, {"calls", calls}};
}

Result<RankNccl> RankNcclFromJson(const json& j) {
  try {
    RankNccl n;
    n.version = j.at("version").get<std::string>();
    n.log_file = j.at("log_file").get<std::string>();
    n.skipped_lines = j.at("skipped_lines").get<int64_t>();
    n.problems = j.at("problems").get<std::vector<std::string>>();
    for (const json& c : j.at("communicators")) {
      NcclCommInfo info;
      info.comm_id = c.at("comm_id").get<std::string>();
      info.rank = c.at("rank").get<int>();
      info.nranks = c.at("nranks").get<int>();
      info.nnodes = c.at("nnodes").get<int>();
      info.channels = c.at("channels").get<int>();
      info.bus_id = c.at("bus_id").get<std::string>();
      info.cuda_dev = c.at("cuda_dev").get<int>();
      for (const json& t : c.at("transports")) {
        NcclTransportInfo ti{t.at(0).get<int>(),
                             t.at(1).get<int>(),
                             ParseNcclTransportKindName(t.at(2).get<std::string>()),
                             t.at(3).get<std::string>(),
                             t.at(4).get<bool>(),
                             -1};
        if (t.size() > 5) {
          ti.net_dev = t.at(5).get<int>();
        } else {
          // Written before the net device had a field of its own: NCCL's text holds it.
          NcclTransport parsed;
          if (ClassifyNcclVia(ti.via, &parsed)) ti.net_dev = parsed.net_dev;
        }
        info.transports.push_back(std::move(ti));
      }
      info.ring_order = c.at("ring_order").get<std::vector<int>>();
      n.communicators.push_back(std::move(info));
    }
    for (const json& c : j.at("calls")) {
      NcclCallInfo call;
      call.comm_id = c.at(0).get<std::string>();
      call.seq = c.at(1).get<uint64_t>();
      const std::string op = c.at(2).get<std::string>();
      call.op = ParseNcclOp(op);
      if (call.op == NcclOp::kUnknown) call.op_name = op;
      call.count = c.at(3).get<uint64_t>();
      call.datatype = ParseNcclDataTypeName(c.at(4).get<std::string>());
      call.bytes = c.at(5).get<Bytes>();
      call.root = c.at(6).get<int>();
      call.algo = ParseNcclAlgo(c.at(7).get<std::string>());
      call.proto = ParseNcclProto(c.at(8).get<std::string>());
      call.channels = c.at(9).get<int>();
      n.calls.push_back(std::move(call));
    }
    return n;
  } catch (const json::exception& e) {
    return Result<RankNccl>::Error(std::string("NCCL summary: ") + e.what());
  }
}

}  // namespace rankscope
