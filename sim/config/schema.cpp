#include "config/schema.hpp"

#include <cstdio>
#include <set>
#include <utility>

#include "config/failures.hpp"
#include "config/reader.hpp"
#include "config/validate.hpp"

namespace ironlaw::config {

namespace {

struct Doc {
  const char* pattern;  ///< a dotted key or its last parts
  const char* meaning;
};

/// What each key means, most specific pattern first (a key takes the first entry its name ends
/// in). Units, types, defaults and bounds are not repeated here: they come from the loader.
const std::vector<Doc>& docs() {
  static const std::vector<Doc> table{
      // top level
      {"name", "name of the scenario; it names the output file (no '/')"},
      {"seed", "root seed of every random stream (each component draws from its own stream of it)"},
      {"model", "the model card: a path to models/*.yaml relative to this file, or an inline mapping"},
      {"model.name", "model name shown in reports (default: the card's file name)"},
      {"model.source", "where the shape comes from (paper, config file)"},
      {"model.layers", "transformer layers; a layer_list card lists its layers instead (model.layers[].KEY)"},
      {"model.hidden", "hidden size (model width)"},
      {"model.ffn_hidden", "feed-forward inner width of a dense layer"},
      {"model.heads", "attention (query) heads"},
      {"model.kv_heads", "key/value heads (grouped-query attention; default: heads)"},
      {"model.vocab", "vocabulary size"},
      {"model.activation", "feed-forward activation: gelu, swiglu (three matrices, gated) or squared_relu (relu(x)², Primer / Nemotron; two matrices, run as Megatron-core writes it: torch.pow(F.relu(x), 2))"},
      {"model.norm", "normalisation layer"},
      {"model.bias", "linear layers carry biases (GPT-2/3)"},
      {"model.tied_embeddings", "the LM head shares the embedding table"},
      {"model.qk_norm", "norm of the queries and keys after their projections, before RoPE: none, full (one norm over the whole query and one over the whole key projection: OLMo 2) or head (per head over head_dim: Megatron-core qk_layernorm, Qwen3); full needs parallel.tp 1"},
      {"model.position_embedding", "rope, a learned table (max_position rows), relative (Transformer-XL style) or alibi (a per-head linear bias on the attention scores, no parameters: BLOOM, MPT)"},
      {"model.max_position", "rows of a learned position table; sequence = one row per position of training.sequence_length (MPT's max_seq_len)"},
      {"model.experts", "MoE: routed experts per MoE layer (1 = dense)"},
      {"model.experts_per_token", "MoE: routed experts each token goes to (top-k)"},
      {"model.shared_experts", "MoE: experts every token goes to, per MoE layer"},
      {"model.moe_ffn_hidden", "MoE: FFN width of one expert (0 = ffn_hidden)"},
      {"model.dense_layers", "MoE: the first dense_layers layers are dense"},
      {"model.head_dim", "query/key/value head dimension (0 = hidden / heads)"},
      {"model.q_lora_rank", "multi-head latent attention: query compression rank (0 = full-rank query)"},
      {"model.kv_lora_rank", "multi-head latent attention: key/value compression rank (0 = standard attention)"},
      {"model.qk_nope_head_dim", "multi-head latent attention: per-head query/key dimension without RoPE"},
      {"model.qk_rope_head_dim", "multi-head latent attention: per-head decoupled RoPE dimension"},
      {"model.v_head_dim", "multi-head latent attention: per-head value dimension"},
      {"model.attention_dropout", "dropout probability on the attention probabilities"},
      {"model.hidden_dropout", "dropout probability on the attention and MLP block outputs"},
      {"model.architecture", "layer_list: the card lists its layers (MLP, CNN, RNN) instead of a transformer shape"},
      {"model.input_kind", "layer_list: what one sample is (image, vector or tokens)"},
      {"model.input", "layer_list: one sample's shape, [channels, height, width] for an image, else [n]"},
      {"layers[].kind", "layer_list: what the layer is"},
      {"layers[].name", "layer_list: name shown in reports"},
      {"layers[].units", "layer_list: output features (dense), hidden size (lstm, gru), embedding width, bottleneck output channels"},
      {"layers[].filters", "layer_list: output channels of a conv2d"},
      {"layers[].kernel", "layer_list: square kernel size of a conv2d or pool layer"},
      {"layers[].stride", "layer_list: stride of a conv2d or pool"},
      {"layers[].padding", "layer_list: zero padding of a conv2d or pool"},
      {"layers[].vocab", "layer_list: rows of an embedding table"},
      {"layers[].heads", "layer_list: heads of an attention layer"},
      {"layers[].width", "layer_list: inner channels of a bottleneck block"},
      {"layers[].biases", "layer_list: bias vectors per gate of an lstm or gru (1 TensorFlow/Keras, 2 PyTorch/cuDNN)"},
      {"layers[].bias", "layer_list: the layer adds a bias"},
      {"layers[].downsample", "layer_list: a bottleneck block with the 1x1 projection shortcut (stride: stride)"},
      {"layers[].repeat", "layer_list: the layer repeated this many times in a row"},
      {"model.published", "published facts about the model, each { value, source }; shown, never simulated"},
      {"published.params", "published parameter count"},
      {"published.tokens", "published training tokens"},
      {"published.gpu_hours", "published GPU-hours of the training run"},
      {"published.training_flops", "published training compute"},
      {"published.active_params", "MoE: published parameters activated per token"},
      {"published.hardware", "the hardware the model was trained on"},
      {"published.throughput", "published training throughput (text, shown beside results)"},
      // cluster
      {"cluster", "the machine: a topology file and how many of its nodes"},
      {"cluster.nodes", "nodes of the topology's kind in the cluster"},
      {"cluster.topology", "the topology: a path to topologies/*.yaml or an inline mapping"},
      {"topology.name", "topology name (default: the file name)"},
      {"topology.source", "where the structure comes from"},
      {"topology.device", "the GPU: a path to a device profile or an inline mapping"},
      {"device.name", "GPU model name"},
      {"device.peak_flops", "dense tensor-core peak per precision of the chip with device.peak_sm_count SMs (the datasheet's); the simulated chip's peak is this x sm_count / peak_sm_count"},
      {"peak_flops.fp64", "dense fp64 peak"},
      {"peak_flops.fp32", "dense fp32 peak (also the CUDA-core rate of vector kernels)"},
      {"peak_flops.tf32", "dense tf32 tensor-core peak"},
      {"peak_flops.bf16", "dense bf16 tensor-core peak"},
      {"peak_flops.fp16", "dense fp16 tensor-core peak"},
      {"peak_flops.fp8", "dense fp8 tensor-core peak"},
      {"device.hbm_bytes", "HBM capacity per GPU as the CUDA runtime reports it (cudaMemGetInfo's total; PyTorch's \"total capacity\")"},
      {"device.cuda_context_bytes", "device memory of one process's CUDA context, outside PyTorch's caching allocator (default 0: not modelled)"},
      {"device.nccl_communicator_bytes", "device memory of one NCCL communicator's buffers, outside the caching allocator; a rank holds one per parallel group of more than one rank (tp, cp, dp, pp, ep) (default 0: not modelled)"},
      {"device.hbm_bandwidth", "measured achievable HBM bandwidth"},
      {"device.sm_count", "streaming multiprocessors of the simulated chip: they set its peak (device.peak_flops x sm_count / peak_sm_count, each SM at the datasheet chip's per-SM rate), the GEMM wave count and the share NCCL's channels take; fewer SMs are a smaller chip, never a faster one"},
      {"device.peak_sm_count", "streaming multiprocessors of the chip device.peak_flops was rated or measured for (default: sm_count); lowering sm_count below it models a smaller chip"},
      {"device.framework_dispatch", "host time to issue one kernel, per framework mode (the GPU idles when the host falls behind)"},
      {"framework_dispatch.eager", "per-kernel host dispatch cost of PyTorch eager mode"},
      {"device.memory_allocator", "PyTorch's CUDA caching allocator constants: a path to topologies/pytorch-caching-allocator.yaml or an inline mapping (absent: reserved memory = allocated)"},
      {"memory_allocator.min_block_size", "kMinBlockSize: every request rounds up to a multiple"},
      {"memory_allocator.small_size", "kSmallSize: largest request served from the small pool"},
      {"memory_allocator.small_buffer", "kSmallBuffer: small-pool segment size (and expandable-segment page)"},
      {"memory_allocator.large_buffer", "kLargeBuffer: segment for requests below min_large_alloc (and large expandable-segment page)"},
      {"memory_allocator.min_large_alloc", "kMinLargeAlloc: requests from here on get a segment of their own size"},
      {"memory_allocator.round_large", "kRoundLarge: such segments round up to a multiple"},
      {"framework_dispatch.fused", "per-kernel host dispatch cost of hand-fused kernels (Megatron-style)"},
      {"framework_dispatch.compile", "per-kernel host dispatch cost of torch.compile'd code"},
      {"framework_dispatch.cuda_graphs", "per-kernel host dispatch cost under CUDA graphs"},
      {"device.speed_variation_cv", "spread of kernel speed across nominally identical GPUs (coefficient of variation); steps wait for the slowest member"},
      {"node.host_memory_bandwidth", "host DRAM bandwidth of a node (parameter servers apply updates at it)"},
      {"device.max_gemm_fraction", "best measured GEMM throughput / dense peak (a micro-benchmark, not a utilisation)"},
      {"device.attention_kernel", "the fused (flash) attention kernel's (FlashAttention-2's) measured rate per pass, rate(L) = plateau_rate · L / (L + half_length): one profile, or a list of profiles each with its head_dim (the nearest is used) (absent: timed as a GEMM)"},
      {"device.cudnn_attention_kernel", "cuDNN's fused attention kernel on the same per-pass curve, used when training.attention_kernel is cudnn (absent: none)"},
      {"device.triton_attention_kernel", "FlashAttention 1.x's Triton kernel (flash_attn.flash_attn_triton; llm-foundry's attn_impl: triton) on the same per-pass curve, used when training.attention_kernel is flash_triton (absent: none)"},
      {"device.flash1_attention_kernel", "FlashAttention 1.x's CUDA kernel (flash-attn < 2.0: flash_attn_unpadded_func; FlashAttention's own GPT training code of 2022) on the same per-pass curve, used when training.attention_kernel is flash1 (absent: none)"},
      {"attention_kernel.head_dim", "the head dimension the profile was measured at (required in a list of profiles)"},
      {"attention_kernel.padded_above", "head dimensions above this one and below head_dim run this profile's tile padded to head_dim (the kernel has no tile of its own for them): they take its time for head_dim's FLOPs (absent: none)"},
      {"cudnn_attention_kernel.head_dim", "the head dimension the profile was measured at (required in a list of profiles)"},
      {"cudnn_attention_kernel.padded_above", "head dimensions above this one and below head_dim run this profile's tile padded to head_dim (the kernel has no tile of its own for them): they take its time for head_dim's FLOPs (absent: none)"},
      {"triton_attention_kernel.head_dim", "the head dimension the profile was measured at (required in a list of profiles)"},
      {"triton_attention_kernel.padded_above", "head dimensions above this one and below head_dim run this profile's tile padded to head_dim (the kernel has no tile of its own for them): they take its time for head_dim's FLOPs (absent: none)"},
      {"flash1_attention_kernel.head_dim", "the head dimension the profile was measured at (required in a list of profiles)"},
      {"flash1_attention_kernel.padded_above", "head dimensions above this one and below head_dim run this profile's tile padded to head_dim (the kernel has no tile of its own for them): they take its time for head_dim's FLOPs (absent: none)"},
      {"attention_kernel[].head_dim", "the head dimension this profile of the list was measured at"},
      {"attention_kernel[].padded_above", "head dimensions above this one and below head_dim run this profile's tile padded to head_dim (the kernel has no tile of its own for them): they take its time for head_dim's FLOPs (absent: none)"},
      {"attention_kernel[].forward", "forward pass without causal mask (L = keys per query block)"},
      {"attention_kernel[].forward_causal", "forward pass with causal mask (L = the sequence)"},
      {"attention_kernel[].backward", "backward pass without causal mask (L = queries per key block)"},
      {"attention_kernel[].backward_causal", "backward pass with causal mask (L = the sequence)"},
      {"cudnn_attention_kernel[].head_dim", "the head dimension this profile of the list was measured at"},
      {"cudnn_attention_kernel[].padded_above", "head dimensions above this one and below head_dim run this profile's tile padded to head_dim (the kernel has no tile of its own for them): they take its time for head_dim's FLOPs (absent: none)"},
      {"cudnn_attention_kernel[].forward", "forward pass without causal mask (L = keys per query block)"},
      {"cudnn_attention_kernel[].forward_causal", "forward pass with causal mask (L = the sequence)"},
      {"cudnn_attention_kernel[].backward", "backward pass without causal mask (L = queries per key block)"},
      {"cudnn_attention_kernel[].backward_causal", "backward pass with causal mask (L = the sequence)"},
      {"triton_attention_kernel[].head_dim", "the head dimension this profile of the list was measured at"},
      {"triton_attention_kernel[].padded_above", "head dimensions above this one and below head_dim run this profile's tile padded to head_dim (the kernel has no tile of its own for them): they take its time for head_dim's FLOPs (absent: none)"},
      {"flash1_attention_kernel[].head_dim", "the head dimension this profile of the list was measured at"},
      {"flash1_attention_kernel[].padded_above", "head dimensions above this one and below head_dim run this profile's tile padded to head_dim (the kernel has no tile of its own for them): they take its time for head_dim's FLOPs (absent: none)"},
      {"triton_attention_kernel[].forward", "forward pass without causal mask (L = keys per query block)"},
      {"flash1_attention_kernel[].forward", "forward pass without causal mask (L = keys per query block)"},
      {"triton_attention_kernel[].forward_causal", "forward pass with causal mask (L = the sequence)"},
      {"flash1_attention_kernel[].forward_causal", "forward pass with causal mask (L = the sequence)"},
      {"triton_attention_kernel[].backward", "backward pass without causal mask (L = queries per key block)"},
      {"flash1_attention_kernel[].backward", "backward pass without causal mask (L = queries per key block)"},
      {"triton_attention_kernel[].backward_causal", "backward pass with causal mask (L = the sequence)"},
      {"flash1_attention_kernel[].backward_causal", "backward pass with causal mask (L = the sequence)"},
      {"triton_attention_kernel.forward", "forward pass without causal mask (L = keys per query block)"},
      {"flash1_attention_kernel.forward", "forward pass without causal mask (L = keys per query block)"},
      {"triton_attention_kernel.forward_causal", "forward pass with causal mask (L = the sequence)"},
      {"flash1_attention_kernel.forward_causal", "forward pass with causal mask (L = the sequence)"},
      {"triton_attention_kernel.backward", "backward pass without causal mask (L = queries per key block)"},
      {"flash1_attention_kernel.backward", "backward pass without causal mask (L = queries per key block)"},
      {"triton_attention_kernel.backward_causal", "backward pass with causal mask (L = the sequence)"},
      {"flash1_attention_kernel.backward_causal", "backward pass with causal mask (L = the sequence)"},
      {"cudnn_attention_kernel.forward", "forward pass without causal mask (L = keys per query block)"},
      {"cudnn_attention_kernel.forward_causal", "forward pass with causal mask (L = the sequence)"},
      {"cudnn_attention_kernel.backward", "backward pass without causal mask (L = queries per key block)"},
      {"cudnn_attention_kernel.backward_causal", "backward pass with causal mask (L = the sequence)"},
      {"attention_kernel.forward", "forward pass without causal mask (L = keys per query block)"},
      {"attention_kernel.forward_causal", "forward pass with causal mask (L = the sequence)"},
      {"attention_kernel.backward", "backward pass without causal mask (L = queries per key block)"},
      {"attention_kernel.backward_causal", "backward pass with causal mask (L = the sequence)"},
      {"plateau_rate", "long-loop limit of the pass's rate, in the useful FLOPs of the pass"},
      {"half_length", "inner-loop length at which the pass reaches half its plateau_rate (a fixed cost per thread block)"},
      {"device.gemm_tile_m", "output tile rows of the GEMM kernel"},
      {"device.gemm_tile_n", "output tile columns of the GEMM kernel"},
      {"device.max_gemm_shape_m", "m of the GEMM max_gemm_fraction was measured at (0 = not given)"},
      {"device.max_gemm_shape_n", "n of the GEMM max_gemm_fraction was measured at (0 = not given)"},
      {"device.max_gemm_shape_k", "k of the GEMM max_gemm_fraction was measured at (0 = not given)"},
      {"device.gemm_k_fill", "K elements per output tile spent filling and draining the K loop"},
      {"device.fp8_split_accumulator_rate",
       "mainloop rate of an fp8 GEMM with the split (fp32-promoting) accumulator, the backward GEMMs of "
       "Transformer Engine and torchao Float8, over a fast-accumulating one's (absent: 1)"},
      {"device.power_limit_w", "board power limit in W (0 = the clock is not modelled)"},
      {"device.max_gemm_power_limit_w", "power limit in W under which max_gemm_fraction was measured"},
      {"device.static_power_w", "power in W that does not scale with the SM clock"},
      {"device.sustained_gemm_clock",
       "clock the best GEMM holds at max_gemm_power_limit_w under continuous load, over the benchmark's burst clock"},
      {"device.clock_power_exponent", "x in dynamic power ∝ activity · clock^x"},
      {"device.kernel_launch_overhead", "host time to launch one kernel"},
      {"device.library_gemm_call", "host time of one cuBLASLt GEMM call a library issues from its own loop (Transformer Engine's grouped GEMM: one per local expert); absent: kernel_launch_overhead"},
      {"device.host_to_device_bandwidth", "pinned host-to-device copy bandwidth"},
      {"device.jpeg_decode_rate", "images per second of the hardware JPEG decoder (NVJPG); 0 = none"},
      {"topology.node", "one server: GPUs, NVSwitch, PCIe switches, NICs"},
      {"node.name", "node model name"},
      {"node.gpus", "GPUs per node"},
      {"node.nvlink", "GPU ↔ NVSwitch link, per GPU and direction"},
      {"node.gpus_per_pcie_switch", "GPUs behind one PCIe switch (shared with a NIC)"},
      {"node.pcie", "PCIe switch ↔ GPU and ↔ NIC link, per direction"},
      {"node.nics", "compute NICs per node"},
      {"node.nic", "NIC ↔ leaf switch link, per direction"},
      {"node.nvswitch_reduce_bandwidth", "NVLink SHARP in-switch reduction rate per GPU port (absent: no NVLS)"},
      {"node.cpu_cores", "host CPU cores the loader workers share (0 = one dedicated core per worker)"},
      {"topology.fabric", "the network between nodes"},
      {"fabric.kind", "leaf/spine or rail-optimised fabric"},
      {"fabric.nodes_per_leaf", "nodes under one leaf switch (rail-optimised: per rail leaf)"},
      {"fabric.oversubscription", "leaf downlink : uplink capacity"},
      {"fabric.spines", "spine switches (0 = as many as the uplink capacity needs)"},
      {"fabric.leaf_spine", "one leaf ↔ spine link, per direction"},
      {"fabric.switch_latency", "latency per switch traversal"},
      {"fabric.pod", "a third tier: pods of leaves under spines, joined by core switches (absent: two tiers)"},
      {"pod.nodes", "nodes per pod"},
      {"pod.oversubscription", "spine downlink : core uplink capacity"},
      {"pod.spine_core", "one spine ↔ core link, per direction"},
      {"bandwidth", "achievable payload bandwidth of the link, per direction"},
      {"latency", "one-way latency added to every flow crossing the link"},
      {"topology.comm", "constants of the collective library (NCCL-like)"},
      {"comm.channels", "rings per collective (0 = one per NIC)"},
      {"comm.kernel_sms", "SMs a collective's kernels occupy beside compute, for a communicator spanning nodes (NCCL's channels: one thread block each; 0 = channels)"},
      {"comm.node_kernel_sms", "SMs a collective's kernels occupy for a communicator within one node (0 = kernel_sms)"},
      {"comm.launch_latency", "latency per collective call"},
      {"comm.step_latency", "software latency per ring step and hop"},
      {"comm.flows_per_connection", "network flows (queue pairs) one connection is spread over for ECMP"},
      {"comm.chunk_bytes", "bytes one pipeline step of a connection carries at most (NCCL Simple protocol)"},
      {"comm.tree_min_chunk_bytes", "smallest tree chunk (0 = chunk_bytes)"},
      {"comm.protocols", "NCCL's protocols for ring-family collectives (ll, ll128, simple); each call takes the fastest (absent: one protocol at comm.step_latency)"},
      {"protocols.ll", "NCCL's LL protocol: 8-byte lines of 4 B data + 4 B flag"},
      {"protocols.ll128", "NCCL's LL128 protocol: 128-byte lines with 8 B of flags"},
      {"protocols.simple", "NCCL's Simple protocol: payload only, fence per step"},
      {"ll.base_latency", "per call that runs LL, in place of comm.launch_latency (NCCL tuning.cc baseLat)"},
      {"ll.nvlink_step_latency", "per ring step over NVLink (NCCL tuning.cc hwLat)"},
      {"ll.net_step_latency", "per ring step over the network (NCCL tuning.cc hwLat)"},
      {"ll.wire_bytes_per_byte", "wire bytes per payload byte"},
      {"ll128.base_latency", "per call that runs LL128, in place of comm.launch_latency (NCCL tuning.cc baseLat)"},
      {"ll128.nvlink_step_latency", "per ring step over NVLink (NCCL tuning.cc hwLat)"},
      {"ll128.net_step_latency", "per ring step over the network (NCCL tuning.cc hwLat)"},
      {"ll128.wire_bytes_per_byte", "wire bytes per payload byte"},
      {"simple.base_latency", "per call that runs Simple, in place of comm.launch_latency (NCCL tuning.cc baseLat)"},
      {"simple.nvlink_step_latency", "per ring step over NVLink (NCCL tuning.cc hwLat)"},
      {"simple.net_step_latency", "per ring step over the network (NCCL tuning.cc hwLat)"},
      {"simple.wire_bytes_per_byte", "wire bytes per payload byte"},
      {"comm.ep_kernels", "measured rates of the expert-parallel dispatch/combine libraries' inter-node kernels on this system, per GPU (parallel.moe_dispatcher deepep or hybridep, on the rail relay; absent: the links alone)"},
      {"ep_kernels.deepep", "DeepEP's normal kernels (deep_ep.Buffer)"},
      {"ep_kernels.hybridep", "HybridEP's kernels (DeepEP's hybrid-ep branch, deep_ep.HybridEPBuffer)"},
      {"deepep.rdma_rate", "token payload one GPU's kernel puts on its NIC per second, its network legs together (absent: the NIC's bandwidth alone)"},
      {"deepep.forward_rate", "token bytes one GPU's kernel delivers within its node per second, its own and those it relays, its own GPU included (absent: the NVLinks alone)"},
      {"hybridep.rdma_rate", "token payload one GPU's kernel puts on its NIC per second, its network legs together (absent: the NIC's bandwidth alone)"},
      {"hybridep.forward_rate", "token bytes one GPU's kernel delivers within its node per second, its own and those it relays, its own GPU included (absent: the NVLinks alone)"},
      // parallel
      {"parallel", "the parallel layout"},
      {"parallel.tp", "tensor-parallel degree (Megatron column/row splits)"},
      {"parallel.pp", "pipeline-parallel stages"},
      {"parallel.cp", "context-parallel degree (ring attention over the sequence)"},
      {"parallel.dp", "data-parallel degree, or auto = GPUs / (tp·pp·cp)"},
      {"parallel.zero", "ZeRO stage: 0 DDP, 1 optimizer sharded, 2 + gradients, 3 + weights (FSDP)"},
      {"parallel.pp_schedule", "pipeline schedule"},
      {"parallel.tp_runtime", "whose tensor-parallel layers: megatron (Megatron-style Column/RowParallelLinear with explicit collectives: each rank keeps its own sequence shard and re-gathers in backward, no DTensor relayout copies; fairscale's model-parallel layers, Megatron-LM) or torch (DTensor parallelize_module; PyTorch model code only). Absent: torch under the eager or compile framework, megatron otherwise"},
      {"parallel.pp_runtime", "what runs the pipeline: megatron; torch (torch.distributed.pipelining: its buffers held between stages); deepspeed (DeepSpeed's PipelineEngine, 1f1b only: every send and receive a rendezvous on both ranks' streams, in its TrainSchedule's order, PartitionedTensor's TP all-gathers and copies)"},
      {"parallel.virtual_stages", "model chunks per pipeline rank (interleaved schedule)"},
      {"parallel.microbatch_group_size", "interleaved schedule: consecutive microbatches each model chunk runs before the next chunk (Megatron-core's microbatch_group_size_per_vp_stage, the Llama 3 paper's N; from pp to the microbatches, the last group whole or at least pp); 0: pp"},
      {"parallel.sequence_parallel", "Megatron sequence parallelism inside the TP group"},
      {"parallel.async_tp", "AsyncTP: each sequence-parallel all-gather and reduce-scatter fused with its GEMM, chunk by chunk over copy-engine transfers (torch micro-pipelined TP; needs sequence_parallel, the compile framework and each TP group inside a node)"},
      {"parallel.tp_comm_overlap", "Megatron-core's --tp-comm-overlap (Transformer Engine userbuffers): sequence-parallel all-gathers and forward reduce-scatters overlapped with their GEMMs chunk by chunk, as AsyncTP's fused parts (needs sequence_parallel, the fused or cuda_graphs framework and each TP group inside a node)"},
      {"parallel.overlap_param_gather", "Megatron-core's --overlap-param-gather: the distributed optimizer's parameter all-gather runs layer by layer during the next forward, one layer ahead, instead of after the optimizer (needs zero 1 or 2 and the fused or cuda_graphs framework)"},
      {"parallel.moe_dispatcher", "how the expert all-to-alls move tokens: alltoall (Megatron-core's alltoall dispatcher over NCCL: one message per token copy, k per token), deepep (DeepSeek's DeepEP, Megatron-core's flex dispatcher with the deepep backend: a token once to each GPU holding any of its experts and, between nodes, once to each node, forwarded over NVLink there; its kernels at the topology's comm.ep_kernels.deepep rates) or hybridep (the flex dispatcher's hybridep backend: the same routes at comm.ep_kernels.hybridep's rates); deepep and hybridep need a MoE model and parallel.ep > 1"},
      {"parallel.moe_dispatcher_sms", "SMs the flex dispatcher's dispatch and combine kernels hold while they run, taken from the computation beside them (Megatron-core's moe_flex_dispatcher_num_sms, formerly moe_deepep_num_sms / moe_hybridep_num_sms); default the library's own: DeepEP's 20 (deep_ep Buffer.num_sms), HybridEP's 8 across nodes and 24 within one (csrc/hybrid_ep/config.cuh); only with parallel.moe_dispatcher deepep or hybridep"},
      {"parallel.moe_a2a_overlap", "Megatron-core's --overlap-moe-expert-parallel-comm (the overlap of DeepSeek-V3's DualPipe): in the 1F1B phase each backward and the forward after it run together, their parts alternating on the compute stream, so that each expert all-to-all runs beside the other pass's computation (needs a MoE model, parallel.ep > 1, the interleaved schedule when pp > 1 (as Megatron-core asserts; 1f1b or interleaved with pp 1), not the deepspeed runtime)"},
      {"parallel.reshard_after_forward", "PyTorch FSDP (zero 3, framework eager or compile, pp 1): true (default) frees a unit's gathered parameters after its forward and gathers them again for backward (FULL_SHARD); false keeps them until the unit's backward is done (FSDP1's SHARD_GRAD_OP, FSDP2's reshard_after_forward=False): one gather per unit and microbatch, the gradients reduce-scattered as before"},
      {"parallel.fsdp_version", "which PyTorch FSDP runs zero 3 under PyTorch model code: 2, fully_shard (torchtitan; default), or 1, FullyShardedDataParallel with flat parameters and limit_all_gathers (Composer, llm-foundry, Accelerate): no copy-out, a unit gathered once the unit two before has run its pass (needs zero 3, framework eager or compile; 1 needs pp 1 and no fp8_all_gather)"},
      {"parallel.async_tensor_parallel_allreduce", "Megatron's async_tensor_model_parallel_allreduce: a column-parallel linear's input gradient is all-reduced beside its weight-gradient GEMM; false: after both gradients, blocking (Megatron-LM before Sept 2021, Megatron-DeepSpeed forks); PyTorch model code (framework eager or compile) always blocks: torch TP's autograd order"},
      {"parallel.ep", "expert-parallel degree (MoE), inside data parallelism (with expert_tp 1 and tp > 1: inside TP x DP)"},
      {"parallel.expert_tp", "Megatron-core's --expert-tensor-parallel-size: tp (default) splits each expert over the TP group as the dense MLP; 1 with tp > 1 is MoE parallel folding: each TP rank routes its own sequence-parallel tokens to whole experts on ep ranks of the stage's TP x DP ranks, and the MoE block has no TP collective (needs sequence_parallel and cp 1; shared experts stay split over TP as the dense MLP)"},
      {"parallel.order", "placement of the dimensions on the GPUs, innermost first"},
      {"parallel.microbatch_size", "sequences per microbatch"},
      {"parallel.bucket_size", "DDP gradient bucket size"},
      // training
      {"training", "what is trained and how"},
      {"training.sequence_length", "tokens per sequence"},
      {"training.global_batch_tokens", "tokens per optimizer step (global batch)"},
      {"training.tokens", "total training tokens (whole runs, days and GPU-hours)"},
      {"training.precision", "training precision recipe (fp8: the linear layers' GEMMs in fp8)"},
      {"training.optimizer", "optimizer (its state per parameter and its update cost)"},
      {"training.optimizer_impl", "how PyTorch model code runs Adam: foreach (torch.optim's default, all square roots held at once), for_loop (one tensor at a time: Composer's DecoupledAdamW) or fused (one kernel); unset: foreach under PyTorch model code, a fused kernel under Megatron-style code"},
      {"training.activation_checkpointing", "recompute policy (op: torchtitan's per-op policy)"},
      {"training.framework", "how element-wise ops become kernels: hand-fused, PyTorch eager, torch.compile"},
      {"training.launch_blocking", "CUDA_LAUNCH_BLOCKING=1: each kernel launch waits for the kernel to finish, so the host cannot queue kernels ahead and every kernel pays its dispatch in series"},
      {"training.fused_dropout_add_norm", "each block's output dropout, the residual add and the next norm run as one kernel (flash-attn's dropout_add_layer_norm, its GPT code's fused_dropout_add_ln): 4 x bpe + 1 B per element forward, 5 x bpe + 1 B backward, no separate dropout or residual kernels; dense layers, activation_checkpointing none or full"},
      {"training.fused_mlp", "the MLP's GELU runs in its GEMMs' epilogues (flash-attn's FusedMLP, Apex FusedDenseGeluDense: cuBLASLt GELU_AUX_BIAS forward, DGELU_BGRAD backward): no separate activation kernel in either pass; dense GELU MLPs outside fp8, activation_checkpointing none or full"},
      {"training.fused_cross_entropy", "the loss is flash-attn's fused cross-entropy kernel (MosaicML llm-foundry's default, loss_fn fused_crossentropy): one forward and one backward kernel over the logits in the training precision, no fp32 copy; framework eager or compile, tp 1"},
      {"training.logit_metrics", "cross-entropy metrics the training loop computes on each microbatch's logits after its backward, outside autograd, under the precision's autocast: an fp32 copy and an fp32 log-softmax each (Composer's train_metrics, after every microbatch; llm-foundry's LanguageCrossEntropy and LanguagePerplexity: 2); the logits are kept until then; framework eager or compile, pp 1, tp 1"},
      {"training.cross_entropy_loss_fusion", "Megatron-style code (framework fused or cuda_graphs): true (default) runs the loss as one fused vocabulary-parallel cross-entropy pass (Megatron-core --cross-entropy-loss-fusion, set by NeMo 2.0 and Megatron-Bridge); false runs Megatron's unfused vocab_parallel_cross_entropy (Megatron-core's default; Megatron-LM and Megatron-DeepSpeed before 2024): an fp32 copy of the logits and five passes over it in forward (max, shift, exp, sum, divide), an in-place scale and the cast back in backward"},
      {"training.moe_permute_fusion", "MoE models, Megatron-style code (framework fused or cuda_graphs): true (default) runs the token permutation around the expert all-to-alls as fused kernels (Transformer Engine's moe_permute / moe_unpermute and, with several local experts, moe_sort_chunks_by_index; Megatron-core --moe-permute-fusion, set by Megatron-Bridge's MoE recipes); false runs Megatron-core 0.8-0.9's PyTorch ops (moe_utils permute / unpermute, the only form before core 0.10): argsort and a row gather to dispatch, then zeros, a scatter back into token order, the product with the gates and the sum over each token's k rows to combine"},
      {"training.moe_expert_gemm", "MoE models: how the local experts' GEMMs are issued: per_expert (Transformer Engine's GroupedLinear, Megatron-core --moe-grouped-gemm with TE: one cuBLAS GEMM per local expert from TE's C++ loop and, under fp8, each expert's tensors quantized on their own, each kernel a launch on the host), grouped (one grouped-GEMM kernel for all local experts: DeepGEMM, Megatron's legacy grouped_gemm, torch._grouped_mm) or auto (default: per_expert under framework fused or cuda_graphs, grouped under eager or compile); the GPU time is the same, the host's launches differ; per_expert and grouped need a MoE model"},
      {"training.compile_loss", "the loss is compiled too (torchtitan since April 2025: torch.compile of F.cross_entropy(logits.float())): fused reductions and one backward kernel, no fp32 copy of the logits; framework compile, not with tp > 1"},
      {"training.flash_attention", "fused (flash) attention kernel"},
      {"training.attention_unpad", "the attention inputs are unpadded through the attention mask around FlashAttention's variable-length kernel (MosaicML llm-foundry's attn_impl: flash, flash_attn.bert_padding): per layer Q, K and V gathered, each after two reads of device values on the host (torch.nonzero, .item()), and the output scattered back, with their backward scatters and gather; attention_kernel flash2 or flash1, cp 1, no grouped K/V, activation_checkpointing none or full"},
      {"training.gradient_accumulation_fusion", "Megatron-core's gradient_accumulation_fusion: weight-gradient GEMMs accumulate into the fp32 main_grad (no separate add per microbatch)"},
      {"training.attention_kernel", "which fused attention kernel: flash2 (FlashAttention-2, torch SDPA's flash backend), cudnn (cuDNN fused attention, Transformer Engine's choice on Hopper: the device's cudnn_attention_kernel), flash_triton (FlashAttention 1.x's Triton kernel, MosaicML llm-foundry's attn_impl: triton: the device's triton_attention_kernel) or flash1 (FlashAttention 1.x's CUDA kernel: the device's flash1_attention_kernel)"},
      {"training.batch_ramp", "batch-size ramp of whole runs: a list of { until_tokens, global_batch_tokens }"},
      {"batch_ramp[].until_tokens", "the stage lasts until this many tokens are trained"},
      {"batch_ramp[].global_batch_tokens", "tokens per optimizer step during the stage"},
      {"training.autocast", "torch.autocast in the training precision over fp32 parameters (Lightning bf16-mixed / 16-mixed, Hugging Face Trainer bf16 / fp16): each forward casts every matmul weight, backward casts its gradient back to fp32; fp32 parameters, gradients and reduction, no master copy"},
      {"training.bf16_optimizer", "DeepSpeed's BF16_Optimizer: every microbatch's bf16 gradients cast to fp32 and added into fp32 buffers (update_hp_grads); at the step's end the engine all-reduces the whole fp32 buffers (in communication_data_type), the optimizer clips them unsharded and updates its 1/dp shard (needs precision bf16, reduce_dtype fp32, zero <= 2)"},
      {"training.reduce_dtype", "precision of gradient reduction (FSDP reduce_dtype; default: the training precision)"},
      {"training.optimizer_dtype", "dtype of the optimizer state and master weights: fp32 (default) or bf16 (NeMo distributed_fused_adam optim.dtype bf16: bf16 moments, the bf16 parameters updated in place with no master copy; needs framework fused or cuda_graphs and precision bf16 or fp8)"},
      {"training.communication_data_type", "DeepSpeed's communication_data_type: the dtype its gradient all-reduce casts the fp32 gradients of training.bf16_optimizer to on the wire (default: reduce_dtype; DeepSpeed 0.5.8-0.8 used bf16 under bf16)"},
      {"training.fp8_all_gather", "the linear weights are all-gathered in fp8: FSDP's fp8 all-gather (zero 3) or Megatron's fp8_param_gather (zero 1/2, framework fused or cuda_graphs); precision fp8"},
      {"training.fp8_recipe", "how precision fp8 scales its operands: current (default; one scale per tensor from an amax pass before each cast: Transformer Engine's current scaling, NeMo's FP8-CS, torchao's dynamic Float8), delayed (Transformer Engine's DelayedScaling, NeMo's FP8 before 2025: the scale from the amax history, no amax pass) or blockwise (DeepSeek-V3's 1x128 activation tiles and 128x128 weight blocks, Transformer Engine's Float8BlockScaling, Megatron-core --fp8-recipe blockwise: one cast pass per operand, every GEMM promoting to fp32 every 128 of K) or rowwise (torchao's Float8 ROWWISE recipe: per-row scales along each GEMM's contraction dimension, every operand cast for each GEMM that reads it, the backward GEMMs per-tensor with unit scales and a pass rescaling their outputs); delayed and blockwise need framework fused or cuda_graphs, rowwise eager or compile and no fp8_all_gather"},
      {"training.expandable_segments", "PyTorch allocator grows one segment per stream (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)"},
      {"training.evaluation", "evaluation pauses of whole runs"},
      {"evaluation.every_steps", "optimizer steps between evaluations (0 = none)"},
      {"evaluation.tokens", "tokens one evaluation runs forward over (its time is simulated)"},
      // data
      {"data", "the input pipeline (absent: not modelled)"},
      {"data.storage_bandwidth_per_node", "storage read bandwidth per node (0 = data loading not modelled)"},
      {"data.shared_fs_bandwidth", "cluster-wide shared file-system bandwidth every read crosses (0 = none)"},
      {"data.sample_bytes", "stored bytes per sample"},
      {"data.decoded_bytes", "bytes per sample after decoding, what the host-to-device copy carries (0 = sample_bytes)"},
      {"data.label_bytes", "label bytes per sample, copied to the last pipeline stage"},
      {"data.loader", "loader workers and their prefetch queue"},
      {"loader.workers_per_gpu", "loader worker processes per GPU"},
      {"loader.prefetch_batches", "ready batches queued per GPU at most"},
      {"loader.decode_device", "cpu: workers decode on host cores (decode_time); gpu: the GPU's hardware JPEG decoder (device.jpeg_decode_rate) decodes and only stored bytes cross PCIe"},
      {"decode_time", "per-sample read and decode time distribution of a worker"},
      {"decode_time.distribution", "distribution of the per-sample decode time"},
      {"decode_time.mean", "mean decode time per sample (a time with its unit, e.g. \"2 ms\")"},
      {"decode_time.cv", "coefficient of variation of the decode time"},
      {"decode_time.samples", "empirical: measured decode times, drawn uniformly (each with its unit)"},
      {"decode_time.source", "where the decode time comes from: the measurement's citation, or \"assumed: ...\""},
      {"loader.slow_loader", "one GPU whose loader workers decode more slowly (needs run.detail: full)"},
      {"slow_loader.gpu", "global index of the slow GPU (-1 = none)"},
      // reliability
      {"reliability", "failures, checkpoints and restarts of whole runs"},
      {"reliability.failures", "failure-rate file (topologies/failure-rates-*.yaml)"},
      {"reliability.checkpoint", "checkpoint policy and storage"},
      {"checkpoint.policy", "off, every fixed interval, or Young/Daly sqrt(2·cost·MTBF)"},
      {"checkpoint.interval", "training time between checkpoints (policy fixed)"},
      {"checkpoint.mode", "sync pauses for the write; async pauses for the snapshot, writes in the background"},
      {"checkpoint.storage_bandwidth", "aggregate checkpoint storage bandwidth (0 = not modelled)"},
      {"reliability.restart", "what a restart costs"},
      {"restart.detection", "hang timeout: how long a hung job runs before it is found"},
      {"restart.reschedule", "from detection to the replacement job holding its nodes"},
      {"restart.initialize", "process start and NCCL set-up before the checkpoint load"},
      {"restart.hot_spares", "spare nodes held beside the job"},
      {"restart.node_repair", "time to return a failed node when no spare is left"},
      {"reliability.elastic", "with no spare left: off waits for the repair; global_batch / replica_batch continue on fewer replicas"},
      {"parameter_server", "parameter-server training (TF ParameterServerStrategy style) instead of all-reduce"},
      {"parameter_server.servers", "parameter-server tasks holding the sharded weights"},
      {"parameter_server.placement", "dedicated: servers on extra nodes; colocated: on worker nodes"},
      {"parameter_server.server_nodes", "nodes that hold the servers"},
      {"parameter_server.mode", "async: no barrier, gradients applied as they arrive; sync: one update from every worker's gradient"},
      {"parameter_server.min_shard_bytes", "smallest variable shard (TF MinSizePartitioner)"},
      {"parameter_server.sparse_rows_per_batch", "embedding rows one batch touches (0 = every lookup a distinct row)"},
      // run, output
      {"run", "what is simulated"},
      {"run.steps", "training steps simulated event by event"},
      {"run.mode", "steps: the steps alone; full: the whole run to training.tokens"},
      {"run.detail", "symmetric: one data-parallel replica op by op; full: every rank"},
      {"run.collectives", "fluid: one flow per ring position; stepped: every ring step"},
      {"output", "where results go"},
      {"output.path", "HDF5 output file (none = no file)"},
      {"output.trace", "detail of /events: none, step, op or flow"},
  };
  return table;
}

bool ends_with_key(const std::string& key, const std::string& suffix) {
  if (key.size() < suffix.size()) return false;
  if (key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  return key.size() == suffix.size() || key[key.size() - suffix.size() - 1] == '.';
}

/// The doc entry of `key`: the longest pattern it ends in.
const char* meaning_of(const std::string& key) {
  const Doc* best = nullptr;
  for (const auto& d : docs()) {
    if (ends_with_key(key, d.pattern) && (!best || std::string(d.pattern).size() > std::string(best->pattern).size()))
      best = &d;
  }
  return best ? best->meaning : "";
}

const char* unit_symbol(Dimension d) {
  switch (d) {
    case Dimension::count: return "1";
    case Dimension::bytes: return "B";
    case Dimension::bandwidth: return "B/s";
    case Dimension::time: return "s";
    case Dimension::flops: return "FLOP";
    case Dimension::flop_rate: return "FLOP/s";
    case Dimension::price: return "USD/h";
  }
  return "";
}

std::string g6(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// Keys the loader reads by hand (Section::raw, then its own parsing in load.cpp) rather than
/// through a typed accessor: their type, default and bounds as that code reads them.
struct RawKey {
  const char* key;
  const char* type;
  const char* default_value;
  const char* bounds;
};
const std::vector<RawKey>& raw_keys() {
  static const std::vector<RawKey> table{
      {"seed", "integer", "1", ">= 0 (64-bit)"},
      {"model.max_position", "integer or sequence", "0", ">= 0"},
      {"parallel.dp", "integer or auto", "auto", "> 0; tp·pp·cp·dp = GPUs"},
      {"parallel.order", "list", "[tp, cp, pp, dp]", "each of tp, cp, pp, dp once"},
      {"parallel.zero", "integer", "0", "0 to 3"},
      {"training.batch_ramp", "list", "[]", "until_tokens increasing"},
  };
  return table;
}

/// Keys read as raw values whose unit the reader checks itself (time_with_unit in load.cpp).
bool is_time_with_unit(const std::string& key) {
  return ends_with_key(key, "decode_time.mean") || ends_with_key(key, "decode_time.samples");
}

/// What each key of a failure-rate file means, by full key (`failures.` + the key in the file).
const std::vector<Doc>& failure_docs() {
  static const std::vector<Doc> table{
      {"failures.name", "name of the failure-rate file (default: its file name without .yaml)"},
      {"failures.source", "where the numbers come from (paper, table, fleet report)"},
      {"failures.observation", "the fleet and period over which the counts were observed (required when a cause gives a count)"},
      {"failures.observation.nodes", "nodes observed"},
      {"failures.observation.duration", "length of the observation"},
      {"failures.causes", "one entry per cause of job interruptions; CAUSE is one of the choices listed"},
      {"failures.causes.CAUSE", "one cause: count or per_1000_node_days (exactly one), detection, distribution"},
      {"failures.causes.CAUSE.count",
       "interruptions by this cause during the observation; rate per node = count / (nodes x duration)"},
      {"failures.causes.CAUSE.per_1000_node_days", "interruptions by this cause per 1,000 node-days"},
      {"failures.causes.CAUSE.detection",
       "how the job notices: crash (at once), hang (after reliability.restart.detection), planned (a scheduled stop)"},
      {"failures.causes.CAUSE.distribution", "times between interruptions: exponential (constant rate) or weibull"},
      {"failures.causes.CAUSE.shape", "Weibull shape k (k < 1: early failures dominate); weibull only"},
  };
  return table;
}

/// The listing of the keys `state` (a collecting reader) recorded, each with the meaning
/// `meaning` gives it.
template <typename Meaning>
std::vector<KeyInfo> key_table_of(const detail::LoadState& state, const Meaning& meaning) {
  std::vector<KeyInfo> out;
  std::set<std::string> seen;
  for (const auto& [key, kind] : state.schema) {
    if (!seen.insert(key).second) continue;  // read twice (by one reader, or by both model card formats)
    KeyInfo info;
    info.key = key;
    if (const auto it = state.traits.find(key); it != state.traits.end()) {
      const detail::KeyTraits& t = it->second;
      info.type = t.type;
      info.choices = t.choices;
      info.required = t.required;
      info.sourced = t.sourced;
      info.default_value = t.default_value;
      info.dimension = t.dimension;
      if (t.dimension) info.unit = unit_symbol(*t.dimension);
      if (t.type == "integer") info.unit = "1";
      if (!t.sign.empty()) info.bounds = t.sign;
    }
    if (is_time_with_unit(key)) {
      info.dimension = Dimension::time;
      info.type = "duration";
      info.unit = "s";
    }
    if (const detail::KeyBound* b = detail::bound_for(key)) {
      info.bounds = (b->zero_ok && b->min > 0 ? "0 or " : "") + g6(b->min) + " to " + g6(b->max);
    }
    for (const auto& r : raw_keys()) {
      if (key != r.key) continue;
      info.type = r.type;
      info.default_value = r.default_value;
      info.bounds = r.bounds;
      if (info.type.rfind("integer", 0) == 0) info.unit = "1";
    }
    info.meaning = meaning(key);
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace

std::vector<KeyInfo> scenario_key_table() {
  return key_table_of(detail::collect_scenario_schema(), [](const std::string& key) { return meaning_of(key); });
}

std::vector<KeyInfo> failure_key_table() {
  auto out = key_table_of(detail::collect_failures_schema(), [](const std::string& key) -> std::string {
    for (const auto& d : failure_docs())
      if (key == d.pattern) return d.meaning;
    return "";
  });
  for (auto& k : out) {
    if (k.key == "failures.causes") k.choices = kFailureCauses;
  }
  return out;
}

std::vector<std::string> documented_key_patterns() {
  std::vector<std::string> out;
  for (const auto& d : docs()) out.push_back(d.pattern);
  return out;
}

std::string scenario_keys_markdown() {
  std::string out =
      "# Scenario keys\n\n"
      "Generated by `ironlaw keys --markdown` from the loader's own reading code (types, defaults, units,\n"
      "choices) and its table of bounds (`key_bounds()` in sim/config/validate.cpp); a test regenerates it\n"
      "and compares. Do not edit by hand: run `build/ironlaw keys --markdown > docs/scenario-keys.md`.\n\n"
      "Units: a dimensioned number (unit other than 1) must be written with its unit (`400 Gbit/s`,\n"
      "`80 GiB`, `5 us`, `989.4 TFLOPS`), in files and in `--set`/`--vary` alike; a bare number other\n"
      "than 0 is refused with the forms that would be read (`0.5 has no unit; write 0.5 s or 500 ms`).\n"
      "Counts stay bare and take the suffixes k M G T P (1e3...) and Ki Mi Gi Ti (2^10...).\n"
      "Defaults and bounds below are in the SI unit of the column *unit*. *sourced* keys are hardware constants written\n"
      "`{ value: ..., source: ... }`. `cluster.topology` and `model` may name a file whose keys are\n"
      "the ones listed under them. `KEY[].NAME` is a key of each item of the list KEY (set the whole\n"
      "list with `--set`).\n\n"
      "| key | type | unit | default | bounds | meaning |\n"
      "|---|---|---|---|---|---|\n";
  const auto rows = [&out](const std::vector<KeyInfo>& table) {
    for (const auto& k : table) {
      std::string type = k.type;
      if (!k.choices.empty()) {
        type += ": ";
        for (std::size_t i = 0; i < k.choices.size(); ++i) type += (i ? " \\| " : "") + k.choices[i];
      }
      if (k.sourced) type += ", sourced";
      const std::string def = k.required ? "required" : k.default_value;
      out += "| `" + k.key + "` | " + type + " | " + k.unit + " | " + def + " | " + k.bounds + " | " + k.meaning + " |\n";
    }
  };
  rows(scenario_key_table());
  out +=
      "\n## Failure-rate files\n\n"
      "`reliability.failures` names a file of its own kind (`topologies/failure-rates-*.yaml`, read by\n"
      "sim/config/failures.cpp with the same unknown-key, unit and position checks). Its keys, listed by\n"
      "`ironlaw keys failures` with the prefix `failures.` (not written in the file): `CAUSE` stands for\n"
      "each cause the file lists, one of the choices of `failures.causes`.\n\n"
      "| key | type | unit | default | bounds | meaning |\n"
      "|---|---|---|---|---|---|\n";
  rows(failure_key_table());
  return out;
}

std::vector<Diagnostic> recheck_scenario(Scenario& scenario) {
  detail::LoadState st;
  st.root_file = scenario.file;
  st.locations = scenario.locations;
  const std::pair<const char*, double> values[] = {
      {"parallel.tp", scenario.parallel.tp},
      {"parallel.pp", scenario.parallel.pp},
      {"parallel.cp", scenario.parallel.cp},
      {"parallel.ep", scenario.parallel.ep},
      {"parallel.virtual_stages", scenario.parallel.virtual_stages},
      {"parallel.microbatch_group_size", scenario.parallel.microbatch_group_size},
      {"parallel.microbatch_size", scenario.parallel.microbatch_size},
      {"training.sequence_length", scenario.training.sequence_length},
      {"training.global_batch_tokens", scenario.training.global_batch_tokens},
      {"training.tokens", scenario.training.tokens},
      {"cluster.nodes", scenario.nodes},
  };
  for (const auto& [key, value] : values) {
    if (const std::string problem = detail::bound_problem(key, value); !problem.empty()) st.fail(key, problem);
  }
  if (scenario.parallel.zero < 0 || scenario.parallel.zero > 3) {
    st.fail("parallel.zero", "expected 0, 1, 2 or 3, got " + std::to_string(scenario.parallel.zero));
  }
  detail::validate_scenario(scenario, st);
  return st.diagnostics;
}

}  // namespace ironlaw::config
