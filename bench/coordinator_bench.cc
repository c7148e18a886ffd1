// Coordinator throughput, measured through the real gRPC service on loopback:
//   BM_UploadIngest       collective records/s one agent (or N agent threads) can push
//   BM_AnalyzeSession     align + match + diagnose of a synthetic R-rank x C-collective session
//   BM_AnalyzeNcclSession the same for an NCCL session, with the join of calls and kernels
//   BM_AnalyzeHaloSession the same with a halo exchange (point-to-point) every step, and the
//                         blame model's share of the analysis
//   BM_LiveFold           the live check's second at R ranks: each rank's running figures taken
//                         from a batch, then the check over all of them (keeps up when < 1 s);
//                         /R/1 with the stall check too, every rank but one stalled
//   BM_WriteSessionFolder the five session files of such a session (what the user waits for
//                         after the job), BM_Writer/<file> each file alone, BM_ChromeTrace /
//                         BM_SaveSession the two big ones
// Each runs at issue 4's scale point too, 1,024 ranks x 2,000 collectives each, once.
// Run: build/bin/bench_coordinator [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>

#include "coordinator/aligner.h"
#include "coordinator/analysis/blame.h"
#include "coordinator/analysis/diagnosis.h"
#include "coordinator/collective_matcher.h"
#include "coordinator/ingest.h"
#include "coordinator/live_check.h"
#include "coordinator/nccl_instances.h"
#include "coordinator/report/collective_waits.h"
#include "coordinator/report/gpu_json.h"
#include "coordinator/report/report_html.h"
#include "coordinator/report/report_json.h"
#include "coordinator/report/report_text.h"
#include "coordinator/report/session_store.h"
#include "coordinator/report/session_writer.h"
#include "coordinator/report/trace_json.h"
#include "coordinator/service.h"
#include "coordinator/session_matches.h"
#include "coordinator/stall_check.h"
#include "coordinator/testing/scale_sim.h"
#include "proto/protocol.h"
#include "proto/rpc_calls.h"

namespace rankscope {
namespace {

constexpr char kToken[] = "bench-token";

// A coordinator holding the records in memory, and one keeping them in a RecordSpill as
// `rankscope run` does (the file removed at exit).
CoordinatorServer* Server(bool spill) {
  auto start = [](bool with_spill) {
    CoordinatorConfig config;
    config.session_id = "bench";
    config.token = kToken;
    auto* s = new CoordinatorServer(config);
    if (with_spill) {
      static const std::string path =
          (std::filesystem::temp_directory_path() /
           ("rankscope-bench-records-" + std::to_string(getpid()) + ".sqlite"))
              .string();
      s->service().KeepRecordsIn(path);
      std::atexit([] { std::remove(path.c_str()); });
    }
    if (!s->Start().ok()) std::abort();
    return s;
  };
  static CoordinatorServer* held = start(false);
  static CoordinatorServer* spilled = start(true);
  return spill ? spilled : held;
}

// Upload batches of state.range(0) collective records, one agent per thread; with `spill` the
// coordinator writes them to its RecordSpill as they arrive (ingest rate held vs spilled).
void BM_UploadIngest(benchmark::State& state, bool spill) {
  const int records_per_batch = static_cast<int>(state.range(0));
  auto channel = grpc::CreateChannel(Server(spill)->address(), grpc::InsecureChannelCredentials());
  auto stub = v1::Coordinator::NewStub(channel);
  v1::RegisterRequest reg;
  reg.set_protocol_version(kProtocolVersion);
  reg.mutable_identity()->set_session_id("bench");
  reg.mutable_identity()->set_rank(state.thread_index());
  // A fresh agent per run: a run that reused one would send batch numbers the coordinator
  // already acknowledged, which it skips as resends (every run after the first measured nothing).
  static std::atomic<int> next_pid{100000};
  reg.mutable_identity()->set_agent_pid(next_pid++);
  v1::RegisterResponse resp;
  grpc::ClientContext rctx;
  rctx.AddMetadata(kTokenMetadataKey, kToken);
  if (!CallWithOneRequest(
           [&](grpc::ClientContext* c, v1::RegisterResponse* r) { return stub->Register(c, r); },
           &rctx, reg, &resp)
           .ok()) {
    state.SkipWithError("register failed");
    return;
  }
  v1::UploadBatch batch;
  batch.set_agent_id(resp.agent_id());
  for (int i = 0; i < records_per_batch; ++i) {
    v1::Collective* c = batch.add_collectives();
    c->set_comm_id(0x1234567890abcdefULL);
    c->set_seq(static_cast<uint64_t>(i));
    c->set_op(1);
    c->set_comm_size(64);
    c->set_comm_rank(static_cast<int>(state.thread_index()));
    c->set_bytes(1 << 20);
    c->set_enter(1'000'000'000LL + i * 1000);
    c->set_exit(1'000'000'500LL + i * 1000);
    c->set_tid(4242);
  }
  uint64_t seq = 0;
  for (auto _ : state) {
    batch.set_batch_seq(seq++);
    grpc::ClientContext ctx;
    ctx.AddMetadata(kTokenMetadataKey, kToken);
    v1::UploadAck ack;
    if (!CallWithOneRequest(
             [&](grpc::ClientContext* c, v1::UploadAck* a) { return stub->Upload(c, a); }, &ctx,
             batch, &ack)
             .ok()) {
      state.SkipWithError("upload failed");
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * records_per_batch);
  state.counters["records/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * records_per_batch), benchmark::Counter::kIsRate);
  state.counters["batches/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_UploadIngest, held, false)->Arg(100)->Arg(1000)->Arg(10000)->UseRealTime();
BENCHMARK_CAPTURE(BM_UploadIngest, spilled, true)->Arg(100)->Arg(1000)->Arg(10000)->UseRealTime();
BENCHMARK_CAPTURE(BM_UploadIngest, held, false)->Arg(1000)->Threads(4)->UseRealTime();
BENCHMARK_CAPTURE(BM_UploadIngest, spilled, true)->Arg(1000)->Threads(4)->UseRealTime();
// One step's records of one rank a batch (mpi_train sends 5), from 8 agents at once: how many
// ranks at one step a second one coordinator takes (issue #16's 16,384).
BENCHMARK_CAPTURE(BM_UploadIngest, spilled, true)->Arg(5)->Threads(8)->UseRealTime();

// One second of the live check at state.range(0) ranks, as the coordinator runs it: every rank's
// batch of that second taken into its tally (its time in MPI and its /proc figures so far), then
// LiveCheck::Check over all the tallies. Each rank spends half its time in MPI, with jitter;
// rank 3 is throttled by its cgroup from the 3rd second on, in MPI 20% while the others wait
// 70%, and must be named once (counter `named`, by the last iteration). The wall time of an
// iteration is what the coordinator spends per second of the job: it keeps up below 1 s.
void BM_LiveFold(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  std::vector<LiveTally> tallies(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) tallies[static_cast<size_t>(r)].rank = r;
  v1::UploadBatch batch;
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> jitter(-0.03, 0.03);
  LiveCheck check;
  const bool stall = state.range(1) != 0;
  StallCheck stall_check(StallCheckOptions{.after = 10 * kNsPerSec});
  size_t stalls = 0;
  size_t named = 0;
  int64_t second = 0;
  std::vector<DurationNs> in_mpi(static_cast<size_t>(ranks), 0);
  std::vector<DurationNs> throttled(static_cast<size_t>(ranks), 0);
  for (auto _ : state) {
    ++second;
    const TimeNs now = second * kNsPerSec;
    for (int r = 0; r < ranks; ++r) {
      const size_t at = static_cast<size_t>(r);
      const bool slow = r == 3 && second >= 3;
      const double share = (slow ? 0.2 : 0.7) + jitter(rng);
      in_mpi[at] += static_cast<DurationNs>(share * kNsPerSec);
      if (slow) throttled[at] += 600 * kNsPerMs;
      batch.set_in_mpi_ns(in_mpi[at]);
      // A rank stalled inside a call (below) has made no MPI progress since it entered.
      const bool stalled = stall && r != 3 && second >= 2;
      batch.set_in_mpi_through(stalled ? 2 * kNsPerSec : now);
      v1::ProcessStats* proc = batch.mutable_proc_so_far();
      proc->set_sampled_wall_ns(now);
      proc->set_sched_cpu_ns(now * 9 / 10 - throttled[at]);
      proc->set_run_delay_ns(now / 20 + throttled[at]);
      proc->mutable_cpu_cgroup()->set_throttled_ns(throttled[at]);
      // With state.range(1) (the stall check too): every rank but 3 inside one all-reduce from
      // the 2nd second on, reported once it is 10 s long (counter `stalls`: 1).
      if (stalled) {
        v1::OpenMpiCall* open = proc->mutable_open_call();
        open->set_collective(true);
        open->set_comm_size(ranks);
        open->set_seq(7);
        open->set_inside_ns(now - 2 * kNsPerSec);
      } else {
        proc->clear_open_call();
      }
      AddBatchToTally(batch, now, &tallies[at]);
    }
    if (stall) stalls += stall_check.Check(now, tallies).size();
    named += check.Check(now, tallies).size();
  }
  state.counters["ranks"] = ranks;
  state.counters["named"] = static_cast<double>(named);
  state.counters["stalls"] = static_cast<double>(stalls);
}
BENCHMARK(BM_LiveFold)
    ->Args({64, 0})
    ->Args({1024, 0})
    ->Args({16384, 0})
    ->Args({16384, 1})
    ->Iterations(20)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A session like a real one (coordinator/testing/scale_sim.h): 8 ranks per node, per step a data
// range, a compute range, a tensor-parallel all-reduce in the node and a data-parallel one across
// nodes, jitter, one slow rank (3) and one slow loader (the last rank), raw clocks n seconds off
// on node n with clock samples. `collectives` per rank (two per step).
testing::ScaleSim BenchSim(int ranks, int collectives) {
  testing::ScaleSim sim;
  sim.ranks = ranks;
  sim.steps = std::max(1, collectives / 2);
  sim.slow_compute[3] = 4 * kNsPerMs;
  sim.slow_data[ranks - 1] = 6 * kNsPerMs;
  sim.raw_clocks = true;
  return sim;
}

Session MakeSession(int ranks, int collectives) {
  return testing::SimulateScale(BenchSim(ranks, collectives));
}

// Heap bytes in use now (glibc's allocator statistics): small blocks from the arena and large
// ones mmapped on their own. The vectors of a big session are large blocks: they are mmapped in a
// fresh process, and come from the arena once frees have raised glibc's mmap threshold, so
// counting the arena alone depends on which benchmarks ran before.
double HeapBytes() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<double>(m.uordblks + m.hblkhd);
}

// Align + match + diagnose, as after a job. Counters: the findings (2 planted: a straggler and a
// loader), the session's memory per collective record (its ranges included, 1.5 per collective),
// and how far the resident set grew above the session during the analysis (peak RSS).
// The analysis benchmarks' counters: records analysed, findings, the session's bytes per
// collective record and the process' peak RSS.
void SetAnalysisCounters(benchmark::State& state, int ranks, int collectives, size_t findings,
                         double session_bytes) {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double records = static_cast<double>(ranks) * collectives;
  state.counters["collective_records"] = records;
  state.counters["findings"] = static_cast<double>(findings);
  state.counters["session_B_per_collective"] = session_bytes / records;
  state.counters["peak_rss_MB"] = static_cast<double>(usage.ru_maxrss) / 1e3;
  state.SetItemsProcessed(state.iterations() * ranks * collectives);
}

void BM_AnalyzeSession(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const int collectives = static_cast<int>(state.range(1));
  const double before = HeapBytes();
  Session raw = MakeSession(ranks, collectives);
  const double session_bytes = HeapBytes() - before;
  size_t findings = 0;
  for (auto _ : state) {
    Session aligned = AlignSession(raw);
    findings = Diagnose(aligned, AnalysisOptions{}).size();
    benchmark::DoNotOptimize(findings);
  }
  SetAnalysisCounters(state, ranks, collectives, findings, session_bytes);
}
BENCHMARK(BM_AnalyzeSession)
    ->Args({8, 2000})
    ->Args({64, 2000})
    ->Args({256, 400})
    ->Unit(benchmark::kMillisecond);
// Issue 4's scale point: 1,024 ranks x 2,000 collectives each (2 M collective and 3 M range
// records on 128 nodes, 136 communicators), once.
BENCHMARK(BM_AnalyzeSession)->Args({1024, 2000})->Iterations(1)->Unit(benchmark::kMillisecond);
// Issue 16's scale point for the end-of-run analysis: 16,384 ranks x 1,000 collectives each
// (16.4 M collective records), once; its target is 10 s and 8 GB on the 2-core box.
BENCHMARK(BM_AnalyzeSession)->Args({16384, 1000})->Iterations(1)->Unit(benchmark::kMillisecond);

// The same job with a halo exchange every step (testing::ScaleSim::halo_bytes, 64 KiB to each
// ring neighbour over MPI_COMM_WORLD, as stencil codes run it): 8 point-to-point records per
// rank and step besides its 2 collectives (at 1,024 x 2,000: 8.2 M). The whole analysis as after
// a job (align, match, diagnose, which builds the blame model and replays its candidates), and,
// side by side in the same iteration, the blame model alone built again from the same matches:
// blame_s, and x_analysis_without_blame (the whole analysis over the analysis less the model).
void BM_AnalyzeHaloSession(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const int collectives = static_cast<int>(state.range(1));
  testing::ScaleSim sim = BenchSim(ranks, collectives);
  sim.halo_bytes = 64 << 10;
  const double before = HeapBytes();
  Session raw = testing::SimulateScale(sim);
  const double session_bytes = HeapBytes() - before;
  size_t findings = 0;
  double analysis_s = 0, blame_s = 0;
  auto seconds_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    Session aligned = AlignSession(raw);
    const SessionMatches matches = MatchSession(aligned);
    findings = Diagnose(aligned, matches, AnalysisOptions{}).size();
    benchmark::DoNotOptimize(findings);
    analysis_s += seconds_since(t0);
    state.PauseTiming();
    const auto t1 = std::chrono::steady_clock::now();
    BlameModel blame = BuildBlameModel(aligned, matches, BlameOptions{});
    benchmark::DoNotOptimize(blame.stragglers);
    blame_s += seconds_since(t1);
    state.ResumeTiming();
  }
  SetAnalysisCounters(state, ranks, collectives, findings, session_bytes);
  const auto n = static_cast<double>(state.iterations());
  state.counters["blame_s"] = blame_s / n;
  state.counters["x_analysis_without_blame"] = analysis_s / std::max(analysis_s - blame_s, 1e-9);
}
BENCHMARK(BM_AnalyzeHaloSession)->Args({256, 400})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AnalyzeHaloSession)->Args({1024, 2000})->Iterations(1)->Unit(benchmark::kMillisecond);

// The same job on NCCL (testing::ScaleSim::nccl): per collective an NCCL log call, a kernel and
// its launch record instead of a collective record, and one planted slow data-parallel ring (local
// rank 2, half bandwidth) besides the slow rank and loader (3 findings). Align + join calls with
// kernels + match + diagnose, as the pipeline runs them. Counters as above; the session's bytes
// per collective are its log calls, kernels and launches (and ranges), before the join adds
// collective records.
void BM_AnalyzeNcclSession(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const int collectives = static_cast<int>(state.range(1));
  testing::ScaleSim sim = BenchSim(ranks, collectives);
  sim.nccl = true;
  sim.transfer_jitter = 0.03;
  sim.slow_ring_local_rank = 2;
  const double before = HeapBytes();
  Session raw = testing::SimulateScale(sim);
  const double session_bytes = HeapBytes() - before;
  size_t findings = 0;
  for (auto _ : state) {
    Session aligned = AlignSession(raw);
    AddNcclCollectives(&aligned);
    findings = Diagnose(aligned, AnalysisOptions{}).size();
    benchmark::DoNotOptimize(findings);
  }
  SetAnalysisCounters(state, ranks, collectives, findings, session_bytes);
}
BENCHMARK(BM_AnalyzeNcclSession)->Args({256, 400})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AnalyzeNcclSession)->Args({1024, 2000})->Iterations(1)->Unit(benchmark::kMillisecond);

// What the writers take: an analysed session, as the pipeline hands it over.
struct Analysed {
  Session session;
  SessionMatches matches;
  std::vector<Finding> findings;
  std::optional<TraceWindow> window;  // the pipeline's default trace budget
};

Analysed Analyse(int ranks, int collectives) {
  Analysed a;
  a.session = AlignSession(MakeSession(ranks, collectives));
  a.matches = MatchSession(a.session);
  a.findings = Diagnose(a.session, a.matches, AnalysisOptions{}, nullptr);
  a.window = ChooseTraceWindow(a.session, a.matches, kDefaultMaxTraceEvents);
  return a;
}

// The process's peak resident set so far, in MB.
double PeakRssMB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1e3;
}

// What the files directly in `dir` hold, in MB.
double DirectoryMB(const std::string& dir) {
  std::error_code ec;
  uintmax_t bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) bytes += e.file_size(ec);
  return static_cast<double>(bytes) / 1e6;
}

// The five files as the pipeline writes them: trace.json cut to the default event budget
// (kDefaultMaxTraceEvents), which of the sizes here only 1024 x 2000 exceeds.
void BM_WriteSessionFolder(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const int collectives = static_cast<int>(state.range(1));
  const Analysed a = Analyse(ranks, collectives);
  char dir[] = "/tmp/rankscope-bench-session.XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    state.SkipWithError("mkdtemp failed");
    return;
  }
  for (auto _ : state) {
    Status s =
        WriteSessionFolder(dir, a.session, a.matches, a.findings, nullptr, nullptr, a.window);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
  }
  state.counters["folder_MB"] = DirectoryMB(dir);
  std::filesystem::remove_all(dir);
  // Per collective: itself and 1.5 ranges (data, compute, step every two collectives).
  const double records = static_cast<double>(ranks) * collectives * 2.5;
  state.counters["records"] = records;
  state.counters["peak_rss_MB"] = PeakRssMB();
  state.SetItemsProcessed(static_cast<int64_t>(static_cast<double>(state.iterations()) * records));
}
BENCHMARK(BM_WriteSessionFolder)
    ->Args({4, 600})
    ->Args({64, 1000})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_WriteSessionFolder)
    ->Args({1024, 2000})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// One file of the folder alone, built and written (atomically, as the folder's are); `shared` is
// what report.json, report.txt and report.html share, computed once per folder.
enum class SessionFile { kShared, kReportJson, kReportText, kReportHtml, kTraceJson };

void BM_Writer(benchmark::State& state, SessionFile file) {
  const Analysed a = Analyse(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  const GpuReport gpu = BuildGpuReport(a.session);
  const CollectiveOverview overview = SummarizeCollectives(a.matches.collectives);
  const std::string path = "/tmp/rankscope-bench-" + std::to_string(getpid()) + ".out";
  size_t bytes = 0;
  for (auto _ : state) {
    std::string content;
    switch (file) {
      case SessionFile::kShared: {
        const GpuReport g = BuildGpuReport(a.session);
        const CollectiveOverview o = SummarizeCollectives(a.matches.collectives);
        benchmark::DoNotOptimize(g);
        benchmark::DoNotOptimize(o);
        break;
      }
      case SessionFile::kReportJson:
        content = BuildReportJson(a.session, a.findings, gpu, overview)
                      .dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
                  "\n";
        break;
      case SessionFile::kReportText:
        content = BuildReportText(a.session, a.findings, gpu, overview, /*color=*/false);
        break;
      case SessionFile::kReportHtml:
        content = BuildReportHtml(a.session, a.matches.collectives, a.findings, gpu);
        break;
      case SessionFile::kTraceJson:
        content = BuildChromeTrace(a.session, a.matches, a.window);
        break;
    }
    if (file == SessionFile::kShared) continue;
    bytes = content.size();
    Status s = WriteFileAtomically(path, content);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
  }
  std::remove(path.c_str());
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["peak_rss_MB"] = PeakRssMB();
}
// BM_Writer/<file>/<ranks>/<collectives>, at 64 x 1000 and at 1024 x 2000 once.
[[maybe_unused]] const bool kWritersRegistered = [] {
  const std::pair<const char*, SessionFile> files[] = {{"shared", SessionFile::kShared},
                                                       {"report_json", SessionFile::kReportJson},
                                                       {"report_txt", SessionFile::kReportText},
                                                       {"report_html", SessionFile::kReportHtml},
                                                       {"trace_json", SessionFile::kTraceJson}};
  for (const auto& [name, file] : files) {
    const std::string full = std::string("BM_Writer/") + name;
    benchmark::RegisterBenchmark(full.c_str(), BM_Writer, file)
        ->Args({64, 1000})
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(full.c_str(), BM_Writer, file)
        ->Args({1024, 2000})
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  return true;
}();

void BM_ChromeTrace(benchmark::State& state) {
  const Session aligned = AlignSession(MakeSession(64, 1000));
  const SessionMatches matches = MatchSession(aligned);
  size_t bytes = 0;
  for (auto _ : state) bytes = BuildChromeTrace(aligned, matches).size();
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_ChromeTrace)->Unit(benchmark::kMillisecond);

void BM_SaveSession(benchmark::State& state) {
  const Session aligned =
      AlignSession(MakeSession(static_cast<int>(state.range(0)), static_cast<int>(state.range(1))));
  const std::string path = "/tmp/rankscope-bench-" + std::to_string(getpid()) + ".sqlite";
  for (auto _ : state) {
    Status s = SaveSession(path, aligned, {});
    if (!s.ok()) state.SkipWithError(s.message().c_str());
  }
  std::error_code ec;
  state.counters["MB"] = static_cast<double>(std::filesystem::file_size(path, ec)) / 1e6;
  state.counters["peak_rss_MB"] = PeakRssMB();
  std::remove(path.c_str());
}
BENCHMARK(BM_SaveSession)->Args({64, 1000})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SaveSession)
    ->Args({1024, 2000})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace rankscope

BENCHMARK_MAIN();
