// Upload batches of bounded size. An agent's queue can hold a million records (a minute of MPI
// calls) and one NCCL summary a call per collective of the whole run; the coordinator refuses
// any message over kMaxUploadMessageBytes before reading it (so a peer without the session's
// secret cannot make it hold more than that per request). The agent therefore sends its queue
// as a sequence of chunks of at most kUploadChunkBytes each, in order.
//
// What a chunk takes, in the order of UploadBatch's fields: whole records of each repeated
// field, and whole singular parts (NCCL summary, topology, NVML, /proc figures) where they fit.
// An NCCL summary that does not fit even in an empty chunk (a call per collective of a long run)
// is split: its scalar fields and as many of its repeated elements as fit go in this chunk, the
// rest in the next ones (the coordinator appends them: coordinator/ingest.h). The exit status
// goes last, in the chunk that empties the queue. A value larger than a chunk that cannot be
// split (a record, another part: a topology dump over the budget) is dropped and counted.
#pragma once

#include <cstddef>

#include "rankscope/v1/rankscope.pb.h"

namespace rankscope {

inline constexpr size_t kMaxUploadMessageBytes = 8u << 20;  // the coordinator's limit
inline constexpr size_t kUploadChunkBytes = 4u << 20;       // what an agent puts in one

struct ChunkTaken {
  bool emptied = false;  // nothing is left in the queue: this chunk may be the final one
  size_t dropped = 0;    // indivisible values over the budget, removed from the queue
};

// Moves from `queue` into `chunk` (cleared first) what fits in `budget` serialized bytes, as the
// header says, leaving the rest in `queue`. At least one value is moved (or dropped) whenever
// the queue is not empty, so repeated calls always drain it. The scalar fields of the batch
// itself (agent_id, batch_seq, dropped_records, final) are the caller's and are not touched.
ChunkTaken TakeChunk(v1::UploadBatch* queue, v1::UploadBatch* chunk,
                     size_t budget = kUploadChunkBytes);

// Whether the queue holds nothing to send: no record and no singular part (its own scalars
// aside).
bool NothingToSend(const v1::UploadBatch& queue);

// Every record a batch carries, of every kind: the elements of each repeated field but the
// sweep's check results. Read from the schema, so a record kind added to UploadBatch is counted
// (the agent's buffer bound and drop accounting: agent/uplink.h).
size_t RecordCount(const v1::UploadBatch& batch);

}  // namespace rankscope
