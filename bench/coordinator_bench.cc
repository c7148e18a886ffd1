// Coordinator throughput, measured through the real gRPC service on loopback:
//   BM_UploadIngest       collective records/s one agent (or N agent threads) can push
//   BM_AnalyzeSession     align + match + diagnose of a synthetic R-rank x S-step session
//   BM_WriteSessionFolder the five session files of such a session (what the user waits for
//                         after the job), BM_ChromeTrace / BM_SaveSession the two big ones
// Run: build/bin/bench_coordinator [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>

#include "coordinator/aligner.h"
#include "coordinator/analysis/diagnosis.h"
#include "coordinator/collective_matcher.h"
#include "coordinator/report/session_store.h"
#include "coordinator/report/session_writer.h"
#include "coordinator/report/trace_json.h"
#include "coordinator/service.h"
#include "proto/protocol.h"

namespace rankscope {
namespace {

constexpr char kToken[] = "bench-token";

CoordinatorServer* Server() {
  static CoordinatorServer* server = [] {
    CoordinatorConfig config;
    config.session_id = "bench";
    config.token = kToken;
    auto* s = new CoordinatorServer(config);
    if (!s->Start().ok()) std::abort();
    return s;
  }();
  return server;
}

void BM_UploadIngest(benchmark::State& state) {
  const int records_per_batch = static_cast<int>(state.range(0));
  auto channel = grpc::CreateChannel(Server()->address(), grpc::InsecureChannelCredentials());
  auto stub = v1::Coordinator::NewStub(channel);
  v1::RegisterRequest reg;
  reg.set_protocol_version(kProtocolVersion);
  reg.mutable_identity()->set_session_id("bench");
  reg.mutable_identity()->set_rank(state.thread_index());
  reg.mutable_identity()->set_agent_pid(static_cast<int>(state.thread_index()) + 100000);
  v1::RegisterResponse resp;
  grpc::ClientContext rctx;
  rctx.AddMetadata(kTokenMetadataKey, kToken);
  if (!stub->Register(&rctx, reg, &resp).ok()) {
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
    if (!stub->Upload(&ctx, batch, &ack).ok()) {
      state.SkipWithError("upload failed");
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * records_per_batch);
  state.counters["records/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * records_per_batch), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_UploadIngest)->Arg(100)->Arg(1000)->Arg(10000)->UseRealTime();
BENCHMARK(BM_UploadIngest)->Arg(1000)->Threads(4)->UseRealTime();

// A session like a real one: per step a data range, a compute range and an allreduce, with
// jitter, one slow rank, and clock samples at an offset per rank.
Session MakeSession(int ranks, int steps) {
  Session s;
  s.world_size = ranks;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> jitter(0, 200'000);
  for (int r = 0; r < ranks; ++r) {
    RankData d;
    d.id.rank = r;
    d.id.node = "node" + std::to_string(r / 8);
    d.id.world_size = ranks;
    d.finished = true;
    d.exit_code = 0;
    const DurationNs offset = r * 1000 * kNsPerMs;
    for (int i = 0; i < 32; ++i) {
      TimeNs t1 = 1'000 * kNsPerMs + i * kNsPerMs + offset;
      d.clock_samples.push_back({t1, t1 - offset + 20'000, t1 - offset + 25'000, t1 + 45'000});
    }
    TimeNs t = 2'000 * kNsPerMs + offset;
    for (int step = 0; step < steps; ++step) {
      TimeNs step_start = t;
      TimeNs data_end = t + 1 * kNsPerMs + jitter(rng);
      TimeNs compute_end = data_end + 5 * kNsPerMs + jitter(rng) + (r == 3 ? 4 * kNsPerMs : 0);
      TimeNs exit = step_start + 12 * kNsPerMs;
      d.ranges.push_back({"", "data", step_start, data_end, 1, 1});
      d.ranges.push_back({"", "compute", data_end, compute_end, 1, 1});
      d.collectives.push_back({.comm_id = 1,
                               .seq = static_cast<uint64_t>(step),
                               .op = CollectiveOp::kAllreduce,
                               .comm_size = ranks,
                               .comm_rank = r,
                               .bytes = 1 << 20,
                               .enter = compute_end,
                               .exit = exit,
                               .tid = 1});
      d.ranges.push_back({"", "step", step_start, exit, 1, 0});
      t = exit;
    }
    s.ranks.push_back(std::move(d));
  }
  return s;
}

void BM_AnalyzeSession(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const int steps = static_cast<int>(state.range(1));
  Session raw = MakeSession(ranks, steps);
  size_t findings = 0;
  for (auto _ : state) {
    Session aligned = AlignSession(raw);
    findings = Diagnose(aligned, AnalysisOptions{}).size();
    benchmark::DoNotOptimize(findings);
  }
  state.counters["collective_records"] = static_cast<double>(ranks) * steps;
  state.counters["findings"] = static_cast<double>(findings);
  state.SetItemsProcessed(state.iterations() * ranks * steps);
}
BENCHMARK(BM_AnalyzeSession)
    ->Args({8, 1000})
    ->Args({64, 1000})
    ->Args({256, 200})
    ->Unit(benchmark::kMillisecond);
// Issue 4's scale point: 1,024 ranks x 2,000 collectives each (2 M collective and 6 M range
// records), once: 7.3 s and 1.7 GB peak RSS on the 2-core dev box.
BENCHMARK(BM_AnalyzeSession)->Args({1024, 2000})->Iterations(1)->Unit(benchmark::kMillisecond);

// What the user waits for after the job: the five session files (database, report.json,
// trace.json, report.html, report.txt), and the two big ones alone.
void BM_WriteSessionFolder(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const int steps = static_cast<int>(state.range(1));
  const Session aligned = AlignSession(MakeSession(ranks, steps));
  const SessionMatches matches = MatchSession(aligned);
  const std::vector<Finding> findings = Diagnose(aligned, matches, AnalysisOptions{}, nullptr);
  char dir[] = "/tmp/rankscope-bench-session.XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    state.SkipWithError("mkdtemp failed");
    return;
  }
  for (auto _ : state) {
    Status s = WriteSessionFolder(dir, aligned, matches, findings, nullptr);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
  }
  std::filesystem::remove_all(dir);
  state.counters["records"] = static_cast<double>(ranks) * steps * 4;
  state.SetItemsProcessed(state.iterations() * ranks * steps * 4);
}
BENCHMARK(BM_WriteSessionFolder)
    ->Args({4, 300})
    ->Args({64, 1000})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

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
  const Session aligned = AlignSession(MakeSession(64, 1000));
  const std::string path = "/tmp/rankscope-bench-" + std::to_string(getpid()) + ".sqlite";
  for (auto _ : state) {
    Status s = SaveSession(path, aligned, {});
    if (!s.ok()) state.SkipWithError(s.message().c_str());
  }
  std::remove(path.c_str());
}
BENCHMARK(BM_SaveSession)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace rankscope

BENCHMARK_MAIN();
