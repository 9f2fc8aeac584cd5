#pragma once
/// \file The allocations and frees one pipeline rank's training step asks of PyTorch's caching
/// allocator, replayed through CachingAllocator (caching_allocator.hpp), so that the memory the
/// step reserves emerges next to the memory its tensors occupy. The tensors are those of
/// memory_per_gpu (model_cost.hpp), placed in time and on the rank that holds them:
/// - model state (weights, gradients, optimizer state as sharded by ZeRO) of the rank's layers
///   (StageMemory::chunk_layers), one tensor per term and layer, plus the embedding on the first
///   pipeline stage and the final norm and LM head on the last, allocated first, held for good;
/// - per forward pass of a microbatch through a chunk of layers: each layer's saved activations
///   (activation_bytes_per_layer), freed in that microbatch's backward of the layer;
/// - on the last pipeline stage, per forward of a microbatch through its last chunk, the LM
///   head's kept input (head_input_bytes);
/// - per backward pass, layer by layer in reverse: under recompute the layer's recomputed
///   activations (the policy-none size) and the gradients its backward holds
///   (backward_gradient_bytes) around its backward, the layer's fresh gradients; on the
///   last pipeline stage the loss buffers (s·b·V/tp · loss_bytes_per_logit) around the backward
///   of its last chunk's first layer, freed with the microbatch's LM-head input;
/// - ZeRO-3/FSDP with dp > 1: each layer's all-gather output on the all-gather stream (1), copied
///   out into unsharded parameters on the compute stream (0), as FSDP2 runs its collectives on
///   streams of their own. With pp = 1 parameters are resharded after forward and re-gathered in
///   backward, one layer prefetched ahead; the root unit (embedding, LM head) is gathered for
///   the step with its gradients. With pp > 1 (torchtitan: no reshard after forward) each layer,
///   and the root unit of the first and the last stage, stays gathered from its first forward to
///   its last backward and its gradients accumulate unsharded in the reduce dtype until the
///   reduce-scatter after the last microbatch;
/// - under PyTorch's FSDP2 (training.framework eager or compile; torch
///   distributed/fsdp/_fully_shard, read at late-2024 and 2025 commits): no low-precision shard
///   (the sharded parameter is the fp32 master the optimizer updates); in forward the flat
///   all-gather output of a unit stays alive until the next unit's all-gather is copied out, or
///   the root's post-forward (all_gather_state, instead of recordStream); each reduce-scatter
///   input (reduce dtype) is allocated on the compute stream, where the copy-in runs, and held
///   until the next unit's post-backward or the end of the backward (reduce_scatter_state); the
///   output, 1/dp of it, is the sharded gradient, on the reduce-scatter stream (2), held by
///   .grad until the next step's zero_grad. With pp > 1 the reduce-scatters run after the
///   chunk's last backward, unit by unit in module order (torch.distributed.pipelining's
///   run_post_backward). Under FSDP1 (parallel.fsdp_version 1) the same, except that the
///   all-gather writes the unsharded flat parameter itself (on stream 1; no separate output) and
///   the fresh gradients are the reduce-scatter's input. Otherwise (ZeRO-3 under Megatron-style
///   code, Megatron-FSDP) the weight and gradient shards are held for good, the all-gather
///   fills the unsharded weights in place and the reduce-scatter input lives on stream 2;
/// - torch.distributed.pipelining's own tensors (StageMemory::torch_pipelining; torch 2.5–2.7,
///   torch/distributed/pipelining/stage.py), per local chunk, of the size of the tensor passed
///   between stages (b·s·h/sp elements, the LM head's logits b·s·V/tp on the last stage):
///   a receive buffer per microbatch for the activations (chunks after the first stage,
///   _prepare_forward_infra) and for the gradients (chunks before the last stage,
///   _prepare_backward_infra), allocated once and held for good — the activations' buffer is
///   the first layer's input, so that layer saves nothing beyond it under full recompute; every
///   forward's output, held in output_chunks until the next step's clear_runtime_states (a
///   chunk's output is not saved by its last layer); every backward's input gradient, held as
///   the receive buffer's .grad until the same clear_runtime_states; on the last stage, after
///   the step's last backward, step()'s merged copy of all kept outputs (_merge_outputs, a
///   torch.cat; torchtitan drops it at once).
/// - the training loop's metrics (training.logit_metrics, pp 1): each microbatch's logits kept
///   from its forward until its metrics have run after its backward, and per metric an fp32
///   copy of them and their fp32 log-softmax, alive while it runs;
/// - torch.optim (training.framework eager or compile): the optimizer's moments are created in
///   the first step() after that step's backward (the master weights exist from the start), and
///   foreach AdamW's square roots of every second moment are alive together during each step();
/// Two steps are replayed (the second starts from the first one's cache, as every step after the
/// first does); the peaks are over both.
/// Not replayed: the CUDA context and NCCL's buffers (outside PyTorch's allocator and outside its
/// reserved figure; the out-of-memory check takes them off the capacity,
/// run::allocator_capacity), the per-op temporaries inside one layer's forward beyond what it
/// keeps, the fp8 casts of gradients, DDP's gradient buckets.
#include <string>
#include <utility>
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
  /// The live tensors at the allocated peak, by kind (rounded block sizes; they sum to
  /// `allocated`), in name order: the replay's ledger.
  std::vector<std::pair<std::string, double>> ledger;
  /// cudaMallocs that failed against AllocatorRules::capacity in the second (steady) step and
  /// were retried after freeing the cache (PyTorch's num_alloc_retries).
  int alloc_retries = 0;
};

/// One pipeline rank as memory sees it.
struct StageMemory {
  std::vector<MemoryPass> passes;  ///< the rank's schedule order (forward and backward passes)
  std::vector<int> chunk_layers;   ///< layers of each local chunk, chunk 0 first (≥ 1; 0 for the
                                   ///< pipeline's first chunk under `first`, last under `last`)
  bool first = true;               ///< local chunk 0 is the pipeline's first stage (embedding)
  bool last = true;                ///< the last local chunk is the last stage (final norm, LM head, loss)
  int microbatches = 1;            ///< per step and pipeline
  /// torch.distributed.pipelining's receive buffers, kept outputs and input gradients (see the
  /// file comment); false: the runtime frees what it passes between stages after use
  /// (Megatron-LM's schedules).
  bool torch_pipelining = false;
};

/// Replays two steps of `stage` through a CachingAllocator with `rules`. Tensor sizes are
/// memory_per_gpu's for `parallel` and `dp` (the ranks ZeRO shards over: dp × cp); the parameters held are those of the stage's
/// layers (count_params' per-layer linear weights split over TP with routed experts over EP,
/// plus the layer's norms) and of its root modules. Throws std::invalid_argument for an empty
/// pass list, a chunk out of range, a chunk of no layers (but the pipeline's first or last, which
/// may hold only the embedding or only the LM head), or a layer-list model.
/// Cost: O(passes · layers per chunk · log blocks).
StepMemoryPeaks replay_step_memory(const config::ModelSpec& model, const config::TrainingSpec& training,
                                   const config::ParallelSpec& parallel, int dp, const StageMemory& stage,
                                   const AllocatorRules& rules);

}  // namespace ironlaw::workload
