#include "model/ncu/ncu_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace rankscope {

Result<NcuReport> ParseNcuRawCsvFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Result<NcuReport>::Error(path + ": cannot open: " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Result<NcuReport>::Error(path + ": read failed");
  return ParseNcuRawCsv(text.str(), path);
}

}  // namespace rankscope
