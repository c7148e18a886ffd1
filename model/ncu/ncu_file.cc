#include "model/ncu/ncu_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace rankscope {

Result<std::string> ReadNcuRawCsvText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Result<std::string>::Error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Result<std::string>::Error(path + ": read failed");
  return text.str();
}

Result<NcuReport> ParseNcuRawCsvFile(const std::string& path) {
  Result<std::string> text = ReadNcuRawCsvText(path);
  if (!text.ok()) return text.status();
  return ParseNcuRawCsv(text.value(), path);
}

}  // namespace rankscope
