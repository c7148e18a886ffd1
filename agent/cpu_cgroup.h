// Parsers for the cgroup CPU controller of a process: where its cgroup is (/proc/PID/cgroup,
// /proc/self/mountinfo), what quota it has (v1 cpu.cfs_quota_us / cpu.cfs_period_us, v2
// cpu.max) and how often the quota stopped it (cpu.stat). Pure: text in, values out. The files
// are read by agent/proc_sampler.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/time.h"

namespace rankscope {

// One line of /proc/PID/cgroup, "hierarchy-ID:controller-list:path". v2 is "0::path".
struct CgroupMembership {
  int hierarchy = 0;
  std::vector<std::string> controllers;  // v1: "cpu", "cpuacct", "name=systemd"; v2: none
  std::string path;                      // relative to the hierarchy's (namespace) root
};
std::vector<CgroupMembership> ParseProcCgroup(std::string_view text);

// A mounted cgroup file system, from a line of /proc/self/mountinfo.
struct CgroupMount {
  int version = 0;                       // 1 ("cgroup") or 2 ("cgroup2")
  std::string root;                      // the cgroup mounted there ("/" unless a sub-tree)
  std::string mount_point;               // "/sys/fs/cgroup/cpu,cpuacct"
  std::vector<std::string> controllers;  // v1: from the super options ("cpu", "cpuacct")
};
std::vector<CgroupMount> ParseCgroupMounts(std::string_view mountinfo);

// Where the process's cpu controller is: the v1 hierarchy that has `cpu`, else the unified
// one (the caller still has to find cpu.max there: v2 shows it only where the controller is
// enabled). nullopt when neither is mounted, or the process's cgroup is outside the mount.
struct CpuCgroupLocation {
  int version = 0;
  std::string path;         // as /proc/PID/cgroup names it
  std::string mount_point;  // the directory of the hierarchy's root cgroup ...
  std::string mount_root;   // ... and the cgroup that is mounted there
  // The directory of cgroup `cgroup_path` (path or one of its ancestors) of this hierarchy.
  std::string Dir(const std::string& cgroup_path) const;
};
std::optional<CpuCgroupLocation> LocateCpuCgroup(const std::vector<CgroupMembership>& memberships,
                                                 const std::vector<CgroupMount>& mounts);

// `path` and its ancestors, nearest first, down to the mount root: "/a/b" -> "/a/b", "/a", "/"
// (with root "/a": "/a/b", "/a").
std::vector<std::string> CgroupAncestors(const std::string& path, const std::string& root = "/");

// Bandwidth control: CPU time allowed per period. quota_us -1: unlimited.
struct CpuQuota {
  int64_t quota_us = -1;
  int64_t period_us = 0;
};
// v1: cpu.cfs_quota_us ("-1" or "30000") and cpu.cfs_period_us ("100000").
std::optional<CpuQuota> ParseCfsQuota(std::string_view quota_text, std::string_view period_text);
// v2: cpu.max, "max 100000" or "30000 100000".
std::optional<CpuQuota> ParseCpuMax(std::string_view text);

// The throttling counters of cpu.stat: v1 throttled_time is in ns, v2 throttled_usec in µs.
// nullopt when the text has no nr_periods (a v2 cpu.stat without the cpu controller enabled
// has only usage_usec, user_usec, system_usec).
struct CpuThrottling {
  uint64_t nr_periods = 0;
  uint64_t nr_throttled = 0;
  DurationNs throttled_ns = 0;
};
std::optional<CpuThrottling> ParseCpuStat(std::string_view text);

}  // namespace rankscope
