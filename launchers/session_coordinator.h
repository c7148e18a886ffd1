// What every command that starts a coordinator for a session of its own shares (`rankscope run`,
// `rankscope coordinator`, `sweep`, `attach`): starting it, keeping its records on disk, and
// writing the session folder and report once the job is over.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"

namespace rankscope {

class CoordinatorServer;
class CoordinatorService;
struct Session;

// The session the coordinator holds, completed by `extra` (command, launcher, its exit code,
// reasons the session is partial), through the analyses into `out_dir`, and the report printed
// unless `quiet`. 0, or 1 when the folder could not be written (said on stderr).
int WriteSessionReport(CoordinatorService& service, Session extra, const std::string& out_dir,
                       bool quiet, bool full_trace = false);

// The session's MPI records kept in a file in `dir` ("" = the current folder) as they arrive
// (RecordSpill, named after the session, made when the first agent registers and removed once
// the session is written), so that the coordinator's memory does not grow with the run; held in
// memory, said on stderr, when the file cannot be made. Call before the agents start.
void KeepRecordsOnDisk(CoordinatorService& service, const std::string& dir,
                       const std::string& session_id);

// This host's address that ranks on other hosts can reach: what the host name resolves to,
// unless that is loopback, then the first non-loopback IPv4 interface; 127.0.0.1 (said on
// stderr) when there is none.
std::string ReachableHostAddress();

// The coordinator of a session rankscope starts for itself (sweep, attach): a fresh secret,
// listening on `bind_address` (empty: ReachableHostAddress()), and the secret put in this
// process's RANKSCOPE_TOKEN for the node commands it starts (srun passes the environment on).
Result<std::unique_ptr<CoordinatorServer>> StartSessionCoordinator(const std::string& session_id,
                                                                   const std::string& bind_address);

}  // namespace rankscope
