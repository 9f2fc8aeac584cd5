#pragma once
/// \file The allocations and frees one pipeline stage's training step asks of PyTorch's caching
/// allocator, replayed through CachingAllocator (caching_allocator.hpp), so that the memory the
/// step reserves emerges next to the memory its tensors occupy. The tensors are those of
/// memory_per_gpu (model_cost.hpp), placed in time:
/// - model state (weights, gradients, optimizer state as sharded by ZeRO), one tensor per term
///   and layer plus one for the rest (embedding, norms, LM head), allocated first, held for good;
/// - per forward pass of a microbatch through a chunk of layers: each layer's saved activations
///   (activation_bytes_per_layer), freed in that microbatch's backward of the layer;
/// - per backward pass, layer by layer in reverse: under recompute the layer's recomputed
///   activations (the policy-none size) around its backward, the layer's fresh gradients; the
///   loss buffers (s·b·V/tp · loss_bytes_per_logit) during the backward of the stage's last chunk
///   (on every stage: a bound, as memory_per_gpu counts them);
/// - ZeRO-3/FSDP with dp > 1: each layer's all-gather output on the all-gather stream (1), copied
///   out into unsharded parameters on the compute stream (0); its reduce-scatter input on the
///   reduce-scatter stream (2), as FSDP2 runs its collectives on streams of their own. With
///   pp = 1 parameters are resharded after forward and re-gathered in backward, one layer
///   prefetched ahead; the root unit (embedding, LM head) is gathered for the step with its
///   gradients. With pp > 1 (torchtitan: no reshard after forward) each layer stays gathered from
///   its first forward to its last backward and its gradients accumulate unsharded in the reduce
///   dtype until the reduce-scatter after the last microbatch.
/// Two steps are replayed (the second starts from the first one's cache, as every step after the
/// first does); the peaks are over both.
/// Not replayed: the CUDA context and NCCL's buffers (outside PyTorch's allocator and outside its
/// reserved figure), the per-op temporaries inside one layer's forward or backward beyond the
/// recomputed activations, DDP's gradient buckets.
#include <vector>

#include "config/spec.hpp"
#include "workload/caching_allocator.hpp"

namespace ironlaw::workload {

/// One pass of the stage's schedule as memory sees it.
struct MemoryPass {
  bool forward = true;
  int microbatch = 0;
  int chunk = 0;  ///< local model chunk (0 … chunks − 1)
};

/// Peaks of one replay [B].
struct StepMemoryPeaks {
  double allocated = 0;  ///< live tensors (rounded block sizes), PyTorch's allocated_bytes peak
  double reserved = 0;   ///< segments / mapped pages, PyTorch's reserved_bytes peak
};

/// Replays two steps of `passes` (one stage's schedule order; `chunks` = virtual stages) through
/// a CachingAllocator with `rules`. Tensor sizes are memory_per_gpu's for `parallel` and `dp`.
/// Throws std::invalid_argument for an empty pass list, a chunk out of range, or a layer-list
/// model. Cost: O(passes · layers per chunk · log blocks).
StepMemoryPeaks replay_step_memory(const config::ModelSpec& model, const config::TrainingSpec& training,
                                   const config::ParallelSpec& parallel, int dp, const std::vector<MemoryPass>& passes,
                                   int chunks, const AllocatorRules& rules);

}  // namespace ironlaw::workload
