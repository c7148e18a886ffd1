#include "launchers/session_coordinator.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <utility>

#include "coordinator/pipeline.h"
#include "coordinator/service.h"

namespace rankscope {
namespace {

bool IsTty(int fd) { return isatty(fd) == 1; }

void PrintReport(const PipelineOutput& out, const std::string& dir) {
  bool color = IsTty(STDERR_FILENO) && std::getenv("NO_COLOR") == nullptr;
  std::fprintf(stderr, "\n%s", color ? out.report_text_color.c_str() : out.report_text.c_str());
  std::fprintf(stderr,
               "rankscope: session written to %s/ (report.txt .json .html, trace.json, "
               "session.sqlite)\n",
               dir.c_str());
}

}  // namespace

void KeepRecordsOnDisk(CoordinatorService& service, const std::string& dir,
                       const std::string& session_id) {
  service.KeepRecordsIn((dir.empty() ? std::string(".") : dir) + "/.rankscope-records-" +
                        session_id + ".sqlite");
}

int WriteSessionReport(CoordinatorService& service, Session extra, const std::string& out_dir,
                       bool quiet, bool full_trace) {
  Session session = service.TakeSession();
  const std::unique_ptr<RecordSpill> spill = service.TakeRecordSpill();
  session.command = extra.command;
  session.launcher_exit_code = extra.launcher_exit_code;
  session.live_findings = std::move(extra.live_findings);
  session.live_stalls = std::move(extra.live_stalls);
  if (session.launcher.empty() || session.launcher == "none") session.launcher = extra.launcher;
  session.end = MonotonicNow();
  for (const std::string& p : service.Problems()) session.partial_reasons.push_back(p);
  for (const std::string& n : service.RefusedNotes()) session.analysis_notes.push_back(n);
  for (const std::string& p : extra.partial_reasons) session.partial_reasons.push_back(p);
  session.partial = !session.partial_reasons.empty();
  const OutputOptions output{full_trace ? 0 : kDefaultMaxTraceEvents};
  Result<PipelineOutput> out =
      spill != nullptr
          ? AnalyzeAndWrite(std::move(session), *spill, out_dir, AnalysisOptions{}, output)
          : AnalyzeAndWrite(std::move(session), out_dir, AnalysisOptions{}, output);
  if (!out.ok()) {
    std::fprintf(stderr, "rankscope: could not write the session to %s: %s\n", out_dir.c_str(),
                 out.status().message().c_str());
    return 1;
  }
  if (!out->write_error.empty()) {
    // The analysis is whole: show it, then say what the folder lacks.
    if (!quiet) std::fprintf(stderr, "\n%s", out->report_text.c_str());
    std::fprintf(stderr, "rankscope: the session folder %s is incomplete: %s\n", out_dir.c_str(),
                 out->write_error.c_str());
    return 1;
  }
  if (!quiet) PrintReport(out.value(), out_dir);
  return 0;
}

// This host's address for ranks on other hosts: what the host name resolves to, unless that is a
// loopback address (Debian maps it to 127.0.1.1), then the first non-loopback IPv4 interface;
// 127.0.0.1 when there is none (then only local ranks can connect, and rankscope says so).
std::string ReachableHostAddress() {
  auto loopback = [](const in_addr& a) { return (ntohl(a.s_addr) >> 24) == 127; };
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    addrinfo* found = nullptr;
    if (getaddrinfo(name, nullptr, &hints, &found) == 0) {
      for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
        const in_addr addr = reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr;
        if (!loopback(addr)) {
          char text[INET_ADDRSTRLEN] = {};
          inet_ntop(AF_INET, &addr, text, sizeof(text));
          freeaddrinfo(found);
          return text;
        }
      }
      freeaddrinfo(found);
    }
  }
  ifaddrs* interfaces = nullptr;
  std::string out;
  if (getifaddrs(&interfaces) == 0) {
    for (ifaddrs* i = interfaces; i != nullptr && out.empty(); i = i->ifa_next) {
      if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
      const in_addr addr = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr;
      if (loopback(addr) || !(i->ifa_flags & IFF_UP)) continue;
      char text[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, &addr, text, sizeof(text));
      out = text;
    }
    freeifaddrs(interfaces);
  }
  if (out.empty()) {
    std::fprintf(stderr,
                 "rankscope: no network address besides loopback: ranks on other hosts cannot "
                 "reach the coordinator (pass --bind ADDRESS)\n");
    return "127.0.0.1";
  }
  return out;
}

Result<std::unique_ptr<CoordinatorServer>> StartSessionCoordinator(
    const std::string& session_id, const std::string& bind_address) {
  Result<std::string> token = NewSessionToken();
  if (!token.ok()) return token.status();
  CoordinatorConfig config;
  config.session_id = session_id;
  config.token = token.value();
  config.bind_address = bind_address.empty() ? ReachableHostAddress() : bind_address;
  auto server = std::make_unique<CoordinatorServer>(config);
  if (Status s = server->Start(); !s.ok()) return s;
  setenv("RANKSCOPE_TOKEN", config.token.c_str(), 1);
  return server;
}

}  // namespace rankscope
