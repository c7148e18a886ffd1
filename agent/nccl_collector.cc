#include "agent/nccl_collector.h"

#include <fcntl.h>
#include <glob.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "model/nccl/rank_nccl.h"
#include "proto/convert.h"

namespace rankscope {
namespace {

std::string Get(const EnvMap& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

// NCCL expands %h (host) and %p (pid) in NCCL_DEBUG_FILE; a glob finds whatever it made.
std::string GlobOf(const std::string& pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() &&
        (pattern[i + 1] == 'h' || pattern[i + 1] == 'p')) {
      out += '*';
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

}  // namespace

NcclPlan PlanNcclEnvironment(const EnvMap& env, const AgentIdentity& id, const std::string& dir,
                             const std::string& session_id, const std::string& tmp_dir) {
  NcclPlan plan;
  const std::string user_debug = Get(env, "NCCL_DEBUG");
  const std::string user_file = Get(env, "NCCL_DEBUG_FILE");
  if (user_debug.empty()) {
    plan.set_env.push_back("NCCL_DEBUG=INFO");
    if (Get(env, "NCCL_DEBUG_SUBSYS").empty()) {
      plan.set_env.push_back("NCCL_DEBUG_SUBSYS=INIT,COLL,GRAPH,TUNING,ENV");
    }
  }
  if (!user_file.empty()) {
    plan.log_glob = GlobOf(user_file);
    if (user_file.find("%p") != std::string::npos) plan.user_pattern = user_file;
  } else if (user_debug.empty()) {
    plan.set_env.push_back("NCCL_DEBUG_FILE=" + dir + "/nccl.%p.log");
    plan.log_glob = dir + "/nccl.*.log";
  } else {
    // The user asked for NCCL's log on the program's output; moving it would change that.
    plan.note =
        "NCCL_DEBUG is set without NCCL_DEBUG_FILE, so NCCL logs to the program's "
        "output and rankscope cannot read it; set NCCL_DEBUG_FILE (e.g. "
        "/tmp/nccl.%h.%p.log) to have communicators and calls in the report";
  }
  // One topology dump per node. NCCL dumps from the rank whose (communicator) rank equals
  // NCCL_TOPO_DUMP_FILE_RANK, read per process, so every rank of a node names that node's local
  // rank 0 (rank - local_rank under the block placement mpirun, srun and torchrun use by
  // default) and that rank's agent reads the file. Every rank must set the file: NCCL 2.28 hangs
  // the first collective when only some ranks do (seen on 2xH200); different dump ranks per
  // process were seen to work there (both processes dumped, no hang).
  const std::string user_topo = Get(env, "NCCL_TOPO_DUMP_FILE");
  const std::string user_topo_rank = Get(env, "NCCL_TOPO_DUMP_FILE_RANK");
  int dump_rank = id.rank - id.local_rank;
  if (!user_topo_rank.empty()) {
    dump_rank = std::atoi(user_topo_rank.c_str());
  } else {
    plan.set_env.push_back("NCCL_TOPO_DUMP_FILE_RANK=" + std::to_string(dump_rank));
  }
  std::string path = user_topo;
  if (path.empty()) {
    std::string node = id.node_name.empty() ? id.host : id.node_name;
    for (char& c : node) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
    }
    path = tmp_dir + "/rankscope-" + session_id + (node.empty() ? "" : "-" + node) + ".topo.xml";
    plan.set_env.push_back("NCCL_TOPO_DUMP_FILE=" + path);
  }
  if (id.rank == dump_rank) plan.topology_file = path;
  return plan;
}

NcclCollector::NcclCollector(NcclPlan plan) : plan_(std::move(plan)) {}

NcclCollector::~NcclCollector() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void NcclCollector::Start(int program_pid) {
  if (!plan_.user_pattern.empty()) {
    std::string pattern = plan_.user_pattern;
    for (size_t at = pattern.find("%p"); at != std::string::npos; at = pattern.find("%p")) {
      pattern.replace(at, 2, std::to_string(program_pid));
    }
    plan_.log_glob = GlobOf(pattern);
  }
  if (plan_.log_glob.empty()) return;
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(stop_mu_);
    while (!stopping_) {
      lock.unlock();
      Poll();
      lock.lock();
      stop_cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stopping_; });
    }
  });
}

void NcclCollector::Poll() {
  if (plan_.log_glob.empty()) return;
  glob_t matches{};
  if (glob(plan_.log_glob.c_str(), 0, nullptr, &matches) != 0) {
    globfree(&matches);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < matches.gl_pathc; ++i) {
    const std::string path = matches.gl_pathv[i];
    TailedFile& f = files_[path];
    if (!f.parser) {
      f.path = path;
      f.parser = std::make_unique<NcclLogParser>();
    }
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[64 * 1024];
    for (;;) {
      ssize_t n = pread(fd, buf, sizeof(buf), f.offset);
      if (n <= 0) break;
      f.parser->Feed(std::string_view(buf, static_cast<size_t>(n)));
      f.offset += n;
    }
    close(fd);
  }
  globfree(&matches);
}

std::optional<v1::NcclSummary> NcclCollector::Finish() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  Poll();
  std::lock_guard<std::mutex> lock(mu_);
  if (files_.empty()) return std::nullopt;
  RankNccl summary;
  for (auto& [path, f] : files_) {
    f.parser->Finish();
    AppendNcclLog(f.parser->log(), path, &summary);
  }
  return ToProto(summary);
}

std::optional<v1::TopologyDump> NcclCollector::Topology() const {
  if (plan_.topology_file.empty()) return std::nullopt;
  std::ifstream in(plan_.topology_file);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().empty()) return std::nullopt;
  v1::TopologyDump dump;
  dump.set_source(plan_.topology_file);
  dump.set_xml(text.str().substr(0, 4 << 20));  // dumps are kilobytes; cap a runaway file
  return dump;
}

}  // namespace rankscope
