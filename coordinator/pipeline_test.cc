#include "coordinator/pipeline.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "coordinator/report/session_store.h"
#include "coordinator/report/trace_json.h"

namespace rankscope {
namespace {

namespace fs = std::filesystem;

// A file's text with `dir` written as <dir> (the next steps name the folder they were written to).
std::string Read(const fs::path& file, const std::string& dir) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  for (size_t at = s.find(dir); at != std::string::npos; at = s.find(dir, at)) {
    s.replace(at, dir.size(), "<dir>");
  }
  return s;
}

// A recorded session re-analysed from its file window by window (ReanalyzeStored: its records
// never loaded, only those trace.json and report.html draw) writes the folder the loaded session
// writes: every report byte for byte and the same session.sqlite, with trace.json whole and cut
// to a window of a third and a tenth of its events.
TEST(ReanalyzeStored, WritesTheFolderTheLoadedSessionWrites) {
  const fs::path fixtures = fs::path(RANKSCOPE_FIXTURES_DIR) / "cpu2-real-apps";
  const std::string tmp = ::testing::TempDir();
  AnalysisOptions options;
  options.by_window = WindowOptions{.target = 100'000'000, .max_window = 400'000'000};
  int sessions = 0;
  for (const char* name : {"hpcc-freeze-r0", "lammps-competitor-r1", "mpi_train-freeze-r1"}) {
    const std::string path = (fixtures / name / "session.sqlite").string();
    Result<Session> loaded = LoadSession(path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    const size_t events = CountTraceEvents(loaded.value());
    for (size_t budget : {size_t{0}, events / 3, events / 10}) {
      SCOPED_TRACE(std::string(name) + " trace budget " + std::to_string(budget));
      const std::string whole = (fs::path(tmp) / "pipeline_whole").lexically_normal().string();
      const std::string windowed = (fs::path(tmp) / "pipeline_stored").lexically_normal().string();
      fs::remove_all(whole);
      fs::remove_all(windowed);
      Result<PipelineOutput> a =
          ReanalyzeAndWrite(loaded.value(), whole, options, OutputOptions{budget});
      Result<PipelineOutput> b = ReanalyzeStored(path, windowed, options, OutputOptions{budget});
      ASSERT_TRUE(a.ok()) << a.status().message();
      ASSERT_TRUE(b.ok()) << b.status().message();
      for (const char* file : {"report.json", "report.txt", "report.html", "trace.json"}) {
        const std::string want = Read(fs::path(whole) / file, whole);
        const std::string got = Read(fs::path(windowed) / file, windowed);
        EXPECT_FALSE(want.empty()) << file;
        EXPECT_TRUE(want == got) << file << " differs (" << want.size() << " vs " << got.size()
                                 << " bytes)";
      }
      Result<Session> want = LoadSession(whole + "/session.sqlite");
      Result<Session> got = LoadSession(windowed + "/session.sqlite");
      ASSERT_TRUE(want.ok() && got.ok());
      ASSERT_EQ(want->ranks.size(), got->ranks.size());
      EXPECT_EQ(want->analysis_notes, got->analysis_notes);
      for (size_t r = 0; r < want->ranks.size(); ++r) {
        EXPECT_TRUE(want->ranks[r].collectives == got->ranks[r].collectives);
        EXPECT_TRUE(want->ranks[r].p2p == got->ranks[r].p2p);
        EXPECT_TRUE(want->ranks[r].mpi_calls == got->ranks[r].mpi_calls);
        EXPECT_TRUE(want->ranks[r].ranges == got->ranks[r].ranges);
      }
    }
    ++sessions;
  }
  EXPECT_EQ(sessions, 3);
}

}  // namespace
}  // namespace rankscope
