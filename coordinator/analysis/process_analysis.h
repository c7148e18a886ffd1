// What can be said about ranks seen only from outside (rankscope attach on a job launched without
// rankscope: agent/outside_sampler.h): their processes' /proc figures over the window, no call
// timings. A rank whose figures stand apart from the other ranks' is named, with the numbers:
//   - I/O-heavy: it read (read() calls, rchar) at least `factor` times the others' median and at
//     least `min_read_bytes`; "from storage" when its block-layer reads (read_bytes) stand out too;
//   - blocked on storage: block-I/O delay at least `min_blkio_share` of the window and `factor`
//     times the others';
//   - idle while the others work: CPU time at most `idle_share` of the others' median while they
//     used at least `busy_share` of the window (ranks polling in MPI or NCCL for a late peer burn
//     CPU; the late one sleeps, waits on I/O or on a lock).
// Pure; runs only on sessions seen from outside only (Session::SampledFromOutsideOnly; Diagnose
// gates it), so a full capture's analyses are not second-guessed.
#pragma once

#include <vector>

#include "coordinator/findings.h"
#include "coordinator/session.h"
#include "core/time.h"

namespace rankscope {

struct ProcessOutlierOptions {
  double factor = 5.0;
  Bytes min_read_bytes = Bytes{64} << 20;
  double min_blkio_share = 0.2;
  double idle_share = 0.3;
  double busy_share = 0.5;
  int min_ranks = 3;  // fewer ranks with figures: no "others" to compare with
};

std::vector<Finding> FindProcessOutliers(const Session& session,
                                         const ProcessOutlierOptions& options);

}  // namespace rankscope
