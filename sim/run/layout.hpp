#pragma once
/// \file The parallel layout of a scenario resolved against its cluster: the degrees, where
/// each rank sits (placement by `parallel.order`, innermost first: with the default
/// [tp, cp, pp, dp] a TP group fills consecutive GPUs of one node), its process groups, and
/// how layers are split over pipeline chunks.
#include <array>
#include <string>
#include <vector>

#include "config/spec.hpp"

namespace ironlaw::run {

enum class Dim { tp = 0, cp = 1, pp = 2, dp = 3 };
inline constexpr int kDims = 4;

/// One rank's coordinates in the layout.
struct Coord {
  std::array<int, kDims> at{};  ///< indexed by Dim
  int operator[](Dim d) const { return at[static_cast<int>(d)]; }
  int& operator[](Dim d) { return at[static_cast<int>(d)]; }
};

struct Layout {
  int gpus = 1;
  int tp = 1, pp = 1, cp = 1, dp = 1, ep = 1;
  /// MoE parallel folding (parallel.expert_tp 1 with tp > 1): the EP groups are drawn from the
  /// TP × DP ranks of a stage, not from its DP ranks alone.
  bool expert_folded = false;
  int virtual_stages = 1;        ///< model chunks per pipeline rank (interleaved 1F1B)
  /// Interleaved 1F1B: consecutive microbatches each chunk runs before the stage moves to its
  /// next chunk (parallel.microbatch_group_size, by default pp).
  int microbatch_group = 1;
  int microbatch_sequences = 1;  ///< sequences per microbatch
  int microbatches = 1;          ///< per optimizer step per pipeline (gradient accumulation)
  double tokens_per_step = 0;    ///< global batch
  std::array<int, kDims> size{};    ///< degree per Dim
  std::array<int, kDims> stride{};  ///< rank stride per Dim (from parallel.order)
  /// Layers of each model chunk, in model order: chunk j = virtual chunk j / pp on stage j % pp
  /// (Megatron's interleaving; with one virtual stage, chunk j is stage j).
  std::vector<int> chunk_layers;

  int degree(Dim d) const { return size[static_cast<int>(d)]; }
  /// Global rank of a coordinate. O(1).
  int rank_of(const Coord& c) const;
  /// Coordinate of a global rank. O(1).
  Coord coord_of(int rank) const;
  /// The ranks that differ from `rank` only along `d`, in index order (its group along d). O(size).
  std::vector<int> group(int rank, Dim d) const;
  /// The ranks that differ from `rank` only along `a` and `b` (e.g. the DP×CP group that
  /// reduces gradients under context parallelism), in rank order. O(size_a · size_b).
  std::vector<int> group(int rank, Dim a, Dim b) const;
  /// The expert-parallel group of `rank`: ep consecutive DP indices (Megatron places expert
  /// parallelism inside data parallelism). Folded (expert_folded): ep consecutive indices
  /// q = tp + TP · dp of the stage's TP × DP ranks, TP fastest, as Megatron-core's expert rank
  /// generator orders them (parallel_state.py: "tp-ep-dp-pp" with expert TP 1, the TP ranks
  /// first); cp is 1. O(ep).
  std::vector<int> ep_group(int rank) const;
  /// The index of `rank`'s EP group among the stage's TP × DP ranks (folded) or along its TP
  /// index's DP ranks, and the number of such groups: for the symmetric mode, which starts the
  /// all-to-alls of the groups it does not simulate. O(1).
  int ep_group_index(int rank) const;
  /// Folded experts: a rank's index among its stage's TP × DP ranks, q = tp + TP · dp (TP
  /// fastest), and the coordinate `c` moved to index q. O(1).
  int expert_index(const Coord& c) const { return c[Dim::tp] + tp * c[Dim::dp]; }
  Coord at_expert_index(Coord c, int q) const {
    c[Dim::tp] = q % tp;
    c[Dim::dp] = q / tp;
    return c;
  }
  /// The ranks that hold the same routed experts as `rank` (Megatron-core's expert data-parallel
  /// group): those of its stage and TP index (folded: of its stage) whose place in their EP group
  /// is the same, over CP as well: DP·CP/EP ranks (folded: TP·DP/EP). In rank order. O(size).
  std::vector<int> edp_group(int rank) const;
  int ep_groups() const { return expert_folded ? tp * dp / ep : dp / ep; }
  /// Number of model chunks = pp · virtual_stages.
  int chunks() const { return pp * virtual_stages; }
  /// Pipeline stage that holds model chunk j.
  int stage_of_chunk(int j) const { return j % pp; }
  /// First layer index of chunk j.
  int first_layer(int j) const;
};

/// Resolves the layout of `scenario`; throws InputError for layouts this version cannot
/// simulate (with the key and why).
Layout resolve_layout(const config::Scenario& scenario);

/// NCCL communicators one rank is a member of: one per parallel group of more than one rank
/// (tp, cp, dp, pp, ep). PyTorch and Megatron-LM create a process group per parallel dimension;
/// NCCL allocates each communicator's buffers on the device when it is first used.
int nccl_communicators(const Layout& layout);

/// What PyTorch's caching allocator may reserve on one GPU [B]: the capacity the CUDA runtime
/// reports less what the process holds outside the allocator (its CUDA context and its NCCL
/// communicators' buffers, as the device profile gives them). A layout whose replayed reserved
/// peak exceeds this is out of memory.
double allocator_capacity(const config::DeviceSpec& device, const Layout& layout);

/// Splits `layers` over `chunks` pipeline chunks: as even as possible, with the first and the
/// last chunk taking the shortfall (they also run the embedding and the LM head; Llama 3 405B
/// puts 126 layers on 16 stages this way, §3.3.2). Every chunk gets at least one layer, except
/// with more chunks than layers (at most layers + 2): one layer a chunk, the first chunk the
/// embedding alone and, with layers + 2, the last the LM head and loss alone — Llama 3 405B's 16
/// stages of 8 one-layer chunks ("the first model chunk on the first stage has only the
/// embedding, and the last model chunk on the last stage has only output projection and loss
/// calculation", §3.3.2), Megatron-core's account_for_embedding_in_pipeline_split and
/// account_for_loss_in_pipeline_split (which count the embedding and the loss as a layer each:
/// the same split wherever layers + 2 divides evenly). Throws std::invalid_argument for
/// chunks < 1, layers < 1 or chunks > layers + 2.
std::vector<int> split_layers(int layers, int chunks);

}  // namespace ironlaw::run
