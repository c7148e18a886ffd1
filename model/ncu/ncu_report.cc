#include "model/ncu/ncu_report.h"

#include <cctype>
#include <charconv>
#include <cmath>

namespace rankscope {
namespace {

// One CSV record from `text` at `*pos` (RFC 4180: quoted fields, doubled quotes, newlines inside
// quotes). Returns false at the end of the text. `*complete` is false when the text ended inside
// a quoted field.
bool NextRecord(std::string_view text, size_t* pos, std::vector<std::string>* fields,
                bool* complete, int* line) {
  fields->clear();
  *complete = true;
  if (*pos >= text.size()) return false;
  std::string field;
  bool quoted = false;
  size_t i = *pos;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++*line;
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields->push_back(std::move(field));
      field.clear();
    } else if (c == '\n') {
      ++*line;
      ++i;
      break;
    } else if (c != '\r') {
      field += c;
    }
  }
  if (quoted) *complete = false;
  fields->push_back(std::move(field));
  *pos = i;
  return true;
}

// A number as ncu prints it: "1,234.5", "0.000000", "-0.035669"; nullopt for text ("NVIDIA
// H200", "all", "n/a", empty).
std::optional<double> ParseNumber(std::string_view s) {
  std::string digits;
  digits.reserve(s.size());
  for (char c : s) {
    if (c != ',') digits += c;
  }
  if (digits.empty()) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

double PrefixScale(char p) {
  switch (p) {
    case 'n':
      return 1e-9;
    case 'u':
      return 1e-6;
    case 'm':
      return 1e-3;
    case 'K':
    case 'k':
      return 1e3;
    case 'M':
      return 1e6;
    case 'G':
      return 1e9;
    case 'T':
      return 1e12;
    case 'P':
      return 1e15;
    default:
      return 0;
  }
}

// A time unit's factor ("ns", "usecond", ...), 0 for anything else.
double TimeScale(std::string_view unit) {
  for (std::string_view prefixed : {"ns", "us", "ms", "nsecond", "usecond", "msecond"}) {
    if (unit == prefixed) return PrefixScale(unit[0]);
  }
  return 0;
}

// The factor of a unit's numerator ("Kbyte", "us", "Ghz"; 1 when it has no known prefix).
double NumeratorScale(std::string_view base) {
  if (const double t = TimeScale(base); t > 0) return t;
  std::string lower(base);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view known : {"byte", "hz", "inst", "cycle", "sector", "warp", "thread",
                                 "request", "block", "register", "second"}) {
    if (lower.size() == known.size() + 1 && lower.ends_with(known)) {
      const double s = PrefixScale(base[0]);
      return s == 0 ? 1 : s;
    }
  }
  return 1;
}

}  // namespace

double NcuUnitScale(std::string_view unit) {
  // "Kbyte/cycle", "Tbyte/s", "Mbyte": the prefix scales the numerator; "sector/ns",
  // "sector/ms": a time in the denominator divides.
  const size_t slash = unit.find('/');
  const double numerator = NumeratorScale(unit.substr(0, slash));
  if (slash == std::string_view::npos) return numerator;
  const double per_time = TimeScale(unit.substr(slash + 1));
  return per_time > 0 ? numerator / per_time : numerator;
}

std::optional<double> NcuLaunch::Number(const std::string& metric) const {
  const auto it = numbers.find(metric);
  if (it == numbers.end()) return std::nullopt;
  return it->second;
}

Result<NcuReport> ParseNcuRawCsv(std::string_view text, std::string_view source) {
  const std::string where(source);
  size_t pos = 0;
  int line = 1;
  std::vector<std::string> names, units, row;
  bool complete = true;
  if (!NextRecord(text, &pos, &names, &complete, &line) ||
      !NextRecord(text, &pos, &units, &complete, &line) || !complete) {
    return Result<NcuReport>::Error(
        where +
        ": not an Nsight Compute raw page: it needs a row of metric names and a row of "
        "units (make it with `ncu --import R.ncu-rep --csv --page raw`)");
  }
  auto column = [&](std::string_view name) -> int {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return static_cast<int>(i);
    }
    return -1;
  };
  const int id_col = column("ID");
  const int kernel_col = column("Kernel Name");
  const int device_col = column("device__attribute_display_name");
  if (id_col < 0 || kernel_col < 0) {
    return Result<NcuReport>::Error(
        where +
        ": line 1 has no \"ID\" and \"Kernel Name\" columns: not ncu's raw page (a "
        "--page details or --page source CSV?); export it with --page raw");
  }
  if (units.size() != names.size()) {
    return Result<NcuReport>::Error(where + ": line 2 has " + std::to_string(units.size()) +
                                    " units for " + std::to_string(names.size()) + " metric names");
  }
  std::vector<double> scale(names.size());
  for (size_t i = 0; i < names.size(); ++i) scale[i] = NcuUnitScale(units[i]);

  NcuReport report;
  while (true) {
    const int row_line = line;
    if (!NextRecord(text, &pos, &row, &complete, &line)) break;
    if (row.size() == 1 && row[0].empty()) continue;  // a blank line
    if (!complete || row.size() != names.size()) {
      report.partial = true;
      report.problems.push_back(where + ":" + std::to_string(row_line) + ": row has " +
                                std::to_string(row.size()) + " of " + std::to_string(names.size()) +
                                " columns (the file is cut short?); launch skipped");
      continue;
    }
    NcuLaunch launch;
    launch.csv_line = row_line;
    launch.kernel = row[static_cast<size_t>(kernel_col)];
    if (device_col >= 0) launch.device = row[static_cast<size_t>(device_col)];
    const std::optional<double> id = ParseNumber(row[static_cast<size_t>(id_col)]);
    launch.id = id ? static_cast<int>(*id) : -1;
    launch.numbers.reserve(row.size());
    for (size_t i = 0; i < row.size(); ++i) {
      if (const std::optional<double> v = ParseNumber(row[i])) {
        launch.numbers.emplace(names[i], *v * scale[i]);
      } else if (!row[i].empty()) {
        launch.texts.emplace(names[i], std::move(row[i]));
      }
    }
    report.launches.push_back(std::move(launch));
  }
  return report;
}

}  // namespace rankscope
