#include "run/data_input.hpp"

namespace ironlaw::run::detail {

data::Resources data_resources(const config::Scenario& s, const Layout& lay, const hardware::Cluster& cluster) {
  data::Resources res;
  res.cpu_cores_per_node = s.topology.node.cpu_cores;
  res.inputs_carry_labels = lay.pp == 1;
  const auto gpus = static_cast<std::size_t>(cluster.gpus());
  res.h2d_paths.resize(gpus);
  res.roles.resize(gpus, data::GpuRole::none);
  for (int r = 0; r < cluster.gpus(); ++r) {
    const auto i = static_cast<std::size_t>(r);
    res.h2d_paths[i] = {cluster.pcie_to_gpu(r)};
    const int stage = lay.coord_of(r)[Dim::pp];
    if (stage == 0) {
      res.roles[i] = data::GpuRole::inputs;
    } else if (stage == lay.pp - 1 && s.data.label_bytes > 0) {
      res.roles[i] = data::GpuRole::labels;
    }
  }
  return res;
}

}  // namespace ironlaw::run::detail
