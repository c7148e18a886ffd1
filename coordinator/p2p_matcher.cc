#include "coordinator/p2p_matcher.h"

#include <algorithm>
#include <deque>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "core/comm_id.h"

namespace rankscope {

Intervals PointToPointIntervals(const RankData& rank) {
  Intervals calls;
  for (const P2PRecord& p : rank.p2p) calls.emplace_back(p.enter, p.exit);
  return MergeIntervals(std::move(calls));
}

namespace {

// Communicator rank -> world rank, per communicator id, from the collectives seen so far.
class PeerMap {
 public:
  PeerMap(int world_size, uint64_t world_comm) : world_comm_(world_comm), world_size_(world_size) {}

  void See(int world_rank, const CollectiveRecord& c) {
    if (c.source == CollectiveRecord::Source::kMpi && c.comm_rank >= 0) {
      world_[c.comm_id].emplace(c.comm_rank, world_rank);
    }
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

// The time one rank spent inside point-to-point calls, as a running total, kept from the oldest
// time a later question can ask about: Before(t) is the blocked time before t, counted from an
// origin of its own, so only differences of two answers at or after the trimmed front mean
// anything.
class BlockedTime {
 public:
  void Add(TimeNs begin, TimeNs end) {
    // Time before the front adds the same to every answer after it, so it can be left out.
    begin = std::max(begin, front_);
    if (end <= begin) return;
    if (spans_.empty() || begin > spans_.back().end) {
      spans_.push_back({begin, end, Through(spans_.size()) + (end - begin)});
      return;
    }
    // Merged with the spans it overlaps or touches; the totals after them recomputed.
    auto first = std::partition_point(spans_.begin(), spans_.end(),
                                      [&](const Span& s) { return s.end < begin; });
    auto last = first;
    while (last != spans_.end() && last->begin <= end) {
      begin = std::min(begin, last->begin);
      end = std::max(end, last->end);
      ++last;
    }
    const auto at = static_cast<size_t>(first - spans_.begin());
    first = spans_.erase(first, last);
    spans_.insert(first, Span{begin, end, 0});
    for (size_t i = at; i < spans_.size(); ++i) {
      spans_[i].through = Through(i) + (spans_[i].end - spans_[i].begin);
    }
  }

  DurationNs Before(TimeNs t) const {
    const auto next = std::partition_point(spans_.begin(), spans_.end(),
                                           [&](const Span& s) { return s.begin < t; });
    if (next == spans_.begin()) return base_;
    const auto k = static_cast<size_t>(next - spans_.begin()) - 1;
    return Through(k) + (std::min(t, spans_[k].end) - spans_[k].begin);
  }

  // Time in [since, until) outside point-to-point calls.
  DurationNs Busy(TimeNs since, TimeNs until) const {
    if (until <= since) return 0;
    return (until - since) - (Before(until) - Before(since));
  }

  // Forgets the spans that end at or before `t`: no question will ask about earlier times.
  void TrimBefore(TimeNs t) {
    while (!spans_.empty() && spans_.front().end <= t) {
      base_ = spans_.front().through;
      spans_.pop_front();
    }
    front_ = std::max(front_, t);
  }

  size_t size() const { return spans_.size(); }

 private:
  struct Span {
    TimeNs begin = 0;
    TimeNs end = 0;
    DurationNs through = 0;  // blocked time up to `end`
  };
  // Blocked time before span i.
  DurationNs Through(size_t i) const { return i == 0 ? base_ : spans_[i - 1].through; }

  std::deque<Span> spans_;
  DurationNs base_ = 0;
  TimeNs front_ = std::numeric_limits<TimeNs>::min();
};

// One rank's sides on one channel in one direction, in the order MPI matches them: each is
// released once complete and every side before it is (a posted call waits for its Wait).
struct Pending {
  struct Entry {
    Side side;
    bool complete = false;
    uint64_t post = 0;  // a posted call's number among the channel's posts
  };
  std::deque<Entry> entries;
  uint64_t posts = 0;  // posted calls seen
  uint64_t waits = 0;  // Waits that completed one
  bool unpaired = false;
  // Receives: probes for the channel not yet used, by exit, and the last released one's start.
  std::deque<ProbeSpan> probes;
  TimeNs previous = std::numeric_limits<TimeNs>::min();

  void Append(Entry e) {
    auto at = entries.end();
    while (at != entries.begin() && std::prev(at)->side.order() > e.side.order()) --at;
    entries.insert(at, std::move(e));
  }
};

// Released sides of one (communicator, sender, receiver, tag) waiting for their other side.
struct Queues {
  std::deque<Side> sends;
  std::deque<Side> receives;
};

// (communicator, sender, receiver, tag).
using MessageKey = std::tuple<uint64_t, int, int, int32_t>;

// What the next message between two ranks needs of the one before it: where their
// synchronisation interval starts, and each rank's blocked time before that (nullopt until the
// rank's records reach it).
struct PairCarry {
  bool any = false;
  TimeNs since = 0;   // receive direction: max(posted, blocked) of the previous message
  TimeNs since2 = 0;  // send direction: max(send_blocked, receive_posted)
  std::optional<DurationNs> sender_since, receiver_since, sender_since2, receiver_since2;
};

}  // namespace

struct MessageFold::State {
  struct Rank {
    std::vector<std::pair<size_t, P2PRecord>> window;  // added since the last close
    BlockedTime blocked;
    std::map<Channel, Pending> sends;                           // by destination
    std::map<Channel, Pending> receives;                        // by source
    TimeNs last_exit = std::numeric_limits<TimeNs>::min();      // of any record so far
    TimeNs reached = std::numeric_limits<TimeNs>::min();        // MessageFold::Reached
    TimeNs previous_exit = std::numeric_limits<TimeNs>::min();  // at the close before
  };

  PeerMap peers;
  std::map<int, Rank> ranks;
  std::map<MessageKey, Queues> queues;
  std::map<std::pair<int, int>, PairCarry> pairs;
  std::vector<P2PMessage> matched;   // in the window being closed, directs not yet set
  std::map<int, TimeNs> waits_from;  // MessageFold::WaitsFrom, as of the last close, where a
                                     // held side or probe reaches back further than `progress`
  TimeNs progress = std::numeric_limits<TimeNs>::min();  // the least any rank reported

  State(int world_size, uint64_t world_comm) : peers(world_size, world_comm) {}

  void Process(int rank, Rank& mine, size_t i, const P2PRecord& p, P2PMatchStats* stats);
  void Release(int rank, const Channel& channel, bool receive, Pending* pending);
  void Match(const MessageKey& key, Queues* q);
  void SetDirects(std::vector<P2PMessage>* messages);
  void Resolve(PairCarry* carry, int sender, int receiver);
  void Trim();
};

void MessageFold::State::Process(int rank, Rank& mine, size_t i, const P2PRecord& p,
                                 P2PMatchStats* stats) {
  if (p.kind == P2PKind::kProbe) {
    const int peer = peers.WorldRank(p.comm_id, p.peer, p.world_peer);
    if (peer < 0 || p.tag < 0) return;
    auto& probes = mine.receives[{p.comm_id, peer, p.tag}].probes;
    auto at = probes.end();
    while (at != probes.begin() && std::prev(at)->exit > p.exit) --at;
    probes.insert(at, {p.enter, p.exit});
    return;
  }
  const P2PKind kind = p.kind == P2PKind::kWait ? p.completed : p.kind;
  const bool send = IsSendKind(kind);
  if (!send && kind != P2PKind::kRecv && kind != P2PKind::kIrecv) return;
  // Counted once per message: sends at their post, receives where they complete.
  const bool counted = send ? p.kind != P2PKind::kWait : p.kind != P2PKind::kIrecv;
  if (counted) (send ? stats->sends : stats->receives) += 1;
  const int peer = peers.WorldRank(p.comm_id, p.peer, p.world_peer);
  if (peer < 0 || p.tag < 0) {
    if (counted) ++stats->unmapped;
    return;
  }
  const Channel channel{p.comm_id, peer, p.tag};
  Pending& pending = (send ? mine.sends : mine.receives)[channel];
  if (send && !IsPostedSend(kind)) {
    pending.Append({{p.enter, p.enter, p.exit, i, ModeOf(kind), i, i, p.bytes}, true});
  } else if (p.kind == P2PKind::kRecv) {
    pending.Append({{p.enter, p.enter, p.exit, i, SendMode::kStandard, i, i}, true});
  } else if (p.kind != P2PKind::kWait) {
    // A post: complete once its Wait comes. Unpaired, an Isend is all that is known of its
    // send's blocking, and an Irecv leaves its side to the Wait. Posted sends of every mode share
    // one list: MPI orders a channel's messages whatever their mode.
    if (!pending.unpaired) {
      const SendMode mode = send ? ModeOf(kind) : SendMode::kStandard;
      pending.Append(
          {{p.enter, p.enter, p.exit, i, mode, i, i, send ? p.bytes : 0}, false, pending.posts++});
    } else if (send) {
      pending.Append({{p.enter, p.enter, p.exit, i, ModeOf(kind), i, i, p.bytes}, true});
    }
  } else {
    if (!pending.unpaired && pending.waits == pending.posts) {
      // A Wait without a post on its channel: the posts cannot be told apart any more.
      pending.unpaired = true;
      for (auto it = pending.entries.begin(); it != pending.entries.end();) {
        if (it->complete) {
          ++it;
        } else if (send) {
          (it++)->complete = true;  // the Isend itself: blocked and done at its own call
        } else {
          it = pending.entries.erase(it);
        }
      }
    }
    if (!pending.unpaired) {
      const uint64_t post = pending.waits++;
      for (auto& e : pending.entries) {
        if (e.complete || e.post != post) continue;
        e.complete = true;
        e.side.blocked = p.enter;
        e.side.done = p.exit;
        e.side.blocked_record = i;
        if (!send) e.side.record = i;
        break;
      }
    } else if (!send) {
      pending.Append({{0, p.enter, p.exit, i, SendMode::kStandard, i, i}, true});
    }
  }
  Release(rank, channel, !send, &pending);
}

void MessageFold::State::Release(int rank, const Channel& channel, bool receive, Pending* pending) {
  const auto& [comm, peer, tag] = channel;
  const MessageKey key =
      receive ? MessageKey{comm, peer, rank, tag} : MessageKey{comm, rank, peer, tag};
  Queues* q = nullptr;
  while (!pending->entries.empty() && pending->entries.front().complete) {
    Side side = pending->entries.front().side;
    pending->entries.pop_front();
    if (receive) {
      // A receiver that probed for its message before receiving it was waiting from the probe
      // on: each receive takes the earliest probe of its channel that ended at or before the
      // receive was posted and after the previous receive of the channel was.
      auto& probes = pending->probes;
      const TimeNs start = side.order();
      while (!probes.empty() && probes.front().exit <= pending->previous) probes.pop_front();
      if (!probes.empty() && probes.front().exit <= start) {
        side.blocked = std::min(side.blocked, probes.front().enter);
        while (!probes.empty() && probes.front().exit <= start) probes.pop_front();  // used up
      }
      pending->previous = start;
    }
    if (q == nullptr) q = &queues[key];
    (receive ? q->receives : q->sends).push_back(side);
  }
  if (q != nullptr) Match(key, q);
}

void MessageFold::State::Match(const MessageKey& key, Queues* q) {
  const auto& [comm, sender, receiver, tag] = key;
  while (!q->sends.empty() && !q->receives.empty()) {
    const Side snd = q->sends.front();
    const Side rcv = q->receives.front();
    q->sends.pop_front();
    q->receives.pop_front();
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
        // It cannot finish before the receive starts; an end a little before the receive's post
        // is clock error, so the wait is bounded by the call instead.
        if (rcv.posted > snd.blocked) {
          m.send_wait = std::min(rcv.posted, std::max(snd.done, snd.blocked)) - snd.blocked;
        }
        break;
      case SendMode::kBuffered:
        break;  // copied out and returned: it waited for nobody
    }
    matched.push_back(m);
  }
}

// Direct delays, per sender -> receiver pair in send order: the synchronisation interval of a
// message starts where the pair last met, at its previous message (any tag: codes often tag by
// step): when the later of the two got there. Starting at the previous send instead counts the
// end of the other rank's previous work, done while this one waited, as a delay of its own.
void MessageFold::State::SetDirects(std::vector<P2PMessage>* messages) {
  std::sort(messages->begin(), messages->end(), [](const P2PMessage& a, const P2PMessage& b) {
    return std::tie(a.sender, a.receiver, a.posted, a.send_record) <
           std::tie(b.sender, b.receiver, b.posted, b.send_record);
  });
  for (P2PMessage& m : *messages) {
    PairCarry& carry = pairs[{m.sender, m.receiver}];
    const BlockedTime& sender = ranks.at(m.sender).blocked;
    const BlockedTime& receiver = ranks.at(m.receiver).blocked;
    // The blocked time before a carried start, asked now if the rank's records had not reached
    // it when the previous message closed (they reach it by this message's times).
    auto before = [](const std::optional<DurationNs>& known, const BlockedTime& rank, TimeNs t) {
      return known ? *known : rank.Before(t);
    };
    auto busy = [&](const BlockedTime& rank, const std::optional<DurationNs>& at_since,
                    TimeNs since, TimeNs until) -> DurationNs {
      if (until <= since) return 0;
      return (until - since) - (rank.Before(until) - before(at_since, rank, since));
    };
    if (carry.any && m.wait > 0) {
      const DurationNs late =
          busy(sender, carry.sender_since, carry.since, m.posted) -
          busy(receiver, carry.receiver_since, carry.since, std::max(m.blocked, carry.since));
      m.direct = std::clamp<DurationNs>(late, 0, m.wait);
    }
    if (carry.any && m.send_wait > 0) {
      const DurationNs late =
          busy(receiver, carry.receiver_since2, carry.since2, m.receive_posted) -
          busy(sender, carry.sender_since2, carry.since2, std::max(m.send_blocked, carry.since2));
      m.send_direct = std::clamp<DurationNs>(late, 0, m.send_wait);
    }
    carry = PairCarry{};
    carry.any = true;
    carry.since = std::max(m.posted, m.blocked);
    carry.since2 = std::max(m.send_blocked, m.receive_posted);
    Resolve(&carry, m.sender, m.receiver);
  }
}

// Asks each rank's blocked time before the carried starts the rank's records have reached.
void MessageFold::State::Resolve(PairCarry* carry, int sender, int receiver) {
  const Rank& s = ranks.at(sender);
  const Rank& r = ranks.at(receiver);
  auto ask = [](std::optional<DurationNs>* v, const Rank& rank, TimeNs t) {
    if (!*v && t <= rank.last_exit) *v = rank.blocked.Before(t);
  };
  ask(&carry->sender_since, s, carry->since);
  ask(&carry->receiver_since, r, carry->since);
  ask(&carry->sender_since2, s, carry->since2);
  ask(&carry->receiver_since2, r, carry->since2);
}

// Each rank's blocked time is kept back to the oldest time a later message can ask about: the
// sides and probes held, the carried starts not yet asked, and (for a call that ends in a later
// window but began before this one's cut) the previous close's last exit.
void MessageFold::State::Trim() {
  std::map<int, TimeNs> keep;
  auto hold = [](std::map<int, TimeNs>* held, int rank, TimeNs t) {
    auto [it, fresh] = held->emplace(rank, t);
    if (!fresh) it->second = std::min(it->second, t);
  };
  auto side_from = [](const Side& s) {
    return s.posted > 0 ? std::min(s.posted, s.blocked) : s.blocked;
  };
  // A wait not matched yet began at a held side's time on its rank, or (a call still going) after
  // the progress its rank reported (Reached: it may be before the rank's latest exit, where a
  // call open at the cut began before that), else after its latest exit.
  progress = std::numeric_limits<TimeNs>::max();
  for (const auto& [rank, r] : ranks) {
    const bool reported = r.reached != std::numeric_limits<TimeNs>::min();
    progress = std::min(progress, reported ? r.reached : r.last_exit);
  }
  if (ranks.empty()) progress = std::numeric_limits<TimeNs>::min();
  waits_from.clear();
  for (auto& [rank, r] : ranks) {
    hold(&keep, rank, r.previous_exit);
    for (const bool receive : {false, true}) {
      for (const auto& [channel, pending] : receive ? r.receives : r.sends) {
        const int peer = std::get<1>(channel);
        for (const auto& e : pending.entries) {
          hold(&keep, rank, side_from(e.side));
          hold(&waits_from, peer, side_from(e.side));
        }
        for (const ProbeSpan& p : pending.probes) {
          hold(&keep, rank, p.enter);
          hold(&waits_from, peer, p.enter);
        }
      }
    }
  }
  for (const auto& [key, q] : queues) {
    const auto& [comm, sender, receiver, tag] = key;
    for (const Side& s : q.sends) {
      hold(&keep, sender, side_from(s));
      hold(&waits_from, receiver, side_from(s));
    }
    for (const Side& s : q.receives) {
      hold(&keep, receiver, side_from(s));
      hold(&waits_from, sender, side_from(s));
    }
  }
  for (auto& [pair, carry] : pairs) {
    Resolve(&carry, pair.first, pair.second);
    if (!carry.sender_since) hold(&keep, pair.first, carry.since);
    if (!carry.receiver_since) hold(&keep, pair.second, carry.since);
    if (!carry.sender_since2) hold(&keep, pair.first, carry.since2);
    if (!carry.receiver_since2) hold(&keep, pair.second, carry.since2);
  }
  for (auto& [rank, r] : ranks) {
    r.blocked.TrimBefore(keep.at(rank));
    r.previous_exit = r.last_exit;
  }
}

MessageFold::MessageFold(int world_size, uint64_t world_comm)
    : state_(std::make_unique<State>(world_size, world_comm)) {}

MessageFold::~MessageFold() = default;

void MessageFold::AddCollective(int world_rank, const CollectiveRecord& call) {
  state_->peers.See(world_rank, call);
}

void MessageFold::Reached(int world_rank, TimeNs t) {
  TimeNs& reached = state_->ranks[world_rank].reached;
  reached = std::max(reached, t);
}

TimeNs MessageFold::WaitsFrom(int world_rank) const {
  const auto it = state_->waits_from.find(world_rank);
  const TimeNs progress = state_->progress;
  return it != state_->waits_from.end() ? std::min(it->second, progress) : progress;
}

void MessageFold::Add(int world_rank, size_t index, const P2PRecord& record) {
  state_->ranks[world_rank].window.emplace_back(index, record);
}

std::vector<P2PMessage> MessageFold::TakeMatched() {
  State& s = *state_;
  for (auto& [rank, mine] : s.ranks) {
    for (const auto& [i, p] : mine.window) {
      mine.blocked.Add(ChainEnter(p), p.exit);
      mine.last_exit = std::max(mine.last_exit, p.exit);
      stats_.first_call = std::min(stats_.first_call, p.enter);
      stats_.last_call = std::max(stats_.last_call, p.exit);
    }
    // Posts and Waits pair in the order of their enters.
    std::sort(mine.window.begin(), mine.window.end(), [](const auto& a, const auto& b) {
      return std::tie(a.second.enter, a.first) < std::tie(b.second.enter, b.first);
    });
    for (const auto& [i, p] : mine.window) s.Process(rank, mine, i, p, &stats_);
    mine.window.clear();
  }
  std::vector<P2PMessage> out = std::exchange(s.matched, {});
  s.SetDirects(&out);
  s.Trim();
  stats_.matched += static_cast<int>(out.size());
  return out;
}

std::vector<P2PMessage> MessageFold::Finish() {
  std::vector<P2PMessage> out = TakeMatched();
  State& s = *state_;
  // Posts never waited for: an Isend is its own blocking; an Irecv's side needs its Wait.
  for (auto& [rank, mine] : s.ranks) {
    for (const bool receive : {false, true}) {
      for (auto& [channel, pending] : receive ? mine.receives : mine.sends) {
        std::erase_if(pending.entries,
                      [&](const Pending::Entry& e) { return receive && !e.complete; });
        for (auto& e : pending.entries) e.complete = true;
        s.Release(rank, channel, receive, &pending);
      }
    }
  }
  std::vector<P2PMessage> last = std::exchange(s.matched, {});
  s.SetDirects(&last);
  stats_.matched += static_cast<int>(last.size());
  out.insert(out.end(), last.begin(), last.end());
  return out;
}

bool MessageFold::Quiet() const {
  for (const auto& [rank, r] : state_->ranks) {
    if (!r.window.empty()) return false;
    for (auto* sides : {&r.sends, &r.receives}) {
      for (const auto& [channel, pending] : *sides) {
        if (!pending.entries.empty()) return false;
      }
    }
  }
  for (const auto& [key, q] : state_->queues) {
    if (!q.sends.empty() || !q.receives.empty()) return false;
  }
  return true;
}

size_t MessageFold::held() const {
  size_t n = 0;
  for (const auto& [rank, r] : state_->ranks) {
    n += r.blocked.size() + r.window.size();
    for (auto* sides : {&r.sends, &r.receives}) {
      for (const auto& [channel, pending] : *sides) {
        n += pending.entries.size() + pending.probes.size();
      }
    }
  }
  for (const auto& [key, q] : state_->queues) n += q.sends.size() + q.receives.size();
  return n;
}

namespace {

template <class Messages>
void SortByReceiverBlock(Messages* messages) {
  using Message = typename Messages::value_type;
  std::sort(messages->begin(), messages->end(), [](const Message& a, const Message& b) {
    return std::tie(a.blocked, a.receiver, a.sender, a.receive_record) <
           std::tie(b.blocked, b.receiver, b.sender, b.receive_record);
  });
}

}  // namespace

void OrderMessages(std::vector<P2PMessage>* messages) { SortByReceiverBlock(messages); }
void OrderMessages(std::vector<MessageLink>* links) { SortByReceiverBlock(links); }
void OrderMessages(std::span<MessageLink> links) { SortByReceiverBlock(&links); }

MessageLink LinkOf(const P2PMessage& m) {
  return {.sender = m.sender,
          .receiver = m.receiver,
          .blocked = m.blocked,
          .send_record = m.send_record,
          .receive_record = m.receive_record,
          .send_blocked_record = m.send_blocked_record,
          .receive_posted_record = m.receive_posted_record,
          .send_waited = m.send_wait > 0,
          .receive_posted_known = m.receive_posted > 0};
}

P2PMessage MessageOf(const MessageLink& link) {
  P2PMessage m;
  m.sender = link.sender;
  m.receiver = link.receiver;
  m.blocked = link.blocked;
  m.send_record = link.send_record;
  m.receive_record = link.receive_record;
  return m;
}

std::vector<P2PMessage> MatchMessages(const Session& aligned, P2PMatchStats* stats) {
  const int size =
      aligned.world_size > 0 ? aligned.world_size : static_cast<int>(aligned.ranks.size());
  MessageFold fold(size, WorldCommId(size));
  for (const RankData& r : aligned.ranks) {
    for (const CollectiveRecord& c : r.collectives) fold.AddCollective(r.id.rank, c);
  }
  for (const RankData& r : aligned.ranks) {
    for (size_t i = 0; i < r.p2p.size(); ++i) fold.Add(r.id.rank, i, r.p2p[i]);
  }
  std::vector<P2PMessage> out = fold.Finish();
  OrderMessages(&out);
  if (stats != nullptr) *stats = fold.stats();
  return out;
}
}  // namespace rankscope
