#include "model/topology/topology_json.h"

#include <optional>

#include "model/topology/pcie_link.h"

namespace rankscope {
namespace {

using Json = nlohmann::ordered_json;

Json OrNull(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

template <typename T>
Json OrNull(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

Json LinkJson(const PcieLink& link) {
  return Json{{"speed", OrNull(link.speed_text)},
              {"gt_per_s", OrNull(link.gt_per_s)},
              {"gen", OrNull(link.gen)},
              {"width", OrNull(link.width_lanes)}};
}

}  // namespace

Json TopologyToJson(const NodeTopology& topo) {
  Json gpus = Json::array();
  for (const TopoGpu& g : topo.gpus) {
    Json nvlinks = Json::array();
    for (const TopoNvLink& l : g.nvlinks) {
      nvlinks.push_back(Json{{"target_class", std::string(PciClassName(l.target_class))},
                             {"target_bus_id", l.target_bus_id},
                             {"count", l.count}});
    }
    gpus.push_back(Json{{"dev", g.dev},
                        {"rank", OrNull(g.rank)},
                        {"sm", OrNull(g.sm)},
                        {"gdr", OrNull(g.gdr)},
                        {"bus_id", g.bus_id},
                        {"numa", OrNull(g.numa_id)},
                        {"pcie_link", LinkJson(g.pcie_link)},
                        {"pcie_path_to_cpu", LinkJson(g.pcie_path_to_cpu)},
                        {"nvlinks", nvlinks},
                        {"c2c_links", g.c2c_links}});
  }
  Json nics = Json::array();
  for (const TopoNic& n : topo.nics) {
    nics.push_back(Json{{"name", n.name},
                        {"dev", OrNull(n.dev)},
                        {"speed_mbps", OrNull(n.speed_mbps)},
                        {"port", OrNull(n.port)},
                        {"gdr", OrNull(n.gdr)},
                        {"coll", OrNull(n.coll)},
                        {"bus_id", OrNull(n.bus_id)},
                        {"numa", OrNull(n.numa_id)}});
  }
  Json pairs = Json::array();
  for (const GpuPair& p : topo.gpu_pairs) {
    pairs.push_back(Json{{"gpu_a", topo.gpus[static_cast<size_t>(p.gpu_a)].dev},
                         {"gpu_b", topo.gpus[static_cast<size_t>(p.gpu_b)].dev},
                         {"nvlink", std::string(NvLinkReachName(p.nvlink))},
                         {"pcie", std::string(PciePathName(p.pcie))}});
  }
  Json nic_paths = Json::array();
  for (const GpuNicPath& p : topo.gpu_nic_paths) {
    nic_paths.push_back(Json{{"gpu", topo.gpus[static_cast<size_t>(p.gpu)].dev},
                             {"nic", topo.nics[static_cast<size_t>(p.nic)].name},
                             {"pcie", std::string(PciePathName(p.pcie))},
                             {"through_cpu", p.through_cpu()}});
  }
  Json slow = Json::array();
  for (const SlowPcieLink& s : topo.slow_pcie_links) {
    slow.push_back(Json{{"bus_id", s.bus_id},
                        {"class", std::string(PciClassName(s.device_class))},
                        {"link", LinkJson(s.link)},
                        {"peers_max_gen", OrNull(s.peers_max_gen)},
                        {"peers_max_width", OrNull(s.peers_max_width_lanes)}});
  }
  return Json{{"cpus", static_cast<int64_t>(topo.cpus.size())},
              {"gpus", gpus},
              {"nics", nics},
              {"nvswitches", topo.nvswitch_bus_ids},
              {"all_gpus_nvlink_connected", topo.all_gpus_nvlink_connected},
              {"gpu_pairs", pairs},
              {"gpu_nic_paths", nic_paths},
              {"slow_pcie_links", slow},
              {"ignored", topo.ignored_names}};
}

}  // namespace rankscope
