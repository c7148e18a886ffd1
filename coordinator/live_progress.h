// What a launcher shows of a session while its job runs (`rankscope run`'s status line), read
// from the coordinator without a Snapshot.
#pragma once

#include <cstdint>

namespace rankscope {

struct LiveProgress {
  int ranks = 0;         // agents registered
  int finished = 0;      // of them, those whose final batch came
  int summed = 0;        // of them, those sending compute kernels only summed
  uint64_t records = 0;  // records received so far (every kind an upload counts)
  uint64_t steps = 0;    // the most step ranges (record_facts.h's IsStepRange) one rank sent
  uint64_t dropped = 0;  // records the agents lost (their buffers full)
  int capture = 0;       // the last capture command: 1 start, -1 stop, 0 none yet
};

}  // namespace rankscope
