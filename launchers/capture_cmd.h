// `rankscope capture`: starts (and after --for, stops) the capture of a running session, most
// often one launched with `rankscope run --dormant`. `run` leaves the session's address and
// secret in an endpoint file only its user can read (EndpointDir(), mode 0700/0600), removed
// when the run ends; capture reads it and sends an authenticated Trigger to the coordinator,
// which passes START_CAPTURE / STOP_CAPTURE on to every agent.
#pragma once

#include <string>

#include "core/status.h"

namespace rankscope {

// $XDG_RUNTIME_DIR/rankscope when set, else /tmp/rankscope-<uid>.
std::string EndpointDir();

// Writes <EndpointDir()>/<session_id>.endpoint ("address\ntoken\n", 0600) and returns its path.
Result<std::string> WriteEndpoint(const std::string& session_id, const std::string& address,
                                  const std::string& token);

struct CaptureOptions {
  std::string session;  // a session id; empty: the only running session
  double for_s = 0;     // > 0: stop again after this many seconds
  bool stop = false;    // stop instead of start
  int agents = 0;       // > 0: first wait until this many agents have registered
  double wait_s = 60;   // ... for at most this long
};

int RunCapture(const CaptureOptions& options);

enum class TriggerKind { kStart, kStop, kCount };

// Sends START_CAPTURE or STOP_CAPTURE to the coordinator at `address` with the session secret and
// returns how many agents it was queued for; kCount sends nothing and returns how many agents have
// registered so far.
Result<int> TriggerCapture(const std::string& address, const std::string& token, TriggerKind kind);

}  // namespace rankscope
