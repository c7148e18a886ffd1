#include "agent/cpu_cgroup.h"

#include <gtest/gtest.h>

namespace rankscope {
namespace {

// /proc/self/cgroup of a process in cgroup v1 cpu cgroup /rstest-b (Linux 6.18, this machine:
// v1 controllers each on their own hierarchy, v2 mounted beside them with no controllers).
constexpr char kProcCgroupV1[] =
    "9:name=systemd:/\n8:pids:/\n7:blkio:/\n6:freezer:/\n5:devices:/\n"
    "4:memory:/process_api/d72644ba1b6bf257659e5c22803e830f\n3:cpuset:/\n2:cpuacct:/\n"
    "1:cpu:/rstest-b\n0::/\n";

// The cgroup lines of /proc/self/mountinfo on the same machine.
constexpr char kMountinfo[] =
    "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

TEST(CpuCgroup, ParsesProcCgroup) {
  std::vector<CgroupMembership> m = ParseProcCgroup(kProcCgroupV1);
  ASSERT_EQ(m.size(), 10u);
  EXPECT_EQ(m[0].hierarchy, 9);
  EXPECT_EQ(m[0].controllers, std::vector<std::string>{"name=systemd"});
  EXPECT_EQ(m[5].path, "/process_api/d72644ba1b6bf257659e5c22803e830f");
  EXPECT_EQ(m[8].controllers, std::vector<std::string>{"cpu"});
  EXPECT_EQ(m[8].path, "/rstest-b");
  EXPECT_EQ(m[9].hierarchy, 0);
  EXPECT_TRUE(m[9].controllers.empty());
  EXPECT_EQ(m[9].path, "/");
  // Joined controllers, and a path holding ':'.
  m = ParseProcCgroup("4:cpu,cpuacct:/slurm/uid_0/job_7:x\ngarbage\n");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].controllers, (std::vector<std::string>{"cpu", "cpuacct"}));
  EXPECT_EQ(m[0].path, "/slurm/uid_0/job_7:x");
}

TEST(CpuCgroup, ParsesTheCgroupMounts) {
  std::vector<CgroupMount> mounts = ParseCgroupMounts(kMountinfo);
  ASSERT_EQ(mounts.size(), 6u);
  EXPECT_EQ(mounts[0].version, 1);
  EXPECT_EQ(mounts[0].mount_point, "/sys/fs/cgroup/cpu");
  EXPECT_EQ(mounts[0].root, "/");
  EXPECT_EQ(mounts[0].controllers, std::vector<std::string>{"cpu"});
  EXPECT_EQ(mounts[5].version, 2);
  EXPECT_EQ(mounts[5].mount_point, "/sys/fs/cgroup/unified");
  // A joined hierarchy (the common systemd layout), a sub-tree mounted in a container, and a
  // mount point with a space (escaped as \040).
  mounts = ParseCgroupMounts(
      "30 25 0:26 /docker/abc /sys/fs/cgroup/cpu\\040x rw,nosuid shared:12 - cgroup cgroup "
      "rw,cpu,cpuacct\n");
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_EQ(mounts[0].root, "/docker/abc");
  EXPECT_EQ(mounts[0].mount_point, "/sys/fs/cgroup/cpu x");
  EXPECT_EQ(mounts[0].controllers, (std::vector<std::string>{"cpu", "cpuacct"}));
}

TEST(CpuCgroup, LocatesTheV1CpuHierarchyBeforeTheUnifiedOne) {
  std::optional<CpuCgroupLocation> at =
      LocateCpuCgroup(ParseProcCgroup(kProcCgroupV1), ParseCgroupMounts(kMountinfo));
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->version, 1);
  EXPECT_EQ(at->path, "/rstest-b");
  EXPECT_EQ(at->Dir(at->path), "/sys/fs/cgroup/cpu/rstest-b");
  EXPECT_EQ(at->Dir("/"), "/sys/fs/cgroup/cpu");
}

TEST(CpuCgroup, LocatesAPureV2Hierarchy) {
  std::optional<CpuCgroupLocation> at = LocateCpuCgroup(
      ParseProcCgroup("0::/system.slice/slurmstepd.scope/job_3/step_0/user/task_0\n"),
      ParseCgroupMounts("35 24 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"));
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->version, 2);
  EXPECT_EQ(at->Dir(at->path),
            "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_3/step_0/user/task_0");
  EXPECT_FALSE(LocateCpuCgroup(ParseProcCgroup("0::/a\n"), {}).has_value());
}

TEST(CpuCgroup, MapsAMountedSubTree) {
  std::optional<CpuCgroupLocation> at = LocateCpuCgroup(
      ParseProcCgroup("3:cpu,cpuacct:/docker/abc/inner\n"),
      ParseCgroupMounts("30 25 0:26 /docker/abc /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"));
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(at->Dir(at->path), "/sys/fs/cgroup/cpu/inner");
  EXPECT_EQ(at->Dir("/docker/abc"), "/sys/fs/cgroup/cpu");
  EXPECT_EQ(CgroupAncestors(at->path, at->mount_root),
            (std::vector<std::string>{"/docker/abc/inner", "/docker/abc"}));
  // Another container's cgroup, outside the mounted sub-tree: nothing to read.
  EXPECT_FALSE(LocateCpuCgroup(ParseProcCgroup("3:cpu:/docker/other\n"),
                               ParseCgroupMounts("30 25 0:26 /docker/abc /c rw - cgroup cgroup "
                                                 "rw,cpu\n"))
                   .has_value());
}

TEST(CpuCgroup, ListsAncestorsNearestFirst) {
  EXPECT_EQ(CgroupAncestors("/a/b"), (std::vector<std::string>{"/a/b", "/a", "/"}));
  EXPECT_EQ(CgroupAncestors("/"), std::vector<std::string>{"/"});
}

TEST(CpuCgroup, ParsesQuotas) {
  // v1 files of /sys/fs/cgroup/cpu/rstest-b and of the root cgroup on this machine.
  std::optional<CpuQuota> q = ParseCfsQuota("30000\n", "100000\n");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->quota_us, 30000);
  EXPECT_EQ(q->period_us, 100000);
  q = ParseCfsQuota("-1\n", "100000\n");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->quota_us, -1);
  EXPECT_FALSE(ParseCfsQuota("", "100000").has_value());
  // v2 cpu.max (format of Documentation/admin-guide/cgroup-v2.rst).
  q = ParseCpuMax("max 100000\n");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->quota_us, -1);
  EXPECT_EQ(q->period_us, 100000);
  q = ParseCpuMax("150000 100000\n");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->quota_us, 150000);
  EXPECT_FALSE(ParseCpuMax("max").has_value());
}

TEST(CpuCgroup, ParsesThrottlingCounters) {
  // v1 cpu.stat of /sys/fs/cgroup/cpu/rstest-b after 1 s of a busy loop at a 30 % quota.
  std::optional<CpuThrottling> t = ParseCpuStat(
      "nr_periods 11\nnr_throttled 10\nthrottled_time 361108411\nnr_bursts 0\nburst_time 0\n");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->nr_periods, 11u);
  EXPECT_EQ(t->nr_throttled, 10u);
  EXPECT_EQ(t->throttled_ns, 361108411);
  // v2 cpu.stat with the cpu controller enabled (format of cgroup-v2.rst): µs.
  t = ParseCpuStat(
      "usage_usec 2000000\nuser_usec 1900000\nsystem_usec 100000\nnr_periods 50\n"
      "nr_throttled 35\nthrottled_usec 1400000\nnr_bursts 0\nburst_usec 0\n");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->nr_throttled, 35u);
  EXPECT_EQ(t->throttled_ns, 1400 * kNsPerMs);
  // v2 cpu.stat of /sys/fs/cgroup/unified on this machine, where the cpu controller is bound to
  // v1: no bandwidth counters.
  EXPECT_FALSE(ParseCpuStat("usage_usec 676334509\nuser_usec 625836546\nsystem_usec 50497962\n"
                            "nice_usec 0\n")
                   .has_value());
}

}  // namespace
}  // namespace rankscope
