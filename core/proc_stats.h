// What a rank's processes did on their node, from /proc: the rank's program and every process it
// started (DataLoader workers, subprocesses), summed. Read by the agent (agent/proc_sampler.h),
// used by the coordinator as evidence in dataloader findings (I/O-bound, CPU-bound or neither).
#pragma once

#include <cstdint>

namespace rankscope {

struct ProcessTreeStats {
  uint64_t rchar = 0;  // bytes read through read()-like calls (page cache, pipes, sockets)
  uint64_t wchar = 0;
  uint64_t read_bytes = 0;  // bytes the processes made the block layer fetch (storage reads)
  uint64_t write_bytes = 0;
  int64_t cpu_user_ns = 0;  // CPU time, user and kernel, of the processes themselves
  int64_t cpu_system_ns = 0;
  int64_t blkio_delay_ns = 0;  // time blocked on block I/O (0 where delay accounting is off)
  int32_t processes = 0;       // distinct processes seen in the tree
  int32_t samples = 0;         // times /proc was read
  bool io_unreadable = false;  // /proc/PID/io could not be read (permissions): I/O fields are 0
};

}  // namespace rankscope
