// Replays sessions recorded on 2xH200 (tests/fixtures/h200x2-torchrun-sessions,
// h200x2-torchrun-launch, h200x2-nccl-allreduce-bench, h200x2-nccl-allreduce-shm) through the
// analyses and writers: the GPU path's result, checked on every CI run without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <random>

#include "coordinator/analysis/dataloader_analysis.h"
#include "coordinator/analysis/diagnosis.h"
#include "coordinator/analysis/ring_analysis.h"
#include "coordinator/analysis/straggler_analysis.h"
#include "coordinator/collective_matcher.h"
#include "coordinator/nccl_instances.h"
#include "coordinator/report/gpu_json.h"
#include "coordinator/report/report_html.h"
#include "coordinator/report/report_json.h"
#include "coordinator/report/report_text.h"
#include "coordinator/report/session_store.h"
#include "coordinator/report/trace_json.h"
#include "coordinator/windows.h"
#include "model/gpu/compute_thinning.h"
#include "model/gpu/first_gpu_work.h"
#include "model/gpu/gpu_stats.h"
#include "model/gpu/kernel_pieces.h"
#include "model/gpu/launch_latency.h"
#include "model/gpu/nccl_compute.h"
#include "model/nccl/kernel_name.h"

namespace rankscope {
namespace {

Session Load(const std::string& name, const std::string& dir = "h200x2-torchrun-sessions") {
  Result<Session> s =
      LoadSession(std::string(RANKSCOPE_FIXTURES_DIR) + "/" + dir + "/" + name + ".sqlite");
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? std::move(s).value() : Session{};
}

TEST(GpuReplay, InjectedSleepOnRankOneIsAStragglerWithTheRightLateness) {
  Session s = Load("sleep-rank1-20ms");
  ASSERT_EQ(s.ranks.size(), 2u);
  ASSERT_TRUE(s.ranks[1].nccl.has_value());
  std::vector<Finding> findings = Diagnose(s, AnalysisOptions{});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(FindingKindName(findings[0].kind), "straggler");
  EXPECT_EQ(findings[0].ranks, std::vector<int>{1});
  // 20 ms of host sleep before compute: rank 1's NCCL kernels start ~20 ms after rank 0's.
  const double lateness_ms = static_cast<double>(findings[0].arrivals->median_lateness) / 1e6;
  EXPECT_NEAR(lateness_ms, 20.0, 2.0);
}

// Sessions recorded with CUPTI's launch records (mode all): NCCL's joined collectives are dropped
// and joined again from the recorded NCCL logs and CUPTI records, so the join itself runs on
// real data, launch calls included.
Session LoadLaunch(const std::string& name) {
  Session s = Load(name, "h200x2-torchrun-launch");
  for (RankData& r : s.ranks) {
    std::erase_if(r.collectives, [](const CollectiveRecord& c) {
      return c.source == CollectiveRecord::Source::kNccl;
    });
  }
  const NcclJoinStats stats = AddNcclCollectives(&s);
  EXPECT_EQ(stats.joined, 80);
  return s;
}

// The agent's per-window sums (model/gpu/gpu_stats.h) and launch latencies
// (model/gpu/launch_latency.h) made from the recorded CUPTI records of every recorded GPU session:
// the sums add up to the records per kernel name, stream, copy direction and runtime function,
// and the report's GPU figures read from them are the records' own, the launch latency's median
// and p99 within 1 % of them, over the same kernels.
TEST(GpuReplay, PerWindowSumsOfRecordedActivityAddUpToItsRecords) {
  const std::vector<std::pair<std::string, std::string>> sessions = {
      {"h200x2-torchrun-launch", "clean.sqlite"},
      {"h200x2-torchrun-launch", "sleep-rank1-20ms.sqlite"},
      {"h200x2-nccl-allreduce-bench", "session.sqlite"},
      {"h200x2-nccl-allreduce-shm", "session.sqlite"}};
  int with_latency = 0;
  for (const auto& [dir, file] : sessions) {
    Session s = Load(file.substr(0, file.size() - 7), dir);
    size_t records = 0;
    for (RankData& r : s.ranks) {
      SCOPED_TRACE(dir + "/" + file + " rank " + std::to_string(r.id.rank));
      records += r.gpu.size();
      const nlohmann::json from_records = GpuRankJson(r);
      GpuStatsFold fold(100 * kNsPerMs);
      LaunchLatencyFold latency_fold(100 * kNsPerMs, kNsPerSec);
      std::vector<GpuStats> rows;
      std::vector<LaunchLatency> latency_rows;
      for (size_t i = 0; i < r.gpu.size(); ++i) {
        fold.Add(r.gpu[i]);
        latency_fold.Add(r.gpu[i]);
        if (i % 97 == 0) {  // taken as the agent does, two windows behind the latest start
          for (GpuStats& row : fold.TakeClosed(r.gpu[i].start - 200 * kNsPerMs)) {
            rows.push_back(std::move(row));
          }
          for (LaunchLatency& row : latency_fold.TakeClosed(r.gpu[i].start - 200 * kNsPerMs)) {
            latency_rows.push_back(std::move(row));
          }
        }
      }
      for (GpuStats& row : fold.TakeAll()) rows.push_back(std::move(row));
      for (LaunchLatency& row : latency_fold.TakeAll()) latency_rows.push_back(std::move(row));
      std::map<GpuStatsKey, std::pair<int64_t, DurationNs>> expected;
      for (const GpuActivityRecord& g : r.gpu) {
        GpuStatsKey key{g.kind, g.device, g.stream, 0, ""};
        if (g.kind == GpuActivityKind::kMemcpy) key.sub_kind = g.copy_kind;
        if (g.kind == GpuActivityKind::kSync) key.sub_kind = g.sync_kind;
        if (g.kind == GpuActivityKind::kKernel || g.kind == GpuActivityKind::kRuntime) {
          key.name = g.name;
        }
        ++expected[key].first;
        expected[key].second += g.end - g.start;
      }
      const std::map<GpuStatsKey, GpuStats> merged = MergeGpuStats(rows);
      ASSERT_EQ(merged.size(), expected.size());
      for (const auto& [key, sum] : expected) {
        EXPECT_EQ(merged.at(key).count, sum.first) << key.name;
        EXPECT_EQ(merged.at(key).total, sum.second) << key.name;
      }
      r.gpu_stats = std::move(rows);
      ASSERT_TRUE(r.finished);  // the rows are complete: the report reads them
      EXPECT_EQ(GpuRankJson(r), from_records);
      r.launch_latency = std::move(latency_rows);
      nlohmann::json from_rows = GpuRankJson(r);
      const nlohmann::json& exact = from_records.at("launch_latency");
      const nlohmann::json& summed = from_rows.at("launch_latency");
      ASSERT_EQ(summed.is_null(), exact.is_null());
      if (!exact.is_null()) {
        ++with_latency;
        EXPECT_EQ(summed.at("samples"), exact.at("samples"));
        for (const char* figure : {"median_ns", "p99_ns"}) {
          const auto want = exact.at(figure).get<double>();
          EXPECT_NEAR(summed.at(figure).get<double>(), want, 0.01 * std::abs(want) + 1) << figure;
        }
      }
      from_rows["launch_latency"] = exact;
      EXPECT_EQ(from_rows, from_records);
    }
    EXPECT_GT(records, 1000u) << dir;
  }
  EXPECT_GE(with_latency, 4);  // the torchrun sessions' ranks launch their kernels
}

// The launch calls and kernels that are the first of their kind after a range boundary
// (model/gpu/first_gpu_work.h), with every other kind of GPU record, give each rank's steps the
// same time before their first GPU work as all the records do: what an agent must still send raw
// for the dataloader analysis once it stops sending every launch and kernel.
TEST(GpuReplay, TheFirstGpuWorkAfterRangeBoundariesIsAllTheStepReadingNeeds) {
  const std::vector<std::pair<std::string, std::string>> sessions = {
      {"h200x2-torchrun-sessions", "clean"},      {"h200x2-torchrun-sessions", "sleep-rank1-20ms"},
      {"h200x2-torchrun-launch", "clean"},        {"h200x2-torchrun-launch", "sleep-rank1-20ms"},
      {"h200x2-nccl-allreduce-bench", "session"}, {"h200x2-nccl-allreduce-shm", "session"}};
  size_t steps = 0, candidates = 0, kept = 0;
  for (const auto& [dir, file] : sessions) {
    SCOPED_TRACE(dir + "/" + file);
    Session s = Load(file, dir);
    const std::vector<StepSeries> all = StepSeriesOf(s, DataloaderOptions{});
    for (RankData& r : s.ranks) {
      const std::vector<GpuWorkKey> first = FirstGpuWork(r.ranges, r.gpu);
      kept += first.size();
      std::erase_if(r.gpu, [&](const GpuActivityRecord& g) {
        if (!IsFirstWorkCandidate(g)) return false;
        ++candidates;
        const GpuWorkKey key{g.kind == GpuActivityKind::kKernel ? GpuActivityKind::kKernel
                                                                : GpuActivityKind::kRuntime,
                             g.start, g.correlation_id};
        return !std::binary_search(first.begin(), first.end(), key,
                                   [](const GpuWorkKey& a, const GpuWorkKey& b) {
                                     return a.start != b.start ? a.start < b.start : a < b;
                                   });
      });
    }
    EXPECT_EQ(StepSeriesOf(s, DataloaderOptions{}), all);
    for (const StepSeries& series : all) steps += series.data.size();
  }
  std::printf("steps %zu; launches and kernels kept %zu of %zu\n", steps, kept, candidates);
  EXPECT_GT(steps, 100u);
  EXPECT_LT(kept * 2, candidates);  // few kernels a step here; 250 a step in the launch-bound loop
}

// The kernel time per name between collective boundaries (model/gpu/kernel_pieces.h), made as an
// agent would (its MPI collectives' enters and exits and every NCCL kernel's start and end as
// boundaries, the other kernels as compute), answers the straggler analysis's question for every
// collective call of the recorded GPU sessions exactly: what the rank's GPU ran between its
// latest collective exit and the call's enter, per kernel name.
TEST(GpuReplay, KernelTimeBetweenCollectivesFromPiecesIsTheRecordsOwn) {
  const std::vector<std::pair<std::string, std::string>> sessions = {
      {"h200x2-torchrun-sessions", "clean"},      {"h200x2-torchrun-sessions", "sleep-rank1-20ms"},
      {"h200x2-torchrun-launch", "clean"},        {"h200x2-torchrun-launch", "sleep-rank1-20ms"},
      {"h200x2-nccl-allreduce-bench", "session"}, {"h200x2-nccl-allreduce-shm", "session"}};
  size_t gaps = 0, with_kernels = 0, kernels = 0, rows = 0, late_calls = 0;
  for (const auto& [dir, file] : sessions) {
    Session s = Load(file, dir);
    std::map<int, std::vector<KernelPiece>> pieces_of;
    for (const RankData& r : s.ranks) {
      SCOPED_TRACE(dir + "/" + file + " rank " + std::to_string(r.id.rank));
      KernelPieceFold fold;
      std::vector<const GpuActivityRecord*> compute;
      for (const CollectiveRecord& c : r.collectives) {
        if (c.source == CollectiveRecord::Source::kNccl) continue;  // the agent has its kernel
        fold.AddBoundary(c.enter);
        fold.AddBoundary(c.exit);
      }
      for (const GpuActivityRecord& g : r.gpu) {
        if (g.kind != GpuActivityKind::kKernel || g.end <= g.start) continue;
        if (DecodeNcclKernel(g.name)) {
          fold.AddBoundary(g.start);
          fold.AddBoundary(g.end);
        } else {
          fold.AddKernel(g.start, g.end, g.name);
          compute.push_back(&g);
        }
      }
      const std::vector<KernelPiece> pieces = fold.TakeAll();
      kernels += compute.size();
      rows += pieces.size();
      std::vector<TimeNs> exits;
      for (const CollectiveRecord& c : r.collectives) exits.push_back(c.exit);
      std::sort(exits.begin(), exits.end());
      for (const CollectiveRecord& c : r.collectives) {
        auto after = std::lower_bound(exits.begin(), exits.end(), c.enter);
        if (after == exits.begin()) continue;  // the rank's first call: no gap
        const TimeNs begin = *std::prev(after);
        std::map<std::string, DurationNs> want, got;
        for (const GpuActivityRecord* g : compute) {
          const DurationNs in = std::min(g->end, c.enter) - std::max(g->start, begin);
          if (in > 0) want[g->name] += in;
        }
        KernelTimeFromPieces(pieces, begin, c.enter, &got);
        ASSERT_EQ(got, want) << "call enter " << c.enter;
        ++gaps;
        with_kernels += !want.empty();
      }
      pieces_of[r.id.rank] = pieces;
    }
    // The straggler analysis reads them where a rank's agent sent them whole: the same shares.
    const std::vector<CollectiveInstance> instances = MatchCollectives(s);
    const LateGaps from_records = GapsBeforeLateCalls(s, instances, StragglerOptions{});
    for (RankData& r : s.ranks) {
      ASSERT_TRUE(r.finished);
      r.kernel_pieces = pieces_of[r.id.rank];
    }
    EXPECT_EQ(GapsBeforeLateCalls(s, instances, StragglerOptions{}), from_records);
    // Window by window too (a gap's parts at a cut are no piece ends: read whole from them), and
    // with no kernel record left.
    Session thin = s;
    for (RankData& r : thin.ranks) {
      std::erase_if(r.gpu, [](const GpuActivityRecord& g) {
        return g.kind == GpuActivityKind::kKernel && !DecodeNcclKernel(g.name);
      });
    }
    for (const Session* run : {&s, &thin}) {
      const WindowSplit split = SplitSession(
          *run, PlanWindows(*run, {.target = 50 * kNsPerMs, .max_window = 200 * kNsPerMs}));
      EXPECT_GT(split.size(), 3u);
      EXPECT_EQ(GapsBeforeLateCallsByWindow(*run, split, StragglerOptions{}), from_records);
    }
    for (const auto& [call, share] : from_records) late_calls += !share.by_kernel.empty();
    for (RankData& r : s.ranks) r.kernel_pieces_late = 1;  // not exact: the records again
    EXPECT_EQ(GapsBeforeLateCalls(s, instances, StragglerOptions{}), from_records);
  }
  std::printf(
      "%zu gaps (%zu with kernels); %zu compute kernels as %zu rows; %zu late calls with kernels\n",
      gaps, with_kernels, kernels, rows, late_calls);
  EXPECT_GT(with_kernels, 100u);
  EXPECT_GT(late_calls, 20u);
}

// The ring analysis's "NCCL ran alone" test from the spans an agent sends instead of its compute
// kernels (model/gpu/nccl_compute.h): on every recorded NCCL instance and member, the same overlap
// as the records give (the instances end within the margin after each member's own kernel), so
// the same decision at any threshold, and the same findings. The recorded loops run their compute
// and NCCL kernels one after the other, so each session is checked a second time with compute
// kernels added around its NCCL kernels (as overlapped compute would be: a backward pass, an
// FSDP prefetch), some ending in the gap between a member's own end and the instance's.
TEST(GpuReplay, ComputeBesideNcclFromTheAgentsSpansIsTheRecordsOwn) {
  const std::vector<std::pair<std::string, std::string>> sessions = {
      {"h200x2-torchrun-sessions", "clean"},      {"h200x2-torchrun-sessions", "sleep-rank1-20ms"},
      {"h200x2-torchrun-launch", "clean"},        {"h200x2-torchrun-launch", "sleep-rank1-20ms"},
      {"h200x2-nccl-allreduce-bench", "session"}, {"h200x2-nccl-allreduce-shm", "session"}};
  size_t checked = 0, overlapped = 0, spans = 0, kernels = 0;
  for (const auto& [dir, file] : sessions) {
    for (bool added : {false, true}) {
      SCOPED_TRACE(dir + "/" + file + (added ? " with compute added" : ""));
      Session s = Load(file, dir);
      if (added) {
        std::mt19937 rng(5);
        std::uniform_int_distribution<DurationNs> shift(-50'000, 150'000), len(1'000, 100'000);
        for (RankData& r : s.ranks) {
          std::vector<GpuActivityRecord> extra;
          for (const GpuActivityRecord& g : r.gpu) {
            if (g.kind != GpuActivityKind::kKernel || !DecodeNcclKernel(g.name)) continue;
            GpuActivityRecord k = g;
            k.name = "added_compute";
            k.start = (rng() % 2 == 0 ? g.start : g.end) + shift(rng);
            k.end = k.start + len(rng);
            extra.push_back(k);
          }
          r.gpu.insert(r.gpu.end(), extra.begin(), extra.end());
        }
      }
      Session thin = s;
      for (RankData& r : thin.ranks) {
        NcclComputeFold fold;
        for (const GpuActivityRecord& g : r.gpu) {
          if (g.kind != GpuActivityKind::kKernel) continue;
          if (DecodeNcclKernel(g.name)) {
            fold.AddNcclKernel(g.start, g.end);
          } else {
            fold.AddComputeKernel(g.start, g.end);
            ++kernels;
          }
        }
        r.nccl_compute = MergeIntervals(fold.TakeAll());
        spans += r.nccl_compute.size();
        r.compute_kernels_summed = true;
        std::erase_if(r.gpu, [](const GpuActivityRecord& g) {
          return g.kind == GpuActivityKind::kKernel && !DecodeNcclKernel(g.name);
        });
      }
      const auto from_records = ComputeBesideNccl(s);
      const auto from_spans = ComputeBesideNccl(thin);
      std::map<std::pair<uint64_t, uint64_t>, std::vector<int>> members;
      for (const RankData& r : s.ranks) {
        for (const CollectiveRecord& c : r.collectives) {
          if (c.source == CollectiveRecord::Source::kNccl)
            members[{c.comm_id, c.seq}].push_back(r.id.rank);
        }
      }
      for (const auto& [key, span] : NcclInstanceSpans(s)) {
        if (span.last_exit <= span.last_enter) continue;
        for (int rank : members[key]) {
          const DurationNs want =
              OverlapWith(from_records.at(rank).spans, span.last_enter, span.last_exit);
          for (DurationNs threshold : {DurationNs{0}, want, want - 1}) {
            ASSERT_EQ(
                RanBesideNccl(from_spans.at(rank), span.last_enter, span.last_exit, threshold),
                RanBesideNccl(from_records.at(rank), span.last_enter, span.last_exit, threshold))
                << "rank " << rank << " instance " << key.second << " overlap " << want;
          }
          ++checked;
          overlapped += want > 0;
        }
      }
      EXPECT_EQ(Diagnose(thin, AnalysisOptions{}).size(), Diagnose(s, AnalysisOptions{}).size());
      // A rank whose agent came late with a kernel, or never finished: nothing is known.
      thin.ranks[0].nccl_compute_late = 1;
      const ComputeBeside unknown = ComputeBesideNccl(thin).at(thin.ranks[0].id.rank);
      ASSERT_TRUE(unknown.known.has_value());
      EXPECT_TRUE(unknown.known->empty());
    }
  }
  std::printf(
      "%zu member instances checked (%zu with compute beside); %zu compute kernels as %zu spans\n",
      checked, overlapped, kernels, spans);
  EXPECT_GT(overlapped, 20u);
}

// A recorded session as an agent whose raw budget for compute kernels and launches is `budget`
// records would have sent it (model/gpu/compute_thinning.h): after the budget only the records
// an analysis reads whole, and the agent's sums of the rest (per-window statistics, launch
// latencies, kernel pieces, compute beside NCCL kernels). Records fed in start order with the
// ranges known, decided just behind each.
struct ThinCounts {
  size_t records = 0, kept = 0, summed_only = 0, thinned_ranks = 0;
};
Session AsThinnedByTheAgent(Session s, uint64_t budget, ThinCounts* counts) {
  for (RankData& r : s.ranks) {
    ComputeRecordThinning thin(budget);
    GpuStatsFold stats(kNsPerSec);
    LaunchLatencyFold latency(kNsPerSec, 10 * kNsPerSec);
    KernelPieceFold pieces;
    NcclComputeFold compute;
    for (const CollectiveRecord& c : r.collectives) {
      if (c.source == CollectiveRecord::Source::kNccl) continue;
      pieces.AddBoundary(c.enter);
      pieces.AddBoundary(c.exit);
    }
    for (const RangeRecord& range : r.ranges) thin.AddRange(range);
    std::vector<GpuActivityRecord> gpu = std::move(r.gpu);
    std::stable_sort(
        gpu.begin(), gpu.end(),
        [](const GpuActivityRecord& a, const GpuActivityRecord& b) { return a.start < b.start; });
    r.gpu.clear();
    for (const GpuActivityRecord& g : gpu) {
      for (GpuActivityRecord& out : thin.TakeDecided(g.start - 1)) r.gpu.push_back(std::move(out));
      stats.Add(g);
      latency.Add(g);
      if (g.kind == GpuActivityKind::kKernel && IsNcclKernel(g)) {
        pieces.AddBoundary(g.start);
        pieces.AddBoundary(g.end);
        compute.AddNcclKernel(g.start, g.end);
      } else if (g.kind == GpuActivityKind::kKernel) {
        pieces.AddKernel(g.start, g.end, g.name);
        compute.AddComputeKernel(g.start, g.end);
      }
      if (thin.Add(g)) r.gpu.push_back(g);
    }
    for (GpuActivityRecord& out : thin.TakeAll()) r.gpu.push_back(std::move(out));
    counts->records += gpu.size();
    counts->kept += r.gpu.size();
    counts->summed_only += thin.summed_only();
    counts->thinned_ranks += thin.thinning();
    r.compute_kernels_summed = thin.thinning();
    r.gpu_stats = stats.TakeAll();
    r.launch_latency = latency.TakeAll();
    r.kernel_pieces = pieces.TakeAll();
    r.nccl_compute = MergeIntervals(compute.TakeAll());
  }
  return s;
}

std::vector<std::tuple<std::string, std::vector<int>, std::string>> Described(
    const std::vector<Finding>& findings) {
  std::vector<std::tuple<std::string, std::vector<int>, std::string>> out;
  for (const Finding& f : findings) out.emplace_back(FindingKindName(f.kind), f.ranks, f.summary);
  return out;
}

// What the analyses make of a session whose agents sent compute kernels and launches only summed
// after a budget of 50 records a rank: the same findings, the same step readings, the same NCCL
// join (launch times included) as from every record.
TEST(GpuReplay, AnAgentThatSumsComputeKernelsGivesTheSameDiagnosis) {
  const std::vector<std::pair<std::string, std::string>> sessions = {
      {"h200x2-torchrun-sessions", "clean"},
      {"h200x2-torchrun-sessions", "sleep-rank1-20ms"},
      {"h200x2-torchrun-launch", "clean"},
      {"h200x2-torchrun-launch", "sleep-rank1-20ms"},
      {"h200x2-nccl-allreduce-bench", "session"},
      {"h200x2-nccl-allreduce-shm", "session"},
      {"h100-mpi-gpu-steps", "clean"},
      {"h100-mpi-gpu-steps", "heavy-rank1"}};
  ThinCounts counts;
  size_t findings = 0;
  for (const auto& [dir, file] : sessions) {
    SCOPED_TRACE(dir + "/" + file);
    Session full = Load(file, dir);
    for (RankData& r : full.ranks) r.finished = true;
    Session thin = AsThinnedByTheAgent(full, 50, &counts);
    const auto want = Described(Diagnose(full, AnalysisOptions{}));
    EXPECT_EQ(Described(Diagnose(thin, AnalysisOptions{})), want);
    findings += want.size();
    EXPECT_EQ(StepSeriesOf(thin, DataloaderOptions{}), StepSeriesOf(full, DataloaderOptions{}));
    for (Session* s : {&full, &thin}) {
      for (RankData& r : s->ranks) {
        std::erase_if(r.collectives, [](const CollectiveRecord& c) {
          return c.source == CollectiveRecord::Source::kNccl;
        });
      }
      AddNcclCollectives(s);
    }
    for (size_t i = 0; i < full.ranks.size(); ++i) {
      ASSERT_EQ(thin.ranks[i].collectives.size(), full.ranks[i].collectives.size());
      for (size_t k = 0; k < full.ranks[i].collectives.size(); ++k) {
        const CollectiveRecord& a = full.ranks[i].collectives[k];
        const CollectiveRecord& b = thin.ranks[i].collectives[k];
        EXPECT_EQ(std::tie(a.enter, a.exit, a.launched, a.seq),
                  std::tie(b.enter, b.exit, b.launched, b.seq));
      }
    }
  }
  std::printf("GPU records kept %zu of %zu (%zu summed only) on %zu thinned ranks; %zu findings\n",
              counts.kept, counts.records, counts.summed_only, counts.thinned_ranks, findings);
  EXPECT_GE(findings, 3u);
  EXPECT_GE(counts.thinned_ranks, 10u);
  EXPECT_GT(counts.summed_only, 30'000u);
}

TEST(GpuReplay, EveryNcclCollectiveHasItsLaunchCallBeforeItsKernel) {
  Session s = LoadLaunch("clean");
  ASSERT_EQ(s.ranks.size(), 2u);
  for (const RankData& r : s.ranks) {
    ASSERT_EQ(r.collectives.size(), 40u);
    for (const CollectiveRecord& c : r.collectives) {
      ASSERT_NE(c.launched, 0) << "rank " << r.id.rank << " seq " << c.seq;
      // Queued behind the step's matmuls, within a step. On an idle GPU (the first calls) the
      // kernel may start ~10 us before the launch call has returned.
      EXPECT_GT(c.enter - c.launched, -kNsPerMs);
      EXPECT_LT(c.enter - c.launched, 100 * kNsPerMs);
    }
  }
  EXPECT_TRUE(Diagnose(s, AnalysisOptions{}).empty());

  // report.json per rank: launch latency of every kernel, and NCCL's queue time (its all-reduce
  // queued behind the step's four 4096^3 matmuls: ~10 ms on 2xH200).
  nlohmann::json report = BuildReportJson(s, {});
  for (const auto& rank : report["ranks"]) {
    const auto& gpu = rank["gpu"];
    EXPECT_EQ(gpu["kernels"], 243) << gpu.dump();
    EXPECT_EQ(gpu["launch_latency"]["samples"], 243) << gpu.dump();
    EXPECT_EQ(gpu["nccl_queue"]["samples"], 40) << gpu.dump();
    const double queue_ms = gpu["nccl_queue"]["median_ns"].get<double>() / 1e6;
    EXPECT_GT(queue_ms, 5.0);
    EXPECT_LT(queue_ms, 20.0);
    std::printf("rank %d: launch latency median %.1f us, NCCL queue median %.2f ms\n",
                rank["rank"].get<int>(), gpu["launch_latency"]["median_ns"].get<double>() / 1e3,
                queue_ms);
  }
  const std::string text = BuildReportText(s, {}, /*color=*/false);
  EXPECT_NE(text.find("kernels 486 on 2 rank(s); launch latency (kernel start - launch call) "
                      "median 2."),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("NCCL kernels queued 10."), std::string::npos) << text;
  // report.html: the same figures per rank in the GPU section.
  const std::string html = BuildReportHtml(s, MatchCollectives(s), {});
  EXPECT_NE(html.find("<h3>Kernels and launch latency (CUPTI)</h3>"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>rank 1</td>"), std::string::npos);
  EXPECT_NE(html.find(">243</td>"), std::string::npos);
}

// Rank 1 slept on the host before its compute: its all-reduce was launched ~20 ms late, so the
// straggler finding puts the delay on the host side, not on the GPU queue.
TEST(GpuReplay, HostSleepIsLateLaunchNotGpuQueue) {
  Session s = LoadLaunch("sleep-rank1-20ms");
  std::vector<Finding> findings = Diagnose(s, AnalysisOptions{});
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.ranks, std::vector<int>{1});
  EXPECT_NE(CauseKindName(f.cause), "gpu_queue");
  ASSERT_TRUE(f.before_late_calls && f.before_late_calls->launch);
  const BeforeLateCalls::Launch& launch = *f.before_late_calls->launch;
  EXPECT_EQ(launch.instances, 40);
  EXPECT_NEAR(static_cast<double>(launch.launch_lateness) / 1e6, 20.0, 2.0);
  EXPECT_NE(f.summary.find("late on the host"), std::string::npos) << f.summary;
  std::printf("%s\n", f.summary.c_str());
}

TEST(GpuReplay, BusBandwidthFromKernelTimesIsThatOfNvLink) {
  Session s = Load("clean");
  nlohmann::json report = BuildReportJson(s, {});
  const auto& shape = report["nccl"]["communicators"][0]["shapes"][0];
  EXPECT_EQ(shape["op"], "AllReduce");
  EXPECT_EQ(shape["bytes"], 64 << 20);
  EXPECT_EQ(shape["timed_instances"], 40);
  // Two H200s over NVLink (NV18): far above PCIe gen5 x16 (~55 GB/s), below NVLink's 450 GB/s.
  const double busbw = shape["busbw_gbps"].get<double>();
  EXPECT_GT(busbw, 100.0);
  EXPECT_LT(busbw, 450.0);
  std::printf("recorded 2xH200 all-reduce 64 MiB: busbw %.1f GB/s\n", busbw);
}

// A live MPI + CUDA run on one H100 (tests/fixtures/h100-mpi-gpu-steps): rank 1's extra
// heavy_stencil kernel is found, named, and the finding is the same when every kernel record is
// gone and the straggler analysis reads only the agents' kernel pieces, as it will once agents
// stop sending the kernels; the clean run has no finding.
TEST(GpuReplay, AGpuStragglersKernelIsNamedFromTheAgentsPiecesAlone) {
  Session heavy = Load("heavy-rank1", "h100-mpi-gpu-steps");
  ASSERT_EQ(heavy.ranks.size(), 4u);
  const std::vector<Finding> with_records = Diagnose(heavy, AnalysisOptions{});
  ASSERT_EQ(with_records.size(), 1u);
  EXPECT_EQ(with_records[0].kind, FindingKind::kStraggler);
  EXPECT_EQ(with_records[0].ranks, std::vector<int>{1});
  const std::string text = FindingToJson(with_records[0]).dump();
  EXPECT_NE(text.find("heavy_stencil"), std::string::npos) << text;
  size_t removed = 0;
  for (RankData& r : heavy.ranks) {
    ASSERT_FALSE(r.kernel_pieces.empty());
    removed += static_cast<size_t>(std::erase_if(
        r.gpu, [](const GpuActivityRecord& g) { return g.kind == GpuActivityKind::kKernel; }));
  }
  EXPECT_GT(removed, 9000u);
  const std::vector<Finding> from_pieces = Diagnose(heavy, AnalysisOptions{});
  ASSERT_EQ(from_pieces.size(), 1u);
  EXPECT_EQ(FindingToJson(from_pieces[0]), FindingToJson(with_records[0]));

  Session clean = Load("clean", "h100-mpi-gpu-steps");
  EXPECT_TRUE(Diagnose(clean, AnalysisOptions{}).empty());
}

TEST(GpuReplay, CleanRunHasNoFinding) {
  Session s = Load("clean");
  ASSERT_EQ(s.ranks.size(), 2u);
  EXPECT_TRUE(Diagnose(s, AnalysisOptions{}).empty());
}

// The benchmark session: nccl_allreduce's own busbw per size, and rankscope's.
struct Bench {
  Session session;
  nlohmann::json report;
  std::map<int64_t, double> bench_busbw;  // bytes -> GB/s, the benchmark's timing
};

Bench LoadBench() {
  const std::string dir = std::string(RANKSCOPE_FIXTURES_DIR) + "/h200x2-nccl-allreduce-bench";
  Bench b;
  Result<Session> s = LoadSession(dir + "/session.sqlite");
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return b;
  b.session = std::move(s).value();
  b.report = BuildReportJson(b.session, {});
  std::ifstream in(dir + "/bench.json");
  nlohmann::json bench = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  for (const auto& r : bench["results"]) {
    b.bench_busbw[r["bytes"].get<int64_t>()] = r["busbw_gbps"].get<double>();
  }
  return b;
}

// A healthy SHM ring, measured (NCCL_P2P_DISABLE=1 on 2xH200): 27-28 GB/s busbw, 0.44 of the PCIe
// gen 5 x16 link the ceiling puts under SHM. Silent at the default SHM fraction; a stricter one
// flags it on that link, which shows the ceiling is evaluated on the real logs and topology.
TEST(GpuReplay, AHealthyShmRingIsJudgedAgainstPcieAndStaysSilent) {
  const Session s = Load("session", "h200x2-nccl-allreduce-shm");
  ASSERT_EQ(s.ranks.size(), 2u);
  EXPECT_TRUE(Diagnose(s, AnalysisOptions{}).empty());
  AnalysisOptions strict;
  strict.ring.shm_ceiling_fraction = 0.5;
  const std::vector<Finding> findings = Diagnose(s, strict);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(FindingKindName(findings[0].kind), "below_link_ceiling");
  ASSERT_TRUE(findings[0].limiting_link && findings[0].ceiling);
  EXPECT_EQ(findings[0].limiting_link->transport, "SHM");
  EXPECT_EQ(findings[0].limiting_link->link, "PCIe gen5 x16");
  EXPECT_NEAR(findings[0].ceiling->fraction, 0.44, 0.03);
}

TEST(GpuReplay, NcclBusBandwidthMatchesTheBenchmarksOwnTiming) {
  Bench b = LoadBench();
  ASSERT_EQ(b.bench_busbw.size(), 26u);
  ASSERT_EQ(b.report["nccl"]["communicators"].size(), 1u);
  int checked = 0;
  for (const auto& shape : b.report["nccl"]["communicators"][0]["shapes"]) {
    const int64_t bytes = shape["bytes"].get<int64_t>();
    if (bytes < (1 << 20)) continue;
    ASSERT_TRUE(shape["stream_busbw_gbps"].is_number()) << shape;
    const double ours = shape["stream_busbw_gbps"].get<double>();
    const double theirs = b.bench_busbw.at(bytes);
    EXPECT_NEAR(ours / theirs, 1.0, 0.10) << bytes << " B: " << ours << " vs " << theirs;
    // Kernel time alone leaves out the gap between kernels: never slower than call to call.
    EXPECT_GE(shape["busbw_gbps"].get<double>(), ours * 0.999) << bytes;
    EXPECT_GT(shape["gap_us"].get<double>(), 0.0);
    EXPECT_LT(shape["gap_us"].get<double>(), 10.0);
    std::printf("%10lld B: rankscope %.1f GB/s (kernel %.1f, gap %.2f us), benchmark %.1f GB/s\n",
                static_cast<long long>(bytes), ours, shape["busbw_gbps"].get<double>(),
                shape["gap_us"].get<double>(), theirs);
    ++checked;
  }
  EXPECT_EQ(checked, 9);
}

TEST(GpuReplay, BenchmarkSessionHasNvmlCuptiAndNoFinding) {
  Bench b = LoadBench();
  ASSERT_EQ(b.session.ranks.size(), 2u);
  ASSERT_TRUE(b.report.contains("nvml"));
  const auto& gpus = b.report["nvml"][0]["gpus"];
  ASSERT_EQ(gpus.size(), 2u);
  for (const auto& g : gpus) {
    EXPECT_EQ(g["name"], "NVIDIA H200");
    EXPECT_EQ(g["pcie_gen_current"], 5);
    EXPECT_EQ(g["pcie_width_current"], 16);
    EXPECT_FALSE(g["pcie_degraded"].get<bool>());
    EXPECT_EQ(g["nvlinks_up"], 18);
  }
  const std::string text = BuildReportText(b.session, {}, /*color=*/false);
  EXPECT_NE(text.find("PCIe gen 5 x16, NVLink 18/18 up"), std::string::npos) << text;
  EXPECT_NE(text.find("call to call"), std::string::npos) << text;
  EXPECT_TRUE(Diagnose(b.session, AnalysisOptions{}).empty());

  // Every kernel reaches the trace on its stream's track; copies and memsets get an arrow from
  // the CUDA runtime call that launched them. NCCL launches its kernels through the driver API
  // (cuLaunchKernelEx), which the RUNTIME activity kind does not record: no arrow for those.
  const nlohmann::json trace =
      nlohmann::json::parse(BuildChromeTrace(b.session, MatchSession(b.session)));
  int kernels = 0;
  int launches = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "cuda_kernel") ++kernels;
    if (e["ph"] == "f" && e["cat"] == "cuda_launch") ++launches;
  }
  EXPECT_EQ(kernels, 2860);
  EXPECT_GT(launches, 0);
}

}  // namespace
}  // namespace rankscope
