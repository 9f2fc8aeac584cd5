#include "hardware/gpu_speed.hpp"

#include <algorithm>
#include <string>

#include "core/rng.hpp"

namespace ironlaw::hardware {

double kernel_time_factor(double cv, std::uint64_t seed, int node, int gpu) {
  if (!(cv > 0)) return 1.0;
  RngStream stream(seed, "node" + std::to_string(node) + "/gpu" + std::to_string(gpu) + "/speed");
  return std::max(kMinKernelTimeFactor, 1.0 + cv * stream.normal());
}

std::vector<double> kernel_time_factors(double cv, std::uint64_t seed, int nodes, int gpus_per_node) {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(std::max(0, nodes)) * static_cast<std::size_t>(std::max(0, gpus_per_node)));
  for (int node = 0; node < nodes; ++node)
    for (int g = 0; g < gpus_per_node; ++g) out.push_back(kernel_time_factor(cv, seed, node, g));
  return out;
}

double slowest(const std::vector<double>& factors, const std::vector<int>& members) {
  double out = members.empty() ? 1.0 : 0.0;
  for (int m : members) out = std::max(out, factors.at(static_cast<std::size_t>(m)));
  return out;
}

}  // namespace ironlaw::hardware
