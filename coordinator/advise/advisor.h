// The "pick your tool" planner behind `rankscope advise`: a catalogue of the questions people ask
// about a slow distributed GPU job, from the fleet down to the SASS, each answered by the tools
// that answer it, in order: the exact command, what to look for in its output, and what to try
// when that does not answer it. Given a session, the commands are filled in with the job's facts
// (the rank and node to look at, the program, its heaviest kernel, its launcher). The planner is
// the one source of next steps: every finding's next_steps are chosen and built here
// (PlanNextSteps), from the finding's kind, evidence and focus; the analyses only say what is
// wrong. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/findings.h"
#include "coordinator/session.h"

namespace rankscope {

// What the commands are filled in with. Without a session: placeholders a person replaces
// (RANK, NODE, ./app, KERNEL).
struct AdviceFacts {
  const Session* session = nullptr;  // not owned; may be null
  int rank = 0;                      // the rank to look at (a finding's, else 0)
  std::string node = "NODE";
  std::vector<int> ranks;          // a finding's ranks (nccl-tests runs them where they ran)
  std::vector<std::string> nodes;  // a finding's nodes
  std::string kernel = "KERNEL";   // a regex for ncu -k: the rank's heaviest kernel
  std::string why;                 // why this rank: "rank 2 is the straggler" etc.
  // What Nsight Compute measured of the rank's kernel in this session (`run --ncu-rank`,
  // `report --ncu`): the verdict the kernel questions start from.
  std::optional<KernelVerdict> measured;
};

// The facts of a session: the rank of its worst finding (else rank 0), its node, and the GPU
// kernel that took most of that rank's GPU time.
AdviceFacts FactsOf(const Session& session, const std::vector<Finding>& findings);

// tool, command (one line for a POSIX shell), look_for (what in its output answers the question).
using AdviceStep = NextStep;

struct Answer {
  std::string id;                 // short name: "where-time-goes"
  std::string level;              // fleet | system | node | rank | kernel | sass
  std::string question;           // as a person asks it
  std::vector<AdviceStep> steps;  // in order: the next one when the one before does not answer
};

// Every question, by level from the fleet down, answered for `facts`.
std::vector<Answer> Catalogue(const AdviceFacts& facts);

// The catalogue question a finding raises: "where-time-goes" for a host-side straggler or a late
// sender, "gpu-slow" for a straggler whose GPU work is the cause, "dataloader", "nccl-slow"
// for an imbalanced ring or a ring below a NIC's ceiling, "link-slow" for PCIe/NVLink findings and
// rings below a GPU link's ceiling; empty for an unknown kind.
std::string QuestionFor(const Finding& finding);

// Sets each finding's next_steps to the planner's plan for it: the steps of its question's chain
// that fit the finding, filled in with its rank, node, kernel, communicator and the analysis'
// focus, then `rankscope advise ID --session SESSION_DIR --rank R` for the rest of the chain. A
// finding of an unknown kind gets none.
void PlanNextSteps(const Session& session, const std::string& session_dir,
                   std::vector<Finding>* findings);

// The answers whose question best matches `text` (words shared with the question and its
// keywords; an exact id matches alone), best first, at most `most`; empty when nothing matches.
std::vector<Answer> Ask(std::string_view text, const AdviceFacts& facts, size_t most = 3);

}  // namespace rankscope
