#include "coordinator/p2p_matcher.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include "core/comm_id.h"

namespace rankscope {

Intervals MergeIntervals(Intervals spans) {
  std::sort(spans.begin(), spans.end());
  Intervals merged;
  for (const auto& [b, e] : spans) {
    if (!merged.empty() && b <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, e);
    } else {
      merged.emplace_back(b, e);
    }
  }
  return merged;
}

Intervals PointToPointIntervals(const RankData& rank) {
  Intervals calls;
  for (const P2PRecord& p : rank.p2p) calls.emplace_back(p.enter, p.exit);
  return MergeIntervals(std::move(calls));
}

DurationNs OverlapWith(const Intervals& intervals, TimeNs begin, TimeNs end) {
  DurationNs total = 0;
  auto it = std::partition_point(intervals.begin(), intervals.end(),
                                 [&](const auto& iv) { return iv.second <= begin; });
  for (; it != intervals.end() && it->first < end; ++it) {
    total += std::min(it->second, end) - std::max(it->first, begin);
  }
  return total;
}

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

  // -1 when the peer cannot be placed. The world rank the inject library recorded wins; the
  // collectives and MPI_COMM_WORLD place peers of sessions recorded before it did.
  int WorldRank(uint64_t comm, int32_t peer, int32_t world_peer) const {
    if (world_peer >= 0) return world_peer < world_size_ ? world_peer : -1;
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

// How a send may wait for its receiver: a standard (or ready) send only when it is too large to
// go eagerly, a synchronous one always (it completes only once the receive has started), a
// buffered one never (it returns once the message is copied).
enum class SendMode : uint8_t { kStandard, kSynchronous, kBuffered };

SendMode ModeOf(P2PKind send_kind) {
  switch (send_kind) {
    case P2PKind::kSsend:
    case P2PKind::kIssend:
      return SendMode::kSynchronous;
    case P2PKind::kBsend:
    case P2PKind::kIbsend:
      return SendMode::kBuffered;
    default:
      return SendMode::kStandard;
  }
}

bool IsPostedSend(P2PKind kind) {
  return kind == P2PKind::kIsend || kind == P2PKind::kIssend || kind == P2PKind::kIbsend;
}

// One side of a message on one rank: when it was posted, and the call that blocked for it.
struct Side {
  TimeNs posted = 0;  // 0: unknown (a Wait whose Irecv could not be paired)
  TimeNs blocked = 0;
  TimeNs done = 0;
  size_t record = 0;                    // the Send / Isend, or the Recv / Wait of the Irecv
  SendMode mode = SendMode::kStandard;  // sends only
  // The records whose enters `posted` and `blocked` were read from (a receive's `blocked` may be
  // moved to a probe's enter later: blocked_record is the sends' only).
  size_t posted_record = 0;
  size_t blocked_record = 0;
  Bytes bytes = 0;  // a send's: its Send / Isend record's
  TimeNs order() const { return posted > 0 ? posted : blocked; }
};

// A probe's call on the receiving rank (P2PKind::kProbe).
struct ProbeSpan {
  TimeNs enter = 0;
  TimeNs exit = 0;
};

struct RankP2P {
  std::map<Channel, std::vector<Side>> sends;     // by destination
  std::map<Channel, std::vector<Side>> receives;  // by source
  Intervals blocked;                              // inside point-to-point calls
};

// A receiver that probed for its message before receiving it was waiting from the probe on:
// each receive takes the earliest probe of its channel that ended at or before the receive was
// posted and after the previous receive of the channel was, and counts as blocked from that
// probe's enter. `receives` and `probes` are in time order.
void BlockFromProbes(std::vector<ProbeSpan> probes, std::vector<Side>* receives) {
  std::sort(probes.begin(), probes.end(),
            [](const ProbeSpan& a, const ProbeSpan& b) { return a.exit < b.exit; });
  size_t next = 0;
  TimeNs previous = std::numeric_limits<TimeNs>::min();
  for (Side& rcv : *receives) {
    const TimeNs start = rcv.order();
    while (next < probes.size() && probes[next].exit <= previous) ++next;
    if (next < probes.size() && probes[next].exit <= start) {
      rcv.blocked = std::min(rcv.blocked, probes[next].enter);
      while (next < probes.size() && probes[next].exit <= start) ++next;  // used up
    }
    previous = start;
  }
}

// The non-blocking calls of one channel and the Waits that completed them, paired in order
// when their counts agree (with MPI_ANY_SOURCE posts they do not, and pairing would guess).
struct Posts {
  std::vector<size_t> posts;  // Isend / Irecv records
  std::vector<size_t> waits;  // kWait records completing that kind
};

void SortByEnter(const RankData& r, std::vector<size_t>* records) {
  std::sort(records->begin(), records->end(),
            [&](size_t a, size_t b) { return r.p2p[a].enter < r.p2p[b].enter; });
}

std::map<int, RankP2P> Collect(const Session& s, const PeerMap& peers, P2PMatchStats* stats) {
  std::map<int, RankP2P> out;
  for (const RankData& r : s.ranks) {
    RankP2P& mine = out[r.id.rank];
    mine.blocked = PointToPointIntervals(r);
    std::map<Channel, Posts> isends, irecvs;
    std::map<Channel, std::vector<ProbeSpan>> probes;
    for (size_t i = 0; i < r.p2p.size(); ++i) {
      const P2PRecord& p = r.p2p[i];
      stats->first_call = std::min(stats->first_call, p.enter);
      stats->last_call = std::max(stats->last_call, p.exit);
      if (p.kind == P2PKind::kProbe) {
        const int peer = peers.WorldRank(p.comm_id, p.peer, p.world_peer);
        if (peer >= 0 && p.tag >= 0) probes[{p.comm_id, peer, p.tag}].push_back({p.enter, p.exit});
        continue;
      }
      const P2PKind kind = p.kind == P2PKind::kWait ? p.completed : p.kind;
      const bool send = IsSendKind(kind);
      if (!send && kind != P2PKind::kRecv && kind != P2PKind::kIrecv) continue;
      // Counted once per message: sends at their post, receives where they complete.
      const bool counted = send ? p.kind != P2PKind::kWait : p.kind != P2PKind::kIrecv;
      if (counted) (send ? stats->sends : stats->receives) += 1;
      const int peer = peers.WorldRank(p.comm_id, p.peer, p.world_peer);
      if (peer < 0 || p.tag < 0) {
        if (counted) ++stats->unmapped;
        continue;
      }
      const Channel channel{p.comm_id, peer, p.tag};
      if (send && !IsPostedSend(kind)) {
        mine.sends[channel].push_back({p.enter, p.enter, p.exit, i, ModeOf(kind), i, i, p.bytes});
      } else if (p.kind == P2PKind::kRecv) {
        mine.receives[channel].push_back({p.enter, p.enter, p.exit, i, SendMode::kStandard, i, i});
      } else {
        // Posted sends of every mode share one list: MPI orders a channel's messages whatever
        // their mode, so the k-th post meets the k-th completion.
        Posts& posts = (send ? isends : irecvs)[channel];
        (p.kind == P2PKind::kWait ? posts.waits : posts.posts).push_back(i);
      }
    }
    for (auto& [channel, p] : isends) {
      SortByEnter(r, &p.posts);
      SortByEnter(r, &p.waits);
      const bool paired = p.posts.size() == p.waits.size();
      for (size_t k = 0; k < p.posts.size(); ++k) {
        const P2PRecord& post = r.p2p[p.posts[k]];
        // Unpaired: the Isend itself is all we know of its blocking (nothing).
        const size_t block = paired ? p.waits[k] : p.posts[k];
        mine.sends[channel].push_back({post.enter, r.p2p[block].enter, r.p2p[block].exit,
                                       p.posts[k], ModeOf(post.kind), p.posts[k], block,
                                       post.bytes});
      }
    }
    for (auto& [channel, p] : irecvs) {
      SortByEnter(r, &p.posts);
      SortByEnter(r, &p.waits);
      const bool paired = p.posts.size() == p.waits.size();
      for (size_t k = 0; k < p.waits.size(); ++k) {
        const P2PRecord& wait = r.p2p[p.waits[k]];
        const TimeNs posted = paired ? r.p2p[p.posts[k]].enter : 0;
        mine.receives[channel].push_back({posted, wait.enter, wait.exit, p.waits[k],
                                          SendMode::kStandard, paired ? p.posts[k] : p.waits[k],
                                          p.waits[k]});
      }
    }
    for (auto* sides : {&mine.sends, &mine.receives}) {
      for (auto& [channel, v] : *sides) {
        std::sort(v.begin(), v.end(),
                  [](const Side& a, const Side& b) { return a.order() < b.order(); });
      }
    }
    for (auto& [channel, spans] : probes) {
      auto it = mine.receives.find(channel);
      if (it != mine.receives.end()) BlockFromProbes(std::move(spans), &it->second);
    }
  }
  return out;
}

// The busy time of `rank` (outside point-to-point calls) within [since, until).
DurationNs BusyTime(const RankP2P& rank, TimeNs since, TimeNs until) {
  if (until <= since) return 0;
  return (until - since) - OverlapWith(rank.blocked, since, until);
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
        const Side& rcv = receives[i];
        const Side& snd = sent->second[i];
        P2PMessage m;
        m.sender = sender;
        m.receiver = receiver;
        m.posted = snd.posted;
        m.send_record = snd.record;
        m.bytes = snd.bytes;
        m.receive_record = rcv.record;
        m.receive_posted = rcv.posted;
        m.receive_posted_record = rcv.posted_record;
        m.blocked = rcv.blocked;
        m.wait = std::clamp<DurationNs>(m.posted - rcv.blocked, 0,
                                        std::max<DurationNs>(rcv.done - rcv.blocked, 0));
        m.send_blocked = snd.blocked;
        m.send_blocked_record = snd.blocked_record;
        switch (snd.mode) {
          case SendMode::kStandard:
            // It waited for the receive only if it was still going when the receive came.
            if (rcv.posted > snd.blocked && snd.done >= rcv.posted) {
              m.send_wait = rcv.posted - snd.blocked;
            }
            break;
          case SendMode::kSynchronous:
            // It cannot finish before the receive starts; an end a little before the receive's
            // post is clock error, so the wait is bounded by the call instead.
            if (rcv.posted > snd.blocked) {
              m.send_wait = std::min(rcv.posted, std::max(snd.done, snd.blocked)) - snd.blocked;
            }
            break;
          case SendMode::kBuffered:
            break;  // copied out and returned: it waited for nobody
        }
        out.push_back(m);
      }
    }
  }
  // Direct delays, per sender -> receiver pair in send order: the synchronisation interval of a
  // message starts where the pair last met, at its previous message (any tag: codes often tag by
  // step): when the later of the two got there. Starting at the previous send instead counts the
  // end of the other rank's previous work, done while this one waited, as a delay of its own.
  std::sort(out.begin(), out.end(), [](const P2PMessage& a, const P2PMessage& b) {
    return std::tie(a.sender, a.receiver, a.posted) < std::tie(b.sender, b.receiver, b.posted);
  });
  for (size_t k = 1; k < out.size(); ++k) {
    P2PMessage& m = out[k];
    const P2PMessage& previous = out[k - 1];
    if (previous.sender != m.sender || previous.receiver != m.receiver) continue;
    const RankP2P& sender = ranks.at(m.sender);
    const RankP2P& receiver = ranks.at(m.receiver);
    if (m.wait > 0) {
      const TimeNs since = std::max(previous.posted, previous.blocked);
      const DurationNs late =
          BusyTime(sender, since, m.posted) - BusyTime(receiver, since, std::max(m.blocked, since));
      m.direct = std::clamp<DurationNs>(late, 0, m.wait);
    }
    if (m.send_wait > 0) {
      const TimeNs since = std::max(previous.send_blocked, previous.receive_posted);
      const DurationNs late = BusyTime(receiver, since, m.receive_posted) -
                              BusyTime(sender, since, std::max(m.send_blocked, since));
      m.send_direct = std::clamp<DurationNs>(late, 0, m.send_wait);
    }
  }
  std::sort(out.begin(), out.end(), [](const P2PMessage& a, const P2PMessage& b) {
    return std::tie(a.blocked, a.receiver) < std::tie(b.blocked, b.receiver);
  });
  return out;
}

}  // namespace rankscope
