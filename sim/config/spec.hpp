#pragma once
/// \file Plain structs a scenario resolves into (STYLE.md §6: YAML → *Spec → validation →
/// construction). Every quantity is in SI base units (bytes, seconds, FLOP, FLOP/s, bytes/s)
/// unless its name says otherwise; times that drive the engine are `Time`.
///
/// Nothing here is an efficiency, an MFU, an overlap or a stall fraction (DESIGN.md
/// principle 1). The one ratio a device carries, `max_gemm_fraction`, is a *measured* property
/// of the best GEMM kernel on that chip (a micro-benchmark result with its source), the
/// ceiling the roofline model may approach, not a utilisation of the training job.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/time.hpp"

namespace ironlaw::config {

/// A GPU model.
struct DeviceSpec {
  std::string name;
  /// Dense tensor-core peak by precision: keys "fp32", "tf32", "bf16", "fp16", "fp8" [FLOP/s].
  std::map<std::string, double> peak_flops;
  /// HBM capacity [B] as the CUDA runtime reports it (cudaMemGetInfo's total, PyTorch's "total
  /// capacity"): the datasheet's marketing figure less what the driver keeps back.
  double hbm_bytes = 0;
  /// Device memory a training process holds outside PyTorch's caching allocator [B]: its CUDA
  /// context, and the buffers of each NCCL communicator it is a member of (0 = not modelled).
  /// What the allocator may reserve is hbm_bytes − cuda_context_bytes − communicators ×
  /// nccl_communicator_bytes (run::allocator_capacity).
  double cuda_context_bytes = 0;
  double nccl_communicator_bytes = 0;
  double hbm_bandwidth = 0;                   ///< measured achievable HBM bandwidth [B/s]
  int sm_count = 0;                           ///< streaming multiprocessors of the simulated chip
  /// SMs of the chip whose peak `peak_flops` gives (the datasheet's or benchmark's chip);
  /// 0 = sm_count. The chip simulated has sm_count SMs at the same per-SM rate: its peak is
  /// peak_flops × sm_count / peak_sm_count, so fewer SMs are a smaller chip, never a faster one.
  int peak_sm_count = 0;
  /// The SM count `peak_flops` is for: peak_sm_count, or sm_count when not given.
  int reference_sm_count() const { return peak_sm_count > 0 ? peak_sm_count : sm_count; }
  /// The simulated chip's peak of `precision` [FLOP/s]: peak_flops × sm_count / reference_sm_count();
  /// 0 when the profile lists no peak for it.
  double chip_peak_flops(const std::string& precision) const {
    const auto it = peak_flops.find(precision);
    if (it == peak_flops.end()) return 0;
    const int reference = reference_sm_count();
    return reference > 0 ? it->second * sm_count / reference : it->second;
  }
  double max_gemm_fraction = 0;               ///< best measured GEMM / dense peak (0,1]
  /// The mainloop rate of an fp8 GEMM with the split accumulator (partial sums promoted to
  /// fp32 outside the tensor cores: cuBLAS with fast accumulation off; Op::fp8_split_accumulator)
  /// over that of the same GEMM accumulating fast, which runs at the rate max_gemm_fraction
  /// gives. In (0, 1]; 1 = no difference (absent).
  double fp8_split_accumulator_rate = 1;
  /// The fused (flash) attention kernel's measured throughput, per pass: rate(L) =
  /// plateau_rate · L / (L + half_length), L the kernel's inner-loop length in tokens (forward:
  /// the keys each query block visits; backward: the queries each key block visits). Attention
  /// kernels interleave softmax with their matmuls, pay a fixed cost per thread block (loading
  /// its Q or K/V block, writing its output) that a short loop does not amortise, and FlashAttention-2's
  /// backward runs below its forward. Not given (every plateau 0): fused attention is timed as a GEMM.
  struct AttentionPass {
    double plateau_rate = 0;  ///< the long-loop limit [FLOP/s, useful FLOPs of the pass]
    double half_length = 0;   ///< loop length at which the rate is half the plateau [tokens]
  };
  /// One measurement of a fused attention kernel: its four passes at one head dimension.
  struct AttentionProfile {
    AttentionPass forward, forward_causal, backward, backward_causal;
    /// The head dimension the rates were measured at; 0: not stated (a kernel's only profile,
    /// used at every head dimension).
    int head_dim = 0;
    /// The kernel has no tile of its own for head dimensions above padded_above and below
    /// head_dim: it runs this profile's head_dim tile on them, the missing columns masked or
    /// zero-filled (FlashAttention 1.x dispatches d ≤ 32, ≤ 64, ≤ 128 to its hdim32/64/128
    /// kernels, csrc/flash_attn/fmha_api.cpp), so such a head dimension takes this profile's
    /// time for head_dim's FLOPs. 0: not stated (nearest profile, its rate on the actual FLOPs).
    int padded_above = 0;
    /// Whether a head dimension of `d` runs this profile's tile padded (padded_above < d < head_dim).
    bool pads(double d) const { return padded_above > 0 && d > padded_above && d < head_dim; }
  };
  /// A fused attention kernel on this device: its profiles, one per measured head dimension
  /// (the rates of FlashAttention-style kernels depend on it: the softmax work per score is
  /// the same at every head dimension while the matmul work per score grows with it, so a
  /// kernel's share of peak differs between head dimension 64 and 128, up or down with its
  /// tiling: the A100 bars of the FlashAttention-2 paper, topologies/a100-sxm.yaml). Empty: not given.
  struct AttentionKernel {
    std::vector<AttentionProfile> profiles;
    bool given() const { return !profiles.empty(); }
    /// The profile measured at `head_dim`; else the one whose tile runs it padded
    /// (AttentionProfile::pads); else the nearest one on a log scale (96 takes a 128 profile,
    /// 80 a 64 one; ties go to the larger), the only one when there is one; a profile with no
    /// stated head dimension is a kernel's only one. Throws std::logic_error when not given.
    /// O(profiles).
    const AttentionProfile& at_head_dim(double head_dim) const;
  };
  /// The fused attention kernel a scenario's attention runs at (the loader puts the one
  /// training.attention_kernel names here: FlashAttention-2's, the key `attention_kernel`,
  /// unless the scenario names another). Not given: fused attention is timed as a GEMM.
  AttentionKernel attention_kernel;
  /// Every fused attention kernel of the device profile, by the name training.attention_kernel
  /// uses: flash2 (YAML `attention_kernel`), cudnn (`cudnn_attention_kernel`: cuDNN's, the kernel
  /// Transformer Engine prefers on Hopper), flash_triton (`triton_attention_kernel`: the Triton
  /// kernel of FlashAttention 1.x, flash_attn.flash_attn_triton, which MosaicML's llm-foundry
  /// ran as attn_impl: triton), flash1 (`flash1_attention_kernel`: FlashAttention 1.x's CUDA
  /// kernel). Only the given ones are present.
  std::map<std::string, AttentionKernel> attention_kernels;
  int gemm_tile_m = 128;                      ///< output tile rows of the GEMM kernel
  int gemm_tile_n = 256;                      ///< output tile cols of the GEMM kernel
  /// The (m, n, k) at which max_gemm_fraction was measured; all 0 = not given (the fraction is
  /// then the kernel's mainloop rate as is). With it, the mainloop rate is what makes the tile,
  /// wave and K-fill model reproduce the measurement at that shape.
  double max_gemm_shape_m = 0, max_gemm_shape_n = 0, max_gemm_shape_k = 0;
  /// K of every output tile spent filling and draining the K-loop pipeline, doing no math [elements].
  double gemm_k_fill = 0;
  double power_limit_w = 0;           ///< board power limit [W]; 0 = the clock is not modelled
  double max_gemm_power_limit_w = 0;  ///< power limit under which max_gemm_fraction was measured [W]
  double static_power_w = 0;          ///< power that does not scale with the SM clock [W]
  /// The clock, as a fraction of the one max_gemm_fraction was measured at, that the best GEMM
  /// holds under max_gemm_power_limit_w once the clock has settled under continuous load (a
  /// training step), where the benchmark timed short bursts after idle at the boost clock:
  /// sustained over achievable matmul throughput (MSMF / MAMF). 1 = the measurement was
  /// sustained. Only with a power limit (power_limit_w > 0). In (0, 1].
  double sustained_gemm_clock = 1;
  /// x in P_dynamic ∝ activity · f^x: 3 where the voltage tracks the clock (V ∝ f, P ∝ f·V²),
  /// 1 at a fixed voltage floor.
  double clock_power_exponent = 3;
  /// Host time to issue one kernel through the CUDA launch API, for a framework mode that
  /// `framework_dispatch` does not list.
  Time kernel_launch_overhead;
  /// Host (CPU thread) time to issue one kernel, by training.framework (eager, fused, compile,
  /// cuda_graphs): the framework's per-op dispatch plus the launch itself. The GPU runs kernels
  /// as they are queued and idles when the host has not yet issued the next one.
  std::map<std::string, Time> framework_dispatch;
  /// Host time of one cuBLASLt GEMM call that a library issues from its own loop after the
  /// framework's call (Transformer Engine's multi-stream grouped GEMM, one call per local expert:
  /// descriptor set-up, heuristic query, launch); zero = kernel_launch_overhead.
  Time library_gemm_call;
  double host_to_device_bandwidth = 0;        ///< pinned H2D copy [B/s]
  /// Images per second the GPU's hardware JPEG decoder (NVJPG) decodes; 0 = none, and then
  /// data.loader.decode_device gpu is refused.
  double jpeg_decode_rate = 0;
  /// Coefficient of variation of the per-GPU kernel-time factor across nominally identical
  /// GPUs of one cluster (manufacturing and power-management variation): each GPU's kernels
  /// take their nominal time × (1 + cv·Z), Z standard normal, drawn once per GPU
  /// (hardware/gpu_speed.hpp). 0 = every GPU runs at the profile's speed.
  double speed_variation_cv = 0;
  /// PyTorch's CUDA caching allocator constants [B] (the device file's `memory_allocator`, an
  /// include of topologies/pytorch-caching-allocator.yaml; c10/cuda/CUDACachingAllocator.cpp).
  /// All 0 (key absent): the allocator is not replayed and reserved memory = allocated memory.
  struct MemoryAllocator {
    double min_block = 0;        ///< kMinBlockSize: requests round up to a multiple
    double small_size = 0;       ///< kSmallSize: largest small-pool request
    double small_buffer = 0;     ///< kSmallBuffer: small-pool segment (and expandable page)
    double large_buffer = 0;     ///< kLargeBuffer: segment for requests below min_large_alloc (and expandable page)
    double min_large_alloc = 0;  ///< kMinLargeAlloc
    double round_large = 0;      ///< kRoundLarge: larger segments round up to a multiple
    bool present() const { return min_block > 0; }
  } memory_allocator;
};

/// A point-to-point link (one direction) as the flow network sees it.
struct LinkSpec {
  double bandwidth = 0;  ///< achievable payload bandwidth per direction [B/s]
  Time latency;          ///< one-way latency added to every flow crossing it
};

/// One server: GPUs on an NVSwitch, each behind a PCIe switch shared with its NIC.
struct NodeSpec {
  std::string name;
  int gpus = 8;
  LinkSpec nvlink;            ///< per GPU, GPU ↔ NVSwitch, per direction
  int gpus_per_pcie_switch = 1;
  LinkSpec pcie;              ///< PCIe switch ↔ GPU and ↔ NIC, per direction
  int nics = 8;               ///< compute NICs (one per GPU on DGX H100)
  LinkSpec nic;               ///< NIC ↔ leaf switch, per direction
  /// In-switch reduction (NVLink SHARP): the rate [B/s] at which the NVSwitch takes in data
  /// to reduce, and multicasts results, per GPU port and direction; 0 = the switch cannot
  /// reduce (key absent).
  double nvswitch_reduce_bandwidth = 0;
  /// Host CPU cores the node's input-pipeline workers share; 0 = not modelled (every loader
  /// worker decodes at the speed of one dedicated core).
  int cpu_cores = 0;
  /// Achievable host (CPU) memory bandwidth of the node [B/s]: what a parameter server's
  /// optimizer update streams at; 0 = not given (parameter_server needs it).
  double host_memory_bandwidth = 0;
};

/// A third switch tier above the spines: the cluster is cut into pods of `nodes` consecutive
/// nodes, each a two-level leaf/spine fabric of its own at the fabric's oversubscription; spine
/// s of every pod connects to the core switches of plane s, which join the pods.
struct PodSpec {
  int nodes = 0;                  ///< nodes per pod; 0 = no pod tier (one two-level fabric)
  double oversubscription = 1.0;  ///< a pod spine's leaf-facing : core-facing capacity (≥ 1)
  LinkSpec spine_core;            ///< one spine ↔ core link, per direction
};

/// The network between nodes.
struct FabricSpec {
  std::string kind = "leaf_spine";  ///< leaf_spine | rail_optimized
  /// leaf_spine: nodes whose NICs all hang off one leaf switch. rail_optimized: nodes whose NIC
  /// of local index i hangs off one leaf of rail i (a rail of N nodes has ⌈N / nodes_per_leaf⌉
  /// leaves), so one rail leaf takes nodes_per_leaf NIC ports (one NIC per node per rail).
  int nodes_per_leaf = 4;
  double oversubscription = 1.0;    ///< leaf downlink : uplink capacity ratio (≥ 1)
  int spines = 0;                   ///< 0 = as many as needed for the uplink capacity
  LinkSpec leaf_spine;              ///< one leaf ↔ spine link, per direction
  Time switch_latency;              ///< per switch traversal
  PodSpec pod;                      ///< optional third tier (key `pod`); absent = two levels
};

/// Constants of the collective library (NCCL-like), each with its source in the topology file.
struct CommSpec {
  int channels = 0;     ///< rings per collective; 0 = one per NIC
  /// SMs the kernels of one collective occupy while it runs (NCCL runs one thread block per
  /// channel, and its channel count is not its ring count: ncclTopoPostset doubles the rings the
  /// graph search found), for a communicator spanning nodes; 0 = `channels` (or node.nics).
  int kernel_sms = 0;
  /// The same for a communicator within one node (NVLink only: its own graph search and channel
  /// count); 0 = kernel_sms.
  int node_kernel_sms = 0;
  /// SMs a collective's kernels take: node_kernel_sms within one node, kernel_sms across nodes,
  /// each falling back as documented above (`nics` the node's NICs).
  int sms_of(bool spans_nodes, int nics) const {
    const int across = kernel_sms > 0 ? kernel_sms : (channels > 0 ? channels : nics);
    return spans_nodes || node_kernel_sms <= 0 ? across : node_kernel_sms;
  }
  Time launch_latency;  ///< per collective call
  Time step_latency;    ///< per ring step, per hop software latency
  /// Network flows (queue pairs) one GPU-to-GPU connection is spread over when it crosses the
  /// spine; ECMP hashes each separately, so more flows mean fewer spine collisions.
  int flows_per_connection = 1;
  /// Bytes one pipeline step of a connection carries at most (NCCL Simple protocol: NCCL_BUFFSIZE
  /// / NCCL_STEPS). Hierarchical slices are never cut below it; tree chunks start from it.
  /// 0 = no limit (hierarchical runs `channels` slices whatever the size; no tree algorithm).
  double chunk_bytes = 0;
  /// Smallest tree chunk: a tree halves its chunk from chunk_bytes while a channel holds fewer
  /// chunks than the tree is deep, down to this size. 0 = chunk_bytes.
  double tree_min_chunk_bytes = 0;
  /// One of NCCL's protocols for the ring family (src/graph/tuning.cc): its base latency per
  /// call, its per-step latency over NVLink and over the network, and the bytes it puts on the
  /// wire per payload byte (LL: 8-byte lines of 4 B data + 4 B flag, 2; LL128: 128-byte lines
  /// with 8 B of flags, 128/120; Simple: 1).
  struct Protocol {
    std::string name;
    /// Paid once per call that runs this protocol, in place of launch_latency (NCCL
    /// baseLatencies[Ring][protocol]). Key absent: launch_latency.
    Time base_latency;
    Time nvlink_step_latency;
    Time net_step_latency;
    double wire_bytes_per_byte = 1;
  };
  /// The protocols a ring or hierarchical collective may use, each call taking the one with the
  /// lowest predicted time (as NCCL's tuner does). Empty (key absent): one protocol whose step
  /// latency is step_latency and whose wire carries payload only.
  std::vector<Protocol> protocols;
  /// The rates an expert-parallel dispatch/combine library's inter-node kernels reach per GPU
  /// (parallel.moe_dispatcher deepep or hybridep; comm/all_to_all.hpp), each a measured property
  /// of the library's kernels on this system, 0 where none was measured (no limit of its own: the
  /// links alone). `rdma_rate`: the payload a GPU's kernel puts on its NIC per second (its
  /// network legs together). `forward_rate`: the token bytes a GPU's kernel delivers within its
  /// node per second, its own tokens and those it relays, its own GPU included (its NVLink legs
  /// and its local copies together).
  struct EpKernels {
    double rdma_rate = 0;     ///< bytes/s
    double forward_rate = 0;  ///< bytes/s
  };
  EpKernels deepep;    ///< DeepEP's normal (internode) kernels, deep_ep.Buffer
  EpKernels hybridep;  ///< HybridEP's kernels (DeepEP's hybrid-ep branch), deep_ep.HybridEPBuffer
  /// The kernels of `dispatcher` ("deepep" or "hybridep"; anything else: none, all zero).
  EpKernels ep_kernels(const std::string& dispatcher) const {
    if (dispatcher == "deepep") return deepep;
    if (dispatcher == "hybridep") return hybridep;
    return {};
  }
};

struct TopologySpec {
  std::string name;
  std::string file;
  std::string source;   ///< free-text note on where the structure comes from
  DeviceSpec device;
  NodeSpec node;
  FabricSpec fabric;
  CommSpec comm;        ///< optional in YAML; all zero when absent
};

/// Published facts about a model, each with its source, shown beside simulated results.
struct PublishedFacts {
  std::optional<double> params;
  std::optional<double> tokens;
  std::optional<double> gpu_hours;
  std::optional<double> training_flops;
  std::optional<double> active_params;  ///< MoE: parameters activated per token
  std::string hardware;
  /// Published training throughput (TFLOP/s per GPU, the utilisation the authors derive), as
  /// text: shown beside simulated results, never read by a simulation (DESIGN.md principle 1).
  std::string throughput;
  std::map<std::string, std::string> sources;  ///< fact name → citation
};

struct LayerModelSpec;  // config/layer_model.hpp

/// A transformer model card (models/*.yaml), or a card with `architecture: layer_list`.
struct ModelSpec {
  std::string name;
  std::string file;
  std::string source;                ///< where the shape comes from (paper, config file)
  int layers = 0;
  int hidden = 0;
  int ffn_hidden = 0;
  int heads = 0;
  int kv_heads = 0;              ///< = heads unless grouped-query attention
  int vocab = 0;
  std::string activation = "gelu";   ///< gelu | swiglu | squared_relu
  std::string norm = "layernorm";    ///< layernorm | rmsnorm
  /// Normalisation of the queries and keys after their projections, before the rotary embedding
  /// (the model's norm type): none; full — one norm over the whole query projection and one over
  /// the whole key projection (OLMo 2: olmo_core's Attention q_norm over d_model, k_norm over
  /// n_kv_heads · head_dim); head — one norm per head over head_dim (Megatron-core's
  /// qk_layernorm, Qwen3). Both touch the same elements; full keeps a gain per feature, head one
  /// per head dimension shared by the heads, and only head is local to a TP shard.
  std::string qk_norm = "none";
  bool bias = false;                 ///< linear layers carry biases (GPT-2/3)
  bool tied_embeddings = false;
  /// rope | learned | relative (Gopher-style, no table) | alibi (Press et al. 2022: a per-head
  /// linear bias on the attention scores, no parameters; BLOOM, MPT)
  std::string position_embedding = "rope";
  int max_position = 0;              ///< rows of a learned position table
  /// max_position: sequence — the learned table has one row per position of the training
  /// sequence (MosaicML's MPT builds it from max_seq_len, which its yamls set to the run's
  /// ${max_seq_len}); a scenario sets max_position to training.sequence_length, a model file
  /// read alone leaves it 0.
  bool max_position_follows_sequence = false;
  int experts = 1;                   ///< MoE: routed experts per MoE layer (1 = dense)
  int experts_per_token = 1;         ///< MoE: routed experts each token goes to (top-k)
  int shared_experts = 0;            ///< MoE: experts every token goes to, per MoE layer
  int moe_ffn_hidden = 0;            ///< MoE: FFN width of one routed/shared expert; 0 = ffn_hidden
  int dense_layers = 0;              ///< MoE: the first dense_layers layers are dense (ffn_hidden)
  /// Query/key/value head dimension; 0 = hidden / heads. Must be 0 under multi-head latent attention.
  int head_dim = 0;
  // Multi-head latent attention (DeepSeek-V2/V3, arXiv:2412.19437 §2.1.1); kv_lora_rank 0 =
  // standard (grouped-query) attention.
  int q_lora_rank = 0;               ///< query compression rank d_c'; 0 = full-rank query projection
  int kv_lora_rank = 0;              ///< key/value compression rank d_c
  int qk_nope_head_dim = 0;          ///< per-head query/key dimension without RoPE d_h
  int qk_rope_head_dim = 0;          ///< per-head decoupled RoPE query/key dimension d_h^R
  int v_head_dim = 0;                ///< per-head value dimension
  /// Dropout probabilities in [0, 1) used in training (a hyperparameter of the model, not an
  /// efficiency): on the attention probabilities, and on the outputs of the attention output
  /// projection and of the MLP down projection. 0 = none (Llama-style training).
  double attention_dropout = 0;
  double hidden_dropout = 0;
  PublishedFacts published;
  /// A model that is not a transformer (`architecture: layer_list`): its layer list; the
  /// transformer fields above are then unused (0) except `layers`, the number of listed layers
  /// with repeats expanded. nullptr for transformers.
  std::shared_ptr<const LayerModelSpec> layer_list;
};

/// Whether the MoE dispatcher `name` is Megatron-core's flex dispatcher (deepep or hybridep:
/// deduplicated tokens on the rail relay, kernels on their own SMs, rates in comm.ep_kernels).
inline bool is_flex_dispatcher(const std::string& name) { return name == "deepep" || name == "hybridep"; }

struct ParallelSpec {
  int tp = 1, pp = 1, cp = 1;
  int dp = 0;                       ///< 0 = auto (GPUs / (tp·pp·cp))
  int zero = 0;                     ///< 0 (DDP), 1, 2, 3 (FSDP-style)
  std::string pp_schedule = "1f1b"; ///< gpipe | 1f1b | interleaved
  /// What runs the pipeline schedule, for the memory it holds between stages: megatron
  /// (Megatron-LM: received tensors and sent outputs freed after use) | torch
  /// (torch.distributed.pipelining, torch 2.5–2.7: a receive buffer per microbatch held for
  /// good, every output and input gradient held until the next step) | deepspeed (DeepSpeed's
  /// PipelineEngine of 2021–22, its TrainSchedule a 1F1B: each send blocks the sender's compute
  /// stream, the transfers with one neighbour run one at a time (one NCCL communicator per pair),
  /// and under TP PartitionedTensor all-gathers every tensor passed between stages, and
  /// the stage's own output before its backward, with its copies: run/pipeline_wiring.cpp; its
  /// memory as megatron's).
  std::string pp_runtime = "megatron";
  int virtual_stages = 1;
  /// Megatron-core's microbatch_group_size_per_vp_stage (--microbatch-group-size-per-virtual-
  /// pipeline-stage; the Llama 3 paper's N): the interleaved schedule runs each model chunk over
  /// groups of this many consecutive microbatches. 0: the default, the pipeline's stages.
  int microbatch_group_size = 0;
  bool sequence_parallel = false;
  /// Whose tensor-parallel layers the model code runs: "" (the framework's own: torch's DTensor
  /// parallelize_module under PyTorch model code, training.framework eager or compile; Megatron's
  /// under the hand-fused frameworks) | megatron (Megatron-style Column/RowParallelLinear with
  /// explicit collectives under PyTorch model code too: fairscale's model-parallel layers, which
  /// the first LLaMA's released code uses, or Megatron-LM's unfused layers) | torch (DTensor;
  /// PyTorch model code only). Under megatron the PyTorch loss still runs over the rank's
  /// vocabulary shard; a head that gathers every logit first (fairscale's gather_output) is not
  /// modelled.
  std::string tp_runtime;
  /// AsyncTP (torch's micro-pipelined tensor parallelism, torch._inductor.config._micro_pipeline_tp
  /// with symmetric memory: torchtitan's experimental.enable_async_tensor_parallel): each
  /// sequence-parallel all-gather fused with the GEMM that consumes it, each reduce-scatter with
  /// the GEMM that produces it, chunk by chunk over copy-engine transfers (run/model_parallel.hpp).
  bool async_tp = false;
  /// Megatron-core's --tp-comm-overlap (Transformer Engine's userbuffers, initialize_ub's default
  /// methods in transformer_engine/pytorch/module/base.py): ring-exchange all-gathers split into
  /// tp chunks, each chunk's GEMM beside the next chunk's copy-engine transfer (qkv_fprop,
  /// fc1_fprop, proj_dgrad, fc2_dgrad), and the row-parallel forward GEMMs' reduce-scatters
  /// pipelined with their GEMM (proj_fprop, fc2_fprop); the backward input-gradient
  /// reduce-scatters run beside the weight-gradient GEMM ("bulk"), as Megatron's own overlap does.
  /// Simulated with AsyncTP's fused parts (run/model_parallel.hpp); not modelled: the 16 SMs TE's
  /// pipelined reduce-scatter and bulk overlaps take from the GEMM (num_sm, set_sm_margin), its
  /// 4 pipeline splits (AsyncTP's tp are used), and the userbuffers' HBM (registered outside
  /// PyTorch's caching allocator).
  bool tp_comm_overlap = false;
  /// Megatron-core's --overlap-param-gather (ZeRO 1/2, its distributed optimizer): the updated
  /// parameters are all-gathered bucket by bucket during the next step's forward — each layer's
  /// gather dispatched by the forward pre-hook of the layer before it, waited for by its own
  /// (megatron/core/distributed/param_and_grad_buffer.py finish_param_sync) — instead of at once
  /// after the optimizer. A step is simulated in its steady state: its forward gathers what the
  /// previous step's optimizer updated.
  bool overlap_param_gather = false;
  /// Megatron-core's --overlap-moe-expert-parallel-comm (TransformerConfig
  /// overlap_moe_expert_parallel_comm, "overlap EP A2A communications with independent
  /// computations of different micro-batches in 1f1b phase"; pipeline_parallel/combined_1f1b.py
  /// and models/common/model_chunk_schedule_plan.py), the overlap DeepSeek-V3's DualPipe builds on
  /// (arXiv:2412.19437 §3.2.1: a forward and a backward chunk paired, each one's all-to-all
  /// hidden by the other's computation): in the 1F1B phase each backward and the forward after it
  /// are laid together, their parts alternating on one compute stream (run/pipeline_wiring.cpp).
  /// The all-to-alls' kernels still take their SMs and HBM from the computation beside them
  /// (run/gpu_sms.hpp). Not modelled: the activation memory of the forward begun before the
  /// backward frees its own (the replay keeps the schedule's pass order), DualPipe's
  /// bidirectional schedule and its second copy of the weights.
  bool moe_a2a_overlap = false;
  /// How the expert all-to-alls move tokens: "alltoall" (Megatron-core's alltoall dispatcher over
  /// NCCL: every token copy, one per chosen expert, a message of its own), "deepep" (DeepSeek's
  /// DeepEP, Megatron-core's flex dispatcher with the deepep backend: a token goes once to each
  /// GPU that holds any of its experts and, between nodes, once to each node, then over NVLink to
  /// its GPUs there; comm/all_to_all.hpp) or "hybridep" (the flex dispatcher's hybridep backend,
  /// NVIDIA's HybridEP in DeepEP's hybrid-ep branch: the same tokens on the same routes, at its
  /// own kernels' rates, topology comm.ep_kernels.hybridep, and with its own default SMs).
  std::string moe_dispatcher = "alltoall";
  /// Whether the dispatcher is the flex dispatcher's (deepep or hybridep: deduplicated tokens on
  /// the rail relay, kernels on moe_dispatcher_sms SMs).
  bool flex_dispatcher() const { return is_flex_dispatcher(moe_dispatcher); }
  /// SMs the flex dispatcher's (deepep or hybridep) dispatch and combine kernels run on, taken
  /// from the computation beside them while they run (run/gpu_sms.hpp) as an NCCL collective's
  /// channels are:
  /// Megatron-core's moe_flex_dispatcher_num_sms (formerly moe_deepep_num_sms /
  /// moe_hybridep_num_sms), which recipes set (Megatron-Bridge's Qwen3 30B-A3B H100 recipes: 16 or
  /// 32). 0: the library's own default (dispatcher_sms). Only with the flex dispatcher.
  int moe_dispatcher_sms = 0;
  /// DeepEP's default SMs for its normal (dispatch and combine) kernels: deep_ep/buffer.py
  /// `Buffer.num_sms = 20`, the "historical default 20" of Megatron-core's moe_deepep_num_sms
  /// (transformer_config.py, core_v0.19.0).
  static constexpr int kDeepEpDefaultSms = 20;
  /// HybridEP's default SMs for its dispatch and combine kernels when Megatron-core passes none
  /// (moe_flex_dispatcher_num_sms None): 24 within one node, 8 across nodes (DeepEP branch
  /// hybrid-ep, csrc/hybrid_ep/config.cuh: num_sms_dispatch_api.value_or(num_of_nodes == 1 ? 24 : 8)).
  static constexpr int kHybridEpDefaultSmsNode = 24;
  static constexpr int kHybridEpDefaultSmsNodes = 8;
  /// The SMs the flex dispatcher's kernels hold, for an expert group spanning nodes or not.
  int dispatcher_sms(bool spans_nodes) const {
    if (moe_dispatcher_sms > 0) return moe_dispatcher_sms;
    if (moe_dispatcher == "hybridep") return spans_nodes ? kHybridEpDefaultSmsNodes : kHybridEpDefaultSmsNode;
    return kDeepEpDefaultSms;
  }
  /// Which PyTorch FSDP runs ZeRO-3 under PyTorch model code: 2, fully_shard (torchtitan; the
  /// default), or 1, FullyShardedDataParallel with flat parameters (PyTorch 1.12-2.x: Composer,
  /// llm-foundry, Accelerate), with its rate limiter (limit_all_gathers=True: Composer's and
  /// llm-foundry's setting, PyTorch's default since 2.1). FSDP1 gathers into the flat parameter
  /// the module's parameters are views of (no copy-out), and issues a unit's gather once the
  /// unit two before it has been resharded, i.e. its pass has run (run/data_parallel.hpp).
  /// 0: unset (2).
  int fsdp_version = 0;
  /// FSDP1 (parallel.fsdp_version 1) rather than FSDP2.
  bool fsdp1() const { return fsdp_version == 1; }
  /// PyTorch FSDP's reshard after forward (pp 1; with pp > 1 torchtitan never reshards): true,
  /// FULL_SHARD, frees a unit's gathered parameters after its forward and gathers them again for
  /// its backward; false, FSDP1's ShardingStrategy.SHARD_GRAD_OP (FSDP2's
  /// reshard_after_forward=False), keeps them from the unit's forward to its post-backward: one
  /// gather per unit and microbatch, none in backward, the gradients still reduce-scattered
  /// after each unit's backward (run/data_parallel.hpp).
  bool reshard_after_forward = true;
  /// Whether the TP collectives run fused with their GEMMs (AsyncTP or TE's comm overlap).
  bool fused_tp_collectives() const { return async_tp || tp_comm_overlap; }
  /// Megatron-LM's async_tensor_model_parallel_allreduce (its default since Sept 2021): a
  /// column-parallel linear's input gradient is all-reduced while its weight-gradient GEMM runs.
  /// false: Megatron-LM before it (the code of Narayanan et al. 2021) and the Megatron-DeepSpeed
  /// forks of 2021–22 (MT-NLG, BLOOM), whose ColumnParallelLinear is copy_to_tensor_model_
  /// parallel_region then F.linear: autograd's linear node computes the input and the weight
  /// gradient, then the copy's backward all-reduces, blocking the stream (OpTimer::Cuts).
  /// PyTorch model code (DTensor TP) blocks so whatever this says: the redistribute's backward
  /// follows the linear's (run/step_costs.cpp).
  bool async_tensor_parallel_allreduce = true;
  int ep = 1;
  /// Megatron-core's --expert-tensor-parallel-size: how the experts' GEMMs are split over the TP
  /// group. 0 (unset) or tp: each expert split as the dense MLP is (ETP = TP), the EP group along
  /// data parallelism. 1 with tp > 1: MoE parallel folding (Megatron-core 0.10+,
  /// megatron/core/transformer/moe/README.md "MoE Parallel Folding"; the Megatron-Bridge and NeMo
  /// MoE recipes' expert_tensor_parallel_size=1): each TP rank routes its own sequence-parallel
  /// tokens, whole experts sit on ep ranks drawn from the TP × DP ranks of a pipeline stage
  /// (Layout::ep_group), and the routed experts run no TP collective (shared experts stay split
  /// over TP as the dense MLP, Megatron-core's SharedExpertMLP).
  int expert_tp = 0;
  /// Whether the experts are folded over TP × DP (expert_tp 1 with tp > 1).
  bool expert_folded() const { return expert_tp == 1 && tp > 1; }
  std::vector<std::string> order{"tp", "cp", "pp", "dp"};
  int microbatch_size = 1;          ///< sequences per microbatch
  double bucket_bytes = 25.0 * 1024 * 1024;  ///< DDP gradient bucket size (PyTorch default 25 MiB)
};

/// One stage of a batch-size ramp: global_batch_tokens per step until `until_tokens` trained.
struct BatchRampStage {
  double until_tokens = 0;
  double global_batch_tokens = 0;
};

/// Evaluation pauses of a whole run (training.evaluation): after every `every_steps` optimizer
/// steps, training stops while the model runs forward over `tokens` held-out tokens; its time
/// is simulated (forward-only steps of the configuration it trains in), never given.
/// Non-productive time.
struct EvaluationSpec {
  int every_steps = 0;           ///< 0 = no evaluation
  double tokens = 0;             ///< tokens one evaluation runs forward over
};

struct TrainingSpec {
  int sequence_length = 2048;
  double global_batch_tokens = 0;   ///< tokens per optimizer step
  double tokens = 0;                ///< total training tokens (full runs)
  std::string precision = "bf16";   ///< fp32 | bf16 | fp16 | fp8
  std::string optimizer = "adam";   ///< sgd | momentum | rmsprop | adam
  /// How PyTorch model code (framework eager or compile) runs Adam; "" = foreach there. Megatron-
  /// style code (fused, cuda_graphs) runs a fused Adam kernel (Apex, Transformer Engine,
  /// DeepSpeed FusedAdam), the only form it takes.
  /// - foreach: torch.optim.AdamW's default on CUDA (_multi_tensor_adamw; torchtitan): eight
  ///   multi-tensor kernels over all parameters, the square roots of all second moments held at
  ///   once (torch._foreach_sqrt into new tensors) until the update;
  /// - for_loop: the kernels one parameter tensor at a time (torch's _single_tensor_adamw;
  ///   Composer's DecoupledAdamW, which MosaicML's llm-foundry runs): nine kernels per tensor,
  ///   one tensor's temporaries at a time;
  /// - fused: one kernel (torch's fused=True): no temporaries.
  std::string optimizer_impl;
  std::string activation_checkpointing = "none";  ///< none | selective | full | op (torchtitan)
  /// How element-wise ops become kernels: fused (hand-fused kernels, Megatron-style: one pass
  /// per op), eager (PyTorch eager, the model code's primitive ops one kernel each), compile
  /// (torch.compile per transformer block, as torchtitan applies it: fused passes in the
  /// blocks, the loss eager unless compile_loss).
  std::string framework = "fused";
  /// Megatron-style model code (framework fused or cuda_graphs: Megatron-core with Transformer
  /// Engine), as opposed to PyTorch model code (eager or compile, as torchtitan runs it). The one
  /// definition of that split: config validation asks it, workload::pytorch_model_code negates it.
  bool megatron_style() const { return framework == "fused" || framework == "cuda_graphs"; }
  /// CUDA_LAUNCH_BLOCKING=1 in the job's environment: every kernel launch returns only once the
  /// kernel has finished, so the host thread issues kernel i only after kernel i − 1 ended and
  /// cannot queue ahead (workload::HostQueue): each kernel then costs its dispatch in series.
  bool launch_blocking = false;
  /// The loss function is compiled too (framework compile only): torchtitan since April 2025
  /// (pytorch/torchtitan#1033, components/loss.py build_cross_entropy_loss: torch.compile of
  /// F.cross_entropy(pred.float(), labels) when training.compile). Inductor fuses the fp32 cast,
  /// log-softmax and NLL into reductions over the logits and one backward kernel: no fp32 copy of
  /// the logits is made, and the backward keeps the logits themselves. Not with torch's loss
  /// parallel (tp > 1), which is not simulated compiled.
  bool compile_loss = false;
  /// The loss is flash-attn's fused cross-entropy kernel (flash_attn.losses.cross_entropy, the
  /// xentropy CUDA kernel of Apex): MosaicML llm-foundry's default for its models (loss_fn
  /// fused_crossentropy). One forward kernel reads the logits in the training precision (their
  /// maximum and sum of exponentials, row by row) and keeps one fp32 log-sum-exp per row; one
  /// backward kernel reads the logits and writes their gradient: no fp32 copy of the logits is
  /// made. PyTorch model code (framework eager or compile) with tp 1 only.
  bool fused_cross_entropy = false;
  /// Megatron-style code (framework fused or cuda_graphs): whether the loss is one fused
  /// vocabulary-parallel cross-entropy pass (true: Megatron-core's --cross-entropy-loss-fusion,
  /// which NeMo 2.0's GPTConfig and Megatron-Bridge set) or Megatron's unfused
  /// vocab_parallel_cross_entropy (false: Megatron-core's default, TransformerConfig
  /// cross_entropy_loss_fusion False, and the only form of Megatron-LM and Megatron-DeepSpeed
  /// before 2024): an fp32 copy of the logits, then its maximum, an in-place shift, exp, sum and
  /// division, each a pass over the fp32 logits, and in backward an in-place scale and the cast
  /// of the gradient back to the training precision (megatron/core/tensor_parallel/cross_entropy.py).
  bool cross_entropy_loss_fusion = true;
  /// MoE models: whether the token permutation around the expert all-to-alls runs as fused
  /// kernels (true: Transformer Engine's moe_permute / moe_unpermute / moe_sort_chunks_by_index,
  /// Megatron-core's --moe-permute-fusion, which Megatron-Bridge's MoE recipes set; also the
  /// one-pass gather and weighted sum of other MoE code) or as Megatron-core 0.8-0.9's PyTorch ops
  /// (false: megatron/core/transformer/moe/moe_utils.py permute / unpermute, the only form before
  /// core 0.10): argsort and a row gather to dispatch; zeros, a scatter back into token order, the
  /// product with the gates and the sum over each token's k rows to combine. Later cores' unfused
  /// path (gates applied before a scatter_add) is not simulated. Megatron-style code only.
  bool moe_permute_fusion = true;
  /// MoE models: how the local experts' GEMMs run. per_expert: Transformer Engine's
  /// GroupedLinear, what Megatron-core's --moe-grouped-gemm runs with TE (TEGroupedMLP): one
  /// cuBLAS GEMM per local expert, issued from TE's C++ loop over its compute streams
  /// (common/gemm/cublaslt_gemm.cu nvte_multi_stream_cublas_gemm, TE 1.9 … 2.18), and under fp8
  /// each expert's input and output gradient quantized on its own (pytorch/csrc/extensions/
  /// cast.cpp split_quantize: a fused multi-tensor kernel for delayed scaling only). grouped: one
  /// grouped-GEMM kernel for all local experts and one quantization pass (DeepGEMM, the
  /// grouped_gemm library of Megatron's legacy GroupedMLP, torch._grouped_mm). auto (default):
  /// per_expert for Megatron-style code (framework fused or cuda_graphs), grouped for PyTorch
  /// model code (torchtitan's MoE runs torch._grouped_mm). The GPU time of the experts' GEMMs is
  /// the same either way; the host's launches differ (workload::HostQueue).
  std::string moe_expert_gemm = "auto";
  /// The MLP's GELU runs in the epilogue of its up-projection GEMM, and the GELU's gradient in the
  /// epilogue of the down projection's input-gradient GEMM (cuBLASLt's GELU_AUX_BIAS and
  /// DGELU_BGRAD epilogues: flash-attn's FusedMLP / fused_dense_lib, Apex's FusedDenseGeluDense),
  /// so no separate activation kernel reads and writes the t × ffn tensor in either pass. The
  /// GEMMs' own time is unchanged (the epilogue's extra write of the pre-activation, which
  /// backward needs, hides under a compute-bound GEMM). Dense GELU MLPs outside fp8 only.
  bool fused_mlp = false;
  /// Each block's output dropout, the residual add and the next norm run as one kernel
  /// (flash-attn's dropout_add_layer_norm, from Apex's FastLayerNorm: fused_dropout_add_ln in
  /// its GPT code): forward reads the block output and the residual and writes the new residual,
  /// the normalised output and the dropout mask (4 × bpe + 1 B per element), backward reads the
  /// two output gradients, the saved residual and the mask and writes the gradients of the block
  /// output and of the residual (5 × bpe + 1 B); no separate dropout or residual kernels. The
  /// last layer's is fused into the final norm, the first layer's norm pays for a residual read
  /// its kernel does not make (one kernel in 2·layers + 1). Dense layers, activation
  /// checkpointing none or full.
  bool fused_dropout_add_norm = false;
  /// Cross-entropy metrics the training loop computes on each microbatch's logits after its
  /// backward, outside autograd: Composer (0.12-0.14 trainer.py, _train_microbatch →
  /// _eval_train_metrics) updates the model's train_metrics after every microbatch, and
  /// llm-foundry's models list two (LanguageCrossEntropy, LanguagePerplexity), each a
  /// torch.nn.CrossEntropyLoss over the logits under the precision's autocast, i.e. on an fp32
  /// copy with an fp32 log-softmax (autocast's float32 list). The loop keeps the microbatch's
  /// logits (Composer's state.outputs) until then. 0 = none; PyTorch model code (framework
  /// eager or compile) with pp 1 and tp 1 only.
  int logit_metrics = 0;
  bool flash_attention = true;
  /// Which fused-attention kernel runs: flash2 (FlashAttention-2, the default: torch SDPA's
  /// flash backend on H100 through 2024, pytorch/pytorch#142132), cudnn (cuDNN fused
  /// attention: Transformer Engine's choice on Hopper; the device's cudnn_attention_kernel) or
  /// flash_triton (FlashAttention 1.x's Triton kernel, flash_attn.flash_attn_triton:
  /// MosaicML llm-foundry's attn_impl: triton, its benchmarks' default in 2023; the device's
  /// triton_attention_kernel) or flash1 (FlashAttention 1.x's CUDA kernel, flash-attn < 2.0:
  /// what FlashAttention's own GPT training code ran in 2022; the device's flash1_attention_kernel).
  /// Named by the scenario, never inferred from training.framework (see load.cpp).
  std::string attention_kernel = "flash2";
  /// The attention inputs are unpadded through the attention mask around FlashAttention's
  /// variable-length kernel, as MosaicML llm-foundry's attn_impl: flash runs it
  /// (llmfoundry/models/layers/attention.py flash_attn_fn, 2023-2024: flash_attn.bert_padding's
  /// unpad_input on Q, K and V, flash_attn_varlen_func / flash_attn_unpadded_func, pad_input on
  /// the output): per layer three gathers of the kept rows, each after two reads of device
  /// values on the host (torch.nonzero's size, max(seqlens).item()), and a scatter of the
  /// output, with their backward scatters and gather (workload::attention_core_forward); the
  /// kernel keeps its unpadded output beside the padded one the output projection keeps.
  /// Needs flash_attention with attention_kernel flash2 or flash1, cp 1, one K/V head per query
  /// head, activation_checkpointing none or full.
  bool attention_unpad = false;
  /// Megatron-core's gradient_accumulation_fusion (Megatron-LM's default: --no-gradient-
  /// accumulation-fusion turns it off): the weight-gradient GEMMs accumulate into the fp32
  /// main_grad in their epilogue, so no separate add pass per microbatch (GradientAccumulation).
  bool gradient_accumulation_fusion = false;
  /// DeepSpeed's BF16_Optimizer (deepspeed/runtime/bf16_optimizer.py, as BLOOM ran it): after
  /// every microbatch's backward, update_hp_grads casts each bf16 gradient to an fp32 temporary
  /// and adds it into the fp32 gradient buffer (hp_grad.add_(lp.grad.to(fp32))), the first
  /// microbatch included: pb + 4·4 B per parameter per microbatch (GradientAccumulation). The
  /// fp32 buffer holds every parameter of the rank, 4 B each, unsharded, for the whole run
  /// (workload::model_state_memory). Needs precision bf16, reduce_dtype fp32, zero ≤ 2. At the
  /// step's end DeepSpeed's engine all-reduces those fp32 buffers (buffered_allreduce_fallback
  /// over get_grads_for_reduction(): flattened, cast to communication_data_type, all-reduced,
  /// scaled by 1/dp, copied back), BF16_Optimizer takes the global norm of the unsharded fp32
  /// gradients and clips them, updates the rank's 1/dp shard (ZeRO 1) and all-gathers the bf16
  /// parameters, then zeroes the buffers (run/data_parallel.cpp).
  bool bf16_optimizer = false;
  /// DeepSpeed's communication_data_type: the dtype its engine's gradient all-reduce casts the
  /// gradients to on the wire (under bf16_optimizer, the only DeepSpeed reduction simulated).
  /// "" = the gradients' own dtype (reduce_dtype). DeepSpeed's default for bf16 was bfloat16 from
  /// 0.5.8 (d14baad9, 2021-11) until 0.9 (261d6370, 2023-03: "Make fp32 default communication
  /// data type"). fp32 | bf16 | fp16.
  std::string communication_data_type;
  /// PyTorch automatic mixed precision (torch.autocast in the training precision, bf16 or fp16)
  /// over fp32 parameters, as Lightning's "bf16-mixed" / "16-mixed", Hugging Face's Trainer
  /// (bf16 / fp16 = True) and torch.amp's examples run DDP: the model, its gradients and the
  /// optimizer's parameters stay fp32 (4 + 4 B per parameter, no separate master copy), and each
  /// forward (and each recompute) casts every matmul weight to the training precision (autocast's
  /// cached_cast: read 4, write 2 B per weight; the copy is cached until the forward's autocast
  /// region ends and kept by autograd for the GEMM's backward), whose backward casts the weight
  /// gradient back to fp32 (ToCopyBackward: read 2, write 4 B) before autograd accumulates it
  /// (AccumulateGrad: the first microbatch's is kept, later ones added in fp32). Activations are
  /// timed in the training precision (the ops autocast runs in fp32 — norms, softmax, losses —
  /// are timed as the framework's kernels are). Gradients are reduced in fp32 (reduce_dtype
  /// unset or fp32). Not with ZeRO-3 (FSDP casts the parameters itself: its MixedPrecision),
  /// fp32 or fp8 recipes, CUDA graphs, DeepSpeed's or Megatron's own fp32 gradient buffers, MoE,
  /// MLA or layer-list models (not simulated).
  bool autocast = false;
  /// Element type of the optimizer's state and master weights: fp32 (the default: an fp32
  /// master copy of every bf16 parameter and fp32 moments) or bf16, as NeMo 1.x's
  /// distributed_fused_adam runs under optim.dtype bf16 (apex DistributedFusedAdam's dtype: the
  /// moments in bf16; NeMo's megatron_base_model.setup_optimization sets store_params false when
  /// that dtype equals the model's, so the update reads and writes the bf16 parameters in place,
  /// with no master copy). Adam then holds 2 + 2 B of state per parameter instead of 4 + 4 + 4.
  /// Needs Megatron-style model code (framework fused or cuda_graphs: PyTorch's optimizers are
  /// simulated with fp32 state) and bf16 parameters (precision bf16 or fp8). fp32 | bf16.
  std::string optimizer_dtype = "fp32";
  /// Element type of the gradient collectives (DDP's all-reduced buckets, ZeRO's and FSDP's
  /// reduce-scatters): FSDP's MixedPrecisionPolicy reduce_dtype, torchtitan's
  /// training.mixed_precision_reduce (float32 by default). "" = the parameters' precision
  /// (parameter_bytes). fp32 | bf16 | fp16.
  std::string reduce_dtype;
  /// The linear layers' weights are all-gathered as fp8: under ZeRO-3/FSDP torchtitan's
  /// float8.enable_fsdp_float8_all_gather (1 byte per weight on the wire and unsharded); under
  /// ZeRO 1/2 with Megatron-style code (framework fused or cuda_graphs) Megatron-core's
  /// fp8_param_gather, fp8 primary weights that the distributed optimizer's all-gather moves at
  /// 1 byte (NeMo's and Megatron-Bridge's fp8 precision recipes set it). Norms, embedding and LM
  /// head stay in the parameters' precision. Needs precision fp8.
  bool fp8_all_gather = false;
  /// How the fp8 recipe scales its operands (precision fp8 only).
  /// current (default): one scale per tensor from its absolute maximum, found in a pass of its
  /// own before the cast (Transformer Engine's Float8CurrentScaling, NeMo's "FP8-CS"; torchao's
  /// dynamic tensorwise Float8). delayed: one scale per tensor from the amax history of earlier
  /// steps, the new amax recorded by the casting kernel itself (Transformer Engine's
  /// DelayedScaling, NeMo's "FP8" before 2025): no amax pass. blockwise: DeepSeek-V3's
  /// fine-grained quantisation (arXiv:2412.19437 §3.3; Transformer Engine's Float8BlockScaling,
  /// Megatron-core --fp8-recipe blockwise): activations and gradients scaled per 1×128 tile,
  /// weights per 128×128 block, each tile's scale found in the pass that casts it; every GEMM,
  /// forward included, promotes its partial sums to fp32 on the CUDA cores every 128 elements
  /// of K. delayed and blockwise are Transformer Engine's: Megatron-style code only (framework
  /// fused or cuda_graphs). rowwise: torchao's Float8 ROWWISE recipe (Float8LinearConfig
  /// from_recipe_name("rowwise"), torchtitan's --float8.recipe_name rowwise): every operand scaled
  /// per row along the GEMM's contraction dimension, so each GEMM casts its own copies (the
  /// output gradient twice, the input and the weight again along the other axis in backward,
  /// none a transpose of a forward copy); the forward GEMM is PyTorch's rowwise-scaled kernel
  /// with fast accumulation, the backward GEMMs cuBLAS's per-tensor kernel with unit scales and
  /// the split accumulator, each followed by a pass multiplying its output by the row and column
  /// scales. PyTorch model code only (framework eager or compile), without the fp8 all-gather
  /// (torchao gathers fp8 weights for the tensorwise recipe only).
  std::string fp8_recipe = "current";
  /// PyTorch's caching allocator grows one segment per stream by mapping pages
  /// (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, as torchtitan's launch script sets)
  /// instead of reserving a segment per cudaMalloc (PyTorch's default).
  bool expandable_segments = false;
  /// Batch-size ramp (full runs): stages in increasing until_tokens; the last one runs to the
  /// end. Empty = global_batch_tokens throughout.
  std::vector<BatchRampStage> batch_ramp;
  EvaluationSpec evaluation;        ///< full runs only
};

struct DistributionSpec {
  /// constant (= fixed) | normal (truncated at 0) | exponential | lognormal | empirical
  std::string distribution = "constant";
  double mean = 0;                        ///< [s]
  double cv = 0;                          ///< coefficient of variation
  std::vector<double> samples;            ///< empirical: measured values [s], drawn uniformly
};

/// One GPU whose loader workers decode more slowly (e.g. a node with a throttled CPU).
struct SlowLoaderSpec {
  int gpu = -1;                  ///< global GPU index; −1 = none
  DistributionSpec decode_time;  ///< replaces data.loader.decode_time on that GPU
};

struct DataSpec {
  double storage_bandwidth_per_node = 0;  ///< [B/s]; 0 = data loading not modelled
  /// Cluster-wide shared file system limit every read also crosses [B/s]; 0 = none.
  double shared_fs_bandwidth = 0;
  double sample_bytes = 0;
  /// Bytes per sample after decoding, what the host→device copy carries (e.g. a float32
  /// image crop); 0 = sample_bytes (the stored bytes are copied as they are).
  double decoded_bytes = 0;
  /// Label bytes per sample, copied to the last pipeline stage (with the inputs when pp = 1).
  double label_bytes = 0;
  int workers_per_gpu = 1;
  int prefetch_batches = 2;
  /// cpu: loader workers decode on host cores (decode_time per sample); gpu: the GPU's hardware
  /// JPEG decoder (DeviceSpec::jpeg_decode_rate) decodes, and the host→device copy carries the
  /// stored bytes instead of decoded_bytes.
  std::string decode_device = "cpu";
  DistributionSpec decode_time;
  SlowLoaderSpec slow_loader;
};

/// One cause of job interruptions in a failure-rate file (topologies/failure-rates-*.yaml).
struct FailureCauseSpec {
  std::string name;                          ///< gpu, hbm, sram, nic, host, switch_cable, ...
  double rate_per_node_s = 0;                ///< mean occurrences per node per second
  /// crash: the job dies and is found at once; hang: the job stalls until the collective
  /// timeout (reliability.restart.detection) finds it; planned: the job is stopped on purpose,
  /// after a synchronous checkpoint, so no work is lost.
  std::string detection = "crash";
  std::string distribution = "exponential";  ///< exponential | weibull (per-node renewal process)
  double weibull_shape = 1;                  ///< Weibull shape k > 0 (1 = exponential)
};

/// A failure-rate file: per-node rates of every cause, each from a published source.
struct FailureRatesSpec {
  std::string name;
  std::string file;
  std::string source;
  std::vector<FailureCauseSpec> causes;
};

struct ReliabilitySpec {
  std::string failures;             ///< path of a failure-rate file ("" = none)
  FailureRatesSpec failure_rates;   ///< its contents (no causes when there is none)
  /// off: no checkpoints; fixed: every checkpoint_interval of training; young_daly: at
  /// sqrt(2 · write cost · MTBF) from the simulated failure rate and write cost.
  std::string checkpoint_policy = "fixed";
  Time checkpoint_interval;         ///< training time between checkpoints (fixed); 0 = off
  std::string checkpoint_mode = "async";
  double checkpoint_storage_bandwidth = 0;  ///< aggregate storage write/read bandwidth [B/s]
  Time restart_detection;           ///< hang timeout: how long a hung job runs before it is found
  Time restart_reschedule;          ///< from detection to the replacement job holding its nodes
  Time restart_initialize;          ///< process start, NCCL set-up, before the checkpoint load
  int hot_spares = 0;               ///< spare nodes held (and paid for) beside the job
  Time node_repair;                 ///< time to return a failed node when no spare is left
  /// What the job does when a failed node has no spare ready. off: it waits for one (a spare
  /// back from repair). global_batch / replica_batch: it restarts at once on fewer nodes, data
  /// parallelism shrunk by the replicas that had GPUs on the failed node, and grows back when a
  /// node is ready; global_batch keeps the global batch (each replica takes more sequences),
  /// replica_batch keeps each replica's (the global batch shrinks).
  std::string elastic = "off";
};
struct RunSpec {
  int steps = 3;
  std::string mode = "steps";  ///< steps | full
  /// symmetric: simulate one model replica (DP index 0) op by op, and every data-parallel
  /// collective with all its flows on the whole fabric (the other replicas provably run the
  /// same ops at the same times); full: every rank op by op.
  std::string detail = "symmetric";
  /// stepped: every ring step of a collective is a set of flows; fluid: each ring position
  /// moves all its steps' bytes as one flow (same time under steady sharing, far fewer events;
  /// see comm::Communicator::set_fluid_rings).
  std::string collectives = "fluid";
  /// Not a scenario key: set by the whole-run layer for an evaluation pass. The step runs
  /// every microbatch forward only: no backward, no gradient collectives, no optimizer.
  bool forward_only = false;
};

/// Asynchronous (or synchronous) parameter-server training in the style of TensorFlow's
/// ParameterServerStrategy (sim/run/parameter_server.hpp): servers hold the weights, sharded;
/// every GPU outside the server nodes is one worker that pulls, computes and pushes.
struct ParameterServerSpec {
  bool enabled = false;                  ///< the scenario has a parameter_server section
  int servers = 1;                       ///< server tasks (each a process on one node, one NIC)
  std::string placement = "dedicated";   ///< dedicated | colocated
  /// dedicated: the last server_nodes nodes of the cluster hold servers only (no workers).
  int server_nodes = 1;
  std::string mode = "async";            ///< async (no barrier) | sync (all gradients, then one update)
  /// A variable is split into min(servers, ⌊bytes / min_shard_bytes⌋) shards (TensorFlow's
  /// MinSizePartitioner; its default min_shard_bytes is 256 KiB) [B].
  double min_shard_bytes = 256.0 * 1024;
  /// Distinct embedding rows one worker's batch touches, over all embedding layers; 0 = every
  /// lookup of the batch a distinct row (an upper bound), capped at the table's rows.
  double sparse_rows_per_batch = 0;
};

struct OutputSpec {
  std::string path;            ///< resolved absolute or cwd-relative path; "" = no file
  std::string trace = "step";  ///< none | step | op | flow
};

struct Scenario {
  std::string name;
  std::string file;            ///< the scenario file as given
  std::uint64_t seed = 1;
  ModelSpec model;
  TopologySpec topology;
  int nodes = 1;
  ParallelSpec parallel;
  TrainingSpec training;
  DataSpec data;
  ReliabilitySpec reliability;
  RunSpec run;
  ParameterServerSpec parameter_server;
  OutputSpec output;
  /// The fully resolved scenario (includes inlined, overrides applied) as YAML text; stored
  /// in /scenario of the output so a run can be reproduced from its file alone.
  std::string resolved_yaml;
  /// Where each key came from (dotted path → position), for errors found after parsing.
  std::map<std::string, SourceLoc> locations;

  int gpus() const { return nodes * topology.node.gpus; }
  /// Where `key` was set, or the scenario file itself if it was never written.
  SourceLoc where(const std::string& key) const;
};

}  // namespace ironlaw::config
