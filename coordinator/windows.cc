#include "coordinator/windows.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "core/comm_id.h"

namespace rankscope {

size_t WindowPlan::WindowOf(size_t rank_index, TimeNs end) const {
  if (cuts.empty()) return 0;
  // The first cut at or after `end` on this rank; the last (kEnd) when none is.
  const auto it = std::partition_point(cuts.begin(), cuts.end() - 1,
                                       [&](const WindowCut& c) { return c.at[rank_index] < end; });
  return static_cast<size_t>(it - cuts.begin());
}

namespace {

constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();

// The world communicator of a session and its anchor instances' exits, per rank index.
struct Anchors {
  uint64_t comm = 0;
  WorldAnchors stats;
  std::map<uint64_t, std::vector<std::optional<TimeNs>>> exits;  // per sequence number
};

std::optional<Anchors> FindAnchors(const Session& s) {
  const auto world = static_cast<size_t>(WorldSize(s));
  std::map<uint64_t, std::set<size_t>> callers;
  std::map<uint64_t, CommUse> uses;
  size_t ranks_with_collectives = 0;
  for (size_t i = 0; i < s.ranks.size(); ++i) {
    const auto& calls = s.ranks[i].collectives;
    if (!calls.empty()) ++ranks_with_collectives;
    for (const CollectiveRecord& c : calls) {
      if (c.comm_size != static_cast<int32_t>(world) || world < 2) continue;
      callers[c.comm_id].insert(i);
      if (AnchorsWindows(c.op, c.nonblocking)) ++uses[c.comm_id].anchors;
    }
  }
  for (auto& [comm, use] : uses) use.ranks = callers[comm].size();
  const std::optional<uint64_t> best = ChooseWorldComm(uses, ranks_with_collectives);
  if (!best) return std::nullopt;
  Anchors out;
  out.comm = *best;
  for (size_t i = 0; i < s.ranks.size(); ++i) {
    for (const CollectiveRecord& c : s.ranks[i].collectives) {
      if (c.comm_id != out.comm) continue;
      out.stats.last_seq = std::max(out.stats.last_seq, c.seq);
      out.stats.first = std::min(out.stats.first, c.enter);
      out.stats.last = std::max(out.stats.last, c.exit);
      if (!AnchorsWindows(c.op, c.nonblocking)) continue;
      auto& exits = out.exits[c.seq];
      exits.resize(s.ranks.size());
      exits[i] = c.exit;
    }
  }
  return out;
}

// The earliest start and latest end of any record of the session (0, 0 without records).
std::pair<TimeNs, TimeNs> RecordSpan(const Session& s) {
  TimeNs first = kNever, last = 0;
  auto see = [&](TimeNs a, TimeNs b) {
    first = std::min(first, a);
    last = std::max(last, b);
  };
  for (const RankData& r : s.ranks) {
    for (const auto& c : r.collectives) see(c.enter, c.exit);
    for (const auto& p : r.p2p) see(p.enter, p.exit);
    for (const auto& m : r.mpi_calls) see(m.enter, m.exit);
    for (const auto& g : r.ranges) see(g.start, g.end);
    for (const auto& g : r.gpu) see(g.start, g.end);
  }
  return first == kNever ? std::pair<TimeNs, TimeNs>{0, 0} : std::pair{first, last};
}

// Time cuts every `target` in each gap between consecutive cuts (the run's start and end
// included) longer than max_window: from the gap's latest rank to its earliest.
std::vector<WindowCut> FillGaps(std::vector<WindowCut> cuts, TimeNs start, TimeNs end,
                                size_t nranks, const WindowOptions& options) {
  std::vector<WindowCut> out;
  TimeNs from = start;
  auto fill = [&](TimeNs to) {
    if (to - from <= options.max_window) return;
    for (TimeNs t = from + options.target; t < to - options.target / 2; t += options.target) {
      out.push_back({CutKind::kTime, 0, std::vector<TimeNs>(nranks, t)});
    }
  };
  for (WindowCut& cut : cuts) {
    fill(*std::min_element(cut.at.begin(), cut.at.end()));
    from = *std::max_element(cut.at.begin(), cut.at.end());
    out.push_back(std::move(cut));
  }
  fill(end);
  return out;
}

}  // namespace

std::optional<uint64_t> ChooseWorldComm(const std::map<uint64_t, CommUse>& comms,
                                        size_t ranks_with_collectives) {
  std::optional<uint64_t> best;
  size_t best_anchors = 0;
  for (const auto& [comm, use] : comms) {
    if (use.anchors == 0 || use.ranks != ranks_with_collectives) continue;
    if (!best || use.anchors > best_anchors) {
      best = comm;
      best_anchors = use.anchors;
    }
  }
  return best;
}

PlanBuilder::PlanBuilder(size_t nranks, const WindowOptions& options)
    : nranks_(nranks), options_(options), previous_(nranks, std::numeric_limits<TimeNs>::min()) {}

void PlanBuilder::SetWorld(uint64_t comm, const WorldAnchors& world) {
  plan_.has_world = true;
  plan_.world_comm = comm;
  // Sequence numbers per target of run time, at the world communicator's own rate.
  const double span = static_cast<double>(std::max<TimeNs>(world.last - world.first, 1));
  const double per_target =
      static_cast<double>(world.last_seq + 1) * static_cast<double>(options_.target) / span;
  plan_.every = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(per_target)));
  rule_.emplace(plan_.every);
}

bool PlanBuilder::CutsAt(uint64_t seq) { return rule_ && rule_->CutsAt(seq); }

void PlanBuilder::AddInstanceCut(uint64_t seq, const std::vector<std::optional<TimeNs>>& exits) {
  TimeNs latest = 0;
  for (const auto& e : exits) latest = std::max(latest, e.value_or(0));
  WindowCut cut;
  cut.kind = CutKind::kInstance;
  cut.seq = seq;
  for (size_t r = 0; r < nranks_; ++r) {
    const std::optional<TimeNs> exit = r < exits.size() ? exits[r] : std::nullopt;
    cut.at.push_back(std::max(previous_[r], exit.value_or(latest)));
    previous_[r] = cut.at.back();
  }
  plan_.cuts.push_back(std::move(cut));
}

WindowPlan PlanBuilder::Finish(TimeNs start, TimeNs end) && {
  if (nranks_ > 0 && end > start) {
    plan_.cuts = FillGaps(std::move(plan_.cuts), start, end, nranks_, options_);
  }
  plan_.cuts.push_back({CutKind::kEnd, 0, std::vector<TimeNs>(nranks_, kNever)});
  return std::move(plan_);
}

WindowPlan PlanWindows(const Session& aligned, const WindowOptions& options) {
  PlanBuilder builder(aligned.ranks.size(), options);
  if (const std::optional<Anchors> anchors = FindAnchors(aligned)) {
    builder.SetWorld(anchors->comm, anchors->stats);
    for (const auto& [seq, exits] : anchors->exits) {
      if (builder.CutsAt(seq)) builder.AddInstanceCut(seq, exits);
    }
  }
  const auto [start, end] = RecordSpan(aligned);
  return std::move(builder).Finish(start, end);
}

std::vector<std::vector<RankWindow>> SplitIntoWindows(const Session& aligned,
                                                      const WindowPlan& plan) {
  std::vector<std::vector<RankWindow>> out(plan.size(),
                                           std::vector<RankWindow>(aligned.ranks.size()));
  for (size_t r = 0; r < aligned.ranks.size(); ++r) {
    const RankData& rank = aligned.ranks[r];
    // Each record to the window its time (`time_of` it) falls in.
    auto split = [&](const auto& records, auto time_of, std::vector<size_t> RankWindow::*kind) {
      for (size_t i = 0; i < records.size(); ++i) {
        (out[plan.WindowOf(r, time_of(records[i]))][r].*kind).push_back(i);
      }
    };
    auto by_exit = [](const auto& call) { return call.exit; };
    auto by_start = [](const GpuActivityRecord& g) { return g.start; };
    split(rank.collectives, by_exit, &RankWindow::collectives);
    split(rank.p2p, by_exit, &RankWindow::p2p);
    split(rank.mpi_calls, by_exit, &RankWindow::mpi_calls);
    split(rank.gpu, by_start, &RankWindow::gpu);
    // Open at every cut from the first at or after its start to the last before its end.
    auto open = [&](TimeNs start, TimeNs end, size_t i, std::vector<size_t> RankWindow::*kind) {
      for (size_t w = plan.WindowOf(r, start); w < plan.WindowOf(r, end); ++w) {
        (out[w][r].*kind).push_back(i);
      }
    };
    for (size_t i = 0; i < rank.ranges.size(); ++i) {
      const RangeRecord& range = rank.ranges[i];
      out[plan.WindowOf(r, range.end)][r].ranges.push_back(i);
      open(range.start, range.end, i, &RankWindow::open_ranges);
    }
    for (size_t i = 0; i < rank.collectives.size(); ++i) {
      open(rank.collectives[i].enter, rank.collectives[i].exit, i, &RankWindow::open_collectives);
    }
    for (size_t i = 0; i < rank.p2p.size(); ++i) {
      open(rank.p2p[i].enter, rank.p2p[i].exit, i, &RankWindow::open_p2p);
    }
  }
  return out;
}

std::vector<std::vector<WindowRecords>> CountWindowRecords(const Session& aligned,
                                                           const WindowPlan& plan) {
  std::vector<std::vector<WindowRecords>> out(plan.size(),
                                              std::vector<WindowRecords>(aligned.ranks.size()));
  const std::vector<std::vector<RankWindow>> windows = SplitIntoWindows(aligned, plan);
  for (size_t w = 0; w < windows.size(); ++w) {
    for (size_t r = 0; r < windows[w].size(); ++r) {
      const RankWindow& in = windows[w][r];
      out[w][r] = {static_cast<int>(in.collectives.size()), static_cast<int>(in.p2p.size()),
                   static_cast<int>(in.mpi_calls.size()), static_cast<int>(in.ranges.size()),
                   static_cast<int>(in.gpu.size())};
    }
  }
  return out;
}

WindowSplit SplitSession(const Session& aligned, WindowPlan plan) {
  WindowSplit out;
  out.windows = SplitIntoWindows(aligned, plan);
  out.plan = std::move(plan);
  return out;
}

std::vector<RankUpload> UploadsOf(const Session& aligned, const WindowSplit& split, size_t w) {
  std::vector<RankUpload> out(aligned.ranks.size());
  for (size_t r = 0; r < aligned.ranks.size(); ++r) {
    const RankData& rank = aligned.ranks[r];
    const RankWindow& window = split.windows[w][r];
    RankUpload& u = out[r];
    u.cut = split.plan.cuts[w].at[r];
    u.records.id = rank.id;
    u.index = window;
    auto copy = [](const auto& from, const std::vector<size_t>& indices, auto* to) {
      to->reserve(indices.size());
      for (size_t i : indices) to->push_back(from[i]);
    };
    copy(rank.collectives, window.collectives, &u.records.collectives);
    copy(rank.p2p, window.p2p, &u.records.p2p);
    copy(rank.mpi_calls, window.mpi_calls, &u.records.mpi_calls);
    copy(rank.ranges, window.ranges, &u.records.ranges);
    copy(rank.gpu, window.gpu, &u.records.gpu);
    for (size_t i : window.open_ranges)
      u.open_ranges.push_back(RangeOpenAtCut(rank.ranges[i], u.cut));
    for (size_t i : window.open_collectives) {
      u.open_collectives.push_back(CollectiveOpenAtCut(rank.collectives[i], u.cut));
    }
    for (size_t i : window.open_p2p) u.open_p2p.push_back(CallOpenAtCut(rank.p2p[i], u.cut));
    const TimeNs previous = w == 0 ? INT64_MIN : split.plan.cuts[w - 1].at[r];
    const bool last = w + 1 == split.windows.size();
    // Pieces are in order of `from`, so of `to` too (consecutive boundaries): a slice each.
    const auto& pieces = rank.kernel_pieces;
    const auto begin = std::partition_point(pieces.begin(), pieces.end(),
                                            [&](const KernelPiece& p) { return p.to <= previous; });
    const auto end =
        last ? pieces.end() : std::partition_point(begin, pieces.end(), [&](const KernelPiece& p) {
          return p.to <= u.cut;
        });
    u.kernel_pieces.assign(begin, end);
    u.kernel_pieces_exact = rank.finished && rank.kernel_pieces_late == 0;
  }
  return out;
}

RangeRecord RangeOpenAtCut(const RangeRecord& range, TimeNs cut) {
  RangeRecord out = range;
  out.end = std::min(range.end, cut);
  return out;
}

CollectiveRecord CollectiveOpenAtCut(const CollectiveRecord& call, TimeNs cut) {
  CollectiveRecord out = call;
  out.exit = cut;  // unknown until it ends
  return out;
}

P2PRecord CallOpenAtCut(const P2PRecord& call, TimeNs cut) {
  P2PRecord out = call;
  out.exit = std::min(call.exit, cut);
  return out;
}

MatchFold::MatchFold(int world_size, bool keep_messages)
    : messages_(world_size, WorldCommId(world_size)), keep_messages_(keep_messages) {}

const std::vector<P2PMessage>& MatchFold::Add(const std::vector<RankUpload>& window, bool last) {
  taken_from_ = instances_.size();
  for (const RankUpload& u : window) {
    for (const CollectiveRecord& c : u.records.collectives) {
      collectives_.Add(u.records.id.rank, c);
      messages_.AddCollective(u.records.id.rank, c);
    }
    for (size_t j = 0; j < u.records.p2p.size(); ++j) {
      messages_.Add(u.records.id.rank, u.index.p2p[j], u.records.p2p[j]);
    }
    // The rank's progress: a call not in its uploads yet began after the cut, or is in progress
    // at it, or polls for a request posted by a call in them (a Wait's polling begins after the
    // post, but may begin before the cut while its record enters after it): the earliest of the
    // cut, the open calls' enters and the latest exit of its MPI calls so far.
    std::optional<TimeNs>& latest = latest_exit_[u.records.id.rank];
    auto exited = [&](TimeNs t) { latest = std::max(latest.value_or(t), t); };
    for (const CollectiveRecord& c : u.records.collectives) {
      if (c.source == CollectiveRecord::Source::kMpi) exited(c.exit);
    }
    for (const P2PRecord& p : u.records.p2p) exited(p.exit);
    for (const MpiCallRecord& c : u.records.mpi_calls) exited(c.exit);
    TimeNs progress = std::min(u.cut, latest.value_or(u.cut));
    for (const P2PRecord& p : u.open_p2p) progress = std::min({progress, p.enter, ChainEnter(p)});
    for (const CollectiveRecord& c : u.open_collectives) progress = std::min(progress, c.enter);
    messages_.Reached(u.records.id.rank, progress);
  }
  for (CollectiveInstance& i : collectives_.TakeFull()) instances_.push_back(std::move(i));
  peak_open_ = std::max(peak_open_, collectives_.open());
  if (last) {
    for (CollectiveInstance& i : collectives_.Finish()) instances_.push_back(std::move(i));
  }
  closed_ = last ? messages_.Finish() : messages_.TakeMatched();
  if (keep_messages_) {
    matched_.insert(matched_.end(), closed_.begin(), closed_.end());
  } else {
    for (const P2PMessage& m : closed_) links_.push_back(LinkOf(m));
  }
  peak_held_ = std::max(peak_held_, messages_.held());
  return closed_;
}

SessionMatches MatchFold::Finish() {
  SessionMatches out;
  out.collectives = std::move(instances_);
  OrderInstances(&out.collectives);
  out.messages = std::move(matched_);
  OrderMessages(&out.messages);
  if (keep_messages_) {
    out.links = LinksOf(out.messages);
  } else {
    out.links = std::move(links_);
    OrderMessages(&out.links);
  }
  out.p2p = messages_.stats();
  return out;
}

std::vector<CollectiveInstance> MatchCollectivesByWindow(const Session& aligned,
                                                         const WindowSplit& split,
                                                         size_t* peak_open) {
  MatchFold fold(WorldSize(aligned));
  for (size_t w = 0; w < split.size(); ++w)
    fold.Add(UploadsOf(aligned, split, w), w + 1 == split.size());
  if (peak_open != nullptr) *peak_open = fold.peak_open_instances();
  return fold.Finish().collectives;
}

std::vector<P2PMessage> MatchMessagesByWindow(const Session& aligned, const WindowSplit& split,
                                              P2PMatchStats* stats, size_t* peak_held,
                                              const OnMessagesClose& on_close) {
  MatchFold fold(WorldSize(aligned));
  for (size_t w = 0; w < split.size(); ++w) {
    const std::vector<RankUpload> uploads = UploadsOf(aligned, split, w);
    const std::vector<P2PMessage>& matched = fold.Add(uploads, w + 1 == split.size());
    if (on_close) on_close(uploads, fold.messages(), matched);
  }
  if (peak_held != nullptr) *peak_held = fold.peak_held_messages();
  SessionMatches matches = fold.Finish();
  if (stats != nullptr) *stats = matches.p2p;
  return std::move(matches.messages);
}

int WorldSize(const Session& aligned) {
  return aligned.world_size > 0 ? aligned.world_size : static_cast<int>(aligned.ranks.size());
}

}  // namespace rankscope
