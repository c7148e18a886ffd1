// Point-to-point wait states (Scalasca's Late Sender): a receiver blocked in MPI_Recv, or in the
// Wait that completes an MPI_Irecv, before the matching send was even posted, waited for the
// sender. Pure function over an aligned session.
//
// Matching: MPI does not let messages between one pair on one communicator and tag overtake each
// other, so the i-th send from S to R on (comm, tag) meets R's i-th receive from S on it. Peers
// are communicator ranks, read as world ranks through the collectives (each rank's comm_rank on
// that communicator) or, on MPI_COMM_WORLD, directly. Receives with MPI_ANY_TAG unresolved are
// left out.
//
// Wait chains (Scalasca's delay analysis): a sender that was itself blocked in point-to-point
// calls while its receiver waited may only be passing a delay on (a pipeline stage waiting for
// the stage before it). Over the synchronisation interval of a message (from the previous message
// between the same two ranks, any tag, to this send) the sender's busy time (outside point-to-point
// calls) is compared with the receiver's busy time up to its blocking: the excess, at most the
// wait, is the sender's direct delay; the rest of the wait was propagated. A late sender is judged
// on its direct delays over all its messages, so the slow stage is named, not the ones behind it,
// and random jitter (late half the time, early the other half) is not.
#pragma once

#include <string>
#include <vector>

#include "coordinator/findings.h"
#include "coordinator/session.h"
#include "core/time.h"

namespace rankscope {

struct LateSenderOptions {
  // A rank is reported when the direct waits it caused are at least this share of its receivers'
  // time (the session's point-to-point span times the number of ranks that waited for it) ...
  double min_cost_fraction = 0.05;
  // ... the median of its direct delays over all its messages (0 for those not waited for) is at
  // least this ...
  DurationNs min_median_wait = 1 * kNsPerMs;
  // ... and it was late with at least this many messages.
  int min_messages = 5;
  // Severity critical above this share.
  double critical_cost_fraction = 0.25;
};

// One matched message.
struct P2PMessage {
  int sender = -1;  // world ranks
  int receiver = -1;
  TimeNs posted = 0;          // the send (or isend) call's enter on the sender
  TimeNs blocked = 0;         // the receiver entered its blocking receive / wait
  DurationNs wait = 0;        // the receiver's wait for the send (0: the message was there)
  DurationNs direct = 0;      // the part of the wait the sender's own delay explains
  size_t send_record = 0;     // index into the sender's RankData::p2p (its Send / Isend)
  size_t receive_record = 0;  // index into the receiver's (its Recv, or the Wait of its Irecv)
};

struct P2PMatchStats {
  int sends = 0;
  int receives = 0;
  int matched = 0;
  int unmapped = 0;  // records whose peer could not be read as a world rank
};

// Every matched message, in receiver block order.
std::vector<P2PMessage> MatchMessages(const Session& aligned, P2PMatchStats* stats = nullptr);

// "late_sender" findings: per rank, the direct waits it caused, where it was (NVTX) while its
// receivers waited, and next steps.
std::vector<Finding> FindLateSenders(const Session& aligned, const LateSenderOptions& options);

}  // namespace rankscope
