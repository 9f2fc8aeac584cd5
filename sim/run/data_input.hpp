#pragma once
/// \file The data part of the run layer: where the input pipeline's work runs on the modelled
/// cluster. The first pipeline stage loads the inputs (and the labels when it is also the last
/// stage); the last stage loads the labels; middle stages load nothing. A GPU's host→device
/// copies cross the PCIe switch → GPU link that inbound GPUDirect RDMA traffic of the NIC on
/// the same switch also crosses; decoding shares the node's CPU cores (node.cpu_cores).
#include "config/spec.hpp"
#include "data/loader.hpp"
#include "hardware/cluster.hpp"
#include "run/layout.hpp"

namespace ironlaw::run::detail {

/// The pipeline resources of scenario `s` under layout `lay` on `cluster`. O(GPUs).
data::Resources data_resources(const config::Scenario& s, const Layout& lay, const hardware::Cluster& cluster);

}  // namespace ironlaw::run::detail
