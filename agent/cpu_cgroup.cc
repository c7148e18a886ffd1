#include "agent/cpu_cgroup.h"

#include <algorithm>
#include <charconv>
#include <system_error>

namespace rankscope {
namespace {

std::string_view Trim(std::string_view s) {
  const size_t begin = s.find_first_not_of(" \t\n");
  if (begin == std::string_view::npos) return {};
  const size_t end = s.find_last_not_of(" \t\n");
  return s.substr(begin, end - begin + 1);
}

template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  s = Trim(s);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

// Calls `each` with every line of `text`, without its newline.
template <typename F>
void ForEachLine(std::string_view text, F each) {
  while (!text.empty()) {
    const size_t eol = std::min(text.find('\n'), text.size());
    each(text.substr(0, eol));
    text = text.substr(std::min(eol + 1, text.size()));
  }
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    const size_t at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s = s.substr(at + 1);
  }
}

// mountinfo escapes space, tab, newline and backslash as \ooo (octal).
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      int value = 0;
      if (std::from_chars(s.data() + i + 1, s.data() + i + 4, value, 8).ptr == s.data() + i + 4) {
        out.push_back(static_cast<char>(value));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace

std::vector<CgroupMembership> ParseProcCgroup(std::string_view text) {
  std::vector<CgroupMembership> out;
  ForEachLine(text, [&](std::string_view line) {
    // The path may itself hold ':', so split at the first two only.
    const size_t first = line.find(':');
    if (first == std::string_view::npos) return;
    const size_t second = line.find(':', first + 1);
    if (second == std::string_view::npos) return;
    CgroupMembership m;
    if (!ParseNumber(line.substr(0, first), &m.hierarchy)) return;
    const std::string_view list = line.substr(first + 1, second - first - 1);
    if (!list.empty()) {
      for (std::string_view c : Split(list, ',')) m.controllers.emplace_back(c);
    }
    m.path = std::string(line.substr(second + 1));
    if (m.path.empty()) return;
    out.push_back(std::move(m));
  });
  return out;
}

std::vector<CgroupMount> ParseCgroupMounts(std::string_view mountinfo) {
  // "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu": mount id, parent id,
  // major:minor, root, mount point, options, optional fields, "-", fs type, source, super options.
  std::vector<CgroupMount> out;
  ForEachLine(mountinfo, [&](std::string_view line) {
    const size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) return;
    std::vector<std::string_view> before = Split(line.substr(0, dash), ' ');
    std::vector<std::string_view> after = Split(line.substr(dash + 3), ' ');
    if (before.size() < 5 || after.size() < 3) return;
    CgroupMount m;
    if (after[0] == "cgroup") {
      m.version = 1;
      for (std::string_view option : Split(Trim(after[2]), ',')) {
        if (option != "rw" && option != "ro") m.controllers.emplace_back(option);
      }
    } else if (after[0] == "cgroup2") {
      m.version = 2;
    } else {
      return;
    }
    m.root = Unescape(before[3]);
    m.mount_point = Unescape(before[4]);
    out.push_back(std::move(m));
  });
  return out;
}

std::string CpuCgroupLocation::Dir(const std::string& cgroup_path) const {
  std::string relative = cgroup_path.substr(std::min(mount_root.size(), cgroup_path.size()));
  if (mount_root == "/") relative = cgroup_path;
  if (relative == "/") relative.clear();
  return mount_point + relative;
}

std::optional<CpuCgroupLocation> LocateCpuCgroup(const std::vector<CgroupMembership>& memberships,
                                                 const std::vector<CgroupMount>& mounts) {
  auto has = [](const std::vector<std::string>& list, std::string_view name) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  // A cgroup outside the mounted sub-tree (another container's) cannot be read.
  auto inside = [](const std::string& path, const std::string& root) {
    if (root == "/") return true;
    return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                            path[root.size()] == '/');
  };
  auto locate = [&](int version, const CgroupMembership& m) -> std::optional<CpuCgroupLocation> {
    for (const CgroupMount& mount : mounts) {
      if (mount.version != version) continue;
      if (version == 1 && !has(mount.controllers, "cpu")) continue;
      if (!inside(m.path, mount.root)) continue;
      return CpuCgroupLocation{version, m.path, mount.mount_point, mount.root};
    }
    return std::nullopt;
  };
  for (const CgroupMembership& m : memberships) {
    if (m.hierarchy != 0 && has(m.controllers, "cpu")) {
      if (auto found = locate(1, m)) return found;
    }
  }
  for (const CgroupMembership& m : memberships) {
    if (m.hierarchy == 0 && m.controllers.empty()) {
      if (auto found = locate(2, m)) return found;
    }
  }
  return std::nullopt;
}

std::vector<std::string> CgroupAncestors(const std::string& path, const std::string& root) {
  std::vector<std::string> out;
  std::string at = path;
  while (true) {
    out.push_back(at);
    if (at == root || at == "/" || at.empty()) return out;
    const size_t slash = at.rfind('/');
    if (slash == std::string::npos) return out;
    at = slash == 0 ? "/" : at.substr(0, slash);
    if (root != "/" && at.size() < root.size()) return out;
  }
}

std::optional<CpuQuota> ParseCfsQuota(std::string_view quota_text, std::string_view period_text) {
  CpuQuota out;
  if (!ParseNumber(quota_text, &out.quota_us) || !ParseNumber(period_text, &out.period_us)) {
    return std::nullopt;
  }
  if (out.quota_us < 0) out.quota_us = -1;
  return out;
}

std::optional<CpuQuota> ParseCpuMax(std::string_view text) {
  std::vector<std::string_view> fields = Split(Trim(text), ' ');
  if (fields.size() != 2) return std::nullopt;
  CpuQuota out;
  if (!ParseNumber(fields[1], &out.period_us)) return std::nullopt;
  if (fields[0] == "max") return out;
  if (!ParseNumber(fields[0], &out.quota_us)) return std::nullopt;
  return out;
}

std::optional<CpuThrottling> ParseCpuStat(std::string_view text) {
  CpuThrottling out;
  bool periods = false;
  ForEachLine(text, [&](std::string_view line) {
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) return;
    const std::string_view key = line.substr(0, space);
    uint64_t value = 0;
    if (!ParseNumber(line.substr(space + 1), &value)) return;
    if (key == "nr_periods") {
      out.nr_periods = value;
      periods = true;
    } else if (key == "nr_throttled") {
      out.nr_throttled = value;
    } else if (key == "throttled_time") {  // v1, ns
      out.throttled_ns = static_cast<DurationNs>(value);
    } else if (key == "throttled_usec") {  // v2, µs
      out.throttled_ns = static_cast<DurationNs>(value) * kNsPerUs;
    }
  });
  if (!periods) return std::nullopt;
  return out;
}

}  // namespace rankscope
