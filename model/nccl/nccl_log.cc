#include "model/nccl/nccl_log.h"

namespace rankscope {

std::string_view NcclTransportKindName(NcclTransportKind kind) {
  switch (kind) {
    case NcclTransportKind::kP2pCumem:
      return "P2P/CUMEM";
    case NcclTransportKind::kP2pMnnvl:
      return "P2P/MNNVL";
    case NcclTransportKind::kP2pIpc:
      return "P2P/IPC";
    case NcclTransportKind::kP2pDirect:
      return "P2P/direct";
    case NcclTransportKind::kP2pIndirect:
      return "P2P/indirect";
    case NcclTransportKind::kShm:
      return "SHM";
    case NcclTransportKind::kNetIb:
      return "NET/IB";
    case NcclTransportKind::kNetSocket:
      return "NET/Socket";
    case NcclTransportKind::kNetOther:
      return "NET/other";
    case NcclTransportKind::kCollNet:
      return "COLLNET";
    case NcclTransportKind::kUnknown:
      break;
  }
  return "unknown";
}

NcclTransportKind ParseNcclTransportKindName(std::string_view name) {
  for (auto k = static_cast<int>(NcclTransportKind::kP2pCumem);
       k <= static_cast<int>(NcclTransportKind::kCollNet); ++k) {
    if (NcclTransportKindName(static_cast<NcclTransportKind>(k)) == name) {
      return static_cast<NcclTransportKind>(k);
    }
  }
  return NcclTransportKind::kUnknown;
}

}  // namespace rankscope
