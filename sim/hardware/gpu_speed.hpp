#pragma once
/// \file Nominally identical GPUs do not run at the same speed. Manufacturing variation (leakage,
/// voltage–frequency curves) under the same power limit and cooling gives each chip its own
/// sustained clock, so the same kernel takes a different time on every GPU of a cluster (Sinha
/// et al., SC'22, "Not All GPUs Are Created Equal": iteration times of the same training job
/// spread over ~8 % of the median across the GPUs of one cluster). A synchronous training step
/// waits for the slowest member at every collective, so the expected step time grows with the
/// size of the group: the expected maximum of n draws.
///
/// Each GPU's kernel-time factor is drawn once, from its own random stream keyed by
/// (scenario seed, "node<N>/gpu<G>/speed"): adding nodes adds draws and changes none of the
/// others', so the slowest GPU of a cluster can only get slower as it grows.
#include <cstdint>
#include <vector>

namespace ironlaw::hardware {

/// The smallest kernel-time factor a draw may give: a normal draw below it (with cv ≤ 0.1, the
/// largest the config accepts, a 5σ event) is clamped to it, so a kernel never takes ≤ 0.
inline constexpr double kMinKernelTimeFactor = 0.5;

/// The kernel-time factor of local GPU `gpu` of node `node`: 1 + cv·Z with Z a standard normal
/// from the GPU's stream, at least kMinKernelTimeFactor. Exactly 1 when cv == 0 (no draw).
/// Every kernel of that GPU takes its nominal time (the device profile's) times this factor.
/// O(1).
double kernel_time_factor(double cv, std::uint64_t seed, int node, int gpu);

/// The factor of every GPU of a cluster of `nodes` × `gpus_per_node`, indexed by global GPU
/// (node · gpus_per_node + local). O(GPUs).
std::vector<double> kernel_time_factors(double cv, std::uint64_t seed, int nodes, int gpus_per_node);

/// The largest of `factors` at the indices `members` (the slowest member of a group, whose
/// pace every synchronous collective of the group waits for); 1 for an empty group. O(members).
double slowest(const std::vector<double>& factors, const std::vector<int>& members);

}  // namespace ironlaw::hardware
