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

// The report and trace files (all but the database), in the order a reader wants them.
Status WriteFiles(const std::filesystem::path& folder, const Session& session,
                  const SessionMatches& matches, const std::vector<Finding>& findings,
                  std::string* report_text_out, std::string* report_text_color_out,
                  const std::optional<TraceWindow>& trace_window, const BlameModel* blame) {
  const GpuReport gpu = BuildGpuReport(session);
  const CollectiveOverview overview = SummarizeCollectives(matches.collectives);
  Status s =
      WriteFileAtomically((folder / "report.json").string(),
                          Dump(BuildReportJson(session, findings, gpu, overview, blame), 2) + "\n");
  if (!s.ok()) return s;
  s = WriteFileAtomically((folder / "trace.json").string(),
                          BuildChromeTrace(session, matches, trace_window));
  if (!s.ok()) return s;
  s = WriteFileAtomically((folder / "report.html").string(),
                          BuildReportHtml(session, matches.collectives, findings, gpu, blame));
  if (!s.ok()) return s;
  std::string text = BuildReportText(session, findings, gpu, overview, /*color=*/false);
  s = WriteFileAtomically((folder / "report.txt").string(), text);
  if (!s.ok()) return s;
  if (report_text_out != nullptr) *report_text_out = std::move(text);
  if (report_text_color_out != nullptr) {
    *report_text_color_out = BuildReportText(session, findings, gpu, overview, /*color=*/true);
  }
  return Status::Ok();
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view content) {
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Error(Errno("cannot create", temp));
  bool ok = WriteAll(fd, content);
  std::string error = ok ? "" : Errno("cannot write", temp);
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
                          const std::optional<TraceWindow>& trace_window, const BlameModel* blame) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Error("cannot create session folder " + dir + ": " + ec.message());
  const std::filesystem::path folder(dir);

  // The database on a second thread: it and trace.json are the two slow writers, and both only
  // read the session. Without a thread to spare, one after the other.
  auto save = [&] { return SaveSession((folder / "session.sqlite").string(), session, findings); };
  std::future<Status> saved;
  try {
    saved = std::async(std::launch::async, save);
  } catch (const std::system_error&) {
  }
  Status s = WriteFiles(folder, session, matches, findings, report_text_out, report_text_color_out,
                        trace_window, blame);
  Status db = saved.valid() ? saved.get() : save();
  return db.ok() ? s : db;
}

}  // namespace rankscope
