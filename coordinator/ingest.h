// Turning an agent's upload batch into a rank's data: the one place the wire's records become
// the session's, used by the coordinator's Upload RPC and by anything that replays batches.
// Pure.
#pragma once

#include <string>
#include <vector>

#include "coordinator/live_check.h"
#include "coordinator/session.h"
#include "proto/spool.h"
#include "rankscope/v1/rankscope.pb.h"

namespace rankscope {

// Appends the batch's records, notices, exit, NCCL, topology, NVML, /proc and sweep figures to
// `rank` (one it already holds data for: batches arrive in order). An NCCL summary may come in
// parts (proto/upload_chunk.h): a later part's communicators, calls and problems are appended.
// Records of a kind this coordinator does not know are skipped and counted in one notice; strings
// that are not UTF-8 are kept with U+FFFD in place of their bad bytes. Sets rank->finished on the
// final batch.
void AddBatchToRank(const v1::UploadBatch& batch, RankData* rank);

// Takes the batch's running figures into the rank's live tally: time inside MPI as its agent
// counted it (UploadBatch.in_mpi_ns, kept when it reaches later than the tally's `through`) and
// its /proc snapshot, if any (the final one over one so far), with the MPI call its figures so
// far say it is inside. `received`: now on the coordinator's clock (MonotonicNow).
void AddBatchToTally(const v1::UploadBatch& batch, TimeNs received, LiveTally* tally);

// A session rebuilt from agents' spools (proto/spool.h) when its coordinator wrote none: a rank
// per spool (the last spool of a rank and restart count wins), its batches in sequence order,
// each once. Partial, saying so; the launcher's exit code is unknown. `sources` names each spool
// (its file) in the reasons. Session ids that differ are an error.
Result<Session> SessionFromSpools(const std::vector<SpoolContents>& spools,
                                  const std::vector<std::string>& sources);

}  // namespace rankscope
