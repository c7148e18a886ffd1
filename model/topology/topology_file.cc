#include "model/topology/topology_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace rankscope {

Result<NodeTopology> ReadNcclTopologyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::Error("cannot read NCCL topology dump " + path + ": " + std::strerror(errno));
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) {
    return Status::Error("cannot read NCCL topology dump " + path + ": " + std::strerror(errno));
  }
  std::string xml = std::move(contents).str();
  if (xml.empty()) {
    // NCCL writes the dump during communicator init, on the rank NCCL_TOPO_DUMP_FILE_RANK names.
    return Status::Error(path +
                         ": empty file; NCCL writes the topology dump at communicator init on "
                         "rank NCCL_TOPO_DUMP_FILE_RANK (default 0): did that rank get so far?");
  }
  return ParseNcclTopology(xml, path);
}

}  // namespace rankscope
