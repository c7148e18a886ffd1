#include "coordinator/analysis/p2p_analysis.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "coordinator/analysis/describe.h"
#include "coordinator/analysis/next_steps.h"
#include "coordinator/analysis/range_timeline.h"
#include "core/comm_id.h"
#include "core/format.h"
#include "core/robust_stats.h"

namespace rankscope {
namespace {

// Communicator rank -> world rank, per communicator id.
class PeerMap {
 public:
  explicit PeerMap(const Session& s) {
    for (const RankData& r : s.ranks) {
      for (const CollectiveRecord& c : r.collectives) {
        if (c.source == CollectiveRecord::Source::kMpi && c.comm_rank >= 0) {
          world_[c.comm_id].emplace(c.comm_rank, r.id.rank);
        }
      }
    }
    const int size = s.world_size > 0 ? s.world_size : static_cast<int>(s.ranks.size());
    world_comm_ = WorldCommId(size);
    world_size_ = size;
  }

  // -1 when the peer cannot be placed.
  int WorldRank(uint64_t comm, int32_t peer) const {
    if (peer < 0) return -1;
    if (auto it = world_.find(comm); it != world_.end()) {
      auto p = it->second.find(peer);
      return p == it->second.end() ? -1 : p->second;
    }
    return comm == world_comm_ && peer < world_size_ ? peer : -1;
  }

 private:
  std::unordered_map<uint64_t, std::unordered_map<int32_t, int>> world_;
  uint64_t world_comm_ = 0;
  int world_size_ = 0;
};

// (communicator, peer world rank, tag): one ordered channel between two ranks.
using Channel = std::tuple<uint64_t, int, int32_t>;

struct Receive {
  TimeNs blocked = 0;  // entered the call that blocked for the message
  TimeNs done = 0;
  size_t record = 0;  // index into the rank's p2p records
};

struct Send {
  TimeNs posted = 0;
  size_t record = 0;
};

struct RankP2P {
  std::map<Channel, std::vector<Send>> sends;        // by destination
  std::map<Channel, std::vector<Receive>> receives;  // by source
  Intervals blocked;                                 // inside point-to-point calls
};

std::map<int, RankP2P> Collect(const Session& s, const PeerMap& peers, P2PMatchStats* stats) {
  std::map<int, RankP2P> out;
  for (const RankData& r : s.ranks) {
    RankP2P& mine = out[r.id.rank];
    mine.blocked = PointToPointIntervals(r);
    for (size_t i = 0; i < r.p2p.size(); ++i) {
      const P2PRecord& p = r.p2p[i];
      const bool send = p.kind == P2PKind::kSend || p.kind == P2PKind::kIsend;
      const bool receive =
          p.kind == P2PKind::kRecv || (p.kind == P2PKind::kWait && p.completed == P2PKind::kIrecv);
      if (!send && !receive) continue;
      (send ? stats->sends : stats->receives) += 1;
      const int peer = peers.WorldRank(p.comm_id, p.peer);
      if (peer < 0 || p.tag < 0) {
        ++stats->unmapped;
        continue;
      }
      const Channel channel{p.comm_id, peer, p.tag};
      if (send) {
        mine.sends[channel].push_back({p.enter, i});
      } else {
        mine.receives[channel].push_back({p.enter, p.exit, i});
      }
    }
    for (auto& [channel, v] : mine.sends) {
      std::sort(v.begin(), v.end(),
                [](const Send& a, const Send& b) { return a.posted < b.posted; });
    }
    for (auto& [channel, v] : mine.receives) {
      std::sort(v.begin(), v.end(),
                [](const Receive& a, const Receive& b) { return a.blocked < b.blocked; });
    }
  }
  return out;
}

}  // namespace

std::vector<P2PMessage> MatchMessages(const Session& aligned, P2PMatchStats* stats) {
  P2PMatchStats local;
  P2PMatchStats& st = stats != nullptr ? *stats : local;
  st = {};
  const PeerMap peers(aligned);
  const std::map<int, RankP2P> ranks = Collect(aligned, peers, &st);
  std::vector<P2PMessage> out;
  for (const auto& [receiver, mine] : ranks) {
    for (const auto& [channel, receives] : mine.receives) {
      const auto& [comm, sender, tag] = channel;
      auto from = ranks.find(sender);
      if (from == ranks.end()) continue;
      auto sent = from->second.sends.find(Channel{comm, receiver, tag});
      if (sent == from->second.sends.end()) continue;
      const size_t n = std::min(receives.size(), sent->second.size());
      st.matched += static_cast<int>(n);
      for (size_t i = 0; i < n; ++i) {
        const Receive& rcv = receives[i];
        P2PMessage m;
        m.sender = sender;
        m.receiver = receiver;
        m.posted = sent->second[i].posted;
        m.send_record = sent->second[i].record;
        m.receive_record = rcv.record;
        m.blocked = rcv.blocked;
        m.wait = std::clamp<DurationNs>(m.posted - rcv.blocked, 0,
                                        std::max<DurationNs>(rcv.done - rcv.blocked, 0));
        out.push_back(m);
      }
    }
  }
  // Direct delays, per sender -> receiver pair in send order: the synchronisation interval of a
  // message starts at the pair's previous message (any tag: codes often tag by step).
  std::sort(out.begin(), out.end(), [](const P2PMessage& a, const P2PMessage& b) {
    return std::tie(a.sender, a.receiver, a.posted) < std::tie(b.sender, b.receiver, b.posted);
  });
  for (size_t k = 1; k < out.size(); ++k) {
    P2PMessage& m = out[k];
    const P2PMessage& previous = out[k - 1];
    if (m.wait <= 0 || previous.sender != m.sender || previous.receiver != m.receiver) continue;
    const TimeNs since = previous.posted;
    const RankP2P& sender = ranks.at(m.sender);
    const RankP2P& receiver = ranks.at(m.receiver);
    // Busy time: outside point-to-point calls, since the previous message.
    const DurationNs sender_busy =
        (m.posted - since) - OverlapWith(sender.blocked, since, m.posted);
    const TimeNs until = std::max(m.blocked, since);
    const DurationNs receiver_busy = (until - since) - OverlapWith(receiver.blocked, since, until);
    m.direct = std::clamp<DurationNs>(sender_busy - receiver_busy, 0, m.wait);
  }
  std::sort(out.begin(), out.end(), [](const P2PMessage& a, const P2PMessage& b) {
    return std::tie(a.blocked, a.receiver) < std::tie(b.blocked, b.receiver);
  });
  return out;
}

std::vector<Finding> FindLateSenders(const Session& aligned, const LateSenderOptions& options) {
  P2PMatchStats stats;
  const std::vector<P2PMessage> messages = MatchMessages(aligned, &stats);
  if (messages.empty()) return {};

  // The span the receivers' time is measured over: first to last point-to-point call.
  TimeNs begin = 0, end = 0;
  bool any = false;
  for (const RankData& r : aligned.ranks) {
    for (const P2PRecord& p : r.p2p) {
      begin = any ? std::min(begin, p.enter) : p.enter;
      end = any ? std::max(end, p.exit) : p.exit;
      any = true;
    }
  }
  const DurationNs span = end - begin;

  struct Sender {
    std::vector<const P2PMessage*> messages;  // those with a direct delay
    std::vector<DurationNs> directs;          // over all its matched messages
    std::set<int> receivers;
    DurationNs direct = 0;
    DurationNs wait = 0;
    int sends = 0;  // matched
  };
  std::map<int, Sender> senders;
  for (const P2PMessage& m : messages) {
    Sender& s = senders[m.sender];
    ++s.sends;
    s.directs.push_back(m.direct);
    if (m.direct <= 0) continue;
    s.messages.push_back(&m);
    s.receivers.insert(m.receiver);
    s.direct += m.direct;
    s.wait += m.wait;
  }

  std::vector<Finding> findings;
  for (const auto& [rank, s] : senders) {
    const DurationNs median = MedianNs(s.directs);
    const double budget =
        static_cast<double>(span) * static_cast<double>(std::max<size_t>(s.receivers.size(), 1));
    const double cost_fraction = budget > 0 ? static_cast<double>(s.direct) / budget : 0;
    if (static_cast<int>(s.messages.size()) < options.min_messages ||
        median < options.min_median_wait || cost_fraction < options.min_cost_fraction) {
      continue;
    }
    const RankData* data = aligned.FindRank(rank);
    if (data == nullptr) continue;

    // Where the sender was while its receivers waited: NVTX self time over those windows.
    RangeTimeline timeline(&data->ranges);
    std::map<std::string, DurationNs> by_range;
    DurationNs windows = 0, covered = 0;
    for (const P2PMessage* m : s.messages) {
      WindowTime t = timeline.TimeIn(m->blocked, m->blocked + m->wait, std::nullopt);
      for (const auto& [name, ns] : t.by_range) by_range[name] += ns;
      windows += t.window;
      covered += t.covered;
    }
    std::vector<std::pair<DurationNs, std::string>> ranked;
    for (const auto& [name, ns] : by_range) ranked.emplace_back(ns, name);
    std::sort(ranked.rbegin(), ranked.rend());

    Finding f;
    f.kind = "late_sender";
    f.ranks = {rank};
    const std::string node = NodeOf(aligned, rank);
    if (!node.empty()) f.nodes = {node};
    f.cost_ns = s.direct;
    f.severity =
        cost_fraction > options.critical_cost_fraction ? Severity::kCritical : Severity::kWarning;
    const double late_share =
        s.sends > 0 ? std::min(1.0, static_cast<double>(s.messages.size()) / s.sends) : 1.0;
    f.confidence =
        std::clamp(late_share * (1.0 - 0.5 * static_cast<double>(options.min_median_wait) /
                                           static_cast<double>(std::max<DurationNs>(median, 1))),
                   0.0, 1.0);

    std::string receivers;
    for (int r : s.receivers) receivers += (receivers.empty() ? "" : ", ") + std::to_string(r);
    nlohmann::json& e = f.evidence;
    e["late_messages"] = s.messages.size();
    e["sends"] = s.sends;
    e["receivers"] = s.receivers;
    e["median_direct_wait_ns"] = median;  // over all its matched messages
    e["direct_wait_ns"] = s.direct;
    e["propagated_wait_ns"] = s.wait - s.direct;
    e["cost_fraction"] = cost_fraction;
    e["p2p_span_ns"] = span;
    e["matched_messages"] = stats.matched;
    e["unmapped_records"] = stats.unmapped;
    nlohmann::json ranges = nlohmann::json::array();
    for (size_t i = 0; i < ranked.size() && i < 3; ++i) {
      ranges.push_back({{"range", ranked[i].second}, {"ns", ranked[i].first}});
    }
    e["sender_ranges"] = ranges;
    e["sender_untracked_ns"] = windows - covered;

    const std::string label = RankLabel(aligned, rank);
    std::string summary =
        label + " sent late: " + (s.receivers.size() == 1 ? "rank " : "ranks ") + receivers +
        " waited in receives for " + std::to_string(s.messages.size()) + " of " + "its " +
        std::to_string(s.sends) + " messages because it sent them " + "late, median " +
        FormatDuration(median) + " per message, " + FormatDuration(s.direct) + " in all.";
    std::string look_for;
    if (!ranked.empty() && windows > 0 &&
        2 * ranked.front().first >= std::max<DurationNs>(windows - covered, 1)) {
      const double share = static_cast<double>(ranked.front().first) / static_cast<double>(windows);
      summary += " While they waited it was in NVTX range '" + ranked.front().second + "' (" +
                 std::to_string(static_cast<int>(std::lround(100 * share))) + "% of the time).";
      look_for = "what rank " + std::to_string(rank) + " does in NVTX range '" +
                 ranked.front().second + "' before it sends";
    } else {
      summary += " While they waited it ran outside any NVTX range.";
      look_for = "what rank " + std::to_string(rank) +
                 " runs before each send (host code, GPU "
                 "syncs, OS runtime calls)";
    }
    if (10 * (s.wait - s.direct) >= s.direct) {
      summary += " (" + FormatDuration(s.wait - s.direct) +
                 " more of their waiting was passed on from ranks this one waited for.)";
    }
    f.summary = summary;
    f.next_steps.push_back(NsysStepForRank(aligned, rank, look_for));
    if (std::optional<NextStep> cpu = CpuProfileStepForRank(
            aligned, rank,
            "the hottest stacks of rank " + std::to_string(rank) + " while it runs")) {
      f.next_steps.push_back(std::move(*cpu));
    }
    findings.push_back(std::move(f));
  }
  return findings;
}

}  // namespace rankscope
