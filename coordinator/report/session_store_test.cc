#include "coordinator/report/session_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "coordinator/report/report_json.h"
#include "coordinator/report/test_session.h"

namespace rankscope {
namespace {

using ::testing::HasSubstr;

TEST(SessionStore, RoundTripsEveryField) {
  std::string path = report_test::MakeTempDir("db") + "/session.sqlite";
  Session saved = report_test::MakeSession();
  saved.ranks[1].clock_fitted = false;
  saved.ranks[1].clock_error = "no usable samples (12 with negative delay)";
  saved.ranks[1].exit_code.reset();
  for (RankData& r : saved.ranks) r.id.restart_count = 2;  // all ranks in torchrun's 3rd attempt
  saved.ranks[0].ranges[0].name = std::string("bytes \0\xff kept", 13);  // not UTF-8, has NUL
  saved.ranks[2].collectives[0].nonblocking = true;
  saved.ranks[2].collectives[0].comm_id = UINT64_MAX;
  saved.ranks[2].collectives[0].seq = UINT64_MAX - 1;
  saved.ranks[2].dropped_records = UINT64_MAX;
  saved.ranks[2].clock.drift_ppm = -0.1 + 1e-13;  // survives only if stored as a double
  saved.launcher_exit_code.reset();
  // A second launch-latency row for the same window (a kernel joined after the first was sent)
  // stays apart.
  ASSERT_EQ(saved.ranks[0].launch_latency.size(), 1u);
  saved.ranks[0].launch_latency.push_back({saved.ranks[0].launch_latency[0].window_start,
                                           kNsPerSec,
                                           {{-40, 1, -40}, {700, 2, 2'000'000'000}}});
  // Kernel time between collective boundaries, names shared with the records' or not.
  saved.ranks[0].kernel_pieces = {{-500, 1500, "_Z4stepPf", 700}, {1500, 2500, "other", 3}};
  std::vector<Finding> findings = report_test::MakeFindings();
  ASSERT_TRUE(SaveSession(path, saved, findings).ok());

  Result<Session> loaded = LoadSession(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  report_test::ExpectSessionsEqual(saved, loaded.value());

  Result<std::vector<Finding>> loaded_findings = LoadFindings(path);
  ASSERT_TRUE(loaded_findings.ok()) << loaded_findings.status().message();
  ASSERT_EQ(loaded_findings->size(), findings.size());
  for (size_t i = 0; i < findings.size(); ++i) {
    EXPECT_EQ(FindingToJson(loaded_findings.value()[i]), FindingToJson(findings[i]));
  }
}

// Runs `sql` on the database at `path`: makes a file as an older version wrote it, or a damaged
// or foreign one.
void Alter(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

// A schema-3 file written before P2P records had world ranks, spin starts and MPI calls were
// recorded: its peers read as unknown world ranks, its spin starts as 0, and it has no MPI calls.
TEST(SessionStore, ReadsFilesWithoutWorldPeersOrMpiCalls) {
  std::string path = report_test::MakeTempDir("db") + "/session.sqlite";
  Session saved = report_test::MakeSession();
  ASSERT_FALSE(saved.ranks[1].mpi_calls.empty());
  ASSERT_TRUE(SaveSession(path, saved, {}).ok());
  ASSERT_NO_FATAL_FAILURE(Alter(path,
                                "DROP TABLE mpi_calls; ALTER TABLE p2p DROP COLUMN world_peer; "
                                "ALTER TABLE p2p DROP COLUMN spin_start_ns;"));

  Result<Session> loaded = LoadSession(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  for (RankData& r : saved.ranks) {
    r.mpi_calls.clear();
    for (P2PRecord& p : r.p2p) {
      p.world_peer = kUnknownWorldPeer;
      p.spin_start = 0;
    }
  }
  report_test::ExpectSessionsEqual(saved, loaded.value());
}

// A file written after P2P records had world ranks but before they had spin starts: the spin
// starts read as 0 (the blame chain then reads each record's enter), the rest as saved.
TEST(SessionStore, ReadsFilesWithWorldPeersButNoSpinStarts) {
  std::string path = report_test::MakeTempDir("db") + "/session.sqlite";
  Session saved = report_test::MakeSession();
  ASSERT_NE(saved.ranks[1].p2p.back().spin_start, 0);
  ASSERT_TRUE(SaveSession(path, saved, {}).ok());
  ASSERT_NO_FATAL_FAILURE(Alter(path, "ALTER TABLE p2p DROP COLUMN spin_start_ns;"));

  Result<Session> loaded = LoadSession(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  for (RankData& r : saved.ranks) {
    for (P2PRecord& p : r.p2p) p.spin_start = 0;
  }
  report_test::ExpectSessionsEqual(saved, loaded.value());
}

// A file written before NCCL connections kept their net device in a field of their own: each
// is read from the connection's text as NCCL printed it.
TEST(SessionStore, ReadsNcclConnectionsWithoutANetDevice) {
  std::string path = report_test::MakeTempDir("db") + "/session.sqlite";
  Session saved = report_test::MakeSession();
  ASSERT_TRUE(saved.ranks[0].nccl.has_value());
  std::vector<NcclTransportInfo>& t = saved.ranks[0].nccl->communicators[0].transports;
  t.push_back({1, 1, NcclTransportKind::kNetIb, "NET/IB/3/GDRDMA", true, 3});
  t.push_back({2, 1, NcclTransportKind::kShm, "SHM/direct/direct", false, -1});
  ASSERT_TRUE(SaveSession(path, saved, {}).ok());
  // As the older store wrote a connection: [channel, peer, kind, via, gdrdma].
  ASSERT_NO_FATAL_FAILURE(
      Alter(path,
            "UPDATE rank_gpu SET nccl = replace(replace(nccl, ',true,3]', ',true]'), ',false,-1]', "
            "',false]') WHERE rank_idx = 0;"));
  Result<Session> loaded = LoadSession(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  report_test::ExpectSessionsEqual(saved, loaded.value());
  const std::vector<NcclTransportInfo>& back =
      loaded.value().ranks[0].nccl->communicators[0].transports;
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[1].kind, NcclTransportKind::kNetIb);
  EXPECT_EQ(back[1].net_dev, 3);
  EXPECT_EQ(back[2].net_dev, -1);
}

// A schema-3 file written before the scheduler and cgroup figures were sampled: its ranks' process
// figures load, with those left at zero and no cgroup.
TEST(SessionStore, ReadsProcessFiguresWithoutSchedulerCgroupOrMainThreadFigures) {
  std::string path = report_test::MakeTempDir("db") + "/session.sqlite";
  Session saved = report_test::MakeSession();
  ASSERT_TRUE(saved.ranks[1].proc && saved.ranks[1].proc->cpu_cgroup);
  ASSERT_TRUE(SaveSession(path, saved, {}).ok());
  std::string drop;
  for (const char* column :
       {"sched_cpu_ns", "run_delay_ns", "voluntary_switches", "involuntary_switches", "threads",
        "sched_unreadable", "sampled_wall_ns", "cgroup_version", "cgroup_path", "cgroup_limit_path",
        "cgroup_quota_us", "cgroup_period_us", "cgroup_nr_periods", "cgroup_nr_throttled",
        "cgroup_throttled_ns", "cgroup_counters_unreadable"}) {
    drop += std::string("ALTER TABLE rank_proc DROP COLUMN ") + column + ";";
  }
  drop += "DROP TABLE rank_main_thread;";
  ASSERT_NO_FATAL_FAILURE(Alter(path, drop.c_str()));

  Result<Session> loaded = LoadSession(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  for (RankData& r : saved.ranks) {
    if (!r.proc) continue;
    ProcessTreeStats old;
    old.rchar = r.proc->rchar;
    old.wchar = r.proc->wchar;
    old.read_bytes = r.proc->read_bytes;
    old.write_bytes = r.proc->write_bytes;
    old.cpu_user_ns = r.proc->cpu_user_ns;
    old.cpu_system_ns = r.proc->cpu_system_ns;
    old.blkio_delay_ns = r.proc->blkio_delay_ns;
    old.processes = r.proc->processes;
    old.samples = r.proc->samples;
    old.io_unreadable = r.proc->io_unreadable;
    r.proc = old;
  }
  report_test::ExpectSessionsEqual(saved, loaded.value());
}

// Kernel pieces an agent could not make exact (late boundaries) are not kept: a file's pieces are
// always ones the straggler analysis may read instead of the kernels.
TEST(SessionStore, KeepsOnlyExactKernelPieces) {
  std::string path = report_test::MakeTempDir("db") + "/session.sqlite";
  Session saved = report_test::MakeSession();
  saved.ranks[0].kernel_pieces = {{-500, 1500, "_Z4stepPf", 700}};
  saved.ranks[0].kernel_pieces_late = 3;
  ASSERT_TRUE(SaveSession(path, saved, {}).ok());
  Result<Session> loaded = LoadSession(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_TRUE(loaded->ranks[0].kernel_pieces.empty());
  EXPECT_EQ(loaded->ranks[0].gpu.size(), saved.ranks[0].gpu.size());  // the records are read
}

TEST(SessionStore, KeepsEarlierTorchrunAttemptsApart) {
  Session s = report_test::MakeCleanSession();
  for (RankData r : s.ranks) s.earlier_attempts.push_back(r);  // attempt 0
  for (RankData& r : s.ranks) r.id.restart_count = 1;
  const std::string path = report_test::MakeTempDir("attempts") + "/session.sqlite";
  ASSERT_TRUE(SaveSession(path, s, {}).ok());
  Result<Session> loaded = LoadSession(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->ranks.size(), s.ranks.size());
  ASSERT_EQ(loaded->earlier_attempts.size(), s.earlier_attempts.size());
  for (const RankData& r : loaded->ranks) EXPECT_EQ(r.id.restart_count, 1);
  for (size_t i = 0; i < s.earlier_attempts.size(); ++i) {
    EXPECT_EQ(loaded->earlier_attempts[i].id.restart_count, 0);
    EXPECT_EQ(loaded->earlier_attempts[i].collectives.size(),
              s.earlier_attempts[i].collectives.size());
  }
}

TEST(SessionStore, RoundTripsAnUnalignedEmptySession) {
  std::string path = report_test::MakeTempDir("db") + "/empty.sqlite";
  Session saved;
  ASSERT_TRUE(SaveSession(path, saved, {}).ok());
  Result<Session> loaded = LoadSession(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  report_test::ExpectSessionsEqual(saved, loaded.value());
  EXPECT_FALSE(loaded->aligned);
}

TEST(SessionStore, ReplacesAnExistingFileAndLeavesNoTemporaries) {
  std::string dir = report_test::MakeTempDir("db");
  std::string path = dir + "/session.sqlite";
  std::ofstream(path) << "old content";
  ASSERT_TRUE(SaveSession(path, report_test::MakeSession(), {}).ok());
  ASSERT_TRUE(SaveSession(path, report_test::MakeCleanSession(), {}).ok());
  Result<Session> loaded = LoadSession(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->session_id, "s-clean");
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "session.sqlite");
  }
  EXPECT_EQ(files, 1u);
}

TEST(SessionStore, MissingFileIsAClearError) {
  std::string path = report_test::MakeTempDir("db") + "/nope.sqlite";
  Result<Session> loaded = LoadSession(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr(path));
  EXPECT_THAT(loaded.status().message(), HasSubstr("no such file"));
  EXPECT_FALSE(std::filesystem::exists(path));  // reading never creates one
}

TEST(SessionStore, NonSqliteFileIsNotASessionDatabase) {
  std::string path = report_test::MakeTempDir("db") + "/report.json";
  std::ofstream(path) << "{\"schema\": \"rankscope.report/v1\", \"padding\": \""
                      << std::string(5000, 'x') << "\"}\n";
  Result<Session> loaded = LoadSession(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr(path));
  EXPECT_THAT(loaded.status().message(), HasSubstr("not a rankscope session database"));
  EXPECT_FALSE(LoadFindings(path).ok());
}

TEST(SessionStore, OtherSqliteDatabaseIsNotASessionDatabase) {
  std::string path = report_test::MakeTempDir("db") + "/other.sqlite";
  ASSERT_NO_FATAL_FAILURE(Alter(path, "CREATE TABLE t (x); INSERT INTO t VALUES (1);"));
  Result<Session> loaded = LoadSession(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("not a rankscope session database"));
  EXPECT_THAT(loaded.status().message(), HasSubstr(path));
}

TEST(SessionStore, NewerSchemaVersionIsRefused) {
  std::string path = report_test::MakeTempDir("db") + "/session.sqlite";
  ASSERT_TRUE(SaveSession(path, report_test::MakeSession(), {}).ok());
  ASSERT_NO_FATAL_FAILURE(Alter(path, "UPDATE meta SET value = '99' WHERE key = 'schema_version'"));
  Result<Session> loaded = LoadSession(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("schema version 99"));
}

// A world size no job has (2^31 - 1 made the coordinator allocate 8 GB and abort) is corruption.
TEST(SessionStore, AWorldSizeBeyondTheLimitIsCorruption) {
  std::string path = report_test::MakeTempDir("db") + "/session.sqlite";
  ASSERT_TRUE(SaveSession(path, report_test::MakeSession(), {}).ok());
  ASSERT_NO_FATAL_FAILURE(
      Alter(path, "UPDATE meta SET value = '2147483647' WHERE key = 'world_size'"));
  Result<Session> loaded = LoadSession(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("meta 'world_size' 2147483647 is not a job's"));
}

TEST(SessionStore, DamagedDatabaseIsAnErrorNotACrash) {
  std::string path = report_test::MakeTempDir("db") + "/session.sqlite";
  Session big = report_test::MakeSession();
  for (int i = 0; i < 20'000; ++i) big.ranks[0].marks.push_back({"d", "m", i, 1});
  ASSERT_TRUE(SaveSession(path, big, {}).ok());
  // Overwrite the middle of the file: pages of the marks table become garbage.
  auto size = std::filesystem::file_size(path);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    std::string junk(16384, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  Result<Session> loaded = LoadSession(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr(path));

  // A file cut short is damaged too.
  std::filesystem::resize_file(path, size / 3);
  loaded = LoadSession(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr(path));
}

TEST(SessionStore, SavesAMillionRecordsInSeconds) {
  std::string path = report_test::MakeTempDir("db") + "/big.sqlite";
  Session s = report_test::MakeCleanSession();
  for (RankData& r : s.ranks) {
    CollectiveRecord c = r.collectives[0];
    r.collectives.clear();
    r.collectives.reserve(250'000);
    for (int k = 0; k < 250'000; ++k) {
      c.seq = static_cast<uint64_t>(k);
      c.enter += 1000;
      c.exit += 1000;
      r.collectives.push_back(c);
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(SaveSession(path, s, {}).ok());
  double save_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  t0 = std::chrono::steady_clock::now();
  Result<Session> loaded = LoadSession(path);
  double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->ranks[3].collectives.size(), 250'000u);
  EXPECT_EQ(loaded->ranks[3].collectives.back().enter, s.ranks[3].collectives.back().enter);
  RecordProperty("save_seconds", std::to_string(save_s));
  std::printf("1e6 collectives: save %.2f s, load %.2f s, %.1f MB\n", save_s, load_s,
              static_cast<double>(std::filesystem::file_size(path)) / 1e6);
  // Generous: a shared CI machine, maybe with sanitizers. The point is "seconds, not minutes".
  EXPECT_LT(save_s, 30.0);
}

}  // namespace
}  // namespace rankscope
