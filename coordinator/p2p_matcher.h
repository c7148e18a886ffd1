// Point-to-point messages matched across ranks, with Scalasca's two wait states and the delay
// analysis that splits each wait into the part the other rank caused and the part it passed on.
// Pure functions over an aligned session; the late-sender / late-receiver findings
// (analysis/p2p_analysis) and trace.json's message arrows both read the same matches.
//
// Matching: MPI does not let messages between one pair on one communicator and tag overtake each
// other, so the i-th send from S to R on (comm, tag) meets R's i-th receive from S on it. Peers
// are the world ranks the inject library recorded (P2PRecord::world_peer); for sessions recorded
// before it did, communicator ranks read as world ranks through the collectives (each rank's
// comm_rank on that communicator) or, on MPI_COMM_WORLD, directly. Receives with MPI_ANY_TAG
// unresolved are left out. A posted send (of any mode) or MPI_Irecv is paired with the i-th Wait
// (or Test) that completed a request of that kind on the same channel, while every such Wait
// finds a post pending (MessageFold says what happens when one does not).
//
// Late Sender: the receiver blocked (MPI_Recv, the Wait of its Irecv, or a probe for the message
// before either: MPI_Probe, or a loop of MPI_Iprobe) before the send was posted. Late Receiver:
// the sender blocked in a send that can wait for the receive and the receive was posted after
// the sender blocked. A synchronous send (MPI_Ssend, the Wait of an MPI_Issend) can always wait;
// a buffered one (MPI_Bsend, MPI_Ibsend) never does; a standard or ready send (a rendezvous-sized
// MPI_Send, the Wait of a large Isend) waited only if it finished after the receive was posted:
// one that was over before (eager) waited for nobody.
//
// Wait chains (Scalasca's delay analysis): the rank a wait is blamed on may itself have been
// blocked in point-to-point calls (a pipeline stage waiting for the stage before it) and only be
// passing a delay on. Over the synchronisation interval of a message (from the previous message
// between the same two ranks, any tag, to this one) the blamed rank's busy time (outside
// point-to-point calls) is compared with the waiting rank's busy time up to its blocking: the
// excess, at most the wait, is the direct delay; the rest of the wait was propagated. In the busy
// time, a Wait that Test calls polled for counts from its last unbroken run of polling
// (ChainEnter): its enter, pulled back by the earlier Tests' time, covers work done between them.
// (The message's `blocked` keeps that enter: the wait is the time spent polling for it.)
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "coordinator/session.h"
#include "core/intervals.h"
#include "core/time.h"

namespace rankscope {

// The time the rank spent inside point-to-point MPI calls, as merged intervals.
Intervals PointToPointIntervals(const RankData& rank);

// One matched message.
struct P2PMessage {
  int sender = -1;  // world ranks
  int receiver = -1;
  TimeNs posted = 0;           // the send (or isend) call's enter on the sender
  TimeNs receive_posted = 0;   // the receive (or irecv) call's enter on the receiver
  TimeNs blocked = 0;          // the receiver entered its blocking receive / wait
  DurationNs wait = 0;         // Late Sender: the receiver's wait for the send
  DurationNs direct = 0;       // the part of `wait` the sender's own delay explains
  TimeNs send_blocked = 0;     // the sender entered its blocking send / the Wait of its Isend
  DurationNs send_wait = 0;    // Late Receiver: the sender's wait for the receive to be posted
  DurationNs send_direct = 0;  // the part of `send_wait` the receiver's own delay explains
  size_t send_record = 0;      // index into the sender's RankData::p2p (its Send / Isend)
  size_t receive_record = 0;   // index into the receiver's (its Recv, or the Wait of its Irecv)
  // The records whose enters send_blocked and receive_posted are: the sender's Send or the Wait
  // of its Isend, and (where receive_posted is known) the receiver's Recv or Irecv.
  size_t send_blocked_record = 0;
  size_t receive_posted_record = 0;
  Bytes bytes = 0;  // the send's (its Send / Isend record's)
};

// What the blame model's dependencies and trace.json's arrows read of a matched message: who,
// which records, and the key messages are ordered by. Kept per message where the messages are
// not (a session read window by window: 56 bytes where a P2PMessage takes 120).
struct MessageLink {
  int sender = -1;  // world ranks
  int receiver = -1;
  TimeNs blocked = 0;  // P2PMessage::blocked: the first part of the order's key
  size_t send_record = 0;
  size_t receive_record = 0;
  size_t send_blocked_record = 0;
  size_t receive_posted_record = 0;
  bool send_waited = false;           // send_wait > 0: the sender waited for the receive's post
  bool receive_posted_known = false;  // receive_posted > 0
};

MessageLink LinkOf(const P2PMessage& m);

// Links as far as trace.json reads them: sender, receiver and their records (the rest 0).
P2PMessage MessageOf(const MessageLink& link);

struct P2PMatchStats {
  int sends = 0;
  int receives = 0;
  int matched = 0;
  int unmapped = 0;  // records whose peer could not be read as a world rank
  // The first point-to-point call's enter and the last one's exit, of any rank.
  TimeNs first_call = std::numeric_limits<TimeNs>::max();
  TimeNs last_call = std::numeric_limits<TimeNs>::min();
  // From the first call to the last (0 without calls): the span the waits are weighed against.
  DurationNs calls_span() const { return last_call >= first_call ? last_call - first_call : 0; }
};

// Every matched message, in receiver block order (OrderMessages).
std::vector<P2PMessage> MatchMessages(const Session& aligned, P2PMatchStats* stats = nullptr);

// Point-to-point messages matched window by window (docs/design.md, "Cost bounded by the
// window"): each window's records are added and the messages both of whose sides are complete
// leave the fold when it closes, so memory is bounded by what is in flight across a cut (posts
// not yet waited for, sides whose peer has not reached them, each rank's blocked time back to
// the oldest of those), not by the run. MatchMessages is this fold over one window.
//
// Posted calls and their Waits are paired in the order of their enters per channel, greedily: a
// Wait that finds no post pending on its channel (an MPI_ANY_SOURCE Irecv, whose peer was not
// known at its post) leaves the channel unpaired from there on; a post that is never waited for
// (MPI_Request_free) holds its channel's later sides until the end, where it is released
// unpaired. A rank's records are assumed to come from one thread in the order of their enters
// across windows (a call that ends in a later window began after the calls of earlier ones).
class MessageFold {
 public:
  // `world_size` ranks; `world_comm` is MPI_COMM_WORLD's id, on which communicator ranks are
  // world ranks for records without world_peer.
  MessageFold(int world_size, uint64_t world_comm);
  ~MessageFold();
  MessageFold(const MessageFold&) = delete;
  MessageFold& operator=(const MessageFold&) = delete;

  // A collective call, read only to place peers of records without world_peer: add a window's
  // collectives before its point-to-point records.
  void AddCollective(int world_rank, const CollectiveRecord& call);
  // One point-to-point record of the window; `index` is its index in the rank's RankData::p2p.
  void Add(int world_rank, size_t index, const P2PRecord& record);
  // The rank's MPI calls are all in up to `t`: a call of it not added yet began (its polling
  // too) at or after t (a window's cut on the rank, an agent's watermark, no later than a call
  // open there). Once reported, it is the rank's progress; without it, its latest
  // point-to-point call's exit.
  void Reached(int world_rank, TimeNs t);
  // Closes the window: the messages matched in it, in no particular order.
  std::vector<P2PMessage> TakeMatched();
  // At the end of the run: closes the last window, then releases the posts never waited for
  // (an Isend as its own blocking; an Irecv without its Wait gives no side); the messages of both.
  std::vector<P2PMessage> Finish();
  const P2PMatchStats& stats() const { return stats_; }
  // As of the last close: the earliest time at which a wait not matched yet may have begun on
  // another rank with `world_rank` to blame (a receive waiting for its send, a send waiting for
  // its receive), so what a reader of the messages keeps of the rank before it will not be asked
  // about again. Before any rank reported progress (Reached, or a record), the oldest time.
  TimeNs WaitsFrom(int world_rank) const;
  // What the fold holds across the cut: sides released but not matched, posts pending, probes
  // not yet used, and blocked intervals kept.
  size_t held() const;
  // As of the last close: no side of a message is held, neither a post waiting for its Wait nor
  // a released side waiting for its peer's (probes and blocked intervals may be), so every
  // message with a call before the cut has been matched.
  bool Quiet() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
  P2PMatchStats stats_;
};

// Orders messages as MatchMessages does: by the receiver's blocking, then receiver, sender and
// the records.
void OrderMessages(std::vector<P2PMessage>* messages);
void OrderMessages(std::vector<MessageLink>* links);  // the same order
void OrderMessages(std::span<MessageLink> links);

}  // namespace rankscope
