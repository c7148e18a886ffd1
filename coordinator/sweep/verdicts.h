// `rankscope sweep`'s verdicts: each node's check figures judged against absolute limits and
// against the other nodes' figures for the same check (config/sweep.json), then the node's
// worst. Pure: figures in, verdicts out.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/clock_model.h"
#include "core/status.h"
#include "model/sweep_result.h"

namespace rankscope {

enum class SweepStatus { kPass = 0, kWarn = 1, kFail = 2 };
const char* SweepStatusName(SweepStatus s);  // "pass", "warn", "fail"

// A figure in words, in its unit ("4.00 GB/s", "976.6 KiB", "0.5%", "40.0 us"); `compact`, for
// the grid's cells, drops a digit and any unit name the column heading already gives.
std::string FormatSweepValue(double value, const std::string& unit, bool compact = false);

struct CheckLimits {
  std::optional<double> warn_below, fail_below, warn_above, fail_above;
  bool abs = false;
  std::optional<double> peer_warn_below, peer_fail_below;  // fractions of the peers' median
  std::optional<double> peer_warn_above, peer_fail_above;  // multiples of it (latencies)
  // Fractions of the node's own median over its past sweeps (ApplyTrends).
  std::optional<double> trend_warn_below, trend_fail_below;
  // For counters (ECC errors, retired pages): how far the figure may rise above the most the node
  // showed in its past sweeps (0: any rise).
  std::optional<double> trend_warn_increase, trend_fail_increase;
};

struct SweepThresholds {
  std::map<std::string, CheckLimits> checks;  // by check name
  // Per GPU model ("NVIDIA H200", as NVML names it): entries whose keys override the same
  // check's keys in `checks` for that model's figures.
  std::map<std::string, std::map<std::string, CheckLimits>> models;
  // The limits for `name` measured on `model` (empty: not a GPU figure); nullopt when none.
  std::optional<CheckLimits> For(const std::string& name, const std::string& model) const;
};

// Parses config/sweep.json's format; the error names `source` and what is wrong.
Result<SweepThresholds> ParseSweepThresholds(const std::string& json, const std::string& source);
// The defaults: config/sweep.json as built into rankscope.
const SweepThresholds& DefaultSweepThresholds();

// What one node sent (or why it sent nothing).
struct SweepNodeInput {
  std::string node;
  bool answered = false;
  std::string problem;  // when it did not answer: what srun said
  std::vector<SweepCheckResult> results;
};

struct CheckVerdict {
  SweepCheckResult result;
  SweepStatus status = SweepStatus::kPass;
  std::string reason;                 // empty when it passes
  std::optional<double> peer_median;  // of the other nodes, when compared with them
  std::optional<double> past_median;  // of this node's past sweeps, when compared with them
  bool trend = false;                 // the status comes from the comparison with the past
};

struct NodeVerdict {
  std::string node;
  SweepStatus status = SweepStatus::kPass;
  std::string problem;  // the node did not answer
  std::vector<CheckVerdict> checks;
  // The worst check's reason (or the problem): what a drain reason or a dashboard shows.
  std::string Summary() const;
};

// Judges every node; nodes keep their input order.
std::vector<NodeVerdict> JudgeSweep(const std::vector<SweepNodeInput>& nodes,
                                    const SweepThresholds& thresholds);

// The node's wall-clock offset to the coordinator ("clock.offset", seconds) and how sure the fit
// is ("clock.uncertainty"), from the coordinator's fit of the node's monotonic clock, the node's
// realtime-minus-monotonic ("clock.realtime_minus_monotonic" in `results`) and the
// coordinator's own. Nothing when the node sent no anchor or its clock could not be fitted
// (then one result with the error).
std::vector<SweepCheckResult> ClockChecks(const std::vector<SweepCheckResult>& results,
                                          const Result<ClockModel>& fit,
                                          double coordinator_realtime_minus_monotonic);

// Past figures per (node, check key), oldest first (coordinator/sweep/sweep_history.h).
using SweepPast = std::map<std::pair<std::string, std::string>, std::vector<double>>;

// Compares each figure with the node's own past (at least 2 earlier sweeps): a figure below
// trend_*_below of its past median raises the check (and node) status, marked as a trend, even
// when it still passes against the peers.
void ApplyTrends(const SweepPast& past, const SweepThresholds& thresholds,
                 std::vector<NodeVerdict>* nodes);

// One MPI ping-pong between two nodes (rankscope-pingpong), or why it did not run.
struct PairResult {
  std::string a, b;
  std::string error;  // empty: the figures hold
  double latency_s = 0;
  double bandwidth = 0;  // bytes per second, one direction
  // NCCL all-reduce bus bandwidth across both nodes' GPUs (0: not measured: no GPUs), or why it
  // failed.
  double nccl_busbw = 0;
  int nccl_gpus = 0;
  std::string nccl_error = {};
};

// `node`'s fabric figures from the pairs it was in: "mpi.latency" (seconds) and
// "mpi.bandwidth" of its best pair, since a node with one good link is not the slow one (the
// node on both ends of slow pairs is), every pair in the detail; one "mpi.pingpong" error when
// all of its pairs failed; nothing when it was in none. With GPUs, "nccl.pair_busbw" likewise:
// its best pair's NCCL all-reduce bus bandwidth, or an error when every NCCL pair failed.
std::vector<SweepCheckResult> PairChecksFor(const std::string& node,
                                            const std::vector<PairResult>& pairs);

// Why `node` should be drained: its first failed check that measured a figure ("key: reason").
// Nothing for a node that only failed to run something (did not answer, a check or an MPI pair
// that could not start or timed out): a broken launch or a busy node is not a faulty node.
std::optional<std::string> DrainReason(const NodeVerdict& node);

// 2 when a node failed, 1 when one warned, else 0: the sweep's exit code.
int SweepExitCode(const std::vector<NodeVerdict>& nodes);

}  // namespace rankscope
