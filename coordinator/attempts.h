// torchrun elastic restarts: when a worker fails, torchrun restarts all of them, and every
// attempt's agents register apart (TORCHELASTIC_RESTART_COUNT in their identity). The attempts
// must not be matched against each other (their collectives reuse the same sequence numbers),
// so the analyses and the timeline cover the last attempt, and the earlier ones are kept beside
// it (Session::earlier_attempts): in report.json's "attempts" and in the session store.
#pragma once

#include <string>

#include "coordinator/session.h"

namespace rankscope {

// Moves the ranks of attempts before the last (lower restart count) from session->ranks to
// session->earlier_attempts. Returns the number of attempts (1 without restarts). Idempotent.
int SeparateAttempts(Session* session);

// One sentence on what happened in the earlier attempts ("torchrun restarted the workers 1
// time: attempt 0 ended with rank 1 exiting with code 1 ..."), empty without restarts.
std::string DescribeAttempts(const Session& session);

}  // namespace rankscope
