// Where a thread's polling began (P2PRecord::spin_start), from the calls it makes: pure, so the
// rule is tested without MPI (poll_run_test.cc); pmpi_common.cc keeps one per thread.
#pragma once

#include "core/time.h"

namespace rankscope::inject {

// Calls closer together than this continue a run of polls. A tight MPI_Test or MPI_Iprobe loop
// leaves well under a microsecond between calls; a thread descheduled between two polls, or
// work between them, ends the run (the polling before it then counts as the thread's own work).
inline constexpr DurationNs kSpinGap = 5'000;

// A thread's run of polls that completed nothing. `last_record_exit` is the exit of the last
// MPI record the thread emitted (0: none): a recorded call between two polls ends the run.
class PollRun {
 public:
  // A poll over [enter, exit] completed nothing. Returns where the run began.
  TimeNs Failed(TimeNs enter, TimeNs exit, TimeNs last_record_exit) {
    if (!Continues(enter, last_record_exit)) start_ = enter;
    last_ = exit;
    return start_;
  }

  // A call entered at `enter` completed or found something: where the polling before it began
  // (`enter` when it did not poll before). Ends the run.
  TimeNs Completed(TimeNs enter, TimeNs last_record_exit) {
    const TimeNs start = Continues(enter, last_record_exit) ? start_ : enter;
    start_ = 0;
    last_ = 0;
    return start;
  }

 private:
  bool Continues(TimeNs enter, TimeNs last_record_exit) const {
    return start_ != 0 && enter - last_ <= kSpinGap && last_record_exit <= last_;
  }

  TimeNs start_ = 0;  // the run's first poll's enter; 0: no run
  TimeNs last_ = 0;   // the run's last poll's exit
};

}  // namespace rankscope::inject
