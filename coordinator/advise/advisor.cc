#include "coordinator/advise/advisor.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "coordinator/analysis/next_steps.h"
#include "core/format.h"

namespace rankscope {
namespace {

// ncu -k matches the kernel's function name (no namespace, parameters or template arguments).
std::string KernelRegex(const std::string& mangled) {
  std::string name = Demangle(mangled);
  name = name.substr(0, name.find('('));
  int depth = 0;
  std::string bare;
  for (char c : name) {  // drop template arguments
    if (c == '<') ++depth;
    if (depth == 0) bare += c;
    if (c == '>') --depth;
  }
  if (size_t colon = bare.rfind("::"); colon != std::string::npos) bare = bare.substr(colon + 2);
  std::string regex;
  for (char c : bare) {
    if (std::string_view(".[]{}()*+?^$|\\").find(c) != std::string_view::npos) regex += '\\';
    regex += c;
  }
  return regex.empty() ? "KERNEL" : regex;
}

// A command run on the rank's node (srun --overlap / ssh) or, without a session, as is.
std::string OnNode(const AdviceFacts& f, const std::vector<std::string>& argv) {
  return f.session != nullptr ? OnRankNode(*f.session, f.rank, argv) : ShellJoin(argv);
}

// The job relaunched with `tool` in front of the rank's program only; without a session, a
// generic mpirun line.
std::string OnRank(const AdviceFacts& f, const std::vector<std::string>& tool) {
  if (f.session != nullptr) return RelaunchWithToolOnRank(*f.session, f.rank, tool);
  std::vector<std::string> argv = {"mpirun", "-np", "N"};
  argv.insert(argv.end(), tool.begin(), tool.end());
  argv.push_back("./app");
  return ShellJoin(argv);
}

std::string R(const AdviceFacts& f) { return std::to_string(f.rank); }

std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> out;
  std::string word;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!word.empty()) {
      out.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty()) out.push_back(std::move(word));
  return out;
}

// Words that say nothing about which question is meant.
bool IsStopWord(const std::string& w) {
  static const std::set<std::string> kStop = {
      "a",    "an", "the",  "is", "are", "my",  "of", "in",   "on",  "to",  "why", "what", "which",
      "does", "do", "this", "it", "how", "and", "or", "with", "for", "one", "i",   "me"};
  return kStop.count(w) > 0;
}

struct Entry {
  Answer answer;
  std::string keywords;  // more words that point at it
};

std::vector<Entry> Entries(const AdviceFacts& f) {
  const std::string rank = R(f);
  std::vector<Entry> e;
  e.push_back(
      {{"cluster-health",
        "fleet",
        "Is the cluster healthy? Which nodes will slow tomorrow's jobs?",
        {{"dcgmi", OnNode(f, {"dcgmi", "diag", "-r", "2"}),
          "any test not Pass (PCIe, memory, NVLink, targeted stress) on a node"},
         {"nvidia-smi", OnNode(f, {"nvidia-smi", "-q", "-d", "ECC,PAGE_RETIREMENT,ROW_REMAPPER"}),
          "volatile/aggregate double-bit ECC errors, pending page retirements or row remaps"},
         {"nvidia-smi", OnNode(f, {"nvidia-smi", "-q", "-d", "PERFORMANCE"}),
          "Clocks Event Reasons active while busy: HW Slowdown, HW Thermal, SW Power Cap"}}},
       "node nodes broken bad gpu errors ecc xid sweep nightly fleet"});
  e.push_back(
      {{"slow-rank",
        "system",
        "Which rank (or node) makes my job slow, and why?",
        {{"rankscope",
          "rankscope run -o out -- " + (f.session != nullptr ? ShellJoin(f.session->command)
                                                             : std::string("mpirun -np N ./app")),
          "the straggler finding: the late rank, how late, what it did meanwhile"},
         {"rankscope", "rankscope report out --min-lateness-ms 0.2",
          "smaller stragglers, re-analysed from the saved session"}}},
       "straggler straggle late last waiting wait imbalance who culprit"});
  e.push_back(
      {{"where-time-goes",
        "rank",
        "Where does one rank's time go?",
        {{"nsys",
          OnRank(f, {"nsys", "profile", "-t", "cuda,nvtx,osrt,mpi", "--cuda-memory-usage=false",
                     "-o", "rank" + rank + ".%p"}),
          "the timeline of rank " + rank +
              ": gaps with no kernel on the GPU rows, long CUDA API calls, MPI/NCCL waits"},
         {"nsys",
          "nsys stats --report cuda_gpu_kern_sum,cuda_api_sum,nvtx_sum rank" + rank + ".*.nsys-rep",
          "the kernels and API calls that take most of the time"},
         {"py-spy / perf",
          f.session != nullptr && CpuProfileStepForRank(*f.session, f.rank, "")
              ? CpuProfileStepForRank(*f.session, f.rank, "")->command
              : OnNode(f, {"py-spy", "record", "--native", "-o", "rank" + rank + ".svg", "--pid",
                           "PID"}),
          "host stacks when the GPU idles: data loading, Python overhead, a lock"}}},
       "profile timeline breakdown busy idle nsys spend"});
  e.push_back(
      {{"launch-bound",
        "rank",
        "Is the GPU starved by the CPU (launch-bound)?",
        {{"nsys", OnRank(f, {"nsys", "profile", "-t", "cuda,nvtx", "-o", "rank" + rank + ".%p"}),
          "short kernels with gaps between them while the CPU thread is inside cudaLaunchKernel"},
         {"rankscope", "rankscope run --gpu-activity all -o out -- ...",
          "launch arrows in trace.json: launch-to-start latency growing means the queue is empty"},
         {"ncu", OnRank(f, {"ncu", "--metrics", "gpu__time_duration.sum", "-c", "200"}),
          "kernels of a few microseconds: candidates for fusion or CUDA graphs"}}},
       "cpu bound starved gaps small kernels cuda graphs overhead python"});
  e.push_back(
      {{"nccl-slow",
        "system",
        "Is communication (NCCL) slower than the hardware allows?",
        {{"rankscope", "rankscope run -o out -- ...",
          "NCCL section: busbw per call shape against the links' speed (NVLink, PCIe, network)"},
         {"nccl-tests", "mpirun -np N all_reduce_perf -b 8 -e 256M -f 2 -g 1",
          "busbw of the large sizes against the same GPUs' peers; a pair or node far below"},
         {"NCCL_DEBUG", "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING,NET ./app",
          "transports per peer (P2P/NVLink vs SHM vs NET), rings and trees, NET/IB vs Socket"}}},
       "communication allreduce all reduce collective bandwidth busbw ring network ib"});
  e.push_back(
      {{"link-slow",
        "node",
        "Is a GPU link (PCIe, NVLink) slower than it should be?",
        {{"nvidia-smi", OnNode(f, {"nvidia-smi", "-q", "-d", "PCIE"}),
          "Link Generation/Width Current below Max while the GPU is busy; Replay counters"},
         {"nvidia-smi", OnNode(f, {"nvidia-smi", "nvlink", "-s"}), "links inactive or slower"},
         {"nvbandwidth", OnNode(f, {"nvbandwidth"}),
          "host<->device and device<->device copy bandwidth of each GPU against the others"},
         {"dcgmi", OnNode(f, {"dcgmi", "dmon", "-e", "1009,1010,1011,1012"}),
          "PCIe and NVLink bytes per second while the job runs"}}},
       "pcie nvlink bandwidth copy memcpy h2d d2h link width generation"});
  e.push_back({{"dataloader",
                "rank",
                "Is data loading holding the job back?",
                {{"rankscope", "rankscope run -o out -- ...",
                  "the dataloader_skew finding: time in data ranges per step and rank"},
                 {"py-spy", OnNode(f, {"py-spy", "dump", "--pid", "PID"}),
                  "where the data-loading threads or workers are"},
                 {"iostat", OnNode(f, {"iostat", "-x", "1"}),
                  "%util and await of the dataset's disk; iowait on the CPU line"}}},
               "data loader input io disk dataset batch prefetch"});
  e.push_back({{"kernel-bound",
                "kernel",
                "Is this kernel memory-bound or compute-bound?",
                {{"ncu",
                  OnRank(f, {"ncu", "--set", "full", "-k", "regex:" + f.kernel, "--launch-skip",
                             "10", "--launch-count", "1", "-o", "rank" + rank + "_kernel"}),
                  "GPU Speed Of Light: memory vs compute throughput %; the roofline chart"},
                 {"ncu",
                  "ncu --import rank" + rank +
                      "_kernel.ncu-rep --page details --section "
                      "MemoryWorkloadAnalysis",
                  "which memory level saturates (DRAM, L2, L1/shared) and the access pattern"},
                 {"ncu",
                  OnRank(f, {"ncu", "--section", "WarpStateStats", "-k", "regex:" + f.kernel,
                             "--launch-count", "1"}),
                  "the top warp stall reasons when neither is saturated (latency-bound)"}}},
               "kernel slow memory compute roofline occupancy ncu throughput"});
  e.push_back(
      {{"kernel-source",
        "kernel",
        "Which lines of this kernel are slow?",
        {{"ncu",
          OnRank(f, {"ncu", "--set", "full", "--import-source", "yes", "-k", "regex:" + f.kernel,
                     "--launch-count", "1", "-o", "rank" + rank + "_src"}),
          "Source page: stalls and memory traffic per line (build with -lineinfo)"}}},
       "source line hotspot lineinfo"});
  e.push_back({{"sass",
                "sass",
                "Why does the compiler emit this (registers, spills, instructions)?",
                {{"nvcc", "nvcc --ptxas-options=-v -lineinfo ...",
                  "registers per thread, spill stores/loads, shared memory per kernel"},
                 {"cuobjdump", "cuobjdump -sass ./app | less",
                  "the instructions of " + f.kernel + ": local memory (LDL/STL) means spills"},
                 {"nvdisasm", "cuobjdump -xelf all ./app && nvdisasm -g -c FILE.cubin",
                  "control flow and the line each instruction comes from"}}},
               "compiler register spill instruction ptx ptxas assembly disassemble"});
  e.push_back({{"clocks",
                "node",
                "Are my nodes' clocks in sync (can I trust a cross-node timeline)?",
                {{"rankscope", "rankscope report out",
                  "Clocks table: offset and ±uncertainty per rank; findings hidden by it"},
                 {"chronyc", OnNode(f, {"chronyc", "tracking"}),
                  "System time offset and Root dispersion of the node"}}},
               "clock time sync ntp ptp offset skew drift"});
  return e;
}

}  // namespace

AdviceFacts FactsOf(const Session& session, const std::vector<Finding>& findings) {
  AdviceFacts f;
  f.session = &session;
  f.rank = session.ranks.empty() ? 0 : session.ranks.front().id.rank;
  for (const Finding& finding : findings) {  // worst first
    if (!finding.ranks.empty()) {
      f.rank = finding.ranks.front();
      f.why = "rank " + std::to_string(f.rank) + " (" + finding.kind + ")";
      break;
    }
  }
  const RankData* r = session.FindRank(f.rank);
  if (r != nullptr && !r->id.node.empty()) f.node = r->id.node;
  if (r != nullptr) {
    std::map<std::string, DurationNs> time_by_kernel;
    for (const GpuActivityRecord& g : r->gpu) {
      if (g.kind == GpuActivityKind::kKernel) time_by_kernel[g.name] += g.end - g.start;
    }
    auto heaviest =
        std::max_element(time_by_kernel.begin(), time_by_kernel.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    if (heaviest != time_by_kernel.end()) f.kernel = KernelRegex(heaviest->first);
  }
  return f;
}

std::string QuestionFor(const Finding& finding) {
  if (finding.kind == "straggler") {
    const std::string cause = finding.evidence.value("cause_kind", "");
    return cause == "gpu_queue" || cause == "gpu_kernels" ? "kernel-bound" : "where-time-goes";
  }
  if (finding.kind == "late_sender" || finding.kind == "late_receiver" ||
      finding.kind == "process_outlier") {
    return "where-time-goes";
  }
  if (finding.kind == "dataloader_skew") return "dataloader";
  if (finding.kind == "imbalanced_ring") return "nccl-slow";
  if (finding.kind == "pcie_bound" || finding.kind == "nvlink_down") return "link-slow";
  return "";
}

void AddPlannerSteps(const Session& session, const std::string& session_dir,
                     std::vector<Finding>* findings) {
  for (Finding& f : *findings) {
    const std::string id = QuestionFor(f);
    if (id.empty()) continue;
    const std::vector<Answer> answers = Ask(id, FactsOf(session, {f}));
    if (answers.empty()) continue;
    std::set<std::string> tools, commands;
    for (const NextStep& s : f.next_steps) {
      tools.insert(s.tool);
      commands.insert(s.command);
    }
    int added = 0;
    for (const AdviceStep& step : answers.front().steps) {
      if (added == 2) break;
      if (tools.count(step.tool) > 0 || commands.count(step.command) > 0) continue;
      tools.insert(step.tool);
      commands.insert(step.command);
      f.next_steps.push_back({step.tool, step.command, step.look_for});
      ++added;
    }
    f.next_steps.push_back({"rankscope",
                            ShellJoin({"rankscope", "advise", id, "--session", session_dir}),
                            "the planner's whole chain for \"" + answers.front().question +
                                "\", with this job's commands filled in"});
  }
}

std::vector<Answer> Catalogue(const AdviceFacts& facts) {
  std::vector<Answer> out;
  for (Entry& e : Entries(facts)) out.push_back(std::move(e.answer));
  return out;
}

std::vector<Answer> Ask(std::string_view text, const AdviceFacts& facts, size_t most) {
  std::vector<Entry> entries = Entries(facts);
  std::vector<std::pair<int, size_t>> scored;
  const std::vector<std::string> asked = Words(text);
  for (size_t i = 0; i < entries.size(); ++i) {
    if (text == entries[i].answer.id) return {entries[i].answer};
    std::set<std::string> vocabulary;
    for (const std::string& w : Words(entries[i].answer.question)) vocabulary.insert(w);
    for (const std::string& w : Words(entries[i].keywords)) vocabulary.insert(w);
    int score = 0;
    for (const std::string& w : asked) {
      if (IsStopWord(w)) continue;
      // A word counts when it is one of the entry's, or a longer form of one ("stragglers").
      for (const std::string& v : vocabulary) {
        if (v.size() >= 3 && w.rfind(v, 0) == 0) {
          ++score;
          break;
        }
      }
    }
    if (score > 0) scored.push_back({score, i});
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<Answer> out;
  for (size_t k = 0; k < scored.size() && k < most; ++k) {
    out.push_back(std::move(entries[scored[k].second].answer));
  }
  return out;
}

}  // namespace rankscope
