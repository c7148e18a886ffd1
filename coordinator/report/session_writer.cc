#include "coordinator/report/session_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <string_view>
#include <system_error>
#include <utility>

#include "coordinator/report/report_html.h"
#include "coordinator/report/report_json.h"
#include "coordinator/report/report_text.h"
#include "coordinator/report/session_store.h"
#include "coordinator/report/trace_json.h"

namespace rankscope {

namespace {

std::string Errno(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// Writes all of `content` to `fd`, retrying short writes and EINTR.
bool WriteAll(int fd, std::string_view content) {
  while (!content.empty()) {
    ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    content.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Strings from the profiled program may not be valid UTF-8; a report must still be written.
std::string Dump(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// What WriteFiles could not write: "trace.json: cannot write ...: No space left on device".
using Unwritten = std::vector<std::string>;

void Write(const std::filesystem::path& path, std::string_view content, Unwritten* unwritten) {
  if (Status s = WriteFileAtomically(path.string(), content); !s.ok()) {
    unwritten->push_back(path.filename().string() + ": " + s.message());
  }
}

// The lines report.txt ends with when some files are missing.
std::string UnwrittenText(const Unwritten& unwritten) {
  std::string out = "\nNot written (this folder is incomplete):\n";
  for (const std::string& u : unwritten) out += "  " + u + "\n";
  return out;
}

// The report and trace files (all but the database, which `saved` writes): every one is tried
// whatever the others did; trace.json and report.html first, then report.json and report.txt,
// which list the files not written (and the database's failure), so no report claims a folder
// it does not describe. The report's text is set whatever was written, for the terminal.
Unwritten WriteFiles(const std::filesystem::path& folder, const Session& session,
                     const SessionMatches& matches, const std::vector<Finding>& findings,
                     std::string* report_text_out, std::string* report_text_color_out,
                     const std::optional<TraceWindow>& trace_window, const BlameModel* blame,
                     const RecordFacts& facts, std::future<Status>* saved) {
  const GpuReport gpu = BuildGpuReport(session);
  const CollectiveOverview overview = SummarizeCollectives(matches.collectives);
  Unwritten unwritten;
  // Streamed: a long GPU session's trace is hundreds of MB.
  if (Status s = WriteFileAtomically((folder / "trace.json").string(),
                                     [&](const std::function<bool(std::string_view)>& write) {
                                       return StreamChromeTrace(session, matches, trace_window,
                                                                write);
                                     });
      !s.ok()) {
    unwritten.push_back("trace.json: " + s.message());
  }
  Write(folder / "report.html",
        BuildReportHtml(session, matches.collectives, findings, gpu, blame, &facts), &unwritten);
  if (Status db = saved->get(); !db.ok()) unwritten.push_back("session.sqlite: " + db.message());
  nlohmann::json json = BuildReportJson(session, findings, gpu, overview, blame, &facts);
  if (!unwritten.empty()) json["job"]["files_not_written"] = unwritten;
  const std::string missing = unwritten.empty() ? "" : UnwrittenText(unwritten);
  std::string text =
      BuildReportText(session, findings, gpu, overview, /*color=*/false, &facts) + missing;
  Write(folder / "report.json", Dump(json, 2) + "\n", &unwritten);
  Write(folder / "report.txt", text, &unwritten);
  if (report_text_out != nullptr) *report_text_out = std::move(text);
  if (report_text_color_out != nullptr) {
    *report_text_color_out =
        BuildReportText(session, findings, gpu, overview, /*color=*/true, &facts) + missing;
  }
  return unwritten;
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view content) {
  return WriteFileAtomically(
      path, [&](const std::function<bool(std::string_view)>& write) { return write(content); });
}

Status WriteFileAtomically(
    const std::string& path,
    const std::function<bool(const std::function<bool(std::string_view)>&)>& produce) {
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Error(Errno("cannot create", temp));
  std::string error;
  bool ok = produce([&](std::string_view piece) {
    if (!error.empty()) return false;
    if (!WriteAll(fd, piece)) error = Errno("cannot write", temp);
    return error.empty();
  });
  ok = ok && error.empty();
  if (!ok && error.empty()) error = "cannot write " + temp + ": its content could not be made";
  if (::close(fd) != 0 && ok) {
    ok = false;
    error = Errno("cannot write", temp);
  }
  if (ok && std::rename(temp.c_str(), path.c_str()) != 0) {
    ok = false;
    error = Errno("cannot rename " + temp + " to", path);
  }
  if (!ok) {
    std::remove(temp.c_str());
    return Status::Error(error);
  }
  return Status::Ok();
}

Status WriteSessionFolder(const std::string& dir, const Session& session,
                          const SessionMatches& matches, const std::vector<Finding>& findings,
                          std::string* report_text_out, std::string* report_text_color_out,
                          const std::optional<TraceWindow>& trace_window, const BlameModel* blame,
                          const RecordFacts* given_facts, const SaveOptions& save_options) {
  const RecordFacts gathered = given_facts ? RecordFacts{} : GatherRecordFacts(session);
  const RecordFacts& facts = given_facts ? *given_facts : gathered;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Error("cannot create session folder " + dir + ": " + ec.message());
  const std::filesystem::path folder(dir);

  // The database on a second thread: it and trace.json are the two slow writers, and both only
  // read the session. Without a thread to spare, one after the other.
  auto save = [&] {
    return SaveSession((folder / "session.sqlite").string(), session, findings, save_options);
  };
  std::future<Status> saved;
  try {
    saved = std::async(std::launch::async, save);
  } catch (const std::system_error&) {
    saved = std::async(std::launch::deferred, save);
  }
  const Unwritten unwritten = WriteFiles(folder, session, matches, findings, report_text_out,
                                         report_text_color_out, trace_window, blame, facts, &saved);
  if (unwritten.empty()) return Status::Ok();
  std::string error;
  for (const std::string& u : unwritten) error += (error.empty() ? "" : "; ") + u;
  return Status::Error(error);
}

}  // namespace rankscope
