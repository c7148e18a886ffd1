// The agent's view of NCCL in its rank: decides the NCCL debug environment for the program
// (NCCL_DEBUG=INFO with the subsystems we parse, a per-rank NCCL_DEBUG_FILE, and on local rank
// 0 a topology dump), tails the log files while the rank runs, and at the end turns them into a
// protobuf summary. Variables the user already set are left alone; then their files are read.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/identity.h"
#include "model/nccl/nccl_log_parser.h"
#include "rankscope/v1/rankscope.pb.h"

namespace rankscope {

struct NcclPlan {
  std::vector<std::string> set_env;  // "NAME=value" entries to add to the program's environment
  std::string log_glob;              // files to read ('*' where NCCL substitutes %h / %p)
  // The user's NCCL_DEBUG_FILE when it names the pid (%p): ranks may share its directory, so
  // each agent reads only its own program's file (Start narrows log_glob with the pid).
  std::string user_pattern;
  std::string topology_file;  // where the topology dump lands (empty = none expected)
  std::string note;           // why rankscope cannot see NCCL's log, if it cannot
};

// Pure: what to set, given the rank's environment, identity, a private directory and the
// session id (which names the topology dump file identically on every rank).
NcclPlan PlanNcclEnvironment(const EnvMap& env, const AgentIdentity& id, const std::string& dir,
                             const std::string& session_id, const std::string& tmp_dir);

class NcclCollector {
 public:
  explicit NcclCollector(NcclPlan plan);
  ~NcclCollector();  // stops the tail thread

  NcclCollector(const NcclCollector&) = delete;
  NcclCollector& operator=(const NcclCollector&) = delete;

  // Starts reading the log files of `program_pid` as they grow (every 500 ms).
  void Start(int program_pid);
  // Reads what is left, stops, and returns the summary (nullopt if no NCCL log appeared).
  std::optional<v1::NcclSummary> Finish();
  // The topology dump's contents, if NCCL wrote one.
  std::optional<v1::TopologyDump> Topology() const;

 private:
  struct TailedFile {
    std::string path;
    off_t offset = 0;
    std::unique_ptr<NcclLogParser> parser;
  };
  void Poll();

  NcclPlan plan_;
  std::mutex mu_;
  std::map<std::string, TailedFile> files_;  // guarded by mu_
  std::thread thread_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // guarded by stop_mu_; Finish wakes the tail thread at once
};

}  // namespace rankscope
