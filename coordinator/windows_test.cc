#include "coordinator/windows.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <tuple>

#include "coordinator/aligner.h"
#include "coordinator/analysis/blame.h"
#include "coordinator/analysis/dataloader_analysis.h"
#include "coordinator/analysis/p2p_analysis.h"
#include "coordinator/analysis/straggler_analysis.h"
#include "coordinator/report/record_facts.h"
#include "coordinator/report/session_store.h"
#include "coordinator/report/stored_windows.h"
#include "coordinator/report/trace_json.h"
#include "coordinator/session_matches.h"
#include "core/comm_id.h"

namespace rankscope {
namespace {

constexpr DurationNs kMs = 1'000'000;

// An aligned session of one rank, without records.
Session OneRank() {
  Session s;
  s.world_size = 1;
  s.aligned = true;
  s.ranks.resize(1);
  return s;
}

// A one-rank plan cut at the given times, then at the end.
WindowPlan TimeCuts(std::initializer_list<TimeNs> cuts) {
  WindowPlan plan;
  for (TimeNs c : cuts) plan.cuts.push_back({CutKind::kTime, 0, {c}});
  plan.cuts.push_back({CutKind::kEnd, 0, {std::numeric_limits<TimeNs>::max()}});
  return plan;
}

// The same plan's last window alone: the whole run at once.
WindowPlan WholeRun(const WindowPlan& plan) {
  WindowPlan one;
  one.cuts.push_back(plan.cuts.back());
  return one;
}

RangeRecord Range(const char* name, TimeNs start, TimeNs end, uint32_t depth = 0) {
  RangeRecord r;
  r.name = name;
  r.start = start;
  r.end = end;
  r.depth = depth;
  return r;
}

Session Recorded(const std::string& name) {
  Result<Session> s = LoadSession(std::string(RANKSCOPE_FIXTURES_DIR) + "/cpu2-real-apps/" + name +
                                  "/session.sqlite");
  EXPECT_TRUE(s.ok()) << name << ": " << s.status().message();
  return s.ok() ? std::move(s).value() : Session{};
}

// Runs `check` on every recorded session (real MPI codes and NCCL jobs on 2xH200) with its
// windows of about 100 ms; returns how many there were.
int ForEachRecordedSession(
    const std::function<void(const std::string&, const Session&, const WindowPlan&)>& check) {
  int sessions = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(RANKSCOPE_FIXTURES_DIR)) {
    if (entry.path().extension() != ".sqlite") continue;
    SCOPED_TRACE(entry.path().string());
    Result<Session> s = LoadSession(entry.path().string());
    EXPECT_TRUE(s.ok()) << s.status().message();
    if (!s.ok()) continue;
    const WindowPlan plan = PlanWindows(s.value(), {.target = 100 * kMs, .max_window = 400 * kMs});
    check(entry.path().parent_path().filename().string(), s.value(), plan);
    ++sessions;
  }
  return sessions;
}

TEST(InstanceCutRule, FirstAnchorAtOrAfterEachMultiple) {
  InstanceCutRule rule(10);
  std::vector<uint64_t> cut;
  // Anchors at 0, 3, 9, 12 (a bcast took 10 and 11), 19, 20, 35, 41.
  for (uint64_t seq : {0, 3, 9, 12, 19, 20, 35, 41}) {
    if (rule.CutsAt(seq)) cut.push_back(seq);
  }
  EXPECT_EQ(cut, (std::vector<uint64_t>{12, 20, 35, 41}));  // 30 and 40 were not anchors
}

// The cuts of the real runs (LAMMPS, HPCC, mpi_train at np 2, one with a rank frozen 60 ms of
// every 100): at the world communicator's instances, each rank at its own exit from it, in order
// on every rank, about one per target; every record in one window.
TEST(PlanWindows, RealRunsAreCutAtTheSameWorldInstancesOnEveryRank) {
  const WindowOptions options{.target = 100 * kMs, .max_window = 400 * kMs};
  for (const char* name : {"lammps-clean", "hpcc-clean", "mpi_train-clean", "hpcc-freeze-r0"}) {
    SCOPED_TRACE(name);
    const Session s = Recorded(name);
    ASSERT_EQ(s.ranks.size(), 2u);
    const WindowPlan plan = PlanWindows(s, options);
    ASSERT_TRUE(plan.has_world);
    EXPECT_GE(plan.every, 1u);
    ASSERT_GE(plan.size(), 3u);
    EXPECT_EQ(plan.cuts.back().kind, CutKind::kEnd);
    int instance_cuts = 0;
    for (size_t w = 0; w < plan.size(); ++w) {
      const WindowCut& cut = plan.cuts[w];
      ASSERT_EQ(cut.at.size(), 2u);
      for (size_t r = 0; r < 2; ++r) {
        if (w > 0) {
          EXPECT_GE(cut.at[r], plan.cuts[w - 1].at[r]) << "window " << w;
        }
      }
      if (cut.kind != CutKind::kInstance) continue;
      ++instance_cuts;
      for (size_t r = 0; r < 2; ++r) {
        const auto& calls = s.ranks[r].collectives;
        auto it = std::find_if(calls.begin(), calls.end(), [&](const CollectiveRecord& c) {
          return c.comm_id == plan.world_comm && c.seq == cut.seq;
        });
        ASSERT_NE(it, calls.end()) << "seq " << cut.seq;
        EXPECT_TRUE(AnchorsWindows(it->op, it->nonblocking));
        EXPECT_EQ(cut.at[r], it->exit);
      }
    }
    EXPECT_GT(instance_cuts, 0);
    // No stretch between cuts longer than max_window, from the later rank to the earlier.
    for (size_t w = 1; w + 1 < plan.size(); ++w) {
      const auto& prev = plan.cuts[w - 1].at;
      const auto& next = plan.cuts[w].at;
      EXPECT_LE(
          *std::min_element(next.begin(), next.end()) - *std::max_element(prev.begin(), prev.end()),
          options.max_window)
          << "window " << w;
    }
    // Every record falls in one window.
    const auto counts = CountWindowRecords(s, plan);
    ASSERT_EQ(counts.size(), plan.size());
    for (size_t r = 0; r < 2; ++r) {
      size_t collectives = 0, p2p = 0;
      for (const auto& window : counts) {
        collectives += static_cast<size_t>(window[r].collectives);
        p2p += static_cast<size_t>(window[r].p2p);
      }
      EXPECT_EQ(collectives, s.ranks[r].collectives.size());
      EXPECT_EQ(p2p, s.ranks[r].p2p.size());
    }
  }
}

// What the coordinator cuts, each rank finds on its own: fed only its own calls on the world
// communicator, the online rule cuts at the same instances.
TEST(PlanWindows, EachRankAloneFindsTheSameCuts) {
  const Session s = Recorded("lammps-competitor-r1");
  const WindowPlan plan = PlanWindows(s, {.target = 50 * kMs, .max_window = 200 * kMs});
  ASSERT_TRUE(plan.has_world);
  std::vector<uint64_t> planned;
  for (const WindowCut& c : plan.cuts) {
    if (c.kind == CutKind::kInstance) planned.push_back(c.seq);
  }
  ASSERT_FALSE(planned.empty());
  for (const RankData& rank : s.ranks) {
    InstanceCutRule rule(plan.every);
    std::vector<uint64_t> own;
    for (const CollectiveRecord& c : rank.collectives) {
      if (c.comm_id == plan.world_comm && AnchorsWindows(c.op, c.nonblocking) &&
          rule.CutsAt(c.seq)) {
        own.push_back(c.seq);
      }
    }
    EXPECT_EQ(own, planned) << "rank " << rank.id.rank;
  }
}

// Point-to-point only (NetPIPE, HPCC's RandomAccess): cut by time, the same time on every rank.
TEST(PlanWindows, WithoutWorldCollectivesTheRunIsCutByTime) {
  Session s;
  s.world_size = 2;
  s.ranks.resize(2);
  for (int r = 0; r < 2; ++r) {
    s.ranks[r].id.rank = r;
    for (TimeNs t = 0; t < 1000 * kMs; t += 10 * kMs) {
      P2PRecord p;
      p.kind = r == 0 ? P2PKind::kSend : P2PKind::kRecv;
      p.peer = 1 - r;
      p.enter = t;
      p.exit = t + kMs;
      s.ranks[r].p2p.push_back(p);
    }
  }
  const WindowPlan plan = PlanWindows(s, {.target = 100 * kMs, .max_window = 300 * kMs});
  EXPECT_FALSE(plan.has_world);
  ASSERT_EQ(plan.size(), 10u);  // time cuts at 100, 200, ..., 900 ms, and the end
  for (size_t w = 0; w + 1 < plan.size(); ++w) {
    EXPECT_EQ(plan.cuts[w].kind, CutKind::kTime);
    EXPECT_EQ(plan.cuts[w].at,
              (std::vector<TimeNs>{TimeNs(w + 1) * 100 * kMs, TimeNs(w + 1) * 100 * kMs}));
  }
  const auto counts = CountWindowRecords(s, plan);
  EXPECT_EQ(counts[0][0].p2p, 10);  // exits at 1, 11, ..., 91 ms
  EXPECT_EQ(counts[9][1].p2p, 10);
}

// A world communicator that goes quiet for a long stretch: time cuts fill the gap between its
// instances, after the latest rank left the one before and before the earliest reached the next.
TEST(PlanWindows, ALongStretchWithoutAnchorsIsCutByTime) {
  Session s;
  s.world_size = 2;
  s.ranks.resize(2);
  auto allreduce = [](uint64_t seq, TimeNs enter, TimeNs exit) {
    CollectiveRecord c;
    c.comm_id = 7;
    c.seq = seq;
    c.op = CollectiveOp::kAllreduce;
    c.comm_size = 2;
    c.enter = enter;
    c.exit = exit;
    return c;
  };
  for (int r = 0; r < 2; ++r) {
    s.ranks[r].id.rank = r;
    for (uint64_t i = 0; i < 10; ++i) {  // ten steps of 10 ms, then a second of nothing
      const TimeNs t = static_cast<TimeNs>(i) * 10 * kMs;
      s.ranks[r].collectives.push_back(allreduce(i, t, t + kMs + r));
    }
    s.ranks[r].collectives.push_back(allreduce(10, 1100 * kMs, 1101 * kMs + r));
  }
  const WindowPlan plan = PlanWindows(s, {.target = 100 * kMs, .max_window = 300 * kMs});
  ASSERT_TRUE(plan.has_world);
  std::vector<CutKind> kinds;
  for (const WindowCut& c : plan.cuts) kinds.push_back(c.kind);
  ASSERT_GE(kinds.size(), 10u);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), CutKind::kTime), 9);  // 191 ms ... 991 ms
  const auto first_time = std::find(kinds.begin(), kinds.end(), CutKind::kTime) - kinds.begin();
  EXPECT_EQ(plan.cuts[first_time].at[0], plan.cuts[first_time - 1].at[1] + 100 * kMs);
}

void ExpectSameInstances(const std::vector<CollectiveInstance>& a,
                         const std::vector<CollectiveInstance>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("instance " + std::to_string(i));
    EXPECT_EQ(a[i].comm_id, b[i].comm_id);
    EXPECT_EQ(a[i].seq, b[i].seq);
    EXPECT_EQ(a[i].op, b[i].op);
    EXPECT_EQ(a[i].comm_size, b[i].comm_size);
    EXPECT_EQ(a[i].root_comm_rank, b[i].root_comm_rank);
    EXPECT_EQ(a[i].complete, b[i].complete);
    EXPECT_EQ(a[i].mismatched, b[i].mismatched);
    ASSERT_EQ(a[i].members.size(), b[i].members.size());
    for (size_t m = 0; m < a[i].members.size(); ++m) {
      EXPECT_EQ(a[i].members[m].rank, b[i].members[m].rank);
      EXPECT_EQ(a[i].members[m].enter, b[i].members[m].enter);
      EXPECT_EQ(a[i].members[m].exit, b[i].members[m].exit);
      EXPECT_EQ(a[i].members[m].bytes, b[i].members[m].bytes);
    }
  }
}

// Matching window by window gives what matching the whole run gives, on every recorded session
// (real MPI codes and NCCL jobs on 2xH200), while holding few instances open across windows.
TEST(MatchCollectivesByWindow, EveryRecordedSessionMatchesAsAWhole) {
  const int sessions = ForEachRecordedSession(
      [&](const std::string& name, const Session& s, const WindowPlan& plan) {
        size_t peak = 0;
        const std::vector<CollectiveInstance> windowed =
            MatchCollectivesByWindow(s, SplitSession(s, plan), &peak);
        const std::vector<CollectiveInstance> whole = MatchCollectives(s);
        ExpectSameInstances(windowed, whole);
        // What a coordinator folding these windows would hold of the records at once: a window's
        // and the one before it (the folds read back that far), against the whole run's.
        const auto counts = CountWindowRecords(s, plan);
        size_t total = 0, most = 0, previous = 0;
        for (const auto& window : counts) {
          size_t here = 0;
          for (const WindowRecords& r : window) here += static_cast<size_t>(r.total());
          total += here;
          most = std::max(most, here + previous);
          previous = here;
        }
        std::printf(
            "%s: %zu windows, %zu instances, at most %zu open across a cut; records %zu, "
            "at most %zu (%.1f %%) in two windows\n",
            name.c_str(), plan.size(), whole.size(), peak, total, most,
            total > 0 ? 100.0 * static_cast<double>(most) / total : 0.0);
        EXPECT_LE(peak, std::max<size_t>(8, whole.size() / 10));
      });
  EXPECT_GE(sessions, 17);
}

// What each rank did before the calls that may count as late, read window by window from each
// window's upload and what the fold held of the windows before, is what the whole run gives, on
// every recorded session, holding a small part of the records at any cut.
TEST(GapsBeforeLateCallsByWindow, EveryRecordedSessionGivesTheWholeRunsShares) {
  size_t shares = 0;
  const int sessions = ForEachRecordedSession([&](const std::string& name, const Session& s,
                                                  const WindowPlan& plan) {
    const StragglerOptions options;
    const LateGaps whole = GapsBeforeLateCalls(s, MatchCollectives(s), options);
    size_t peak = 0, records = 0;
    const LateGaps windowed = GapsBeforeLateCallsByWindow(s, SplitSession(s, plan), options, &peak);
    for (const RankData& r : s.ranks) {
      records += r.collectives.size() + r.p2p.size() + r.gpu.size() + r.ranges.size();
    }
    if (records > 1000) {
      EXPECT_LT(peak, records / 4);
    }
    EXPECT_EQ(windowed.size(), whole.size());
    for (const auto& [key, share] : whole) {
      const auto found = windowed.find(key);
      ASSERT_NE(found, windowed.end()) << "comm " << std::get<0>(key) << " seq " << std::get<1>(key)
                                       << " rank " << std::get<2>(key);
      EXPECT_TRUE(found->second == share)
          << "comm " << std::get<0>(key) << " seq " << std::get<1>(key) << " rank "
          << std::get<2>(key) << ": gap " << found->second.late_gap << " vs " << share.late_gap
          << ", untracked " << found->second.late_untracked << " vs " << share.late_untracked
          << ", mpi " << found->second.late_mpi << " vs " << share.late_mpi << ", others' gap "
          << found->second.others_gap << " vs " << share.others_gap << ", others' mpi "
          << found->second.others_mpi << " vs " << share.others_mpi << ", others' untracked "
          << found->second.others_untracked << " vs " << share.others_untracked;
    }
    std::printf("%s: %zu calls that may count as late; held at most %zu of %zu records\n",
                name.c_str(), whole.size(), peak, records);
    shares += whole.size();
  });
  EXPECT_GE(sessions, 17);
  EXPECT_GT(shares, 100u);  // the recorded stragglers' late calls among them
}

// Each rank's data-loading time step by step, read window by window, is what the whole run gives,
// on every recorded session (mpi_train's step/data/compute ranges, torchrun's first kernels).
TEST(StepSeriesByWindow, EveryRecordedSessionGivesTheWholeRunsSteps) {
  size_t steps = 0;
  const int sessions = ForEachRecordedSession(
      [&](const std::string& name, const Session& s, const WindowPlan& plan) {
        const DataloaderOptions options;
        const std::vector<StepSeries> whole = StepSeriesOf(s, options);
        size_t peak = 0, records = 0;
        const std::vector<StepSeries> windowed =
            StepSeriesByWindow(s, SplitSession(s, plan), options, &peak);
        for (const RankData& r : s.ranks) records += r.ranges.size() + r.gpu.size();
        // It holds what the steps still to come may read: a few steps' records.
        if (records > 1000) {
          EXPECT_LT(peak, records / 4);
        }
        ASSERT_EQ(windowed.size(), whole.size());
        for (size_t i = 0; i < whole.size(); ++i) {
          SCOPED_TRACE("rank " + std::to_string(whole[i].rank));
          EXPECT_EQ(windowed[i].from_step_ranges, whole[i].from_step_ranges);
          EXPECT_EQ(windowed[i].from_first_kernel, whole[i].from_first_kernel);
          EXPECT_EQ(windowed[i].data, whole[i].data);
          EXPECT_EQ(windowed[i].step_time, whole[i].step_time);
          EXPECT_EQ(windowed[i].by_name, whole[i].by_name);
          steps += whole[i].data.size();
        }
        std::printf(
            "%s: %zu ranks with steps, %zu windows; held at most %zu of %zu ranges and GPU "
            "records\n",
            name.c_str(), whole.size(), plan.size(), peak, records);
      });
  EXPECT_GE(sessions, 17);
  EXPECT_GT(steps, 100u);
}

// The blame model with each rank's MPI records read window by window into its per-call events is
// the model of the whole run, figure by figure, on every recorded session.
TEST(BuildBlameModelByWindow, EveryRecordedSessionGivesTheWholeRunsModel) {
  const int sessions = ForEachRecordedSession([&](const std::string& name, const Session& s,
                                                  const WindowPlan& plan) {
    const SessionMatches matches = MatchSession(s);
    const BlameModel whole = BuildBlameModel(s, matches);
    const WindowSplit split = SplitSession(s, plan);
    const BlameModel windowed = BuildBlameModel(s, matches, BlameOptions{}, &split);
    EXPECT_EQ(windowed.stragglers, whole.stragglers);
    EXPECT_EQ(windowed.replayed_span, whole.replayed_span);
    EXPECT_EQ(windowed.what_if_all_span, whole.what_if_all_span);
    EXPECT_EQ(windowed.broken_dependencies, whole.broken_dependencies);
    EXPECT_EQ(windowed.waits, whole.waits);
    ASSERT_EQ(windowed.ranks.size(), whole.ranks.size());
    for (size_t i = 0; i < whole.ranks.size(); ++i) {
      const RankBlame& a = windowed.ranks[i];
      const RankBlame& b = whole.ranks[i];
      SCOPED_TRACE("rank " + std::to_string(b.rank));
      EXPECT_EQ(a.events, b.events);
      EXPECT_EQ(a.collective_calls, b.collective_calls);
      EXPECT_EQ(a.p2p_calls, b.p2p_calls);
      EXPECT_EQ(a.busy, b.busy);
      EXPECT_EQ(a.own_work, b.own_work);
      EXPECT_EQ(a.in_mpi, b.in_mpi);
      EXPECT_EQ(a.busy_by_part, b.busy_by_part);
      EXPECT_EQ(a.gain, b.gain);
      EXPECT_EQ(a.what_if_span, b.what_if_span);
    }
    // Own work per range name, read window by window, is what one window over the whole run
    // reads (the straggler finding's cause range).
    WindowPlan one;
    one.cuts.push_back({CutKind::kEnd, 0,
                        std::vector<TimeNs>(s.ranks.size(), std::numeric_limits<TimeNs>::max())});
    const WindowSplit one_split = SplitSession(s, one);
    const BlameModel at_once = BuildBlameModel(s, matches, BlameOptions{}, &one_split);
    ASSERT_EQ(windowed.own_work_ranges.size(), at_once.own_work_ranges.size());
    for (size_t i = 0; i < at_once.own_work_ranges.size(); ++i) {
      EXPECT_EQ(windowed.own_work_ranges[i].has_ranges, at_once.own_work_ranges[i].has_ranges);
      EXPECT_EQ(windowed.own_work_ranges[i].by_range, at_once.own_work_ranges[i].by_range);
    }
    // The fold holds only the ranges that may still overlap an own-work interval.
    size_t peak = 0, ranges = 0;
    OwnWorkRangesByWindow(s, whole.first, SplitSession(s, plan), &peak);
    for (const RankData& r : s.ranks) ranges += r.ranges.size();
    if (ranges > 1000) {
      EXPECT_LT(peak, ranges / 4);
    }
    std::printf(
        "%s: %zu ranks, %zu windows, stragglers %zu; own work by range held at most %zu "
        "of %zu ranges\n",
        name.c_str(), whole.ranks.size(), plan.size(), whole.stragglers.size(), peak, ranges);
  });
  EXPECT_GE(sessions, 17);
}

// The blame graph cut at its clean cuts (N-to-N instances of every rank, no dependency across
// them) and replayed segment by segment, each segment from where the last left every rank's
// clock, is the whole graph's replay: the span, each rank's waits and the broken dependencies,
// for the recording and for a what-if with one rank's own work halved. Where the run has world
// collectives between its messages (NetPIPE's barrier per message size), the segments are a
// small part of it: what the end-of-run blame graph will hold instead of the whole run.
TEST(BlameReplayBySegments, EveryRecordedSessionReplaysAsAWhole) {
  size_t cut = 0;
  const int sessions =
      ForEachRecordedSession([&](const std::string& name, const Session& s, const WindowPlan&) {
        const SessionMatches matches = MatchSession(s);
        std::vector<double> scale(s.ranks.size(), 1.0);
        for (const std::vector<double>& trial : {scale, [&] {
                                                   scale.back() = 0.5;
                                                   return scale;
                                                 }()}) {
          const SegmentedReplayCheck check = CheckReplayBySegments(s, matches, trial);
          EXPECT_EQ(check.by_segments.span, check.whole.span);
          EXPECT_EQ(check.by_segments.waited, check.whole.waited);
          EXPECT_EQ(check.by_segments.broken, check.whole.broken);
          if (trial.back() == 1.0) {
            size_t events = 0;
            for (const RankData& r : s.ranks) events += r.collectives.size() + r.p2p.size();
            std::printf("%s: %zu segments, the largest %zu events of about %zu\n", name.c_str(),
                        check.segments, check.largest_segment_events, events);
            cut += check.segments > 1 ? 1 : 0;
          }
        }
      });
  EXPECT_GE(sessions, 17);
  EXPECT_GE(cut, 10u);  // most real runs have clean cuts
}

// The blame model folded segment by segment from the windows, as the stored path reads them, is
// the whole run's, figure by figure, on every recorded session where no rank is a candidate (no
// what-if to replay) and the parts are cut at shared instances; the others say so (nullopt), and
// the caller builds the whole graph. The segments hold a small part of the run's events.
TEST(SegmentedBlameFold, EveryRecordedSessionGivesTheWholeRunsModelOrSaysItCannot) {
  int folded = 0, whole_needed = 0;
  const int sessions = ForEachRecordedSession(
      [&](const std::string& name, const Session& s, const WindowPlan& plan) {
        const BlameModel whole = BuildBlameModel(s, MatchSession(s));
        const WindowSplit split = SplitSession(s, plan);
        MatchFold matches(WorldSize(s), /*keep_messages=*/false);
        SegmentedBlameFold fold(s);
        for (size_t w = 0; w < split.size(); ++w) {
          const std::vector<RankUpload> uploads = UploadsOf(s, split, w);
          matches.Add(uploads, w + 1 == split.size());
          fold.Add(uploads);
          fold.Close(matches.instances_taken(), matches.released_links(), matches.quiet(),
                     w + 1 == split.size());
        }
        const std::optional<BlameModel> model = fold.Finish(s, matches.Finish());
        size_t events = 0;
        for (const RankBlame& b : whole.ranks) events += static_cast<size_t>(b.events);
        std::printf("%s: %s, %zu segments, at most %zu of %zu events\n", name.c_str(),
                    model ? "folded" : "whole graph needed", fold.segments(), fold.peak_events(),
                    events);
        if (!model) {
          // Only where the whole graph is needed: a GPU timeline, or a candidate to replay.
          const bool gpu = std::any_of(s.ranks.begin(), s.ranks.end(), [](const RankData& r) {
            return std::any_of(r.collectives.begin(), r.collectives.end(), [](const auto& c) {
              return c.source == CollectiveRecord::Source::kNccl;
            });
          });
          const bool candidate = std::any_of(whole.ranks.begin(), whole.ranks.end(),
                                             [](const RankBlame& b) { return b.replayed; });
          EXPECT_TRUE(gpu || candidate);
          ++whole_needed;
          return;
        }
        ++folded;
        EXPECT_TRUE(whole.stragglers.empty());
        EXPECT_EQ(model->first, whole.first);
        EXPECT_EQ(model->last, whole.last);
        EXPECT_EQ(model->job, whole.job);
        EXPECT_EQ(model->replayed_span, whole.replayed_span);
        EXPECT_EQ(model->typical_busy, whole.typical_busy);
        EXPECT_EQ(model->typical_own_work, whole.typical_own_work);
        EXPECT_EQ(model->judged, whole.judged);
        EXPECT_EQ(model->broken_dependencies, whole.broken_dependencies);
        EXPECT_EQ(model->waits, whole.waits);
        EXPECT_EQ(model->stragglers, whole.stragglers);
        ASSERT_EQ(model->ranks.size(), whole.ranks.size());
        for (size_t i = 0; i < whole.ranks.size(); ++i) {
          const RankBlame& a = model->ranks[i];
          const RankBlame& b = whole.ranks[i];
          SCOPED_TRACE("rank " + std::to_string(b.rank));
          EXPECT_EQ(a.rank, b.rank);
          EXPECT_EQ(a.first, b.first);
          EXPECT_EQ(a.last, b.last);
          EXPECT_EQ(a.in_mpi, b.in_mpi);
          EXPECT_EQ(a.own_work, b.own_work);
          EXPECT_EQ(a.busy, b.busy);
          EXPECT_EQ(a.waited, b.waited);
          EXPECT_EQ(a.caused, b.caused);
          EXPECT_EQ(a.events, b.events);
          EXPECT_EQ(a.collective_calls, b.collective_calls);
          EXPECT_EQ(a.p2p_calls, b.p2p_calls);
          EXPECT_EQ(a.other_calls, b.other_calls);
          EXPECT_EQ(a.uninterpreted_calls, b.uninterpreted_calls);
          EXPECT_EQ(a.caused_at, b.caused_at);
          EXPECT_EQ(a.busy_by_part, b.busy_by_part);
          EXPECT_EQ(a.own_by_part, b.own_by_part);
          EXPECT_EQ(a.judged_on_busy, b.judged_on_busy);
          EXPECT_EQ(a.held_share, b.held_share);
          EXPECT_EQ(a.excess_sigmas, b.excess_sigmas);
          EXPECT_EQ(a.excess_fraction, b.excess_fraction);
          EXPECT_EQ(a.persistence, b.persistence);
          EXPECT_FALSE(a.replayed);
        }
        if (events > 1000) {
          EXPECT_LT(fold.peak_events(), events / 2);  // windows of ~100 ms over a run of 1-3 s
        }
      });
  EXPECT_GE(sessions, 17);
  EXPECT_GE(folded, 3);        // every clean CPU session
  EXPECT_GE(whole_needed, 9);  // the planted faults' and the GPU sessions
}

// A message posted before a barrier and received after it ties the two sides of that barrier:
// the graph is not cut there (a segment would depend on an event of the one before), only at the
// barriers with nothing across them, and the replay is still the whole one.
TEST(BlameReplayBySegments, AMessageAcrossABarrierKeepsItsSidesInOneSegment) {
  Session s;
  s.world_size = 2;
  s.aligned = true;
  s.ranks.resize(2);
  const uint64_t world = WorldCommId(2);
  for (int r = 0; r < 2; ++r) s.ranks[static_cast<size_t>(r)].id.rank = r;
  auto p2p = [&](P2PKind kind, P2PKind completed, int peer, TimeNs enter, TimeNs exit) {
    P2PRecord p;
    p.kind = kind;
    p.completed = completed;
    p.peer = p.world_peer = peer;
    p.tag = 1;
    p.comm_id = world;
    p.enter = enter;
    p.exit = exit;
    return p;
  };
  TimeNs t = 0;
  for (uint64_t k = 0; k < 6; ++k) {
    for (int r = 0; r < 2; ++r) {
      CollectiveRecord barrier;
      barrier.comm_id = world;
      barrier.seq = k;
      barrier.op = CollectiveOp::kBarrier;
      barrier.comm_size = 2;
      barrier.comm_rank = r;
      barrier.enter = t + 100 + 50 * r;  // rank 1 works longer
      barrier.exit = t + 160;
      s.ranks[static_cast<size_t>(r)].collectives.push_back(barrier);
    }
    if (k == 3) {
      // Rank 0 posts an Isend before barrier 3 and waits for it after; rank 1 receives after.
      s.ranks[0].p2p.push_back(p2p(P2PKind::kIsend, P2PKind::kIsend, 1, t + 50, t + 55));
      s.ranks[0].p2p.push_back(p2p(P2PKind::kWait, P2PKind::kIsend, 1, t + 170, t + 180));
      s.ranks[1].p2p.push_back(p2p(P2PKind::kRecv, P2PKind::kRecv, 0, t + 200, t + 260));
    }
    t += 300;
  }
  const SessionMatches matches = MatchSession(s);
  ASSERT_EQ(matches.links.size(), 1u);
  std::vector<double> scale{0.5, 1.0};
  const SegmentedReplayCheck check = CheckReplayBySegments(s, matches, scale);
  EXPECT_EQ(check.segments, 6u);  // cut at barriers 0, 1, 2, 4 and 5, not at 3
  EXPECT_EQ(check.by_segments.span, check.whole.span);
  EXPECT_EQ(check.by_segments.waited, check.whole.waited);
  EXPECT_EQ(check.by_segments.broken, check.whole.broken);
}

// Point-to-point messages matched window by window are the whole run's, field by field, with the
// same statistics, on every recorded session (LAMMPS's halo exchange, HPCC, NetPIPE's ping-pong),
// and the fold holds a small part of the records at any cut.
TEST(MatchMessagesByWindow, EveryRecordedSessionMatchesAsAWhole) {
  size_t messages = 0, directs = 0;
  const int sessions = ForEachRecordedSession(
      [&](const std::string& name, const Session& s, const WindowPlan& plan) {
        P2PMatchStats whole_stats, windowed_stats;
        size_t peak = 0;
        const std::vector<P2PMessage> whole = MatchMessages(s, &whole_stats);
        const std::vector<P2PMessage> windowed =
            MatchMessagesByWindow(s, SplitSession(s, plan), &windowed_stats, &peak);
        EXPECT_EQ(windowed_stats.sends, whole_stats.sends);
        EXPECT_EQ(windowed_stats.receives, whole_stats.receives);
        EXPECT_EQ(windowed_stats.matched, whole_stats.matched);
        EXPECT_EQ(windowed_stats.unmapped, whole_stats.unmapped);
        EXPECT_EQ(windowed_stats.first_call, whole_stats.first_call);
        EXPECT_EQ(windowed_stats.last_call, whole_stats.last_call);
        ASSERT_EQ(windowed.size(), whole.size());
        size_t records = 0;
        for (const RankData& r : s.ranks) records += r.p2p.size();
        for (size_t i = 0; i < whole.size(); ++i) {
          const P2PMessage& a = windowed[i];
          const P2PMessage& b = whole[i];
          SCOPED_TRACE("message " + std::to_string(i));
          EXPECT_EQ(a.sender, b.sender);
          EXPECT_EQ(a.receiver, b.receiver);
          EXPECT_EQ(a.posted, b.posted);
          EXPECT_EQ(a.receive_posted, b.receive_posted);
          EXPECT_EQ(a.blocked, b.blocked);
          EXPECT_EQ(a.wait, b.wait);
          EXPECT_EQ(a.direct, b.direct);
          EXPECT_EQ(a.send_blocked, b.send_blocked);
          EXPECT_EQ(a.send_wait, b.send_wait);
          EXPECT_EQ(a.send_direct, b.send_direct);
          EXPECT_EQ(a.send_record, b.send_record);
          EXPECT_EQ(a.receive_record, b.receive_record);
          EXPECT_EQ(a.send_blocked_record, b.send_blocked_record);
          EXPECT_EQ(a.receive_posted_record, b.receive_posted_record);
          EXPECT_EQ(a.bytes, b.bytes);
          if (b.direct > 0 || b.send_direct > 0) ++directs;
        }
        messages += whole.size();
        std::printf("%s: %zu windows, %zu messages of %zu records; the fold held at most %zu\n",
                    name.c_str(), plan.size(), whole.size(), records, peak);
        if (records > 10'000) {
          EXPECT_LT(peak, records / 4);
        }
      });
  EXPECT_GE(sessions, 17);
  EXPECT_GT(messages, 1000u);
  EXPECT_GT(directs, 10u);
}

// Where each rank was while others waited for its messages, with its ranges held only until no
// wait still to be matched can reach back to them, is what one window over the whole run reads,
// on every recorded session.
TEST(RangesWhileWaitedByWindow, EveryRecordedSessionGivesTheWholeRunsRanges) {
  size_t blamed = 0;
  const int sessions = ForEachRecordedSession([&](const std::string& name, const Session& s,
                                                  const WindowPlan& plan) {
    WindowPlan one;
    one.cuts.push_back({CutKind::kEnd, 0,
                        std::vector<TimeNs>(s.ranks.size(), std::numeric_limits<TimeNs>::max())});
    const WaitRanges whole = RangesWhileWaitedByWindow(s, SplitSession(s, one));
    size_t peak = 0;
    const WaitRanges windowed = RangesWhileWaitedByWindow(s, SplitSession(s, plan), &peak);
    size_t ranges = 0;
    for (const RankData& r : s.ranks) ranges += r.ranges.size();
    if (ranges > 1000) {
      EXPECT_LT(peak, ranges / 4);
    }
    for (const auto& [a, b] : {std::pair{&windowed.late_sender, &whole.late_sender},
                               std::pair{&windowed.late_receiver, &whole.late_receiver}}) {
      ASSERT_EQ(a->size(), b->size());
      for (const auto& [rank, w] : *b) {
        SCOPED_TRACE("rank " + std::to_string(rank));
        ASSERT_TRUE(a->contains(rank));
        EXPECT_EQ(a->at(rank).by_range, w.by_range);
        EXPECT_EQ(a->at(rank).windows, w.windows);
        EXPECT_EQ(a->at(rank).covered, w.covered);
        if (w.windows > 0) ++blamed;
      }
    }
    std::printf("%s: %zu late senders, %zu late receivers; at most %zu of %zu ranges held\n",
                name.c_str(), whole.late_sender.size(), whole.late_receiver.size(), peak, ranges);
  });
  EXPECT_GE(sessions, 17);
  EXPECT_GT(blamed, 0u);
}

// A pipeline of two ranks with NVTX ranges on the sender: each step it works in 'pack' and
// 'solve' and then sends; the receiver blocks in its receive early. At one step 'solve' runs past
// two cuts, and the receive that waits for it is recorded only after them: the sender's 'pack'
// of that step, over before the first cut, is still held when the wait is matched, so the windows
// read what the whole run does, holding only the ranges of a few steps at any cut.
TEST(RangesWhileWaitedByWindow, ARangeOverBeforeTheCutIsHeldForAWaitStillGoing) {
  Session s;
  s.world_size = 2;
  s.aligned = true;
  s.ranks.resize(2);
  for (int r = 0; r < 2; ++r) s.ranks[static_cast<size_t>(r)].id.rank = r;
  auto p2p = [](P2PKind kind, int peer, TimeNs enter, TimeNs exit) {
    P2PRecord p;
    p.kind = p.completed = kind;
    p.peer = p.world_peer = peer;
    p.tag = 1;
    p.comm_id = WorldCommId(2);
    p.enter = enter;
    p.exit = exit;
    return p;
  };
  std::vector<TimeNs> cuts;
  TimeNs t = 0;
  for (int k = 0; k < 20; ++k) {
    const TimeNs solve = k == 10 ? 2500 : 400;
    s.ranks[0].ranges.push_back(Range("pack", t, t + 100));
    s.ranks[0].ranges.push_back(Range("solve", t + 100, t + 100 + solve));
    const TimeNs sent = t + 100 + solve;
    s.ranks[0].p2p.push_back(p2p(P2PKind::kSend, 1, sent, sent + 10));
    if (k == 10) {
      // A small message the other way, before the receive: at the first cut the sender's own
      // progress is past 'pack', the receiver's is not.
      P2PRecord note = p2p(P2PKind::kSend, 0, t + 40, t + 45);
      note.tag = 2;
      s.ranks[1].p2p.push_back(note);
      note = p2p(P2PKind::kRecv, 1, t + 150, t + 160);
      note.tag = 2;
      s.ranks[0].p2p.push_back(note);
      cuts.push_back(t + 300);
      cuts.push_back(t + 1500);
    } else if (k % 4 == 0) {
      cuts.push_back(sent + 500);
    }
    s.ranks[1].p2p.push_back(p2p(P2PKind::kRecv, 0, t + 50, sent + 20));
    t = sent + 600;
  }
  WindowPlan plan;
  for (TimeNs c : cuts) plan.cuts.push_back({CutKind::kTime, 0, {c, c}});
  plan.cuts.push_back(
      {CutKind::kEnd, 0, {std::numeric_limits<TimeNs>::max(), std::numeric_limits<TimeNs>::max()}});
  WindowPlan one;
  one.cuts.push_back(plan.cuts.back());
  const WaitRanges whole = RangesWhileWaitedByWindow(s, SplitSession(s, one));
  size_t peak = 0;
  const WaitRanges windowed = RangesWhileWaitedByWindow(s, SplitSession(s, plan), &peak);
  EXPECT_LE(peak, 12u);  // of 40
  ASSERT_TRUE(whole.late_sender.contains(0));
  const WhileWaited& w = whole.late_sender.at(0);
  EXPECT_GT(w.by_range.at("pack"), 0);
  EXPECT_GT(w.by_range.at("solve"), 0);
  ASSERT_TRUE(windowed.late_sender.contains(0));
  EXPECT_EQ(windowed.late_sender.at(0).by_range, w.by_range);

  EXPECT_EQ(windowed.late_sender.at(0).windows, w.windows);
  EXPECT_EQ(windowed.late_sender.at(0).covered, w.covered);
}

// An instance of a sub-communicator whose members' calls fall in different windows stays open
// until the last one comes, and then matches whole.
TEST(CollectiveFold, AnInstanceAcrossACutStaysOpenUntilItsLastMember) {
  CollectiveRecord call;
  call.comm_id = 3;
  call.seq = 0;
  call.op = CollectiveOp::kAllreduce;
  call.comm_size = 2;
  call.enter = 100;
  call.exit = 200;
  CollectiveFold fold;
  fold.Add(0, call);
  EXPECT_TRUE(fold.TakeFull().empty());
  EXPECT_EQ(fold.open(), 1u);
  call.comm_rank = 1;
  call.enter = 150;
  fold.Add(4, call);
  const std::vector<CollectiveInstance> full = fold.TakeFull();
  ASSERT_EQ(full.size(), 1u);
  EXPECT_TRUE(full[0].complete);
  EXPECT_EQ(full[0].members[1].rank, 4);
  EXPECT_EQ(fold.open(), 0u);
  // One that never completes comes out at the end, incomplete.
  call.seq = 1;
  fold.Add(0, call);
  const std::vector<CollectiveInstance> rest = fold.Finish();
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_FALSE(rest[0].complete);
}

// Own work per range read window by window, where the windows are cut by time inside an own-work
// interval: a range over before the cut ('a') is held for the interval that ends after it, and a
// range open across three cuts ('outer') is read cut short at each, whole once it ends.
TEST(OwnWorkRangesByWindow, AnIntervalAcrossCutsReadsTheRangesOfBothSides) {
  Session s = OneRank();
  auto call = [](TimeNs enter, TimeNs exit) {
    MpiCallRecord c;
    c.enter = enter;
    c.exit = exit;
    return c;
  };
  s.ranks[0].mpi_calls = {call(0, 10), call(1000, 1010), call(3000, 3010)};
  s.ranks[0].ranges = {Range("outer", 5, 2995, 0), Range("a", 20, 400, 1), Range("b", 600, 990, 1),
                       Range("c", 1100, 1500, 1), Range("d", 1600, 2990, 1)};
  const WindowPlan plan = TimeCuts({500, 1550, 2000});
  size_t peak = 0;
  const std::vector<OwnWorkRanges> windowed =
      OwnWorkRangesByWindow(s, 0, SplitSession(s, plan), &peak);
  ASSERT_EQ(windowed.size(), 1u);
  EXPECT_TRUE(windowed[0].has_ranges);
  const std::map<std::string, DurationNs> expected = {{"", 5},    {"a", 380},  {"b", 390},
                                                      {"c", 400}, {"d", 1390}, {"outer", 415}};
  EXPECT_EQ(windowed[0].by_range, expected);
  EXPECT_LE(peak, 1u);
  EXPECT_EQ(OwnWorkRangesByWindow(s, 0, SplitSession(s, WholeRun(plan)))[0].by_range, expected);
}

// A rank that makes MPI calls (its bootstrap) and then NCCL collectives: its chain is its GPU's,
// NCCL's alone, from the start (OnGpuTimeline), so the own work read between its host calls in the
// windows before the first NCCL one is not its own work; read window by window, it is dropped
// when the first NCCL collective comes.
TEST(OwnWorkRangesByWindow, HostCallsBeforeTheFirstNcclCollectiveAreNotItsChain) {
  Session s = OneRank();
  auto collective = [](CollectiveRecord::Source source, uint64_t seq, TimeNs enter, TimeNs exit) {
    CollectiveRecord c;
    c.source = source;
    c.comm_id = 1;
    c.seq = seq;
    c.comm_size = 1;
    c.enter = enter;
    c.exit = exit;
    return c;
  };
  using Source = CollectiveRecord::Source;
  s.ranks[0].collectives = {
      collective(Source::kMpi, 0, 0, 10), collective(Source::kMpi, 1, 200, 210),
      collective(Source::kNccl, 0, 1000, 1100), collective(Source::kNccl, 1, 1500, 1600)};
  s.ranks[0].ranges = {Range("setup", 20, 190), Range("step", 1110, 1490)};
  const WindowPlan plan = TimeCuts({500, 1300});
  const std::vector<OwnWorkRanges> windowed = OwnWorkRangesByWindow(s, 0, SplitSession(s, plan));
  const std::map<std::string, DurationNs> expected = {{"", 20}, {"step", 380}};
  ASSERT_EQ(windowed.size(), 1u);
  EXPECT_EQ(windowed[0].by_range, expected);
  EXPECT_EQ(OwnWorkRangesByWindow(s, 0, SplitSession(s, WholeRun(plan)))[0].by_range, expected);
}

// A rank with step ranges and kernel launches but no data ranges: its loading is the time from
// each step's beginning (the last step's end) to its first launch. The windows are cut inside every
// step after that launch, so the launch is held across the cut for the step that ends after it.
TEST(StepSeriesByWindow, AStepsFirstLaunchBeforeTheCutIsHeldUntilTheStepEnds) {
  Session s = OneRank();
  RankData& rank = s.ranks[0];
  WindowPlan plan;
  std::vector<DurationNs> expected;
  for (TimeNs k = 0; k < 10; ++k) {
    const TimeNs t = k * 1000;
    RangeRecord step;
    step.name = "step";
    step.start = t;
    step.end = t + 900;
    rank.ranges.push_back(step);
    GpuActivityRecord launch;
    launch.kind = GpuActivityKind::kRuntime;
    launch.name = "cudaLaunchKernel";
    launch.start = t + 100 + 10 * k;
    launch.end = launch.start + 5;
    rank.gpu.push_back(launch);
    GpuActivityRecord kernel;
    kernel.kind = GpuActivityKind::kKernel;
    kernel.name = "gemm";
    kernel.start = launch.start + 50;
    kernel.end = kernel.start + 250;
    rank.gpu.push_back(kernel);
    expected.push_back(k == 0 ? 100 : 200 + 10 * k);  // a step's time begins at the last's end
    plan.cuts.push_back({CutKind::kTime, 0, {t + 300}});
  }
  plan.cuts.push_back({CutKind::kEnd, 0, {std::numeric_limits<TimeNs>::max()}});
  const DataloaderOptions options;
  size_t peak = 0;
  const std::vector<StepSeries> windowed =
      StepSeriesByWindow(s, SplitSession(s, plan), options, &peak);
  ASSERT_EQ(windowed.size(), 1u);
  EXPECT_TRUE(windowed[0].from_first_kernel);
  EXPECT_EQ(windowed[0].data, expected);
  EXPECT_EQ(windowed[0], StepSeriesOf(s, options)[0]);
  EXPECT_LE(peak, 3u);  // the open step's launch and kernel; the step itself arrives whole
}

// Two ranks in all-reduces, rank 0 late at one of them; rank 1 entered that call before a time
// cut and left it after, and its loader thread worked across the call's enter. Rank 1's gap
// before the call (the others' side of rank 0's share) is read in the window after the cut: its
// time since the last exit, carried to the cut, less the part after the call's enter, which needs
// the loader range that ended before the cut, held across it.
TEST(GapsBeforeLateCallsByWindow, ACallInProgressAtACutReadsBackToItsEnter) {
  Session s;
  s.world_size = 2;
  s.aligned = true;
  s.ranks.resize(2);
  auto call = [](int rank, uint64_t seq, TimeNs enter, TimeNs exit) {
    CollectiveRecord c;
    c.comm_id = WorldCommId(2);
    c.seq = seq;
    c.op = CollectiveOp::kAllreduce;
    c.comm_size = 2;
    c.comm_rank = rank;
    c.enter = enter;
    c.exit = exit;
    c.tid = 1;
    return c;
  };
  for (int r = 0; r < 2; ++r) s.ranks[static_cast<size_t>(r)].id.rank = r;
  for (uint64_t k = 0; k < 10; ++k) {
    const TimeNs t = static_cast<TimeNs>(k) * 1000 * kMs;
    const bool late = k == 5;
    const TimeNs done = t + (late ? 530 : 510) * kMs;
    s.ranks[0].collectives.push_back(call(0, k, t + (late ? 525 : 500) * kMs, done));
    s.ranks[1].collectives.push_back(call(1, k, t + 480 * kMs, done));
  }
  RangeRecord loader;
  loader.name = "loader";
  loader.start = 5430 * kMs;
  loader.end = 5490 * kMs;
  loader.tid = 2;
  s.ranks[1].ranges.push_back(loader);
  WindowPlan plan;
  for (TimeNs c : {2000, 5500, 8000}) plan.cuts.push_back({CutKind::kTime, 0, {c * kMs, c * kMs}});
  const TimeNs never = std::numeric_limits<TimeNs>::max();
  plan.cuts.push_back({CutKind::kEnd, 0, {never, never}});
  WindowPlan one;
  one.cuts.push_back(plan.cuts.back());
  const StragglerOptions options;
  const LateGaps whole = GapsBeforeLateCallsByWindow(s, SplitSession(s, one), options);
  EXPECT_EQ(whole, GapsBeforeLateCalls(s, MatchCollectives(s), options));
  const auto key = CallKey{WorldCommId(2), 5, 0};
  ASSERT_TRUE(whole.contains(key));
  // Rank 1's gap: from its exit at 4510 to its enter at 5480, 50 ms of it in 'loader'.
  const std::vector<NamedGap>& ranges = whole.at(key).by_range;
  const auto in_loader = std::find_if(ranges.begin(), ranges.end(),
                                      [](const NamedGap& n) { return n.name == "loader"; });
  ASSERT_NE(in_loader, ranges.end());
  EXPECT_EQ(in_loader->others, 50.0 * kMs);
  size_t peak = 0;
  const LateGaps windowed = GapsBeforeLateCallsByWindow(s, SplitSession(s, plan), options, &peak);
  ASSERT_TRUE(windowed.contains(key));
  EXPECT_TRUE(windowed.at(key) == whole.at(key));
  EXPECT_EQ(windowed, whole);
  EXPECT_EQ(peak, 1u);  // the loader range, held across the cut inside the call
}

}  // namespace
}  // namespace rankscope

namespace rankscope {
namespace {

// Window w's uploads from a stored session and from the loaded one, field by field.
void ExpectSameUploads(const std::vector<RankUpload>& want, const std::vector<RankUpload>& got,
                       size_t w) {
  ASSERT_EQ(want.size(), got.size()) << "window " << w;
  for (size_t r = 0; r < want.size(); ++r) {
    SCOPED_TRACE("window " + std::to_string(w) + " rank index " + std::to_string(r));
    const RankUpload& a = want[r];
    const RankUpload& b = got[r];
    EXPECT_EQ(a.cut, b.cut);
    EXPECT_EQ(a.records.id.rank, b.records.id.rank);
    EXPECT_TRUE(a.records.collectives == b.records.collectives);
    EXPECT_TRUE(a.records.p2p == b.records.p2p);
    EXPECT_TRUE(a.records.mpi_calls == b.records.mpi_calls);
    EXPECT_TRUE(a.records.ranges == b.records.ranges);
    EXPECT_TRUE(a.records.gpu == b.records.gpu);
    EXPECT_EQ(a.index.collectives, b.index.collectives);
    EXPECT_EQ(a.index.p2p, b.index.p2p);
    EXPECT_EQ(a.index.mpi_calls, b.index.mpi_calls);
    EXPECT_EQ(a.index.ranges, b.index.ranges);
    EXPECT_EQ(a.index.gpu, b.index.gpu);
    EXPECT_EQ(a.index.open_ranges, b.index.open_ranges);
    EXPECT_EQ(a.index.open_collectives, b.index.open_collectives);
    EXPECT_EQ(a.index.open_p2p, b.index.open_p2p);
    EXPECT_TRUE(a.open_ranges == b.open_ranges);
    EXPECT_TRUE(a.open_collectives == b.open_collectives);
    EXPECT_TRUE(a.open_p2p == b.open_p2p);
  }
}

void ExpectSamePlan(const WindowPlan& want, const WindowPlan& got) {
  EXPECT_EQ(want.has_world, got.has_world);
  EXPECT_EQ(want.world_comm, got.world_comm);
  EXPECT_EQ(want.every, got.every);
  ASSERT_EQ(want.size(), got.size());
  for (size_t w = 0; w < want.size(); ++w) {
    EXPECT_EQ(want.cuts[w].kind, got.cuts[w].kind) << "cut " << w;
    EXPECT_EQ(want.cuts[w].seq, got.cuts[w].seq) << "cut " << w;
    EXPECT_EQ(want.cuts[w].at, got.cuts[w].at) << "cut " << w;
  }
}

// Reads `path` window by window and checks each against the loaded session `loaded` (as the
// reader must give it: `expected`, in coordinator time). The most records open across a cut.
size_t ExpectStoredLikeLoaded(const std::string& path, const Session& loaded,
                              const Session& expected, const WindowOptions& options) {
  Result<std::unique_ptr<StoredWindows>> stored = StoredWindows::Open(path, loaded);
  EXPECT_TRUE(stored.ok()) << stored.status().message();
  if (!stored.ok()) return 0;
  const WindowPlan want = PlanWindows(expected, options);
  Result<WindowPlan> plan = stored.value()->Plan(options);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  if (!plan.ok()) return 0;
  ExpectSamePlan(want, plan.value());
  const WindowSplit split = SplitSession(expected, want);
  for (size_t w = 0; w < want.size(); ++w) {
    Result<std::vector<RankUpload>> got = stored.value()->Next(want);
    EXPECT_TRUE(got.ok()) << got.status().message();
    if (!got.ok()) return 0;
    ExpectSameUploads(UploadsOf(expected, split, w), got.value(), w);
  }
  EXPECT_FALSE(stored.value()->Next(want).ok());  // no window after the last

  // What the writers read of every record, and the trace's events, from the file.
  Result<RecordFacts> facts = stored.value()->Facts();
  EXPECT_TRUE(facts.ok()) << facts.status().message();
  if (!facts.ok()) return 0;
  const RecordFacts loaded_facts = GatherRecordFacts(expected);
  EXPECT_EQ(facts->ranks.size(), loaded_facts.ranks.size());
  for (size_t r = 0; r < std::min(facts->ranks.size(), loaded_facts.ranks.size()); ++r) {
    const RankRecordFacts& a = loaded_facts.ranks[r];
    const RankRecordFacts& b = facts->ranks[r];
    EXPECT_EQ(std::tie(a.collectives, a.p2p, a.mpi_calls, a.ranges, a.marks, a.gpu),
              std::tie(b.collectives, b.p2p, b.mpi_calls, b.ranges, b.marks, b.gpu))
        << "rank index " << r;
    EXPECT_EQ(a.range_time, b.range_time) << "rank index " << r;
    EXPECT_EQ(a.steps, b.steps) << "rank index " << r;
  }
  std::vector<std::pair<TimeNs, TimeNs>> want_events, got_events;
  EventsOf(expected)([&](TimeNs a, TimeNs b) { want_events.emplace_back(a, b); });
  EXPECT_TRUE(stored.value()
                  ->ForEachEvent([&](TimeNs a, TimeNs b) { got_events.emplace_back(a, b); })
                  .ok());
  std::sort(want_events.begin(), want_events.end());
  std::sort(got_events.begin(), got_events.end());
  EXPECT_TRUE(want_events == got_events);
  // The trace's window chosen from them, with a budget of a third of the events.
  const SessionMatches matches = MatchSession(expected);
  const size_t budget = want_events.size() / 3;
  const std::optional<TraceWindow> a = ChooseTraceWindow(expected, matches, budget);
  const std::optional<TraceWindow> b = ChooseTraceWindow(
      expected, matches, budget, facts.value(),
      [&](const TraceEventFn& fn) { EXPECT_TRUE(stored.value()->ForEachEvent(fn).ok()); });
  EXPECT_EQ(a.has_value(), b.has_value());
  if (a && b) {
    EXPECT_EQ(std::tie(a->start, a->end, a->events_total, a->events_kept, a->steps_total),
              std::tie(b->start, b->end, b->events_total, b->events_kept, b->steps_total));
    EXPECT_EQ(a->worst_step, b->worst_step);
    EXPECT_EQ(a->steps.size(), b->steps.size());
    for (size_t k = 0; k < std::min(a->steps.size(), b->steps.size()); ++k) {
      EXPECT_EQ(std::tie(a->steps[k].index, a->steps[k].start, a->steps[k].end),
                std::tie(b->steps[k].index, b->steps[k].start, b->steps[k].end));
    }
  }
  return stored.value()->peak_open();
}

// Every recorded session read from its session.sqlite window by window (windows of about
// 100 ms) gives the plan and the uploads the loaded session gives, holding only what is open
// across a cut.
TEST(StoredWindows, EveryRecordedSessionReadsLikeTheLoadedOne) {
  int sessions = 0;
  size_t most_open = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(RANKSCOPE_FIXTURES_DIR)) {
    if (entry.path().extension() != ".sqlite") continue;
    SCOPED_TRACE(entry.path().string());
    Result<Session> s = LoadSession(entry.path().string());
    ASSERT_TRUE(s.ok()) << s.status().message();
    most_open =
        std::max(most_open, ExpectStoredLikeLoaded(entry.path().string(), s.value(), s.value(),
                                                   {.target = 100 * kMs, .max_window = 400 * kMs}));
    ++sessions;
  }
  EXPECT_GE(sessions, 18);
  EXPECT_LT(most_open, 64u);
}

// A file in each rank's own clock (as the coordinator would spill it during a run): records
// are moved to coordinator time as they are read, with the models the caller gives, and the
// windows are those of the aligned session.
// A recorded two-rank session as if in each rank's own clock (offsets of seconds, drifts of tens
// of ppm), as the coordinator spills records during a run.
Session InTheRanksClocks() {
  Session local = Recorded("hpcc-freeze-r0");
  EXPECT_EQ(local.ranks.size(), 2u);
  local.aligned = false;
  local.ranks[0].clock = {.ref_local = local.start, .offset_ns = 3'700'000'123, .drift_ppm = 41.5};
  local.ranks[1].clock = {.ref_local = local.start, .offset_ns = -2'100'000'777, .drift_ppm = -17};
  return local;
}

// `local` with its records moved to coordinator time by each rank's clock.
Session AlignedCopy(const Session& local) {
  Session aligned = local;
  for (RankData& r : aligned.ranks) {
    for (auto& c : r.collectives) ToCoordinator(r.clock, &c);
    for (auto& p : r.p2p) ToCoordinator(r.clock, &p);
    for (auto& m : r.mpi_calls) ToCoordinator(r.clock, &m);
    for (auto& g : r.ranges) ToCoordinator(r.clock, &g);
    for (auto& g : r.gpu) ToCoordinator(r.clock, &g);
  }
  aligned.aligned = true;
  return aligned;
}

TEST(StoredWindows, AFileInTheRanksClocksIsAlignedAsItIsRead) {
  const Session local = InTheRanksClocks();
  const std::string path = ::testing::TempDir() + "/stored_windows_local.sqlite";
  ASSERT_TRUE(SaveSession(path, local, {}).ok());
  const Session aligned = AlignedCopy(local);
  ExpectStoredLikeLoaded(path, local, aligned, {.target = 100 * kMs, .max_window = 400 * kMs});
  std::remove(path.c_str());
}

// Hold keeps every record that overlaps a span, however long it lasts, as reading every row
// would: a call that began long before the span (here a point-to-point call made to last 3 s)
// and a garbage row that ends before it starts (its start in the span), in a file in the
// ranks' own clocks.
TEST(StoredWindows, HoldKeepsWhatOverlapsTheSpansWhereverItEnds) {
  Session local = InTheRanksClocks();
  std::vector<P2PRecord>& p2p = local.ranks[0].p2p;
  ASSERT_GT(p2p.size(), 100u);
  const size_t mid = p2p.size() / 2;
  p2p[mid / 2].exit = p2p[mid / 2].enter + 3 * kNsPerSec;  // long: ends after the spans
  p2p[mid + 7].exit = p2p[mid + 7].enter - 2 * kNsPerSec;  // garbage: ends before it starts
  const std::string path = ::testing::TempDir() + "/stored_windows_hold.sqlite";
  ASSERT_TRUE(SaveSession(path, local, {}).ok());
  const Session aligned = AlignedCopy(local);
  const P2PRecord& garbage = aligned.ranks[0].p2p[mid + 7];
  const P2PRecord& long_call = aligned.ranks[0].p2p[mid / 2];
  const StoredWindows::Spans spans = {
      {garbage.enter - 1000, garbage.enter + 1000},
      {long_call.enter + kNsPerSec, long_call.enter + kNsPerSec + 5000}};
  Result<std::unique_ptr<StoredWindows>> stored = StoredWindows::Open(path, local);
  ASSERT_TRUE(stored.ok()) << stored.status().message();
  Session held = local;
  std::vector<std::vector<size_t>> p2p_index;
  ASSERT_TRUE(stored.value()->Hold(spans, &held, &p2p_index).ok());
  auto overlaps = [&](TimeNs start, TimeNs end) {
    for (const auto& [a, b] : spans) {
      if (start <= b && std::max(start, end) >= a) return true;
    }
    return false;
  };
  for (size_t r = 0; r < aligned.ranks.size(); ++r) {
    std::vector<size_t> want;
    for (size_t i = 0; i < aligned.ranks[r].p2p.size(); ++i) {
      const P2PRecord& p = aligned.ranks[r].p2p[i];
      if (overlaps(p.enter, p.exit)) want.push_back(i);
    }
    EXPECT_EQ(p2p_index[r], want) << "rank index " << r;
    size_t ranges = 0;
    for (const RangeRecord& g : aligned.ranks[r].ranges) ranges += overlaps(g.start, g.end) ? 1 : 0;
    EXPECT_EQ(held.ranks[r].ranges.size(), ranges) << "rank index " << r;
  }
  const std::vector<size_t>& rank0 = p2p_index[0];
  EXPECT_TRUE(std::count(rank0.begin(), rank0.end(), mid + 7) == 1);
  EXPECT_TRUE(std::count(rank0.begin(), rank0.end(), mid / 2) == 1);
  std::remove(path.c_str());
}

TEST(StoredWindows, AFileThatIsNoSessionIsAnErrorNamingIt) {
  const std::string path = ::testing::TempDir() + "/stored_windows_garbage.sqlite";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("not a database", f);
    std::fclose(f);
  }
  Result<std::unique_ptr<StoredWindows>> stored = StoredWindows::Open(path, OneRank());
  ASSERT_FALSE(stored.ok());
  EXPECT_NE(stored.status().message().find(path), std::string::npos) << stored.status().message();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace rankscope

namespace rankscope {
namespace {

// A session loaded without its MPI records and saved with them copied from its file is the
// session saved whole: every record, in each rank's order.
TEST(SaveSession, RecordsCopiedFromTheFileAreTheLoadedOnes) {
  const std::string from =
      std::string(RANKSCOPE_FIXTURES_DIR) + "/cpu2-real-apps/hpcc-freeze-r0/session.sqlite";
  const std::string path = ::testing::TempDir() + "/copied_records.sqlite";
  Result<Session> bare = LoadSession(from, {.mpi_records = false});
  ASSERT_TRUE(bare.ok()) << bare.status().message();
  for (const RankData& r : bare->ranks) {
    EXPECT_TRUE(r.collectives.empty() && r.p2p.empty() && r.ranges.empty());
  }
  ASSERT_TRUE(SaveSession(path, bare.value(), {}, {.records_from = from}).ok());
  Result<Session> want = LoadSession(from);
  Result<Session> got = LoadSession(path);
  ASSERT_TRUE(want.ok() && got.ok());
  ASSERT_EQ(want->ranks.size(), got->ranks.size());
  for (size_t r = 0; r < want->ranks.size(); ++r) {
    const RankData& a = want->ranks[r];
    const RankData& b = got->ranks[r];
    EXPECT_GT(a.collectives.size() + a.p2p.size(), 0u);
    EXPECT_TRUE(a.collectives == b.collectives) << r;
    EXPECT_TRUE(a.p2p == b.p2p) << r;
    EXPECT_TRUE(a.mpi_calls == b.mpi_calls) << r;
    EXPECT_TRUE(a.ranges == b.ranges) << r;
    EXPECT_TRUE(a.gpu == b.gpu) << r;
    EXPECT_EQ(a.clock_samples.size(), b.clock_samples.size()) << r;
  }
  // A file of another schema version is refused, not half copied.
  const std::string old =
      std::string(RANKSCOPE_FIXTURES_DIR) + "/h200x2-torchrun-sessions/clean.sqlite";
  Status refused = SaveSession(path, bare.value(), {}, {.records_from = old});
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find(old), std::string::npos) << refused.message();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace rankscope

namespace rankscope {
namespace {

// A record of no rank in the file is corruption, named as LoadSession names it, before any
// window is read.
TEST(StoredWindows, ARowOfNoRankIsCorruptionNamingTheFile) {
  const std::string path = ::testing::TempDir() + "/stored_windows_orphan.sqlite";
  Session s = Recorded("mpi_train-clean");
  ASSERT_FALSE(s.ranks.empty());
  ASSERT_TRUE(SaveSession(path, s, {}).ok());
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "UPDATE ranges SET rank_idx = 7 WHERE rowid = 3", nullptr, nullptr,
                           nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  Result<std::unique_ptr<StoredWindows>> stored = StoredWindows::Open(path, s);
  ASSERT_FALSE(stored.ok());
  EXPECT_NE(stored.status().message().find(path), std::string::npos);
  EXPECT_NE(stored.status().message().find("ranges row names rank_idx 7"), std::string::npos)
      << stored.status().message();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace rankscope
