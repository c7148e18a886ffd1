#include "coordinator/report/session_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "coordinator/report/report_text.h"
#include "coordinator/report/session_store.h"
#include "coordinator/report/test_session.h"

namespace rankscope {
namespace {

using ::testing::HasSubstr;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::set<std::string> FileNames(const std::filesystem::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

// A file that cannot be written (here trace.json, a directory in the way; on a cluster, a full
// disk) does not stop the others, and the reports, written last, list it.
TEST(SessionWriter, WritesEveryFileItCanAndTheReportsListTheOthers) {
  const std::filesystem::path dir = std::filesystem::path(report_test::MakeTempDir("out")) / "s";
  std::filesystem::create_directories(dir / "trace.json" / "in-the-way");
  Session s = report_test::MakeSession();
  std::string text;
  Status status = WriteSessionFolder(dir.string(), s, MatchSession(s), {}, &text);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("trace.json: cannot rename"));
  for (const char* name : {"report.txt", "report.json", "report.html", "session.sqlite"}) {
    EXPECT_TRUE(std::filesystem::is_regular_file(dir / name)) << name;
  }
  EXPECT_EQ(ReadFile(dir / "report.txt"), text);
  EXPECT_THAT(text, HasSubstr("Not written (this folder is incomplete):\n  trace.json: "));
  auto report = nlohmann::json::parse(ReadFile(dir / "report.json"));
  ASSERT_EQ(report["job"]["files_not_written"].size(), 1u);
  EXPECT_THAT(report["job"]["files_not_written"][0].get<std::string>(),
              HasSubstr("trace.json: cannot rename"));
}

TEST(SessionWriter, WritesTheFiveFiles) {
  std::filesystem::path dir =
      std::filesystem::path(report_test::MakeTempDir("out")) / "rankscope-4711";  // created
  Session s = report_test::MakeSession();
  std::vector<Finding> findings = report_test::MakeFindings();
  std::string text;
  Status status = WriteSessionFolder(dir.string(), s, MatchSession(s), findings, &text);
  ASSERT_TRUE(status.ok()) << status.message();

  EXPECT_EQ(FileNames(dir), (std::set<std::string>{"report.txt", "report.json", "report.html",
                                                   "trace.json", "session.sqlite"}));
  EXPECT_EQ(ReadFile(dir / "report.txt"), text);
  EXPECT_EQ(text, BuildReportText(s, findings, /*color=*/false));
  EXPECT_THAT(text, HasSubstr("PARTIAL"));

  std::string report = ReadFile(dir / "report.json");
  EXPECT_EQ(report.rfind("{\n  \"collectives\": {", 0), 0u) << "pretty, 2-space indent";
  auto parsed = nlohmann::json::parse(report, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded());
  EXPECT_EQ(parsed["schema"], "rankscope.report/v1");
  auto trace = nlohmann::json::parse(ReadFile(dir / "trace.json"), nullptr, false);
  ASSERT_FALSE(trace.is_discarded());
  EXPECT_TRUE(trace.contains("traceEvents"));
  EXPECT_THAT(ReadFile(dir / "report.html"), HasSubstr("</html>"));
  Result<Session> loaded = LoadSession((dir / "session.sqlite").string());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  report_test::ExpectSessionsEqual(s, loaded.value());
}

TEST(SessionWriter, RewritesAnExistingFolder) {
  std::string dir = report_test::MakeTempDir("out");
  Session s = report_test::MakeSession();
  ASSERT_TRUE(WriteSessionFolder(dir, s, MatchSession(s), {}, nullptr).ok());
  Session clean = report_test::MakeCleanSession();
  std::string text;
  ASSERT_TRUE(WriteSessionFolder(dir, clean, MatchSession(clean), {}, &text).ok());
  EXPECT_THAT(ReadFile(std::filesystem::path(dir) / "report.txt"), HasSubstr("No problems found"));
  EXPECT_EQ(FileNames(dir).size(), 5u);  // no temporaries left behind
}

TEST(SessionWriter, InvalidUtf8StillGivesValidJson) {
  std::string dir = report_test::MakeTempDir("out");
  Session s = report_test::MakeSession();
  s.ranks[0].ranges[0].name = "bad \xff\xfe utf8";
  s.ranks[0].notices.push_back("also \xc3 bad");
  ASSERT_TRUE(WriteSessionFolder(dir, s, MatchSession(s), {}, nullptr).ok());
  for (const char* name : {"report.json", "trace.json"}) {
    EXPECT_FALSE(nlohmann::json::parse(ReadFile(std::filesystem::path(dir) / name), nullptr, false)
                     .is_discarded())
        << name;
  }
}

TEST(SessionWriter, UnwritableFolderIsAClearError) {
  std::string dir = report_test::MakeTempDir("out");
  std::string blocker = dir + "/file";
  std::ofstream(blocker) << "x";
  Session s = report_test::MakeSession();
  Status status = WriteSessionFolder(blocker + "/sub", s, MatchSession(s), {}, nullptr);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(blocker + "/sub"));
}

}  // namespace
}  // namespace rankscope
