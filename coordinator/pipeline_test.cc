#include "coordinator/pipeline.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

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

// The folder at `got` is the one at `want`: every report byte for byte (each folder's own path
// written as <dir>) and session.sqlite with the same notes and the same records of every rank.
void ExpectSameFolder(const std::string& want_dir, const std::string& got_dir) {
  for (const char* file : {"report.json", "report.txt", "report.html", "trace.json"}) {
    const std::string want = Read(fs::path(want_dir) / file, want_dir);
    const std::string got = Read(fs::path(got_dir) / file, got_dir);
    EXPECT_FALSE(want.empty()) << file;
    EXPECT_TRUE(want == got) << file << " differs (" << want.size() << " vs " << got.size()
                             << " bytes)";
  }
  Result<Session> want = LoadSession(want_dir + "/session.sqlite");
  Result<Session> got = LoadSession(got_dir + "/session.sqlite");
  ASSERT_TRUE(want.ok() && got.ok());
  ASSERT_EQ(want->ranks.size(), got->ranks.size());
  EXPECT_TRUE(want->aligned && got->aligned);
  EXPECT_EQ(want->analysis_notes, got->analysis_notes);
  for (size_t r = 0; r < want->ranks.size(); ++r) {
    EXPECT_FALSE(want->ranks[r].collectives.empty());
    EXPECT_TRUE(want->ranks[r].collectives == got->ranks[r].collectives);
    EXPECT_TRUE(want->ranks[r].p2p == got->ranks[r].p2p);
    EXPECT_TRUE(want->ranks[r].mpi_calls == got->ranks[r].mpi_calls);
    EXPECT_TRUE(want->ranks[r].ranges == got->ranks[r].ranges);
    EXPECT_TRUE(want->ranks[r].gpu == got->ranks[r].gpu);
  }
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
      ExpectSameFolder(whole, windowed);
    }
    ++sessions;
  }
  EXPECT_EQ(sessions, 3);
}

// A recorded session made raw again: its records taken for each rank's local clock, and that
// clock moved by `shift[r]` against the coordinator's in its samples, so that aligning moves every
// record by seconds. Each rank gets an NVTX mark at each of its first 20 ranges' starts (no
// recorded session has marks; a spill keeps them in memory, not in its file).
Session RawAgain(const std::string& path, const std::vector<DurationNs>& shift) {
  Result<Session> loaded = LoadSession(path);
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  Session raw = std::move(loaded).value();
  raw.aligned = false;
  raw.analysis_notes.clear();
  for (size_t r = 0; r < raw.ranks.size(); ++r) {
    for (size_t k = 0; k < raw.ranks[r].ranges.size() && k < 20; ++k) {
      raw.ranks[r].marks.push_back({"", "mark " + std::to_string(k), raw.ranks[r].ranges[k].start,
                                    raw.ranks[r].ranges[k].tid});
    }
    raw.ranks[r].clock = ClockModel::Identity();
    raw.ranks[r].clock_fitted = false;
    for (ClockSample& c : raw.ranks[r].clock_samples) {
      c.t2 += shift[r % shift.size()];
      c.t3 += shift[r % shift.size()];
    }
  }
  return raw;
}

// The records of `raw` moved into a spill as a coordinator does, batch by batch as they arrive
// (a third of each rank's records at a time, ranks in turn); `raw` keeps the rest.
std::unique_ptr<RecordSpill> Spilled(Session* raw, const std::string& path) {
  Result<std::unique_ptr<RecordSpill>> spill = RecordSpill::Create(path);
  EXPECT_TRUE(spill.ok()) << spill.status().message();
  std::vector<RankData*> all;
  for (RankData& r : raw->ranks) all.push_back(&r);
  for (RankData& r : raw->earlier_attempts) all.push_back(&r);
  for (size_t i = 0; i < all.size(); ++i) EXPECT_TRUE(spill.value()->AddRank(i, all[i]->id).ok());
  std::vector<RankData> whole;
  for (RankData* r : all) whole.push_back(*r);
  auto part = [](const auto& v, int k) {
    const size_t a = v.size() * k / 3, b = v.size() * (k + 1) / 3;
    return std::decay_t<decltype(v)>(v.begin() + a, v.begin() + b);
  };
  for (int k = 0; k < 3; ++k) {
    for (size_t i = 0; i < all.size(); ++i) {
      all[i]->collectives = part(whole[i].collectives, k);
      all[i]->p2p = part(whole[i].p2p, k);
      all[i]->mpi_calls = part(whole[i].mpi_calls, k);
      all[i]->ranges = part(whole[i].ranges, k);
      EXPECT_TRUE(spill.value()->Append(i, all[i]).ok());
      EXPECT_TRUE(all[i]->collectives.empty() && all[i]->ranges.empty());
    }
  }
  EXPECT_TRUE(spill.value()->Close().ok());
  return std::move(spill).value();
}

// `rankscope run` keeps a run's records on disk as they arrive (RecordSpill) and analyses them
// from there window by window: the folder is the one the session held in memory writes, every
// report byte for byte and the same records in session.sqlite (moved to coordinator time by
// seconds on the way). A session with GPU activity is loaded back whole and writes the same
// folder too. The spill file is gone once the spill is.
TEST(AnalyzeAndWrite, ASpilledRunWritesTheFolderTheHeldRunWrites) {
  const fs::path fixtures = fs::path(RANKSCOPE_FIXTURES_DIR);
  const std::string tmp = ::testing::TempDir();
  int sessions = 0;
  for (const fs::path& path : {fixtures / "cpu2-real-apps/hpcc-freeze-r0/session.sqlite",
                               fixtures / "cpu2-real-apps/lammps-competitor-r1/session.sqlite",
                               fixtures / "cpu2-real-apps/mpi_train-freeze-r1/session.sqlite",
                               fixtures / "h200x2-torchrun-sessions/sleep-rank1-20ms.sqlite"}) {
    SCOPED_TRACE(path.string());
    Session raw = RawAgain(path.string(), {3'700'000'123, -2'100'000'777});
    const std::string held = (fs::path(tmp) / "pipeline_held").lexically_normal().string();
    const std::string spilled = (fs::path(tmp) / "pipeline_spilled").lexically_normal().string();
    fs::remove_all(held);
    fs::remove_all(spilled);
    fs::create_directories(spilled);
    Result<PipelineOutput> a = AnalyzeAndWrite(raw, held);
    ASSERT_TRUE(a.ok()) << a.status().message();
    const std::string spill_path = spilled + "/.records.sqlite";
    {
      std::unique_ptr<RecordSpill> spill = Spilled(&raw, spill_path);
      Result<PipelineOutput> b = AnalyzeAndWrite(raw, *spill, spilled);
      ASSERT_TRUE(b.ok()) << b.status().message();
    }
    EXPECT_FALSE(fs::exists(spill_path));
    ExpectSameFolder(held, spilled);
    ++sessions;
  }
  EXPECT_EQ(sessions, 4);
}

// What a spill could not take stays in memory and comes after what it holds; a rank it could
// not take leaves a gap in its indices.
TEST(LoadSpilledRecords, TheFileHoldsWhatCameFirst) {
  Session s;
  s.ranks.resize(2);
  s.ranks[0].id.rank = 0;
  s.ranks[1].id.rank = 1;
  s.ranks[1].id.agent_pid = 77;
  const std::string path = ::testing::TempDir() + "/spill_order.sqlite";
  Result<std::unique_ptr<RecordSpill>> spill = RecordSpill::Create(path);
  ASSERT_TRUE(spill.ok()) << spill.status().message();
  ASSERT_TRUE(spill.value()->AddRank(0, s.ranks[1].id).ok());  // registered first
  ASSERT_TRUE(spill.value()->AddRank(2, s.ranks[0].id).ok());  // 1: a rank the file refused
  s.ranks[1].ranges = {{.domain = "", .name = "a", .start = 1, .end = 2},
                       {.domain = "", .name = "b", .start = 3, .end = 4}};
  ASSERT_TRUE(spill.value()->Append(0, &s.ranks[1]).ok());
  EXPECT_TRUE(s.ranks[1].ranges.empty());
  s.ranks[1].ranges = {
      {.domain = "", .name = "c", .start = 5, .end = 6}};  // the file refused this batch
  ASSERT_TRUE(spill.value()->Close().ok());
  EXPECT_FALSE(spill.value()->Append(0, &s.ranks[1]).ok());
  EXPECT_EQ(s.ranks[1].ranges.size(), 1u);
  ASSERT_TRUE(LoadSpilledRecords(path, &s).ok());
  ASSERT_EQ(s.ranks[1].ranges.size(), 3u);
  EXPECT_EQ(s.ranks[1].ranges[0].name, "a");
  EXPECT_EQ(s.ranks[1].ranges[2].name, "c");
  EXPECT_TRUE(s.ranks[0].ranges.empty());
  spill.value().reset();
  EXPECT_FALSE(fs::exists(path));
}

}  // namespace
}  // namespace rankscope
