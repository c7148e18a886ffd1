// `rankscope sweep`: a health sweep of the cluster's nodes (docs/sweep.md). Runs one exclusive
// `srun -w NODE rankscope sweep-node` per node (or `mpirun --host H -np 1 ...` per host of a
// hostfile, without SLURM) in parallel against a coordinator of its own,
// judges the figures (coordinator/sweep/verdicts.h), writes report.txt/.json, JUnit XML and
// node_exporter metrics, optionally drains the nodes that failed, and exits 0/1/2 for
// ok/warn/fail.
#pragma once

#include <string>
#include <vector>

namespace rankscope {

struct SweepOptions {
  std::string partition;        // only this partition's nodes
  std::string nodes;            // a SLURM host list ("n[1-3],n7"); empty: every node
  std::string hostfile;         // no SLURM: these hosts, each through `mpirun -np 1`
  std::string level = "quick";  // quick | standard | deep
  std::string config_file;      // thresholds; empty: the built-in config/sweep.json
  bool drain = false;           // drain the nodes that fail (never one drained by someone else)
  std::string out_dir;          // empty: rankscope-sweep-<time>
  std::string prom_file;        // also write the metrics here (a node_exporter textfile path)
  // The history each node is compared with and this sweep is added to; empty: the default
  // (coordinator/sweep/sweep_history.h); no_history: neither.
  std::string baseline;
  bool no_history = false;
  std::string bind_address;  // empty: this host's address the nodes can reach
  std::string mpi;           // srun --mpi= for the ping-pong pairs; empty: the cluster's default
  double node_limit_s = 0;   // per node, queueing included; 0: by level (120/300/900 s)
  std::vector<std::string> scratch;  // file systems to check; empty: $TMPDIR and /dev/shm
  bool quiet = false;
};

int RunSweep(const SweepOptions& options, const std::string& self_exe);

}  // namespace rankscope
