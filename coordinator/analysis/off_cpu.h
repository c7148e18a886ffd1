// Why a rank was off its CPU, from the agents' samples of its main thread every 20 ms
// (core/proc_stats.h MainThreadStates): frozen by a cgroup freezer, stopped by a signal, or
// blocked in one kernel function (a pipe it writes faster than it is drained, storage, a lock,
// a sleep) clearly more often than the other ranks' main threads. What a straggler that used no
// more CPU than the others, and was not waiting for one, was doing instead. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "coordinator/findings.h"
#include "coordinator/session.h"

namespace rankscope {

// What a blocked thread's kernel function (wchan) means, by the families of names Linux uses
// ("anon_pipe_write" and "pipe_write" alike); "" for a function not in the table.
std::string DescribeWchan(std::string_view wchan);

// The rank's off-CPU cause, when its main thread (>= 25 samples) spent a share of its samples
// in one category (stopped, frozen, or one wchan meaning) at least 0.15 and 0.1 above the other
// ranks' median share in it, and more than any other category. nullopt otherwise, or without
// samples for the rank or the others.
std::optional<OffCpuCause> FindOffCpuCause(const Session& session, int rank);

// How far past FindOffCpuCause's threshold the cause is, for the confidence (ThresholdMargin of
// its share above the others' against 0.1): 0.5 at it, 0.9 at 0.5 above.
double OffCpuMargin(const OffCpuCause& cause);

}  // namespace rankscope
