#include "coordinator/analysis/p2p_analysis.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "coordinator/analysis/describe.h"
#include "coordinator/analysis/range_timeline.h"
#include "core/format.h"
#include "core/robust_stats.h"

namespace rankscope {
namespace {

// The two wait states differ only in who waited for whom and in the words.
struct WaitState {
  FindingKind kind;
  bool blame_sender;         // late_sender: the sender is to blame; late_receiver: the receiver
  const char* late_verb;     // "sent late" / "received late"
  const char* waited_in;     // where the others waited: "receives" / "sends"
  const char* late_because;  // "it sent them late" / "it posted the receives late"
  const char* before;        // what the blamed rank does after the waiting: "sends" / "receives"
  const char* finding_name;  // for notes: "a late sender" / "a late receiver"
  int Blamed(const P2PMessage& m) const { return blame_sender ? m.sender : m.receiver; }
  int Waiting(const P2PMessage& m) const { return blame_sender ? m.receiver : m.sender; }
  DurationNs Wait(const P2PMessage& m) const { return blame_sender ? m.wait : m.send_wait; }
  DurationNs Direct(const P2PMessage& m) const { return blame_sender ? m.direct : m.send_direct; }
  TimeNs WaitStart(const P2PMessage& m) const { return blame_sender ? m.blocked : m.send_blocked; }
};

constexpr WaitState kLateSender{.kind = FindingKind::kLateSender,
                                .blame_sender = true,
                                .late_verb = "sent late",
                                .waited_in = "receives",
                                .late_because = "it sent them late",
                                .before = "sends",
                                .finding_name = "a late sender"};
constexpr WaitState kLateReceiver{.kind = FindingKind::kLateReceiver,
                                  .blame_sender = false,
                                  .late_verb = "received late",
                                  .waited_in = "sends",
                                  .late_because = "it posted the receives late",
                                  .before = "receives",
                                  .finding_name = "a late receiver"};

// Adds one message to the tally of the rank `state` blames for it.
void Tally(const P2PMessage& m, const WaitState& state, DurationNs min_median_wait,
           std::map<int, BlamedTally>* tallies) {
  BlamedTally& b = (*tallies)[state.Blamed(m)];
  ++b.matched;
  const DurationNs direct = state.Direct(m);
  if (direct >= min_median_wait) {
    ++b.directs_above[direct];
  } else {
    b.largest_below = b.directs_below == 0 ? direct : std::max(b.largest_below, direct);
    ++b.directs_below;
  }
  b.wait += state.Wait(m);
  if (direct <= 0) return;
  ++b.late;
  b.others.insert(state.Waiting(m));
  b.direct += direct;
  ++b.late_bytes[m.bytes];
}

// The median of the rank's direct delays over all its messages where it is at least the
// threshold the tally kept them by; a delay below it otherwise.
DurationNs MedianDirect(const BlamedTally& s) {
  const std::optional<double> median =
      MedianOfCounts(s.directs_above, s.directs_below, s.largest_below);
  return median ? static_cast<DurationNs>(std::llround(*median)) : s.largest_below;
}

std::string RankList(const std::set<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  bool first = true;
  for (int r : ranks) {
    out += (first ? "" : ", ") + std::to_string(r);
    first = false;
  }
  return out;
}

// Adds where the blamed rank (its ranges in `timeline`) was while the other rank of `m` waited.
void AddWhileWaited(const RangeTimeline& timeline, const P2PMessage& m, const WaitState& state,
                    WhileWaited* out) {
  const TimeNs from = state.WaitStart(m);
  const WindowTime t = timeline.TimeIn(from, from + state.Wait(m), std::nullopt);
  for (const auto& [name, ns] : t.by_range) out->by_range[name] += ns;
  out->windows += t.window;
  out->covered += t.covered;
}

// Where the blamed rank was while the others waited for the messages it is blamed for.
WhileWaited RangesWhileWaited(const RankData& data, const std::vector<P2PMessage>& messages,
                              const WaitState& state) {
  const RangeTimeline timeline(&data.ranges);
  WhileWaited out;
  for (const P2PMessage& m : messages) {
    if (state.Blamed(m) == data.id.rank && state.Direct(m) > 0) {
      AddWhileWaited(timeline, m, state, &out);
    }
  }
  return out;
}

// The ranges by their time in the waits, most first.
std::vector<std::pair<DurationNs, std::string>> Ranked(const WhileWaited& w) {
  std::vector<std::pair<DurationNs, std::string>> ranked;
  for (const auto& [name, ns] : w.by_range) ranked.emplace_back(ns, name);
  std::sort(ranked.rbegin(), ranked.rend());
  return ranked;
}

Bytes MedianBytes(const BlamedTally& s) {
  return static_cast<Bytes>(MedianOfCounts(s.late_bytes).value_or(0.0));
}

WaitStateFigures WaitStateEvidence(const BlamedTally& s, const WhileWaited& w, DurationNs median,
                                   double cost_fraction, DurationNs span,
                                   DurationNs clock_uncertainty, const P2PMatchStats& stats) {
  WaitStateFigures e;
  e.late_messages = s.late;
  e.matched = s.matched;
  e.others.assign(s.others.begin(), s.others.end());
  e.median_direct_wait = median;  // over all its matched messages
  e.direct_wait = s.direct;
  e.propagated_wait = s.wait - s.direct;
  e.cost_fraction = cost_fraction;
  e.p2p_span = span;
  e.clock_uncertainty = clock_uncertainty;
  e.matched_messages = stats.matched;
  e.unmapped_records = stats.unmapped;
  e.median_message_bytes = MedianBytes(s);
  const auto ranked = Ranked(w);
  for (size_t i = 0; i < ranked.size() && i < 3; ++i) {
    e.ranges.emplace_back(ranked[i].second, ranked[i].first);
  }
  e.untracked = w.windows - w.covered;
  return e;
}

// The finding's summary, and what to look for next.
std::pair<std::string, std::string> WaitStateProse(const Session& aligned, int rank,
                                                   const BlamedTally& s, const WaitState& state,
                                                   const WhileWaited& w, DurationNs median) {
  std::string summary =
      RankLabel(aligned, rank) + " " + state.late_verb + ": " + RankList(s.others) + " waited in " +
      state.waited_in + " for " + std::to_string(s.late) + " of " + "its " +
      std::to_string(s.matched) + " messages because " + state.late_because + ", median " +
      FormatDuration(median) + " per message, " + FormatDuration(s.direct) + " in all.";
  std::string look_for;
  const std::string who = "rank " + std::to_string(rank);
  const auto ranked = Ranked(w);
  if (!ranked.empty() && w.windows > 0 &&
      2 * ranked.front().first >= std::max<DurationNs>(w.windows - w.covered, 1)) {
    const double share = static_cast<double>(ranked.front().first) / static_cast<double>(w.windows);
    summary += " While they waited it was in NVTX range '" + ranked.front().second + "' (" +
               std::to_string(static_cast<int>(std::lround(100 * share))) + "% of the time).";
    look_for = "what " + who + " does in NVTX range '" + ranked.front().second + "' before it " +
               state.before;
  } else {
    summary += " While they waited it ran outside any NVTX range.";
    look_for = "what " + who + " runs before each of its " + state.before +
               " (host code, GPU syncs, OS runtime calls)";
  }
  if (10 * (s.wait - s.direct) >= s.direct) {
    summary += " (" + FormatDuration(s.wait - s.direct) +
               " more of their waiting was passed on from ranks this one waited for.)";
  }
  if (!state.blame_sender) {
    const Bytes bytes = MedianBytes(s);
    summary += std::string(" A send") + (bytes > 0 ? " of " + FormatBytes(bytes) : std::string()) +
               " too large to go eagerly (rendezvous), or an MPI_Ssend, cannot finish before "
               "its receive is posted: posting the receive earlier (MPI_Irecv before the "
               "work) or sending with MPI_Isend and waiting later takes the wait away.";
  }
  return {std::move(summary), std::move(look_for)};
}

// Where a blamed rank was while the others waited: from its ranges and the messages, or folded.
using WhileWaitedOf = std::function<WhileWaited(const RankData&)>;

// The wait state's half of a pair kept for both (WaitTallies, WaitRanges).
template <typename Both>
const auto& OfState(const Both& both, const WaitState& state) {
  return state.blame_sender ? both.late_sender : both.late_receiver;
}

std::vector<Finding> FindWaitStates(const Session& aligned,
                                    const std::map<int, BlamedTally>& tallies,
                                    const P2PMatchStats& stats, const PointToPointOptions& options,
                                    const WaitState& state, std::vector<std::string>* notes,
                                    const WhileWaitedOf& while_waited) {
  const DurationNs span = stats.calls_span();
  std::vector<Finding> findings;
  for (const auto& [rank, s] : tallies) {
    const DurationNs median = MedianDirect(s);
    const double budget =
        static_cast<double>(span) * static_cast<double>(std::max<size_t>(s.others.size(), 1));
    const double cost_fraction = budget > 0 ? static_cast<double>(s.direct) / budget : 0;
    const double direct_share =
        s.wait > 0 ? static_cast<double>(s.direct) / static_cast<double>(s.wait) : 0;
    if (s.late < options.min_messages || median < options.min_median_wait ||
        cost_fraction < options.min_cost_fraction || direct_share < options.min_direct_share) {
      continue;
    }
    const RankData* data = aligned.FindRank(rank);
    if (data == nullptr) continue;
    const DurationNs clock_uncertainty = ClockUncertainty(aligned, rank, s.others);
    if (static_cast<double>(median) <= options.clock_k * static_cast<double>(clock_uncertainty)) {
      if (notes != nullptr) {
        const std::string others = RankList(s.others);
        notes->push_back(RankLabel(aligned, rank) + " " + state.late_verb + ": " + others +
                         " waited in " + state.waited_in + " for " + std::to_string(s.late) +
                         " of its " + std::to_string(s.matched) + " messages, median " +
                         FormatDuration(median) + " per message, but clock alignment between " +
                         "rank " + std::to_string(rank) + " and " + others + " is only good to " +
                         FormatDuration(clock_uncertainty) + ", so it is not reported as " +
                         state.finding_name +
                         "; a tighter clock sync (lower round-trip time to the coordinator) "
                         "would decide it.");
      }
      continue;
    }
    const WhileWaited w = while_waited(*data);
    Finding f = FindingOnRank(aligned, state.kind, rank);
    f.cost_ns = s.direct;
    f.severity =
        cost_fraction > options.critical_cost_fraction ? Severity::kCritical : Severity::kWarning;
    const double late_share =
        s.matched > 0 ? std::min(1.0, static_cast<double>(s.late) / s.matched) : 1.0;
    f.confidence =
        std::clamp(late_share * (1.0 - 0.5 * static_cast<double>(options.min_median_wait) /
                                           static_cast<double>(std::max<DurationNs>(median, 1))),
                   0.0, 1.0);
    f.wait_state = WaitStateEvidence(s, w, median, cost_fraction, span, clock_uncertainty, stats);
    std::tie(f.summary, f.focus) = WaitStateProse(aligned, rank, s, state, w, median);
    findings.push_back(std::move(f));
  }
  return findings;
}

}  // namespace

void WaitRangesFold::Close(const std::vector<RankUpload>& window, const MessageFold& fold,
                           const std::vector<P2PMessage>& matched) {
  for (const RankUpload& upload : window) {
    std::map<size_t, RangeRecord>& held = held_[upload.records.id.rank];
    for (size_t j = 0; j < upload.records.ranges.size(); ++j) {
      held[upload.index.ranges[j]] = upload.records.ranges[j];
    }
    for (size_t j = 0; j < upload.open_ranges.size(); ++j) {
      held[upload.index.open_ranges[j]] = upload.open_ranges[j];
    }
  }
  for (const WaitState* state : {&kLateSender, &kLateReceiver}) {
    std::map<int, std::vector<const P2PMessage*>> late;
    for (const P2PMessage& m : matched) {
      if (state->Direct(m) > 0) late[state->Blamed(m)].push_back(&m);
    }
    auto& tally = state->blame_sender ? out_.late_sender : out_.late_receiver;
    for (const auto& [rank, messages] : late) {
      std::vector<RangeRecord> ranges;
      for (const auto& [i, range] : held_[rank]) ranges.push_back(range);
      const RangeTimeline timeline(&ranges);
      for (const P2PMessage* m : messages) AddWhileWaited(timeline, *m, *state, &tally[rank]);
    }
  }
  size_t now = 0;
  for (auto& [rank, ranges] : held_) {
    const TimeNs from = fold.WaitsFrom(rank);
    std::erase_if(ranges, [&](const auto& entry) { return entry.second.end <= from; });
    now += ranges.size();
  }
  peak_ = std::max(peak_, now);
}

WaitRanges RangesWhileWaitedByWindow(const Session& aligned, const WindowSplit& split,
                                     size_t* peak_held) {
  WaitRangesFold fold;
  MatchMessagesByWindow(
      aligned, split, nullptr, nullptr,
      [&](const std::vector<RankUpload>& uploads, const MessageFold& messages,
          const std::vector<P2PMessage>& matched) { fold.Close(uploads, messages, matched); });
  if (peak_held != nullptr) *peak_held = fold.peak_held();
  return fold.Take();
}

WaitTallyFold::WaitTallyFold(const PointToPointOptions& options)
    : min_median_wait_(options.min_median_wait) {}

void WaitTallyFold::Add(const std::vector<P2PMessage>& messages) {
  for (const P2PMessage& m : messages) {
    Tally(m, kLateSender, min_median_wait_, &out_.late_sender);
    Tally(m, kLateReceiver, min_median_wait_, &out_.late_receiver);
  }
}

namespace {

std::vector<Finding> FindWaitStates(const Session& aligned, const std::vector<P2PMessage>& messages,
                                    const P2PMatchStats& stats, const PointToPointOptions& options,
                                    const WaitState& state, std::vector<std::string>* notes) {
  WaitTallyFold fold(options);
  fold.Add(messages);
  return FindWaitStates(
      aligned, OfState(fold.Take(), state), stats, options, state, notes,
      [&](const RankData& data) { return RangesWhileWaited(data, messages, state); });
}

std::vector<Finding> FindWaitStates(const Session& aligned, const WaitTallies& tallies,
                                    const P2PMatchStats& stats, const PointToPointOptions& options,
                                    const WaitState& state, const WaitRanges& while_waited,
                                    std::vector<std::string>* notes) {
  const std::map<int, WhileWaited>& folded = OfState(while_waited, state);
  return FindWaitStates(aligned, OfState(tallies, state), stats, options, state, notes,
                        [&](const RankData& data) {
                          auto it = folded.find(data.id.rank);
                          return it != folded.end() ? it->second : WhileWaited{};
                        });
}

}  // namespace

std::vector<Finding> FindLateSenders(const Session& aligned,
                                     const std::vector<P2PMessage>& messages,
                                     const P2PMatchStats& stats, const PointToPointOptions& options,
                                     std::vector<std::string>* notes) {
  return FindWaitStates(aligned, messages, stats, options, kLateSender, notes);
}

std::vector<Finding> FindLateReceivers(const Session& aligned,
                                       const std::vector<P2PMessage>& messages,
                                       const P2PMatchStats& stats,
                                       const PointToPointOptions& options,
                                       std::vector<std::string>* notes) {
  return FindWaitStates(aligned, messages, stats, options, kLateReceiver, notes);
}

std::vector<Finding> FindLateSenders(const Session& aligned, const WaitTallies& tallies,
                                     const P2PMatchStats& stats, const PointToPointOptions& options,
                                     const WaitRanges& while_waited,
                                     std::vector<std::string>* notes) {
  return FindWaitStates(aligned, tallies, stats, options, kLateSender, while_waited, notes);
}

std::vector<Finding> FindLateReceivers(const Session& aligned, const WaitTallies& tallies,
                                       const P2PMatchStats& stats,
                                       const PointToPointOptions& options,
                                       const WaitRanges& while_waited,
                                       std::vector<std::string>* notes) {
  return FindWaitStates(aligned, tallies, stats, options, kLateReceiver, while_waited, notes);
}

}  // namespace rankscope
