// Moves every record of a session from its rank's local clock onto the coordinator's clock,
// using each rank's fitted ClockModel. Pure function.
#pragma once

#include "coordinator/session.h"

namespace rankscope {

// Fits each rank's clock model from its samples (ranks without usable samples keep the
// identity model and get clock_error set), then converts all record times. Idempotent: an
// already aligned session is returned unchanged.
Session AlignSession(Session session);

}  // namespace rankscope
