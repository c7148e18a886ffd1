#include "coordinator/analysis/diagnosis.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "coordinator/analysis/describe.h"
#include "coordinator/analysis/gpu_link_analysis.h"
#include "coordinator/analysis/straggler_blame.h"
#include "coordinator/collective_matcher.h"
#include "coordinator/node_topologies.h"
#include "model/topology/topology.h"
#include "model/topology/topology_paths.h"

namespace rankscope {
namespace {

// The straggler's cause range, when it names one that matches the data pattern.
bool CausedByDataRange(const Finding& straggler, const DataloaderOptions& options) {
  return straggler.cause_range &&
         std::regex_search(straggler.cause_range->name, options.data_pattern);
}

// The straggler's lateness is its loader's, found by the dataloader analysis on the same rank:
// its cause is a data range or, where there are no data ranges (the loader is then the part of
// each step before its first kernel launch), host time outside any range but the step's own.
bool CausedByLoader(const Finding& straggler, const Finding& dataloader,
                    const DataloaderOptions& options) {
  if (CausedByDataRange(straggler, options)) return true;
  if (dataloader.step_source != StepSource::kFirstKernelLaunch) return false;
  if (straggler.cause == CauseKind::kUntrackedHostTime) return true;
  return straggler.cause == CauseKind::kNvtxRange && straggler.cause_range &&
         std::regex_search(straggler.cause_range->name, options.step_pattern);
}

std::string WaitOps(const LateArrivals& arrivals) {
  std::string out;
  for (const auto& [op, count] : arrivals.ops) {
    if (!out.empty()) out += "/";
    out += op;
  }
  return out.empty() ? "collectives" : out;
}

// Folds the straggler's wait evidence into the dataloader finding of the same rank.
void Merge(const Finding& straggler, Finding* dataloader) {
  const LateArrivals arrivals = straggler.arrivals.value_or(LateArrivals{});
  const int waiting = arrivals.others_waiting;
  dataloader->summary += " This makes the other " + std::to_string(waiting) +
                         (waiting == 1 ? " rank" : " ranks") + " wait " +
                         FormatDuration(straggler.cost_ns) + " at " + WaitOps(arrivals) + ".";
  dataloader->joined.push_back(straggler);
  dataloader->cost_ns = std::max(dataloader->cost_ns, straggler.cost_ns);
  dataloader->severity = std::max(dataloader->severity, straggler.severity);
  dataloader->confidence = std::max(dataloader->confidence, straggler.confidence);
}

// From the topology: the GPU pairs with no NVLink and the PCIe route they take instead.
std::string PcieOnlyPairs(const NodeTopology& topo) {
  std::string pairs;
  for (const GpuPair& p : topo.gpu_pairs) {
    if (!p.pcie_only()) continue;
    pairs += (pairs.empty() ? "" : ", ") + std::to_string(p.gpu_a) + "-" + std::to_string(p.gpu_b) +
             " " + std::string(PciePathName(p.pcie));
  }
  return pairs.empty() ? "" : "GPU pairs over PCIe only (NCCL topology): " + pairs;
}

// From the topology: the GPUs whose nearest NIC is reached through the CPU (PHB, SYS) rather
// than a PCIe switch, so their network traffic crosses the root complex (GPUDirect RDMA slow or
// off).
std::string NicPathsThroughCpu(const NodeTopology& topo) {
  std::string gpus;
  for (size_t g = 0; g < topo.gpus.size(); ++g) {
    const GpuNicPath* path = NearestNicPath(topo, static_cast<int>(g));
    if (path == nullptr || !path->through_cpu()) continue;
    gpus += (gpus.empty() ? "" : ", ") +
            ("GPU " + std::to_string(g) + " to " + topo.nics[static_cast<size_t>(path->nic)].name +
             " " + std::string(PciePathName(path->pcie)));
  }
  return gpus.empty() ? "" : "GPUs reach their nearest NIC through the CPU: " + gpus;
}

// What NVML said about a node's GPU links: no NVLink at all, or PCIe links below their maximum;
// without NVML, the GPU pairs the NCCL topology dump shows without NVLink. Empty when the links
// are fine or nothing was read there.
std::string WeakLinksOf(const Session& session,
                        const std::map<std::string, NodeTopologyDump>& topologies,
                        const std::string& node) {
  for (const RankData& r : session.ranks) {
    if (r.id.node != node || !r.nvml || r.nvml->gpus.empty()) continue;
    int nvlinks_up = 0;
    std::string degraded;
    for (const NvmlGpu& g : r.nvml->gpus) {
      nvlinks_up += g.nvlinks_up;
      if ((g.pcie_width_current > 0 && g.pcie_width_current < g.pcie_width_max) ||
          (g.pcie_gen_current > 0 && g.pcie_gen_current < g.pcie_gen_max)) {
        degraded += (degraded.empty() ? "" : ", ") + std::string("GPU ") + std::to_string(g.index) +
                    " PCIe gen " + std::to_string(g.pcie_gen_current) + " x" +
                    std::to_string(g.pcie_width_current) + " of gen " +
                    std::to_string(g.pcie_gen_max) + " x" + std::to_string(g.pcie_width_max);
      }
    }
    std::string out =
        nvlinks_up == 0 ? "its GPUs have no NVLink up (peer traffic crosses PCIe)" : std::string();
    if (!degraded.empty()) out += (out.empty() ? "" : "; ") + degraded;
    return out;
  }
  auto topo = topologies.find(node);
  return topo != topologies.end() && topo->second.topology ? PcieOnlyPairs(*topo->second.topology)
                                                           : "";
}

// Turns `ring` into (or folds it into) the pcie_bound finding of `nodes`, whose weak links are
// `weak`; `measured` says what the communicator measured.
void FoldIntoPcieBound(Finding ring, const std::vector<std::string>& nodes, const std::string& weak,
                       const std::string& measured, std::vector<Finding>* out) {
  for (Finding& f : *out) {
    if (f.kind != FindingKind::kPcieBound || f.nodes != nodes) continue;
    f.summary += " Measured: " + measured + ".";
    f.cost_ns += ring.cost_ns;
    f.confidence = std::max(f.confidence, ring.confidence);
    f.joined.push_back(std::move(ring));
    return;
  }
  std::string names;
  for (const std::string& n : nodes) names += (names.empty() ? "" : ", ") + n;
  ring.kind = FindingKind::kPcieBound;
  ring.summary = std::string(nodes.size() == 1 ? "Node " : "Nodes ") + names + " " +
                 (nodes.size() == 1 ? "is" : "are") + " PCIe-bound: " + weak + ", and " + measured +
                 ".";
  ring.weak_links = weak;
  ring.nodes = nodes;
  out->push_back(std::move(ring));
}

// A communicator within one node that is slower than its peers, on a node whose GPUs talk over
// PCIe (no NVLink, or PCIe links trained down): the node is PCIe-bound, and the measurement
// proves it costs. The ring finding becomes (or joins) that node's pcie_bound finding.
void JoinPcieBound(const Session& session, std::vector<Finding>* findings) {
  std::vector<Finding> out;
  std::vector<Finding> rings;
  for (Finding& f : *findings) {
    (f.kind == FindingKind::kImbalancedRing ? rings : out).push_back(std::move(f));
  }
  if (rings.empty()) {  // nothing to join: the topology dumps are not even parsed
    *findings = std::move(out);
    return;
  }
  const std::map<std::string, NodeTopologyDump> topologies = ParseNodeTopologies(session);
  // Which nodes' GPUs reach their NIC through the CPU; it tells a slow cross-node communicator's
  // nodes apart only when some other node's GPUs do not.
  std::map<std::string, std::string> through_cpu;
  bool some_node_direct = false;
  for (const auto& [node, dump] : topologies) {
    if (!dump.topology || dump.topology->nics.empty()) continue;
    through_cpu[node] = NicPathsThroughCpu(*dump.topology);
    some_node_direct |= through_cpu[node].empty();
  }
  for (Finding& ring : rings) {
    const CommMeasure m = ring.comm_measure.value_or(CommMeasure{"?"});
    const std::string measured =
        "its communicator " + m.comm_id + " runs " + std::string(NcclOpName(m.op)) + " at " +
        FormatDouble("%.1f", m.busbw_gbps) + " GB/s bus bandwidth, where " +
        std::to_string(std::max(m.peers, 0)) + " like it " +
        (ring.nodes.size() == 1 ? "on other nodes" : "elsewhere") + " reach " +
        FormatDouble("%.1f", m.peer_median_busbw_gbps) + " GB/s";
    if (ring.nodes.size() == 1) {
      const std::vector<std::string> node = ring.nodes;  // before `ring` is moved
      const std::string weak = WeakLinksOf(session, topologies, node.front());
      if (!weak.empty()) {
        FoldIntoPcieBound(std::move(ring), node, weak, measured, &out);
        continue;
      }
    } else if (some_node_direct) {
      std::vector<std::string> nodes;
      std::string weak;
      for (const std::string& n : ring.nodes) {
        auto it = through_cpu.find(n);
        if (it == through_cpu.end() || it->second.empty()) continue;
        nodes.push_back(n);
        weak += (weak.empty() ? "" : "; ") + n + ": " + it->second;
      }
      if (!nodes.empty()) {
        FoldIntoPcieBound(std::move(ring), nodes, weak, measured, &out);
        continue;
      }
    }
    out.push_back(std::move(ring));
  }
  *findings = std::move(out);
}

// A communicator below its GPU link's ceiling on a node whose links NVML already found degraded
// (pcie_bound for a PCIe link, nvlink_down for NVLink) is that finding's measured cost, not a
// second problem: it joins it.
void JoinLinkCeilings(std::vector<Finding>* findings) {
  std::vector<Finding> out;
  std::vector<Finding> ceilings;
  for (Finding& f : *findings) {
    (f.kind == FindingKind::kBelowLinkCeiling ? ceilings : out).push_back(std::move(f));
  }
  for (Finding& c : ceilings) {
    const LimitingLink link = c.limiting_link.value_or(LimitingLink{});
    const FindingKind kind = link.medium == LinkMedium::kPcie     ? FindingKind::kPcieBound
                             : link.medium == LinkMedium::kNvlink ? FindingKind::kNvlinkDown
                                                                  : FindingKind::kOther;
    const std::string& a = link.from_node;
    const std::string& b = link.to_node;
    auto host = std::find_if(out.begin(), out.end(), [&](const Finding& f) {
      return kind != FindingKind::kOther && f.kind == kind &&
             (std::count(f.nodes.begin(), f.nodes.end(), a) > 0 ||
              std::count(f.nodes.begin(), f.nodes.end(), b) > 0);
    });
    if (host == out.end()) {
      out.push_back(std::move(c));
      continue;
    }
    host->summary += " Measured: " + c.summary;
    host->cost_ns += c.cost_ns;
    host->confidence = std::max(host->confidence, c.confidence);
    host->joined.push_back(std::move(c));
  }
  *findings = std::move(out);
}

}  // namespace

WindowedReading::WindowedReading(const Session& aligned) : blame(aligned) {}

Result<SessionMatches> MatchWindows(const Session& session, const AnalysisOptions& options,
                                    size_t windows, const NextUploads& next,
                                    WindowedReading* reading) {
  // The messages are read as each window closes, and kept as links only (the blame model's
  // dependencies, trace.json's arrows).
  MatchFold matches(WorldSize(session), /*keep_messages=*/false);
  LateGapFold gaps(options.straggler);
  StepSeriesFold steps(session, options.dataloader);
  WaitRangesFold waits;
  WaitTallyFold tallies(options.p2p);
  for (size_t w = 0; w < windows; ++w) {
    const bool last = w + 1 == windows;
    Result<std::vector<RankUpload>> uploads = next();
    if (!uploads.ok()) return uploads.status();
    const std::vector<P2PMessage>& matched = matches.Add(uploads.value(), last);
    waits.Close(uploads.value(), matches.messages(), matched);
    tallies.Add(matched);
    if (!reading->late_gaps_of) gaps.Add(uploads.value(), last);
    steps.Add(uploads.value());
    reading->blame.Add(uploads.value());
    reading->blame.Close(matches.instances_taken(), matches.released_links(), matches.quiet(),
                         last);
  }
  reading->late_gaps = gaps.Take();
  reading->steps = steps.Take();
  reading->while_waited = waits.Take();
  reading->waits = tallies.Take();
  return matches.Finish();
}

SessionMatches MatchSessionByWindow(const Session& aligned, const AnalysisOptions& options,
                                    WindowedReading* reading) {
  const WindowSplit split =
      SplitSession(aligned, PlanWindows(aligned, options.by_window.value_or(WindowOptions{})));
  size_t w = 0;
  reading->whole_blame = [&aligned, options](const SessionMatches& matches,
                                             const BlameOptions& blame) {
    const WindowSplit again =
        SplitSession(aligned, PlanWindows(aligned, options.by_window.value_or(WindowOptions{})));
    return BuildBlameModel(aligned, matches, blame, &again);
  };
  return MatchWindows(
             aligned, options, split.size(),
             [&]() -> Result<std::vector<RankUpload>> { return UploadsOf(aligned, split, w++); },
             reading)
      .value();
}

std::vector<Finding> Diagnose(const Session& aligned, const AnalysisOptions& options,
                              std::vector<std::string>* notes) {
  return Diagnose(aligned, MatchSession(aligned), options, notes);
}

std::vector<Finding> Diagnose(const Session& aligned, const SessionMatches& matches,
                              const AnalysisOptions& options, std::vector<std::string>* notes,
                              BlameModel* blame_out, WindowedReading* windowed) {
  std::vector<Finding> stragglers, findings;
  if (windowed != nullptr) {
    const LateGaps& gaps = windowed->late_gaps;
    stragglers = FindStragglers(
        aligned, matches.collectives,
        windowed->late_gaps_of ? windowed->late_gaps_of
                               : [&](const std::set<int>&) { return gaps; },
        options.straggler, notes);
    findings = FindDataloaderSkew(aligned, std::move(windowed->steps), options.dataloader);
  } else {
    stragglers = FindStragglers(aligned, matches.collectives, options.straggler, notes);
    findings = FindDataloaderSkew(aligned, options.dataloader);
  }

  for (Finding& straggler : stragglers) {
    Finding* same_rank = nullptr;
    for (Finding& f : findings) {
      if (f.kind == FindingKind::kDataloaderSkew && f.ranks == straggler.ranks &&
          CausedByLoader(straggler, f, options.dataloader)) {
        same_rank = &f;
      }
    }
    if (same_rank != nullptr) {
      Merge(straggler, same_rank);
    } else {
      findings.push_back(std::move(straggler));
    }
  }
  std::vector<Finding> senders, receivers;
  if (windowed != nullptr) {
    senders = FindLateSenders(aligned, windowed->waits, matches.p2p, options.p2p,
                              windowed->while_waited, notes);
    receivers = FindLateReceivers(aligned, windowed->waits, matches.p2p, options.p2p,
                                  windowed->while_waited, notes);
  } else {
    senders = FindLateSenders(aligned, matches.messages, matches.p2p, options.p2p, notes);
    receivers = FindLateReceivers(aligned, matches.messages, matches.p2p, options.p2p, notes);
  }
  for (std::vector<Finding>* found : {&senders, &receivers}) {
    for (Finding& f : *found) findings.push_back(std::move(f));
  }
  // The blame model decides who is a straggler; the findings above describe how they waited.
  BlameModel blame;
  if (windowed != nullptr) {
    std::optional<BlameModel> folded = windowed->blame.Finish(aligned, matches, options.blame);
    blame = folded ? std::move(*folded) : windowed->whole_blame(matches, options.blame);
  } else {
    blame = BuildBlameModel(aligned, matches, options.blame);
  }
  ApplyBlame(aligned, blame, options.blame, &findings, notes);
  if (blame_out != nullptr) *blame_out = std::move(blame);
  for (Finding& f : FindDegradedGpuLinks(aligned)) findings.push_back(std::move(f));
  for (Finding& f : FindImbalancedRings(aligned, options.ring)) findings.push_back(std::move(f));
  JoinPcieBound(aligned, &findings);
  JoinLinkCeilings(&findings);
  if (aligned.SampledFromOutsideOnly()) {
    for (Finding& f : FindProcessOutliers(aligned, options.process))
      findings.push_back(std::move(f));
  }
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.cost_ns != b.cost_ns) return a.cost_ns > b.cost_ns;
    return a.severity > b.severity;
  });
  return findings;
}

}  // namespace rankscope
