#include "coordinator/advise/advisor.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "coordinator/advise/next_steps.h"
#include "coordinator/analysis/kernel_reports.h"
#include "core/format.h"
#include "model/gpu/gpu_stats.h"
#include "model/nccl/bus_bandwidth.h"
#include "model/nccl/nccl_types.h"

namespace rankscope {
namespace {

// ncu -k matches the kernel's function name (no namespace, parameters or template arguments).
std::string KernelRegex(const std::string& mangled) {
  std::string name = Demangle(mangled);
  // "(anonymous namespace)::" is a scope, not the parameter list.
  constexpr std::string_view kAnonymous = "(anonymous namespace)";
  for (size_t at; (at = name.find(kAnonymous)) != std::string::npos;) {
    name.replace(at, kAnonymous.size(), "anonymous_namespace");
  }
  // Up to the parameter list (the first '(' outside template arguments, which may hold lambdas'
  // parameter lists), without the template arguments.
  int depth = 0;
  std::string bare;
  for (char c : name) {
    if (c == '(' && depth == 0) break;
    if (c == '<') ++depth;
    if (depth == 0) bare += c;
    if (c == '>') --depth;
  }
  // A demangled name may lead with its return type ("void gemm<float>(float*)").
  if (size_t space = bare.rfind(' '); space != std::string::npos) bare = bare.substr(space + 1);
  if (size_t colon = bare.rfind("::"); colon != std::string::npos) bare = bare.substr(colon + 2);
  std::string regex;
  for (char c : bare) {
    if (std::string_view(".[]{}()*+?^$|\\").find(c) != std::string_view::npos) regex += '\\';
    regex += c;
  }
  return regex.empty() ? "KERNEL" : regex;
}

// The nccl-tests binary that measures `op` the way the job calls it.
std::string NcclTestsBinary(NcclOp op) {
  switch (op) {
    case NcclOp::kAllGather:
      return "all_gather_perf";
    case NcclOp::kReduceScatter:
      return "reduce_scatter_perf";
    case NcclOp::kBroadcast:
      return "broadcast_perf";
    case NcclOp::kReduce:
      return "reduce_perf";
    case NcclOp::kAllToAll:
      return "alltoall_perf";
    case NcclOp::kGather:
      return "gather_perf";
    case NcclOp::kScatter:
      return "scatter_perf";
    case NcclOp::kSend:
    case NcclOp::kRecv:
    case NcclOp::kSendRecv:
      return "sendrecv_perf";
    default:
      return "all_reduce_perf";
  }
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

// The job relaunched with `tool` in front of every rank's program; the same generic line without
// a session.
std::string OnEveryRank(const AdviceFacts& f, const std::vector<std::string>& tool) {
  return f.session != nullptr ? RelaunchWithToolOnEveryRank(*f.session, tool) : OnRank(f, tool);
}

std::string R(const AdviceFacts& f) { return std::to_string(f.rank); }

// --- The steps. Every command the planner hands out is built by one of these, for the catalogue
// and for findings alike; `look_for` overrides the step's own words where a finding knows more.

std::string Or(std::string look_for, std::string otherwise) {
  return look_for.empty() ? std::move(otherwise) : std::move(look_for);
}

// nsys on the rank alone, its report rankN.nsys-rep (overwritten when the step is run again).
NextStep NsysOnRank(const AdviceFacts& f, std::string_view trace, std::string look_for = "") {
  return {"nsys",
          OnRank(f, {"nsys", "profile", "--trace=" + std::string(trace), "--force-overwrite=true",
                     "--output=rank" + R(f)}),
          Or(std::move(look_for), "the timeline of rank " + R(f) +
                                      ": gaps with no kernel on the GPU rows, long CUDA API "
                                      "calls, MPI/NCCL waits")};
}

// nsys on every rank, one report each, to compare the late rank's timeline with another's.
// nsys names each rank's report with %q{} of the launcher's rank variable.
NextStep NsysOnEveryRank(const AdviceFacts& f) {
  const std::string output = f.session != nullptr ? RankOutputName(*f.session, f.rank)
                                                  : std::string("rank%q{OMPI_COMM_WORLD_RANK}");
  return {"nsys",
          OnEveryRank(f, {"nsys", "profile", "--trace=cuda,nvtx,osrt,mpi", "--force-overwrite=true",
                          "--output=" + output}),
          "one report per rank: open them together (nsys-ui multi-report view) and compare the "
          "late rank's row with a punctual one's"};
}

NextStep NsysStats(const AdviceFacts& f) {
  return {"nsys",
          "nsys stats --report cuda_gpu_kern_sum,cuda_api_sum,nvtx_sum rank" + R(f) + ".nsys-rep",
          "the kernels and API calls that take most of the time"};
}

// A CPU profile of the rank in the next run: py-spy for Python programs, perf otherwise (the job
// is over when a report is read, so its pid is useless).
NextStep CpuProfile(const AdviceFacts& f, std::string look_for = "") {
  look_for = Or(std::move(look_for),
                "host stacks when the GPU idles: data loading, Python "
                "overhead, a lock");
  const std::string name = "rank" + R(f);
  if (f.session == nullptr || IsPythonProgram(*f.session, f.rank)) {
    return {"py-spy", OnRank(f, {"py-spy", "record", "--native", "--output", name + ".svg", "--"}),
            look_for};
  }
  return {"perf", OnRank(f, {"perf", "record", "-g", "--output", name + ".perf.data", "--"}),
          look_for};
}

// The rank's stacks now, by pid on its node, while the job still runs (a session attached from
// outside); else a CPU profile of the next run.
NextStep Stacks(const AdviceFacts& f, std::string look_for = "") {
  const RankData* r = f.session != nullptr ? f.session->FindRank(f.rank) : nullptr;
  if (f.session != nullptr && !f.session->SampledFromOutsideOnly()) {
    return CpuProfile(f, std::move(look_for));
  }
  const std::string pid =
      r != nullptr && r->id.program_pid > 0 ? std::to_string(r->id.program_pid) : "PID";
  look_for = Or(std::move(look_for), "where the rank's threads (and its loader's workers) are");
  if (f.session != nullptr && !IsPythonProgram(*f.session, f.rank)) {
    // perf top needs a terminal, which srun/ssh do not give: record 10 s instead.
    return {"perf",
            OnNode(f, {"perf", "record", "-g", "-p", pid, "--output", "rank" + R(f) + ".perf.data",
                       "--", "sleep", "10"}),
            look_for};
  }
  return {"py-spy", OnNode(f, {"py-spy", "dump", "--native", "--pid", pid}), look_for};
}

NextStep Pidstat(const AdviceFacts& f) {
  return {"pidstat", OnRank(f, {"pidstat", "-d", "1", "-e"}),
          "kB_rd/s and iodelay of rank " + R(f) +
              "'s process while it runs: high iodelay means it waits for storage; compare with a "
              "rank on another node"};
}

// What runs on the node, busiest first, with the CPU each thread last ran on (psr): another
// process on the rank's cores, or ranks bound to the same core.
NextStep CpuShare(const AdviceFacts& f) {
  return {"ps", OnNode(f, {"ps", "-eLo", "pid,tid,psr,pcpu,stat,comm", "--sort=-pcpu"}),
          "threads other than the job's on the CPUs (psr) that rank " + R(f) +
              "'s threads run on, and whether rank " + R(f) + " shares a core with another rank"};
}

// Why the rank's main thread was off its CPU (coordinator/analysis/off_cpu.h): who froze or
// stopped it, or what it blocked on.
std::vector<NextStep> OffCpuSteps(const AdviceFacts& f, CauseKind cause,
                                  const std::optional<OffCpuCause>& off_cpu) {
  if (cause == CauseKind::kFrozen) {
    return {
        {"cgroup",
         OnNode(f, {"grep", "-rlE", "FROZEN|frozen 1", "/sys/fs/cgroup", "--include=freezer.state",
                    "--include=cgroup.events"}),
         "the frozen cgroups on the node (v1 freezer.state FROZEN, v2 cgroup.events frozen 1), "
         "while the job runs, and rank " +
             R(f) + "'s among them"},
        {"ps", OnNode(f, {"ps", "-eo", "pid,stat,wchan:32,cmd"}),
         "rank " + R(f) +
             "'s processes in __refrigerator; then who writes freezer.state or "
             "cgroup.freeze (a checkpointer, the batch system's suspend, a node health agent)"}};
  }
  if (cause == CauseKind::kStopped) {
    return {
        {"ps", OnNode(f, {"ps", "-eo", "pid,ppid,stat,wchan:32,cmd"}),
         "rank " + R(f) +
             "'s processes in state T and their parents; TracerPid in "
             "/proc/PID/status names an attached debugger, `scontrol show job` a suspended job"}};
  }
  const std::string where = off_cpu ? off_cpu->where : std::string("the kernel");
  return {
      {"strace", OnRank(f, {"strace", "-f", "-T", "-tt", "-o", "rank" + R(f) + ".strace", "--"}),
       "the system calls of rank " + R(f) +
           " that take long (-T: time in each) while it "
           "blocks in " +
           where + ", and the file descriptor they use"},
      {"ls", OnNode(f, {"ls", "-l", "/proc/PID/fd"}),
       "what that file descriptor is (a pipe, a FIFO, a file on which mount), PID being rank " +
           R(f) + "'s program while it runs"}};
}

// The CPU quota and throttling counters of the rank's cgroup (v1 or v2).
NextStep CgroupQuota(const AdviceFacts& f, const std::optional<QuotaCgroup>& cgroup) {
  const std::string path = cgroup ? cgroup->path : std::string("/");
  const int version = cgroup ? cgroup->version : 2;
  std::vector<std::string> argv = {"cat"};
  if (version == 1) {
    argv.push_back("/sys/fs/cgroup/cpu" + path + "/cpu.cfs_quota_us");
    argv.push_back("/sys/fs/cgroup/cpu" + path + "/cpu.stat");
  } else {
    argv.push_back("/sys/fs/cgroup" + path + "/cpu.max");
    argv.push_back("/sys/fs/cgroup" + path + "/cpu.stat");
  }
  return {"cgroup", OnNode(f, argv),
          "a quota below the CPUs rank " + R(f) +
              " needs (cpu.max / cfs_quota_us), and nr_throttled rising while the job runs"};
}

NextStep Iostat(const AdviceFacts& f) {
  return {"iostat", OnNode(f, {"iostat", "-x", "1", "30"}),
          "%util and r_await of the device the data is read from on node " + f.node +
              ", compared with another node; iowait on the CPU line"};
}

NextStep GpuClocks(const AdviceFacts& f) {
  return {"nvidia-smi", OnNode(f, {"nvidia-smi", "-q", "-d", "PERFORMANCE,CLOCK,TEMPERATURE"}),
          "clocks below the other GPUs', or active throttle reasons (HW Slowdown, HW Thermal, SW "
          "Power Cap) on the GPU of rank " +
              R(f)};
}

NextStep NcuFull(const AdviceFacts& f) {
  return {
      "ncu",
      OnRank(f, {"ncu", "--set", "full", "-k", "regex:" + f.kernel, "--launch-skip", "10",
                 "--launch-count", "1", "-o", "rank" + R(f) + "_kernel"}),
      "GPU Speed Of Light: memory vs compute throughput % of " + f.kernel + "; the roofline chart"};
}

// What NcuFull's report says, read for you: roofline position and verdict, occupancy limiter,
// warp stalls with fixes (model/ncu).
NextStep InspectNcuReport(const AdviceFacts& f) {
  return {
      "rankscope",
      "rankscope inspect ncu rank" + R(f) + "_kernel.ncu-rep --html rank" + R(f) + "_kernel.html",
      "the kernel on its roofline: memory-, compute- or latency-bound and how near the roof, "
      "what limits occupancy, the top warp stalls and what to change (run where ncu is)"};
}

// The launch again under rankscope with ncu on the rank alone: its report lands in the session
// folder and is read into the findings (the straggler's chain ends with the kernel's verdict).
// NcuFull where the session's launch command is unknown.
NextStep NcuRunOnRank(const AdviceFacts& f) {
  if (f.session == nullptr || f.session->command.empty()) return NcuFull(f);
  std::vector<std::string> argv = {
      "rankscope", "run",        "--ncu-rank", R(f), "--ncu-kernel",
      f.kernel,    "--ncu-skip", "10",         "-o", "rankscope-ncu-rank" + R(f),
      "--"};
  argv.insert(argv.end(), f.session->command.begin(), f.session->command.end());
  return {"rankscope", ShellJoin(argv),
          "the finding on rank " + R(f) + " ending with " + f.kernel +
              "'s verdict (memory-, compute- or latency-bound, how near its roof), its top warp "
              "stall and the fix; the roofline and stall bars in report.html (ncu slows rank " +
              R(f) + " while it profiles: who straggles is this run's finding)"};
}

// The verdict a finding already carries, read in full: occupancy, every stall, the chart.
NextStep InspectKnownReport(const AdviceFacts& f, const KernelVerdict& v) {
  return {"rankscope",
          ShellJoin(
              {"rankscope", "inspect", "ncu", v.report, "--html", "rank" + R(f) + "_kernel.html"}),
          "why " + v.kernel + " is " + v.bound +
              ": the occupancy limiter, every warp stall with its fix, the roofline chart (run "
              "where the report is)"};
}

// The launch again under rankscope without the tool the finding's ranks ran under: whether they
// straggle on their own. Null where the session's launch command is unknown.
std::optional<NextStep> RunWithoutTool(const AdviceFacts& f, const std::string& tool) {
  if (f.session == nullptr || f.session->command.empty()) return std::nullopt;
  std::vector<std::string> argv = {"rankscope", "run", "-o", "rankscope-without-" + tool, "--"};
  argv.insert(argv.end(), f.session->command.begin(), f.session->command.end());
  return NextStep{"rankscope", ShellJoin(argv),
                  "whether rank " + R(f) + " straggles without " + tool +
                      " slowing it (this run's lateness is mostly the tool's)"};
}

NextStep TopoMatrix(const AdviceFacts& f) {
  return {"nvidia-smi", OnNode(f, {"nvidia-smi", "topo", "-m"}),
          "the link between the ranks' GPUs and to the NICs: NV# (NVLink) vs PIX/PXB (a PCIe "
          "switch) vs PHB/SYS (PCIe through the CPU)"};
}

// nccl-tests on the finding's nodes, for the op and size the job runs; generic without them.
NextStep NcclTests(const AdviceFacts& f, const std::optional<CommMeasure>& ring) {
  if (!ring || f.nodes.empty()) {
    return {"nccl-tests", "mpirun -np N all_reduce_perf -b 8 -e 256M -f 2 -g 1",
            "busbw of the large sizes against the same GPUs' peers; a pair or node far below"};
  }
  // The communicator's ranks where they ran: so many on each node, in the order first seen.
  std::vector<std::pair<std::string, int>> per_node;
  for (int rank : f.ranks) {
    const RankData* r = f.session != nullptr ? f.session->FindRank(rank) : nullptr;
    const std::string node = r == nullptr ? "" : r->id.node;
    if (node.empty()) return NcclTests(f, std::nullopt);
    auto it = std::find_if(per_node.begin(), per_node.end(),
                           [&](const auto& p) { return p.first == node; });
    if (it == per_node.end()) {
      per_node.emplace_back(node, 1);
    } else {
      ++it->second;
    }
  }
  const int nranks = static_cast<int>(f.ranks.size());
  if (nranks < 2) return NcclTests(f, std::nullopt);
  const NcclOp op = ring->op == NcclOp::kUnknown ? NcclOp::kAllReduce : ring->op;
  // nccl-tests' -b/-e is its whole buffer (all ranks' parts for all-gather and reduce-scatter).
  const std::string bytes = std::to_string(NcclTestsSizeBytes(op, ring->bytes, nranks));
  std::vector<std::string> argv;
  std::string hosts;
  bool even = true;
  for (const auto& [node, count] : per_node) {
    hosts += (hosts.empty() ? "" : ",") + node;
    even &= count == per_node.front().second;
  }
  if (f.session != nullptr && JobLauncherName(*f.session) == "srun" && even) {
    argv = {"srun",
            "-N",
            std::to_string(per_node.size()),
            "-n",
            std::to_string(nranks),
            "--ntasks-per-node=" + std::to_string(per_node.front().second),
            "-w",
            hosts};
  } else {
    hosts.clear();
    for (const auto& [node, count] : per_node) {
      hosts += (hosts.empty() ? "" : ",") + node + ":" + std::to_string(count);
    }
    argv = {"mpirun", "-np", std::to_string(nranks), "-H", hosts};
  }
  argv.insert(argv.end(), {NcclTestsBinary(op), "-b", bytes, "-e", bytes, "-g", "1"});
  const double peers = ring->peers >= 0 ? ring->peer_median_busbw_gbps : 0.0;
  return {"nccl-tests", ShellJoin(argv),
          "busbw on these ranks' nodes alone" +
              (peers > 0 ? " against the peers' " + FormatDouble("%.0f", peers) + " GB/s"
                         : std::string(" against what their links allow"))};
}

NextStep NcclDebug(const AdviceFacts& f) {
  const std::vector<std::string> env = {"NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=INIT,GRAPH"};
  return {
      "NCCL_DEBUG",
      f.session != nullptr ? RelaunchWithEnvironment(*f.session, env) : ShellJoin(env) + " ./app",
      "the Channel/Ring lines and 'via' transports per peer (P2P/NVLink vs SHM vs NET), "
      "NET/IB vs Socket"};
}

NextStep PcieQuery(const AdviceFacts& f) {
  return {"nvidia-smi", OnNode(f, {"nvidia-smi", "-q", "-d", "PCIE"}),
          "Link Generation/Width Current below Max while the GPU is busy; Replay counters"};
}

NextStep Lspci(const AdviceFacts& f) {
  return {"lspci", OnNode(f, {"lspci", "-vv"}),
          "LnkSta of the GPU (and the bridges above it) against LnkCap"};
}

NextStep NvbandwidthCopies(const AdviceFacts& f) {
  return {"nvbandwidth",
          OnNode(f, {"nvbandwidth", "-t", "host_to_device_memcpy_ce", "device_to_host_memcpy_ce",
                     "device_to_device_memcpy_read_ce"}),
          "host<->device and device<->device copy bandwidth of each GPU against the others"};
}

NextStep NvlinkStatus(const AdviceFacts& f) {
  return {"nvidia-smi", OnNode(f, {"nvidia-smi", "nvlink", "--status"}),
          "links shown inactive or slower, per GPU"};
}

NextStep NvlinkErrors(const AdviceFacts& f) {
  return {"nvidia-smi", OnNode(f, {"nvidia-smi", "nvlink", "-e"}),
          "replay, recovery and CRC error counters rising on a link"};
}

NextStep DcgmDiag(const AdviceFacts& f) {
  return {"dcgmi", OnNode(f, {"dcgmi", "diag", "-r", "2"}),
          "any test not Pass (PCIe, memory, NVLink, targeted stress) on the node's GPUs"};
}

// The rest of the chain for this session.
NextStep AdviseMore(const std::string& id, const std::string& question,
                    const std::string& session_dir, int rank) {
  return {"rankscope",
          ShellJoin({"rankscope", "advise", id, "--session", session_dir, "--rank",
                     std::to_string(rank)}),
          "the planner's whole chain for \"" + question + "\", with this job's commands filled in"};
}

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
  const std::string job =
      f.session != nullptr ? ShellJoin(f.session->command) : std::string("mpirun -np N ./app");
  std::vector<Entry> e;
  e.push_back(
      {{"cluster-health",
        "fleet",
        "Is the cluster healthy? Which nodes will slow tomorrow's jobs?",
        {DcgmDiag(f),
         {"nvidia-smi", OnNode(f, {"nvidia-smi", "-q", "-d", "ECC,PAGE_RETIREMENT,ROW_REMAPPER"}),
          "volatile/aggregate double-bit ECC errors, pending page retirements or row remaps"},
         {"nvidia-smi", OnNode(f, {"nvidia-smi", "-q", "-d", "PERFORMANCE"}),
          "Clocks Event Reasons active while busy: HW Slowdown, HW Thermal, SW Power Cap"},
         {"rankscope", "rankscope sweep --level standard",
          "the grid of every node's checks against its peers and its own past"}}},
       "node nodes broken bad gpu errors ecc xid sweep nightly fleet"});
  e.push_back({{"slow-rank",
                "system",
                "Which rank (or node) makes my job slow, and why?",
                {{"rankscope", "rankscope run -o out -- " + job,
                  "the straggler finding: the late rank, how late, what it did meanwhile"},
                 {"rankscope", "rankscope report out --min-lateness-ms 0.2",
                  "smaller stragglers, re-analysed from the saved session"},
                 NsysOnEveryRank(f)}},
               "straggler straggle late last waiting wait imbalance who culprit"});
  e.push_back({{"where-time-goes",
                "rank",
                "Where does one rank's time go?",
                {NsysOnRank(f, "cuda,nvtx,osrt,mpi"), NsysStats(f), CpuProfile(f)}},
               "profile timeline breakdown busy idle nsys spend"});
  e.push_back(
      {{"launch-bound",
        "rank",
        "Is the GPU starved by the CPU (launch-bound)?",
        {NsysOnRank(f, "cuda,nvtx",
                    "short kernels with gaps between them while the CPU thread is inside "
                    "cudaLaunchKernel"),
         {"rankscope", "rankscope run --gpu-activity all -o out -- " + job,
          "launch arrows in trace.json: launch-to-start latency growing means the queue is empty"},
         {"ncu", OnRank(f, {"ncu", "--metrics", "gpu__time_duration.sum", "-c", "200"}),
          "kernels of a few microseconds: candidates for fusion or CUDA graphs"}}},
       "cpu bound starved gaps small kernels cuda graphs overhead python"});
  e.push_back({{"gpu-slow",
                "node",
                "Is this GPU slower than its peers (clocks, power, heat)?",
                {GpuClocks(f),
                 {"dcgmi", OnNode(f, {"dcgmi", "dmon", "-e", "100,101,140,150,155"}),
                  "SM and memory clocks, memory and GPU temperature, power while the job runs, "
                  "against another node's GPUs"},
                 DcgmDiag(f)}},
               "gpu clock clocks throttle throttling thermal power slowdown hot temperature"});
  e.push_back({{"nccl-slow",
                "system",
                "Is communication (NCCL) slower than the hardware allows?",
                {{"rankscope", "rankscope run -o out -- " + job,
                  "NCCL section: busbw per call shape against the links' speed (NVLink, PCIe, "
                  "network)"},
                 NcclTests(f, std::nullopt),
                 NcclDebug(f),
                 TopoMatrix(f)}},
               "communication allreduce all reduce collective bandwidth busbw ring network ib"});
  e.push_back({{"link-slow",
                "node",
                "Is a GPU link (PCIe, NVLink) slower than it should be?",
                {PcieQuery(f),
                 NvlinkStatus(f),
                 NvbandwidthCopies(f),
                 Lspci(f),
                 {"dcgmi", OnNode(f, {"dcgmi", "dmon", "-e", "1009,1010,1011,1012"}),
                  "PCIe and NVLink bytes per second while the job runs"}}},
               "pcie nvlink bandwidth copy memcpy h2d d2h link width generation"});
  e.push_back({{"dataloader",
                "rank",
                "Is data loading holding the job back?",
                {{"rankscope", "rankscope run -o out -- " + job,
                  "the dataloader_skew finding: time in data ranges per step and rank"},
                 Stacks(f, "where the data-loading threads or workers are"),
                 Pidstat(f),
                 Iostat(f)}},
               "data loader input io disk dataset batch prefetch"});
  std::vector<NextStep> kernel_bound;
  if (f.measured) {
    // The session holds the answer: read it in full first.
    NextStep known = InspectKnownReport(f, *f.measured);
    known.look_for = "this session's ncu report says " + DescribeVerdict(*f.measured) +
                     "; in full: " + known.look_for;
    kernel_bound.push_back(std::move(known));
  } else {
    kernel_bound = {NcuFull(f), InspectNcuReport(f)};
  }
  e.push_back({{"kernel-bound",
                "kernel",
                "Is this kernel memory-bound or compute-bound?",
                {kernel_bound[0],
                 kernel_bound.size() > 1 ? kernel_bound[1] : NcuFull(f),
                 {"ncu",
                  "ncu --import rank" + rank +
                      "_kernel.ncu-rep --page details --section MemoryWorkloadAnalysis",
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

// The facts of one finding: its first rank and that rank's node, the finding's nodes, and the
// kernel it names (else the rank's heaviest).
AdviceFacts FactsOfFinding(const Session& session, const Finding& finding) {
  AdviceFacts f = FactsOf(session, {finding});
  f.ranks = finding.ranks;
  f.nodes = finding.nodes;
  if (f.nodes.empty() && f.node != "NODE") f.nodes = {f.node};
  // Node-level steps go to the first node the finding names (a pcie_bound finding may name only
  // some of its communicator's nodes), through a rank that ran there.
  for (int rank : finding.ranks) {
    const RankData* r = session.FindRank(rank);
    if (r != nullptr && !finding.nodes.empty() && r->id.node == finding.nodes.front()) {
      f.rank = rank;
      f.node = r->id.node;
      break;
    }
  }
  if (finding.kernels && !finding.kernels->empty()) {
    f.kernel = KernelRegex(finding.kernels->front().name);
  }
  return f;
}

// The steps a finding calls for, before the way to the rest of its question's chain.
std::vector<NextStep> StepsFor(const Finding& finding, const AdviceFacts& f) {
  const std::string& focus = finding.focus;
  if (!finding.under_tool.empty()) {
    // The tool slowed the rank: its own report first, then the run that says who straggles.
    std::vector<NextStep> steps;
    if (!finding.kernel_verdicts.empty()) {
      steps.push_back(InspectKnownReport(f, finding.kernel_verdicts.front()));
    }
    if (std::optional<NextStep> again = RunWithoutTool(f, finding.under_tool)) {
      steps.push_back(*again);
    }
    return steps;
  }
  if (finding.cause == CauseKind::kCpuStarved) {
    // Starved from outside the program: what shares its CPUs, and its cgroup's quota.
    return {CpuShare(f), CgroupQuota(f, finding.quota_cgroup),
            NsysOnRank(f, "mpi,nvtx,osrt", focus)};
  }
  if (const CauseKind cause = finding.cause;
      cause == CauseKind::kFrozen || cause == CauseKind::kStopped || cause == CauseKind::kBlocked) {
    std::vector<NextStep> steps = OffCpuSteps(f, cause, finding.off_cpu);
    steps.push_back(NsysOnRank(f, "mpi,nvtx,osrt", focus));
    return steps;
  }
  if (finding.kind == FindingKind::kStraggler) {
    const CauseKind cause = finding.cause;
    if (cause == CauseKind::kGpuQueue || cause == CauseKind::kGpuKernels) {
      if (!finding.kernel_verdicts.empty()) {
        return {InspectKnownReport(f, finding.kernel_verdicts.front()),
                NsysOnRank(f, "cuda,nvtx", focus), GpuClocks(f)};
      }
      if (f.session == nullptr || f.session->command.empty()) {
        return {NsysOnRank(f, "cuda,nvtx", focus), GpuClocks(f), NcuFull(f), InspectNcuReport(f)};
      }
      return {NsysOnRank(f, "cuda,nvtx", focus), GpuClocks(f), NcuRunOnRank(f)};
    }
    if (cause == CauseKind::kNvtxRange || cause == CauseKind::kUntrackedHostTime) {
      // Host work shows up in a CPU profile; time blocked in MPI or unexplained time does not.
      return {NsysOnRank(f, "mpi,nvtx,osrt", focus),
              CpuProfile(f, "the hottest stacks of rank " + R(f) +
                                " while it runs (profile while the job is slow)")};
    }
    return {NsysOnRank(f, "mpi,nvtx,osrt", focus)};
  }
  if (finding.kind == FindingKind::kLateSender || finding.kind == FindingKind::kLateReceiver) {
    return {NsysOnRank(f, "mpi,nvtx,osrt", focus),
            CpuProfile(f, "the hottest stacks of rank " + R(f) + " while it runs")};
  }
  if (finding.kind == FindingKind::kDataloaderSkew) {
    return {Stacks(f, focus.empty() ? ""
                                    : "the stacks of rank " + R(f) + " inside " + focus +
                                          ": decoding/augmentation (CPU), file reads (I/O) "
                                          "or waiting for worker processes"),
            Pidstat(f), Iostat(f),
            NsysOnRank(f, "mpi,nvtx,osrt",
                       "OS runtime calls (read, pread, open, futex) inside " +
                           Or(focus, "the data ranges") + " on rank " + R(f))};
  }
  if (finding.kind == FindingKind::kImbalancedRing) {
    return {TopoMatrix(f), NcclTests(f, finding.comm_measure), NcclDebug(f)};
  }
  if (finding.kind == FindingKind::kBelowLinkCeiling) {
    // On the limiting link's node: the link's own state, then NCCL alone on these ranks' nodes,
    // then which transport NCCL chose.
    AdviceFacts on_link = f;
    const LimitingLink link = finding.limiting_link.value_or(LimitingLink{});
    // The member on the limiting side (the weaker node's, for a NIC).
    const int at = link.at_rank >= 0 ? link.at_rank : link.from_rank;
    if (at >= 0) on_link.rank = at;
    std::vector<NextStep> steps = {TopoMatrix(on_link)};
    if (link.medium == LinkMedium::kNvlink) steps.push_back(NvlinkStatus(on_link));
    if (link.medium == LinkMedium::kPcie) steps.push_back(PcieQuery(on_link));
    if (link.medium == LinkMedium::kNetwork) {
      steps.push_back({"ibstat", OnNode(on_link, {"ibstat"}),
                       "State Active, Physical state LinkUp and Rate of the NICs NCCL uses"});
    }
    steps.push_back(NcclTests(f, finding.comm_measure));
    steps.push_back(NcclDebug(f));
    return steps;
  }
  if (finding.kind == FindingKind::kPcieBound) {
    if (finding.nvml_links && !finding.nvml_links->pcie.empty()) {
      return {PcieQuery(f), Lspci(f), NvbandwidthCopies(f)};
    }
    // From the topology and a slow communicator it measured (joined, or the one it was made of).
    std::optional<CommMeasure> ring = finding.comm_measure;
    for (const Finding& j : finding.joined) {
      if (j.kind == FindingKind::kImbalancedRing && j.comm_measure) ring = j.comm_measure;
    }
    return {TopoMatrix(f), PcieQuery(f), NcclTests(f, ring)};
  }
  if (finding.kind == FindingKind::kNvlinkDown)
    return {NvlinkStatus(f), NvlinkErrors(f), DcgmDiag(f)};
  if (finding.kind == FindingKind::kProcessOutlier) {
    const RankData* r = f.session != nullptr ? f.session->FindRank(f.rank) : nullptr;
    std::string relaunch = "rankscope run --dormant -- srun SRUN_OPTIONS";
    if (r != nullptr && !r->id.program.empty()) relaunch += " " + ShellJoin(r->id.program);
    return {Stacks(f, focus),
            {"rankscope", relaunch,
             "relaunch under rankscope (dormant: no cost until attached), then rankscope "
             "attach: call timings show whether the others wait for it"}};
  }
  return {};
}

}  // namespace

AdviceFacts FactsOf(const Session& session, const std::vector<Finding>& findings) {
  AdviceFacts f;
  f.session = &session;
  f.rank = session.ranks.empty() ? 0 : session.ranks.front().id.rank;
  for (const Finding& finding : findings) {  // worst first
    if (!finding.ranks.empty()) {
      f.rank = finding.ranks.front();
      f.why = "rank " + std::to_string(f.rank) + " (" + std::string(finding.KindName()) + ")";
      break;
    }
  }
  const RankData* r = session.FindRank(f.rank);
  if (r != nullptr && !r->id.node.empty()) f.node = r->id.node;
  if (r != nullptr) {
    const std::map<std::string, KernelTotal> time_by_kernel =
        KernelTotals(r->gpu, r->gpu_stats, ReadGpuRows(*r));
    auto heaviest = std::max_element(
        time_by_kernel.begin(), time_by_kernel.end(),
        [](const auto& a, const auto& b) { return a.second.total < b.second.total; });
    if (heaviest != time_by_kernel.end()) f.kernel = KernelRegex(heaviest->first);
  }
  // ncu's report of the rank (its first kernel: the launches ncu was told to profile).
  for (const RankKernelReport& report : SessionKernelReports(session)) {
    if (report.rank == f.rank && !report.kernels.empty()) {
      f.measured = VerdictOf(report.kernels.front());
      f.kernel = KernelRegex(report.kernels.front().kernel);
    }
  }
  return f;
}

std::string QuestionFor(const Finding& finding) {
  if (finding.kind == FindingKind::kStraggler) {
    return finding.cause == CauseKind::kGpuQueue || finding.cause == CauseKind::kGpuKernels
               ? "gpu-slow"
               : "where-time-goes";
  }
  if (finding.kind == FindingKind::kLateSender || finding.kind == FindingKind::kLateReceiver ||
      finding.kind == FindingKind::kProcessOutlier) {
    return "where-time-goes";
  }
  if (finding.kind == FindingKind::kDataloaderSkew) return "dataloader";
  if (finding.kind == FindingKind::kImbalancedRing) return "nccl-slow";
  if (finding.kind == FindingKind::kBelowLinkCeiling) {
    // A GPU link (NVLink, PCIe) that NCCL cannot fill is the link's question; a NIC's is NCCL's.
    return finding.limiting_link && finding.limiting_link->medium == LinkMedium::kNetwork
               ? "nccl-slow"
               : "link-slow";
  }
  if (finding.kind == FindingKind::kPcieBound || finding.kind == FindingKind::kNvlinkDown)
    return "link-slow";
  return "";
}

void PlanNextSteps(const Session& session, const std::string& session_dir,
                   std::vector<Finding>* findings) {
  for (Finding& finding : *findings) {
    finding.next_steps.clear();
    const std::string id = QuestionFor(finding);
    if (id.empty()) continue;
    const AdviceFacts facts = FactsOfFinding(session, finding);
    finding.next_steps = StepsFor(finding, facts);
    const std::vector<Answer> answers = Ask(id, facts);
    if (!answers.empty()) {
      finding.next_steps.push_back(
          AdviseMore(id, answers.front().question, session_dir, facts.rank));
    }
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
