// Moves every record of a session from its rank's local clock onto the coordinator's clock,
// using each rank's fitted ClockModel. Pure function.
#pragma once

#include "coordinator/session.h"

namespace rankscope {

// Fits each rank's clock model from its samples (ranks without usable samples keep the
// identity model and get clock_error set), then converts all record times. Idempotent: an
// already aligned session is returned unchanged.
Session AlignSession(Session session);

// One record's times from its rank's clock onto the coordinator's, as AlignSession moves them.
void ToCoordinator(const ClockModel& m, CollectiveRecord* c);
void ToCoordinator(const ClockModel& m, P2PRecord* p);
void ToCoordinator(const ClockModel& m, MpiCallRecord* c);
void ToCoordinator(const ClockModel& m, RangeRecord* r);
void ToCoordinator(const ClockModel& m, GpuActivityRecord* g);

}  // namespace rankscope
