// Which nodes `rankscope sweep` runs on, from what sinfo says (pure: text in, plan out).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace rankscope {

struct SinfoNode {
  std::string name;
  std::string state;   // sinfo's compact state (%t): idle, mix, alloc, drain, down*, ...
  std::string reason;  // %E: why it is drained or down ("none" when it is not)
};

// Parses `sinfo -h -N -o '%N|%t|%E'`; a node listed in several partitions comes once.
std::vector<SinfoNode> ParseSinfoNodes(const std::string& text);

struct SweepTarget {
  std::string node;
  bool run = false;   // swept; otherwise `why_not` says why and the node gets that verdict
  bool fail = false;  // not run, and that is a failure (down, unknown) rather than a warning
  std::string why_not;
  bool drained = false;  // already drained or down: --drain leaves it alone
};

// `requested` empty: every node sinfo lists. Unknown names fail ("unknown to SLURM"), down or
// not-responding nodes fail without running, drained nodes are not swept (a warning: they take
// no jobs), the rest run. Order: `requested`'s, else sinfo's.
std::vector<SweepTarget> PlanSweepNodes(const std::vector<std::string>& requested,
                                        const std::vector<SinfoNode>& known);

// The hosts of an MPI hostfile, once each, in order: Open MPI's "host slots=N", Hydra's
// "host:N", '#' comments and blank lines skipped.
std::vector<std::string> ParseHostfile(const std::string& text);

// The node pairs of the fabric check: each node with its two ring neighbours (one pair for two
// nodes, none for one), in rounds within which no node appears twice, so a round's pairs run at
// the same time without sharing a node. Indices into the node list.
std::vector<std::vector<std::pair<size_t, size_t>>> PairRounds(size_t nodes);

// `scontrol update` arguments that drain `node` with a reason that says it was rankscope.
std::vector<std::string> DrainCommand(const std::string& node, const std::string& summary);

}  // namespace rankscope
