#include "config/validate.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "config/layer_model.hpp"

namespace ironlaw::config::detail {

namespace {

std::string key_in(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

std::string str(int v) { return std::to_string(v); }

/// "8.0e6" style numbers are accepted for counts, so whole-number checks are done on doubles.
bool divides(double divisor, double value) {
  if (divisor <= 0 || !std::isfinite(value)) return false;
  const double q = value / divisor;
  return std::fabs(q) < 9e15 && q == std::floor(q);
}

/// A count as digits while doubles hold it exactly, else in %g form (never a 301-digit echo).
std::string whole(double v) {
  if (std::fabs(v) < 9e15 && v == std::floor(v)) return std::to_string(static_cast<long long>(v));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string number_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// True when `key` is `suffix` or ends in "." + suffix.
bool ends_with_key(const std::string& key, const std::string& suffix) {
  if (key.size() < suffix.size()) return false;
  if (key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  return key.size() == suffix.size() || key[key.size() - suffix.size() - 1] == '.';
}

}  // namespace

const std::vector<KeyBound>& key_bounds() {
  // Ranges wide enough for any machine built or announced, narrow enough that no single key
  // can drive the int64-nanosecond clock past its 292 years: e.g. 1.6 TB of gradients over the
  // slowest link allowed (1 MB/s) take 1.6e6 s.
  static const std::vector<KeyBound> table{
      {"device.peak_flops.fp64", 1e9, 1e19, false, "1 GFLOP/s to 10 EFLOP/s per device"},
      {"device.peak_flops.fp32", 1e9, 1e19, false, "1 GFLOP/s to 10 EFLOP/s per device"},
      {"device.peak_flops.tf32", 1e9, 1e19, false, "1 GFLOP/s to 10 EFLOP/s per device"},
      {"device.peak_flops.bf16", 1e9, 1e19, false, "1 GFLOP/s to 10 EFLOP/s per device"},
      {"device.peak_flops.fp16", 1e9, 1e19, false, "1 GFLOP/s to 10 EFLOP/s per device"},
      {"device.peak_flops.fp8", 1e9, 1e19, false, "1 GFLOP/s to 10 EFLOP/s per device"},
      {"device.hbm_bytes", 1e6, 1e15, false, "1 MB to 1 PB of device memory"},
      {"device.cuda_context_bytes", 1e3, 1e12, false, "1 kB to 1 TB"},
      {"device.nccl_communicator_bytes", 1e3, 1e12, false, "1 kB to 1 TB"},
      {"device.hbm_bandwidth", 1e6, 1e20, false, "1 MB/s to 1e20 B/s"},
      {"device.sm_count", 1, 1e5, false, "at least one streaming multiprocessor"},
      {"device.peak_sm_count", 1, 1e5, false, "the SMs of the chip device.peak_flops is for, at least one"},
      {"device.max_gemm_fraction", 1e-3, 1, false, "a fraction of the dense peak, at least 0.1 %"},
      {"plateau_rate", 1e9, 1e19, false, "1 GFLOP/s to 10 EFLOP/s per device"},
      {"half_length", 0, 1e7, true, "at most 10 M tokens"},
      {"device.gemm_tile_m", 1, 65536, false, "rows of a GEMM tile"},
      {"device.gemm_tile_n", 1, 65536, false, "columns of a GEMM tile"},
      {"device.max_gemm_shape_m", 1, 1e7, true, "a GEMM dimension of the benchmark, 0: not given"},
      {"device.max_gemm_shape_n", 1, 1e7, true, "a GEMM dimension of the benchmark, 0: not given"},
      {"device.max_gemm_shape_k", 1, 1e7, true, "a GEMM dimension of the benchmark, 0: not given"},
      {"device.gemm_k_fill", 0, 1e6, true, "K of a tile's pipeline fill, at most 1e6 elements"},
      {"device.fp8_split_accumulator_rate", 0.1, 1, false, "10 % to 100 % of the fast-accumulation rate"},
      {"device.power_limit_w", 1, 1e5, true, "a board power limit up to 100 kW, 0: the clock is not modelled"},
      {"device.max_gemm_power_limit_w", 1, 1e5, true, "a board power limit up to 100 kW"},
      {"device.static_power_w", 0, 1e5, true, "up to 100 kW"},
      {"device.clock_power_exponent", 1, 10, false, "the exponent of the clock in dynamic power, 1 to 10"},
      {"device.sustained_gemm_clock", 0.1, 1, false, "a settled clock of 10 % to 100 % of the benchmark's"},
      {"device.kernel_launch_overhead", 0, 1, false, "at most 1 s per kernel"},
      {"device.library_gemm_call", 0, 1, false, "at most 1 s per call"},
      {"framework_dispatch.eager", 0, 1, false, "at most 1 s per kernel"},
      {"framework_dispatch.fused", 0, 1, false, "at most 1 s per kernel"},
      {"framework_dispatch.compile", 0, 1, false, "at most 1 s per kernel"},
      {"framework_dispatch.cuda_graphs", 0, 1, false, "at most 1 s per kernel"},
      {"device.host_to_device_bandwidth", 1e6, 1e20, false, "1 MB/s to 1e20 B/s"},
      {"device.jpeg_decode_rate", 1, 1e9, true, "at most 1e9 images/s, 0: no hardware JPEG decoder"},
      {"device.speed_variation_cv", 0, 0.1, true, "a coefficient of variation of GPU speeds, at most 0.1"},
      {"memory_allocator.min_block_size", 1, 1e12, false, "1 B to 1 TB"},
      {"memory_allocator.small_size", 1, 1e12, false, "1 B to 1 TB"},
      {"memory_allocator.small_buffer", 1, 1e12, false, "1 B to 1 TB"},
      {"memory_allocator.large_buffer", 1, 1e12, false, "1 B to 1 TB"},
      {"memory_allocator.min_large_alloc", 1, 1e12, false, "1 B to 1 TB"},
      {"memory_allocator.round_large", 1, 1e12, false, "1 B to 1 TB"},
      {"bandwidth", 1e6, 1e20, false, "a link carries 1 MB/s to 1e20 B/s; ideal-system tests use 1e18"},
      {"latency", 0, 1, false, "at most 1 s per hop or step"},
      {"switch_latency", 0, 1, false, "at most 1 s per switch"},
      {"comm.launch_latency", 0, 1, false, "at most 1 s per collective call"},
      {"comm.step_latency", 0, 1, false, "at most 1 s per ring step"},
      {"node.gpus", 1, 1024, false, "GPUs in one node"},
      {"node.gpus_per_pcie_switch", 1, 1024, false, "GPUs behind one PCIe switch"},
      {"node.nics", 1, 1024, false, "NICs in one node"},
      {"node.nvswitch_reduce_bandwidth", 1e6, 1e20, false, "1 MB/s to 1e20 B/s per GPU port"},
      {"rdma_rate", 1e6, 1e20, false, "1 MB/s to 1e20 B/s per GPU"},
      {"forward_rate", 1e6, 1e20, false, "1 MB/s to 1e20 B/s per GPU"},
      {"fabric.nodes_per_leaf", 1, 65536, false, "nodes under one leaf switch"},
      {"fabric.spines", 0, 65536, true, "spine switches (0: derived)"},
      {"fabric.oversubscription", 1, 1e3, false, "downlink : uplink capacity"},
      {"fabric.pod.nodes", 1, 1'048'576, false, "nodes in one pod"},
      {"fabric.pod.oversubscription", 1, 1e3, false, "spine downlink : core uplink capacity"},
      {"comm.channels", 0, 1024, true, "NCCL channels (0: derived)"},
      {"comm.kernel_sms", 0, 1024, true, "SMs of a collective's kernels (0: channels)"},
      {"comm.node_kernel_sms", 0, 1024, true, "SMs of an intra-node collective's kernels (0: kernel_sms)"},
      {"comm.flows_per_connection", 1, 1024, false, "flows per connection"},
      {"comm.chunk_bytes", 1, 1e12, false, "1 B to 1 TB"},
      {"comm.tree_min_chunk_bytes", 1, 1e12, false, "1 B to 1 TB"},
      {"ll.base_latency", 0, 1, false, "at most 1 s per collective call"},
      {"ll.nvlink_step_latency", 0, 1, false, "at most 1 s per ring step"},
      {"ll.net_step_latency", 0, 1, false, "at most 1 s per ring step"},
      {"ll.wire_bytes_per_byte", 1, 16, false, "1 to 16 wire bytes per payload byte"},
      {"ll128.base_latency", 0, 1, false, "at most 1 s per collective call"},
      {"ll128.nvlink_step_latency", 0, 1, false, "at most 1 s per ring step"},
      {"ll128.net_step_latency", 0, 1, false, "at most 1 s per ring step"},
      {"ll128.wire_bytes_per_byte", 1, 16, false, "1 to 16 wire bytes per payload byte"},
      {"simple.base_latency", 0, 1, false, "at most 1 s per collective call"},
      {"simple.nvlink_step_latency", 0, 1, false, "at most 1 s per ring step"},
      {"simple.net_step_latency", 0, 1, false, "at most 1 s per ring step"},
      {"simple.wire_bytes_per_byte", 1, 16, false, "1 to 16 wire bytes per payload byte"},
      {"cluster.nodes", 1, 1'048'576, false, "at most 2^20 nodes"},
      {"reliability.restart.hot_spares", 0, 1'048'576, true, "spare nodes, at most 2^20 as for cluster.nodes"},
      {"model.layers", 1, 1e5, false, "layers of a model"},
      {"model.hidden", 1, 1e7, false, "hidden size"},
      {"model.ffn_hidden", 1, 1e8, false, "feed-forward size"},
      {"model.moe_ffn_hidden", 0, 1e8, true, "expert feed-forward size"},
      {"model.heads", 1, 1e5, false, "attention heads"},
      {"model.kv_heads", 1, 1e5, false, "key/value heads"},
      {"model.vocab", 1, 1e9, false, "vocabulary size"},
      {"model.experts", 1, 1e5, false, "experts per layer"},
      {"model.experts_per_token", 1, 1e5, false, "experts per token"},
      {"parallel.tp", 1, 1'048'576, false, "ranks of a parallel dimension"},
      {"parallel.pp", 1, 1'048'576, false, "ranks of a parallel dimension"},
      {"parallel.cp", 1, 1'048'576, false, "ranks of a parallel dimension"},
      {"parallel.ep", 1, 1'048'576, false, "ranks of a parallel dimension"},
      {"parallel.virtual_stages", 1, 1024, false, "model chunks per pipeline rank"},
      {"parallel.microbatch_group_size", 0, 1e7, true, "microbatches per group, 0: pp"},
      {"parallel.microbatch_size", 1, 1e7, false, "sequences per microbatch"},
      {"parallel.moe_dispatcher_sms", 1, 1024, false, "SMs of the flex dispatcher's kernels"},
      {"parallel.bucket_size", 1, 1e13, false, "1 B to 10 TB per gradient bucket"},
      {"training.sequence_length", 1, 1e8, false, "tokens per sequence"},
      {"training.global_batch_tokens", 1, 1e12, false, "tokens per step"},
      {"training.tokens", 0, 1e16, true, "tokens of the whole run"},
      {"data.storage_bandwidth_per_node", 1e6, 1e20, true, "1 MB/s to 1e20 B/s, 0: not modelled"},
      {"data.sample_bytes", 0, 1e12, true, "at most 1 TB per sample"},
      {"data.shared_fs_bandwidth", 1e6, 1e20, true, "1 MB/s to 1e20 B/s, 0: none"},
      {"data.decoded_bytes", 0, 1e12, true, "at most 1 TB per sample, 0: sample_bytes"},
      {"data.label_bytes", 0, 1e12, true, "at most 1 TB per sample"},
      {"data.loader.workers_per_gpu", 0, 1024, true, "loader workers per GPU"},
      {"data.loader.prefetch_batches", 1, 1024, false, "batches queued per GPU"},
      {"data.loader.decode_time.mean", 0, 3600, true, "at most 1 h to decode one sample"},
      {"data.loader.decode_time.samples", 0, 3600, true, "at most 1 h to decode one sample"},
      {"data.loader.slow_loader.decode_time.mean", 0, 3600, true, "at most 1 h to decode one sample"},
      {"data.loader.slow_loader.decode_time.samples", 0, 3600, true, "at most 1 h to decode one sample"},
      {"data.loader.decode_time.cv", 0, 100, true, "coefficient of variation"},
      {"data.loader.slow_loader.decode_time.cv", 0, 100, true, "coefficient of variation"},
      {"model.published.params", 1, 1e15, true, "parameters of a published model"},
      {"model.published.active_params", 1, 1e15, true, "parameters of a published model"},
      {"model.published.tokens", 1, 1e17, true, "training tokens of a published run"},
      {"model.published.gpu_hours", 1e-3, 1e12, true, "GPU-hours of a published run"},
      {"model.published.training_flops", 1, 1e32, true, "training FLOPs of a published run"},
      {"checkpoint.storage_bandwidth", 1e6, 1e20, true, "1 MB/s to 1e20 B/s, 0: not modelled"},
      {"node.host_memory_bandwidth", 1e6, 1e20, false, "1 MB/s to 1e20 B/s"},
      {"parameter_server.servers", 1, 65536, false, "parameter-server tasks"},
      {"parameter_server.server_nodes", 1, 1'048'576, false, "nodes that hold servers"},
      {"parameter_server.min_shard_bytes", 1, 1e12, false, "1 B to 1 TB per variable shard"},
      {"parameter_server.sparse_rows_per_batch", 0, 1e12, true, "embedding rows one batch touches, 0: every lookup"},
      {"training.evaluation.every_steps", 1, 1e9, true, "optimizer steps between evaluations, 0: none"},
      {"training.logit_metrics", 1, 16, true, "at most 16 metrics, 0: none"},
      {"training.evaluation.tokens", 1, 1e15, true, "tokens one evaluation runs forward over, 0: none"},
      {"run.steps", 1, 1e6, false, "simulated steps (the command line may lower it further: --max-steps)"},
      // Keys inside list items: an item's index is written [] (model.layers[3].units matches
      // layers[].units, training.batch_ramp.0.until_tokens matches batch_ramp[].until_tokens).
      {"training.batch_ramp[].until_tokens", 1, 1e16, false, "tokens of the whole run"},
      {"training.batch_ramp[].global_batch_tokens", 1, 1e12, false, "tokens per step"},
      {"layers[].units", 1, 1e7, false, "output features of a layer"},
      {"layers[].filters", 1, 1e6, false, "output channels of a convolution"},
      {"layers[].kernel", 1, 1e4, false, "kernel side of a convolution or pooling"},
      {"layers[].stride", 1, 1e4, false, "stride of a convolution or pooling"},
      {"layers[].padding", 0, 1e4, true, "padding of a convolution or pooling"},
      {"layers[].vocab", 1, 1e9, false, "vocabulary size"},
      {"layers[].heads", 1, 1e5, false, "attention heads"},
      {"layers[].width", 1, 1e7, false, "inner channels of a bottleneck"},
      {"layers[].biases", 0, 16, true, "bias vectors per gate"},
      {"layers[].repeat", 1, 1e5, false, "repeats of one layer entry"},
      {"model.input[]", 1, 1e7, false, "channels, height, width or features of one input sample"},
      // Failure-rate files (reliability.failures): beyond these a run restarts more often than it trains.
      {"per_1000_node_days", 0, 1e5, true, "failures per 1,000 node-days"},
      {"shape", 0.05, 20, false, "a Weibull shape (infant mortality below 1, wear-out above)"},
      {"observation.duration", 60, 9.2e9, false, "the observed period, at least a minute"},
      {"observation.nodes", 1, 1e7, false, "nodes observed"},
  };
  return table;
}

std::string list_item_key(const std::string& key) {
  std::string out;
  out.reserve(key.size());
  for (std::size_t i = 0; i < key.size();) {
    const bool bracket = key[i] == '[';
    const bool dot = key[i] == '.';
    std::size_t j = i + 1;
    while (j < key.size() && std::isdigit(static_cast<unsigned char>(key[j]))) ++j;
    const bool digits = j > i + 1;
    if (bracket && digits && j < key.size() && key[j] == ']') {  // [3] -> []
      out += "[]";
      i = j + 1;
    } else if (dot && digits && (j == key.size() || key[j] == '.')) {  // .3. -> [].
      out += "[]";
      i = j;
    } else {
      out += key[i++];
    }
  }
  return out;
}

const KeyBound* bound_for(const std::string& key) {
  const std::string k = list_item_key(key);
  for (const auto& b : key_bounds()) {
    if (ends_with_key(k, b.key)) return &b;
  }
  return nullptr;
}

std::string bound_problem(const std::string& key, double value) {
  if (!std::isfinite(value)) return "must be a finite number, got " + number_text(value);
  const KeyBound* b = bound_for(key);
  if (b == nullptr || (b->zero_ok && value == 0) || (value >= b->min && value <= b->max)) return "";
  return "must be from " + number_text(b->min) + " to " + number_text(b->max) + " (" + b->why + "), got " +
         number_text(value);
}

void validate_model(const ModelSpec& m, LoadState& st, const std::string& prefix) {
  if (m.layer_list) return;  // a layer list is checked as it is read (config/layer_model.cpp)
  const auto k = [&](const char* key) { return key_in(prefix, key); };
  const bool mla = m.kv_lora_rank > 0;
  if (st.ok({k("hidden"), k("heads"), k("head_dim"), k("kv_lora_rank")}) && !mla && m.head_dim == 0 &&
      m.hidden % m.heads != 0) {
    st.report(k("hidden"), "must be a multiple of heads (" + str(m.heads) + "), got " + str(m.hidden));
  }
  if (st.ok({k("heads"), k("kv_heads")}) && (m.kv_heads > m.heads || m.heads % m.kv_heads != 0)) {
    st.report(k("kv_heads"), "must divide heads (" + str(m.heads) + "), got " + str(m.kv_heads));
  }
  if (st.ok({k("experts"), k("experts_per_token")}) && m.experts_per_token > m.experts) {
    st.report(k("experts_per_token"),
              "must be at most experts (" + str(m.experts) + "), got " + str(m.experts_per_token));
  }
  if (st.ok({k("experts"), k("shared_experts"), k("moe_ffn_hidden"), k("dense_layers")}) && m.experts == 1 &&
      (m.shared_experts > 0 || m.moe_ffn_hidden > 0 || m.dense_layers > 0)) {
    st.report(k("experts"), "shared_experts, moe_ffn_hidden and dense_layers describe a mixture of experts; they "
                            "need experts > 1, got experts 1");
  }
  if (st.ok({k("layers"), k("dense_layers")}) && m.dense_layers > m.layers) {
    st.report(k("dense_layers"), "must be at most layers (" + str(m.layers) + "), got " + str(m.dense_layers));
  }
  if (st.ok({k("kv_lora_rank"), k("q_lora_rank"), k("qk_nope_head_dim"), k("qk_rope_head_dim"), k("v_head_dim"),
             k("head_dim"), k("heads"), k("kv_heads"), k("bias")})) {
    if (!mla && (m.q_lora_rank > 0 || m.qk_nope_head_dim > 0 || m.qk_rope_head_dim > 0 || m.v_head_dim > 0)) {
      st.report(k("kv_lora_rank"), "q_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim describe "
                                   "multi-head latent attention; they need kv_lora_rank > 0");
    } else if (mla && (m.qk_nope_head_dim + m.qk_rope_head_dim == 0 || m.v_head_dim == 0)) {
      st.report(k("kv_lora_rank"), "multi-head latent attention needs qk_nope_head_dim + qk_rope_head_dim > 0 and "
                                   "v_head_dim > 0");
    } else if (mla && (m.head_dim > 0 || m.kv_heads != m.heads || m.bias)) {
      st.report(k("kv_lora_rank"), "multi-head latent attention takes its head dimensions from qk_nope_head_dim, "
                                   "qk_rope_head_dim and v_head_dim, one key/value head per query head and no "
                                   "biases: drop head_dim, kv_heads and bias");
    }
  }
  if (st.ok({k("qk_norm"), k("kv_lora_rank")}) && mla && m.qk_norm != "none") {
    st.report(k("qk_norm"), "multi-head latent attention normalises its own latents (q_lora_rank, kv_lora_rank): "
                            "expected qk_norm none with kv_lora_rank > 0, got " + m.qk_norm);
  }
  if (st.ok({k("position_embedding"), k("max_position")}) && m.position_embedding == "learned" && m.max_position == 0 &&
      !m.max_position_follows_sequence) {
    st.report(k("max_position"),
              "learned position embeddings need max_position (rows of the table) >= 1, or sequence");
  }
}

void validate_topology(const TopologySpec& t, LoadState& st, const std::string& prefix) {
  const auto k = [&](const char* key) { return key_in(prefix, key); };
  if (st.ok({k("device.peak_flops")}) && t.device.peak_flops.empty()) {
    st.report(k("device.peak_flops"), "needs the peak of at least one precision (fp32, tf32, bf16, fp16, fp8)");
  }
  if (st.ok({k("node.gpus"), k("node.gpus_per_pcie_switch")}) && t.node.gpus % t.node.gpus_per_pcie_switch != 0) {
    st.report(k("node.gpus_per_pcie_switch"),
              "must divide node.gpus (" + str(t.node.gpus) + "), got " + str(t.node.gpus_per_pcie_switch));
  }
  // NCCL runs each channel on an SM of its own beside compute (the run layer takes that share
  // from the kernels while a collective runs): a device with no more SMs than channels would
  // have none left for compute, and the run layer would then take none from it.
  const int comm_sms = std::max(t.comm.sms_of(true, t.node.nics), t.comm.sms_of(false, t.node.nics));
  if (st.ok({k("device.sm_count"), k("comm.channels"), k("comm.kernel_sms"), k("comm.node_kernel_sms"),
             k("node.nics")}) &&
      t.device.sm_count > 0 && t.device.sm_count <= comm_sms) {
    st.report(k("device.sm_count"), "must exceed the SMs a collective's kernels take beside compute (comm.kernel_sms "
                                    "and node_kernel_sms, or comm.channels, or node.nics: " + str(comm_sms) +
                                    "), got " + str(t.device.sm_count));
  }
}

namespace {

/// parameter_server: where the servers go, what the workers are, and the keys of the
/// data-parallel path it does not simulate (refused, never accepted and ignored).
void validate_parameter_server(const Scenario& sc, LoadState& st) {
  const ParameterServerSpec& ps = sc.parameter_server;
  const ParallelSpec& p = sc.parallel;
  const std::string mode_note = "parameter_server runs one single-GPU replica per worker";
  for (const auto& [key, value] : {std::pair<const char*, int>{"parallel.tp", p.tp}, {"parallel.pp", p.pp},
                                   {"parallel.cp", p.cp}, {"parallel.ep", p.ep}, {"parallel.zero", p.zero}}) {
    const int expected = std::string(key) == "parallel.zero" ? 0 : 1;
    if (st.ok({key}) && value != expected) {
      st.report(key, mode_note + "; expected " + str(expected) + ", got " + str(value));
    }
  }
  if (st.ok({"run.mode"}) && sc.run.mode != "steps") {
    st.report("run.mode", "parameter_server simulates steps only; expected steps, got " + sc.run.mode);
  }
  // Keys of the data-parallel step that this mode has no use for: written, they are refused.
  for (const char* key : {"parallel.order", "parallel.bucket_size", "parallel.pp_schedule", "parallel.pp_runtime", "parallel.virtual_stages",
                          "parallel.microbatch_group_size",
                          "parallel.sequence_parallel", "run.detail", "run.collectives", "training.batch_ramp"}) {
    if (st.locations.count(key) > 0) {
      st.report(key, "not simulated under parameter_server (it belongs to the data-parallel step); remove it");
    }
  }
  if (st.ok({"data.storage_bandwidth_per_node"}) && sc.data.storage_bandwidth_per_node > 0) {
    st.report("data.storage_bandwidth_per_node", "the input pipeline is not simulated under parameter_server; "
                                                 "expected 0 (not modelled), got " + whole(sc.data.storage_bandwidth_per_node) + " B/s");
  }
  if (!st.ok({"parameter_server.servers", "parameter_server.server_nodes", "parameter_server.placement",
              "cluster.nodes", "cluster.topology.node.gpus", "cluster.topology.node.nics"})) {
    return;
  }
  if (ps.placement == "dedicated" && ps.server_nodes >= sc.nodes) {
    st.report("parameter_server.server_nodes", "dedicated server nodes must leave at least one worker node of the " +
                                                   str(sc.nodes) + ", got " + str(ps.server_nodes));
    return;
  }
  const int host_nodes = ps.placement == "dedicated" ? ps.server_nodes : sc.nodes;
  if (static_cast<long long>(host_nodes) * sc.topology.node.nics < ps.servers) {
    st.report("parameter_server.servers", "at most one server per NIC: " + str(host_nodes) + " node(s) x " +
                                              str(sc.topology.node.nics) + " NICs hold " +
                                              std::to_string(static_cast<long long>(host_nodes) * sc.topology.node.nics) +
                                              " servers, got " + str(ps.servers));
  }
  if (st.ok({"cluster.topology.node.host_memory_bandwidth"}) && !(sc.topology.node.host_memory_bandwidth > 0)) {
    st.report("cluster.topology.node.host_memory_bandwidth",
              "parameter_server applies updates at the server node's host memory bandwidth; the topology must give "
              "node.host_memory_bandwidth");
  }
  const long long worker_nodes = ps.placement == "dedicated" ? sc.nodes - ps.server_nodes : sc.nodes;
  const long long workers = worker_nodes * sc.topology.node.gpus;
  const TrainingSpec& t = sc.training;
  if (st.ok({"training.global_batch_tokens", "training.sequence_length", "parallel.microbatch_size"}) &&
      divides(t.sequence_length, t.global_batch_tokens)) {
    const double sequences = t.global_batch_tokens / t.sequence_length;
    const double per_step = static_cast<double>(workers) * p.microbatch_size;
    if (!divides(per_step, sequences)) {
      st.report("training.global_batch_tokens",
                whole(t.global_batch_tokens) + " tokens = " + whole(sequences) + " sequences, not a multiple of "
                    "workers*microbatch_size = " + std::to_string(workers) + "*" + str(p.microbatch_size) + " = " +
                    whole(per_step) + " (parameter_server: one worker per GPU outside the server nodes)");
    } else if (sequences / per_step > kMaxMicrobatches) {
      st.report("training.global_batch_tokens", whole(sequences / per_step) + " microbatches per worker step; at most " +
                                                    whole(kMaxMicrobatches) + " are simulated");
    }
  }
}

}  // namespace

void validate_scenario(Scenario& sc, LoadState& st) {
  if (st.ok({"name"}) && (sc.name.empty() || sc.name.find('/') != std::string::npos)) {
    st.report("name", "must be a non-empty name without '/' (it names the output file), got \"" + sc.name + "\"");
  } else if (st.ok({"name"}) && sc.name.size() > kMaxScenarioNameBytes) {
    st.report("name", "must be at most " + std::to_string(kMaxScenarioNameBytes) +
                          " bytes (it names the output file and is stored as an HDF5 attribute), got " +
                          std::to_string(sc.name.size()) + " bytes");
  }
  ParallelSpec& p = sc.parallel;
  const TrainingSpec& t = sc.training;
  const ModelSpec& m = sc.model;

  const bool layout_ok = st.ok(
      {"cluster.nodes", "cluster.topology.node.gpus", "parallel.tp", "parallel.pp", "parallel.cp", "parallel.dp"});
  bool dp_known = false;
  if (layout_ok) {
    const long long gpus = static_cast<long long>(sc.nodes) * sc.topology.node.gpus;
    const long long model_parallel = static_cast<long long>(p.tp) * p.pp * p.cp;
    const std::string cluster =
        std::to_string(gpus) + " GPUs (" + str(sc.nodes) + " nodes x " + str(sc.topology.node.gpus) + " GPUs per node)";
    if (p.dp == 0) {
      if (gpus % model_parallel != 0) {
        st.report("parallel.tp", "tp*pp*cp = " + str(p.tp) + "*" + str(p.pp) + "*" + str(p.cp) + " = " +
                                     std::to_string(model_parallel) + " does not divide the " + cluster);
      } else {
        p.dp = static_cast<int>(gpus / model_parallel);
        dp_known = true;
      }
    } else if (long long all = 0; __builtin_mul_overflow(model_parallel, static_cast<long long>(p.dp), &all) ||
                                  all != gpus) {
      st.report("parallel.dp", "tp*pp*cp*dp = " + str(p.tp) + "*" + str(p.pp) + "*" + str(p.cp) + "*" + str(p.dp) +
                                   " = " + whole(static_cast<double>(model_parallel) * p.dp) + " does not equal the " +
                                   cluster);
    } else {
      dp_known = true;
    }
  }

  if (st.ok({"parallel.tp", "model.heads"}) && m.heads % p.tp != 0) {
    st.report("parallel.tp", "must divide model.heads (" + str(m.heads) + "), got " + str(p.tp));
  }
  // What torch's micro-pipeline pass fuses (torch/_inductor/fx_passes/micro_pipeline_tp.py), and
  // Transformer Engine's userbuffers overlap (Megatron-core's --tp-comm-overlap): an all-gather
  // whose result is a matmul's left operand, a reduce-scatter of one matmul's output, inside one
  // host (symmetric memory and userbuffers are mapped over NVLink between the GPUs of a node).
  // Simulated for dense attention blocks, where every column-parallel GEMM consumes a gathered
  // sequence and every row-parallel one feeds a scatter.
  auto check_fused_tp = [&](const std::string& key, const std::string& what, bool framework_ok,
                            const std::string& frameworks) {
    if (st.ok({"parallel.tp"}) && p.tp < 2) {
      st.report(key, "fuses tensor-parallel collectives; expected parallel.tp > 1, got " + str(p.tp));
    } else if (st.ok({"parallel.sequence_parallel"}) && !p.sequence_parallel) {
      st.report(key, "fuses the all-gathers and reduce-scatters of sequence parallelism; "
                     "expected parallel.sequence_parallel: true");
    } else if (st.ok({"training.framework"}) && !framework_ok) {
      st.report(key, "is " + what + "; expected training.framework: " + frameworks + ", got " + t.framework);
    } else if (st.ok({"model.experts", "model.kv_lora_rank"}) && (m.experts > 1 || m.kv_lora_rank > 0)) {
      st.report(key, "is simulated for dense models with standard attention; this model has " +
                         std::string(m.experts > 1 ? "routed experts" : "latent attention (MLA)"));
    } else if (dp_known && st.ok({"parallel.order", "cluster.topology.node.gpus"})) {
      // The TP group spans tp consecutive multiples of the product of the dimensions placed
      // inside it: on one node when that span divides the node's GPUs.
      long long inner = 1;
      for (const auto& d : p.order) {
        if (d == "tp") break;
        inner *= d == "cp" ? p.cp : d == "pp" ? p.pp : p.dp;
      }
      const long long span = inner * p.tp;
      if (span > sc.topology.node.gpus || sc.topology.node.gpus % span != 0) {
        st.report(key, "needs each TP group inside one node (buffers mapped over NVLink); with parallel.order its " +
                           str(p.tp) + " ranks span " + std::to_string(span) + " GPUs, the node has " +
                           str(sc.topology.node.gpus));
      }
    }
  };
  if (p.async_tp && p.tp_comm_overlap && st.ok({"parallel.async_tp", "parallel.tp_comm_overlap"})) {
    st.report("parallel.tp_comm_overlap", "is Transformer Engine's overlap under Megatron-core, parallel.async_tp "
                                          "torch's under torch.compile: expected one of them, got both");
  } else if (p.async_tp && st.ok({"parallel.async_tp"})) {
    check_fused_tp("parallel.async_tp", "an inductor pass of torch.compile", t.framework == "compile", "compile");
  } else if (p.tp_comm_overlap && st.ok({"parallel.tp_comm_overlap"})) {
    check_fused_tp("parallel.tp_comm_overlap", "Transformer Engine's userbuffers under Megatron-core",
                   t.megatron_style(), "fused or cuda_graphs");
  }
  if (st.locations.count("parallel.tp_runtime") > 0 && st.ok({"parallel.tp", "parallel.tp_runtime"}) && p.tp == 1) {
    st.report("parallel.tp_runtime", "whose tensor-parallel layers needs tensor parallelism; expected parallel.tp > 1, got 1");
  }
  if (p.tp_runtime == "torch" && st.ok({"parallel.tp_runtime", "training.framework"}) && t.framework != "eager" &&
      t.framework != "compile") {
    st.report("parallel.tp_runtime", "torch is DTensor's tensor parallelism of PyTorch model code: needs training.framework "
                                     "eager or compile, got " + t.framework);
  }
  if (p.tp_runtime == "megatron" && p.async_tp && st.ok({"parallel.tp_runtime", "parallel.async_tp"})) {
    st.report("parallel.async_tp", "is torch's micro-pipelined tensor parallelism over DTensor: expected parallel.tp_runtime "
                                   "torch or absent, got megatron");
  }
  if (st.locations.count("parallel.pp_runtime") > 0 && st.ok({"parallel.pp", "parallel.pp_runtime"}) && p.pp == 1) {
    st.report("parallel.pp_runtime", "a pipeline runtime needs pipeline parallelism; expected parallel.pp > 1, got 1");
  }
  if (p.pp_runtime == "deepspeed" && st.ok({"parallel.pp_runtime", "parallel.pp_schedule"}) && p.pp_schedule != "1f1b") {
    st.report("parallel.pp_runtime", "DeepSpeed's pipeline engine runs its TrainSchedule, a 1F1B; expected "
                                     "parallel.pp_schedule 1f1b, got " + p.pp_schedule);
  }
  if (st.ok({"parallel.pp_schedule", "parallel.virtual_stages"}) && p.pp_schedule != "interleaved" &&
      p.virtual_stages != 1) {
    st.report("parallel.virtual_stages", "must be 1 unless pp_schedule is interleaved, got " + str(p.virtual_stages));
  }
  // Only Megatron-core's interleaved schedule groups the microbatches (torch.distributed.pipelining
  // and DeepSpeed have no such setting): written elsewhere it would be ignored, so it is refused.
  if (st.ok({"parallel.microbatch_group_size", "parallel.pp_schedule", "parallel.virtual_stages", "parallel.pp_runtime"}) &&
      p.microbatch_group_size != 0 && (p.pp_schedule != "interleaved" || p.virtual_stages < 2 || p.pp_runtime != "megatron")) {
    st.report("parallel.microbatch_group_size",
              "groups microbatches in Megatron-core's interleaved schedule only (pp_schedule interleaved, virtual_stages "
              "> 1, pp_runtime megatron); got " + str(p.microbatch_group_size) + " with " + p.pp_schedule +
                  ", virtual_stages " + str(p.virtual_stages) + ", pp_runtime " + p.pp_runtime);
  }
  // Layers need not divide evenly over the pipeline: the first and last chunks take the
  // shortfall (they also hold the embedding and the LM head, as Llama 3 405B's 126 layers on 16
  // stages do), down to none: a first chunk of the embedding alone and a last one of the LM head
  // and loss alone (Llama 3's 1-layer chunks; Megatron-core's account_for_embedding/loss_in_
  // pipeline_split). Every other chunk needs at least one layer: at most model.layers + 2 chunks.
  const long long chunks = static_cast<long long>(p.pp) * p.virtual_stages;  // both < 2^31: no overflow
  if (st.ok({"parallel.pp", "parallel.virtual_stages", "model.layers"}) && m.layers + 2LL < chunks) {
    if (p.virtual_stages == 1) {
      st.report("parallel.pp", "must not exceed model.layers + 2 (" + std::to_string(m.layers + 2LL) +
                                   ": the first and last stage may hold only the embedding and only the LM head), got " +
                                   str(p.pp));
    } else {
      st.report("parallel.virtual_stages", "pp*virtual_stages = " + std::to_string(chunks) +
                                               " must not exceed model.layers + 2 (" + std::to_string(m.layers + 2LL) +
                                               ": the first and last chunk may hold only the embedding and only the "
                                               "LM head)");
    }
  }
  if (st.ok({"parallel.ep", "model.experts"}) && m.experts % p.ep != 0) {
    st.report("parallel.ep", "must divide model.experts (" + str(m.experts) + "), got " + str(p.ep));
  }
  bool folded = false;
  if (p.expert_tp != 0 && st.ok({"parallel.expert_tp", "parallel.tp", "parallel.ep", "model.experts",
                                 "parallel.sequence_parallel", "parallel.cp"})) {
    if (p.expert_tp != 1 && p.expert_tp != p.tp) {
      st.report("parallel.expert_tp", "expected 1 (MoE parallel folding) or parallel.tp (" + str(p.tp) + "), got " +
                                      str(p.expert_tp) + " (other expert TP sizes are not simulated)");
    } else if (p.expert_folded()) {
      // MoE parallel folding: what the simulation covers of it.
      if (!(m.experts > 1)) {
        st.report("parallel.expert_tp", "1 folds the experts over TP x DP: needs a MoE model (model.experts > 1)");
      } else if (!p.sequence_parallel) {
        st.report("parallel.expert_tp", "1 with tp " + str(p.tp) + " routes each TP rank's own tokens: needs "
                                        "parallel.sequence_parallel (Megatron-core requires it for MoE with TP)");
      } else if (p.cp != 1) {
        st.report("parallel.expert_tp", "1 with parallel.cp " + str(p.cp) + " is not simulated (folding over CP): "
                                        "expected cp 1");
      } else {
        folded = true;
      }
    }
  }
  if (dp_known && st.ok({"parallel.ep", "parallel.expert_tp"})) {
    if (folded && (p.tp * p.dp) % p.ep != 0) {
      st.report("parallel.ep", "must divide tp x dp (" + str(p.tp * p.dp) + ") with expert_tp 1, got " + str(p.ep));
    } else if (!folded && p.dp % p.ep != 0) {
      st.report("parallel.ep", "must divide dp (" + str(p.dp) + "), got " + str(p.ep));
    }
  }
  if (st.ok({"parallel.cp", "training.sequence_length"}) && t.sequence_length % p.cp != 0) {
    st.report("parallel.cp", "must divide training.sequence_length (" + str(t.sequence_length) + "), got " + str(p.cp));
  }
  if (st.ok({"training.sequence_length", "model.position_embedding", "model.max_position"}) &&
      m.position_embedding == "learned" && m.max_position > 0 && t.sequence_length > m.max_position) {
    st.report("training.sequence_length",
              "exceeds model.max_position (" + str(m.max_position) + "), got " + str(t.sequence_length));
  }

  if (st.ok({"training.global_batch_tokens", "training.sequence_length"})) {
    const double batch = t.global_batch_tokens;
    if (!divides(t.sequence_length, batch)) {
      st.report("training.global_batch_tokens",
                "must be a multiple of training.sequence_length (" + str(t.sequence_length) + "), got " + whole(batch));
    } else if (dp_known && !sc.parameter_server.enabled && st.ok({"parallel.microbatch_size"})) {
      const double sequences = batch / t.sequence_length;
      const double per_step = static_cast<double>(p.dp) * p.microbatch_size;
      if (!divides(per_step, sequences)) {
        st.report("training.global_batch_tokens", whole(batch) + " tokens = " + whole(sequences) + " sequences of " +
                                                      str(t.sequence_length) +
                                                      ", not a multiple of dp*microbatch_size = " + str(p.dp) + "*" +
                                                      str(p.microbatch_size) + " = " + whole(per_step));
      } else if (sequences / per_step > kMaxMicrobatches) {
        st.report("training.global_batch_tokens",
                  whole(sequences / per_step) + " microbatches per step (sequences / (dp*microbatch_size)); at most " +
                      whole(kMaxMicrobatches) + " are simulated: raise parallel.microbatch_size");
      }
    }
  }
  if (st.ok({"run.mode", "training.tokens"}) && sc.run.mode == "full" && !(t.tokens > 0)) {
    st.report("training.tokens", "must be set (> 0) when run.mode is full");
  }
  if (st.ok({"run.mode", "training.tokens", "training.global_batch_tokens", "training.batch_ramp"}) &&
      sc.run.mode == "full" && t.tokens > 0 && t.global_batch_tokens > 0) {
    // Optimizer steps of the whole run: each ramp stage's tokens at its batch, the rest at the
    // full batch (as the whole run steps them).
    double steps = 0, from = 0;
    for (const auto& stage : t.batch_ramp) {
      const double until = std::min(stage.until_tokens, t.tokens);
      if (until > from && stage.global_batch_tokens > 0) steps += std::ceil((until - from) / stage.global_batch_tokens);
      from = std::max(from, until);
    }
    if (t.tokens > from) steps += std::ceil((t.tokens - from) / t.global_batch_tokens);
    if (steps > kMaxWholeRunSteps) {
      st.report("training.tokens", whole(steps) + " optimizer steps in the whole run (run.mode full: training.tokens / "
                                   "training.global_batch_tokens, ramp stages at their batch); at most " +
                                       whole(kMaxWholeRunSteps) + " are stepped: fewer tokens or a larger batch");
    }
  }
  if (m.layer_list) {
    // Layer-list models run under data parallelism only (ZeRO 0-2; FSDP gathers are per
    // transformer unit).
    for (const auto& [key, value] : {std::pair<const char*, int>{"parallel.tp", p.tp}, {"parallel.pp", p.pp},
                                     {"parallel.cp", p.cp}, {"parallel.ep", p.ep}}) {
      if (st.ok({key}) && value != 1) {
        st.report(key, "a layer-list model (" + m.name + ") runs under data parallelism only; expected 1, got " +
                           str(value));
      }
    }
    if (st.ok({"parallel.zero"}) && p.zero > 2) {
      st.report("parallel.zero", "a layer-list model (" + m.name + ") runs with ZeRO 0, 1 or 2; got " + str(p.zero));
    }
    if (st.ok({"training.activation_checkpointing"}) && t.activation_checkpointing != "none") {
      st.report("training.activation_checkpointing", "a layer-list model has no recompute policy; expected none, got " +
                                                         t.activation_checkpointing);
    }
    const LayerModelSpec& list = *m.layer_list;
    const int per_sample = list.input_kind == "tokens" && !list.input.empty() ? list.input[0] : 1;
    if (st.ok({"training.sequence_length"}) && t.sequence_length != per_sample) {
      st.report("training.sequence_length", "must be the tokens of one sample of " + m.name + " (" + str(per_sample) +
                                                "; 1 for images and vectors), got " + str(t.sequence_length));
    }
  }
  if (sc.parameter_server.enabled) validate_parameter_server(sc, st);
  const SlowLoaderSpec& slow = sc.data.slow_loader;
  if (slow.gpu >= 0 && st.ok({"data.loader.slow_loader.gpu", "cluster.nodes", "cluster.topology.node.gpus"})) {
    if (slow.gpu >= sc.gpus()) {
      st.report("data.loader.slow_loader.gpu", "must be a GPU index below " + str(sc.gpus()) + ", got " + str(slow.gpu));
    } else if (st.ok({"run.detail"}) && sc.run.detail != "full") {
      st.report("data.loader.slow_loader.gpu", "one slow loader makes the data-parallel replicas differ; it needs "
                                               "run.detail: full, got " + sc.run.detail);
    }
  }
  if (sc.data.decode_device == "gpu" && st.ok({"data.loader.decode_device"}) &&
      sc.topology.device.jpeg_decode_rate <= 0) {
    st.report("data.loader.decode_device", "gpu needs a hardware JPEG decoder, and the device " + sc.topology.device.name +
                                               " gives no jpeg_decode_rate; expected cpu");
  }
  if (sc.data.decode_device == "gpu" && sc.data.slow_loader.gpu >= 0 && st.ok({"data.loader.slow_loader.gpu"})) {
    st.report("data.loader.slow_loader.gpu", "a slow loader decodes more slowly on host cores; with decode_device gpu "
                                             "no worker decodes: expected -1");
  }
  if (st.ok({"data.loader.decode_time.distribution", "data.loader.decode_time.samples"}) &&
      sc.data.decode_time.distribution == "empirical" && sc.data.decode_time.samples.empty()) {
    st.report("data.loader.decode_time.distribution", "an empirical distribution needs samples: [list of times]");
  }
  if (t.fp8_all_gather && st.ok({"training.fp8_all_gather", "training.precision", "parallel.zero", "training.framework"})) {
    // FSDP's fp8 all-gather (zero 3), or Megatron-core's fp8_param_gather under its distributed
    // optimizer (zero 1/2, Megatron-style code: framework fused or cuda_graphs).
    const bool megatron = t.megatron_style();
    if (t.precision != "fp8" || !(p.zero == 3 || (megatron && (p.zero == 1 || p.zero == 2)))) {
      st.report("training.fp8_all_gather",
                "gathers fp8 weights of ZeRO-3/FSDP, or of Megatron's distributed optimizer (zero 1 or 2 with "
                "framework fused or cuda_graphs): needs training.precision fp8, got " + t.precision + ", zero " +
                    str(p.zero) + " and framework " + t.framework);
    }
  }
  if (st.locations.count("training.fp8_recipe") > 0 && st.ok({"training.fp8_recipe", "training.precision"}) &&
      t.precision != "fp8") {
    st.report("training.fp8_recipe", "scales the operands of the fp8 linear layers: needs training.precision fp8, got "
                                         "precision " + t.precision);
  } else if (t.fp8_recipe == "rowwise" && st.ok({"training.fp8_recipe", "training.framework"}) && t.megatron_style()) {
    st.report("training.fp8_recipe",
              "rowwise is torchao's Float8 recipe: needs PyTorch model code, training.framework eager or compile (Transformer "
              "Engine's recipes are current, delayed and blockwise); got framework " + t.framework);
  } else if (t.fp8_recipe == "rowwise" && t.fp8_all_gather && st.ok({"training.fp8_recipe", "training.fp8_all_gather"})) {
    st.report("training.fp8_all_gather",
              "gathers fp8 weights, which torchao does for its tensorwise recipe only (training.fp8_recipe current): the "
              "rowwise recipe gathers the weights in the parameters' precision and casts them after the gather");
  } else if (t.fp8_recipe != "current" && t.fp8_recipe != "rowwise" &&
             st.ok({"training.fp8_recipe", "training.precision", "training.framework"}) && !t.megatron_style()) {
    st.report("training.fp8_recipe",
              t.fp8_recipe + " is a Transformer Engine fp8 recipe: needs training.precision fp8 and Megatron-style code, "
              "training.framework fused or cuda_graphs (PyTorch model code's torchao Float8 scales dynamically per tensor: "
              "current); got precision " + t.precision + ", framework " + t.framework);
  }
  if (t.compile_loss && st.ok({"training.compile_loss", "training.framework", "parallel.tp"}) &&
      (t.framework != "compile" || p.tp > 1)) {
    st.report("training.compile_loss",
              "is torch.compile of the loss function: needs training.framework compile and parallel.tp 1 (a compiled "
              "loss under torch's loss parallel is not simulated); got framework " + t.framework + " and tp " +
                  str(p.tp));
  }
  if (!t.optimizer_impl.empty() && st.ok({"training.optimizer_impl", "training.optimizer", "training.framework"}) &&
      (t.optimizer != "adam" || t.megatron_style())) {
    st.report("training.optimizer_impl",
              "is how PyTorch model code runs Adam: needs training.optimizer adam and framework eager or compile "
              "(Megatron-style code runs a fused Adam; the other optimizers' kernels are not simulated); got " +
                  t.optimizer + " and framework " + t.framework);
  }
  if (t.attention_unpad &&
      st.ok({"training.attention_unpad", "training.flash_attention", "training.attention_kernel", "parallel.cp",
             "model.kv_heads", "model.heads", "training.activation_checkpointing"}) &&
      (!t.flash_attention || (t.attention_kernel != "flash2" && t.attention_kernel != "flash1") || p.cp > 1 ||
       m.kv_heads != m.heads ||
       (t.activation_checkpointing != "none" && t.activation_checkpointing != "full"))) {
    st.report("training.attention_unpad",
              "unpads the attention inputs around FlashAttention's variable-length kernel (llm-foundry's attn_impl: "
              "flash): needs training.flash_attention with attention_kernel flash2 or flash1, parallel.cp 1, as many "
              "K/V heads as query heads (llm-foundry's repetition of grouped K/V is not simulated) and "
              "activation_checkpointing none or full; got " +
                  std::string(t.flash_attention ? "" : "no flash attention, ") + "attention_kernel " +
                  t.attention_kernel + ", cp " + str(p.cp) + ", " + str(m.kv_heads) +
                  " K/V heads for " + str(m.heads) + " heads, activation_checkpointing " + t.activation_checkpointing);
  }
  if (!t.cross_entropy_loss_fusion && st.ok({"training.cross_entropy_loss_fusion", "training.framework"}) &&
      !t.megatron_style()) {
    st.report("training.cross_entropy_loss_fusion",
              "false is Megatron's unfused vocab_parallel_cross_entropy: needs Megatron-style code, training.framework "
              "fused or cuda_graphs (PyTorch model code's losses are fused_cross_entropy, compile_loss or "
              "F.cross_entropy); got framework " + t.framework);
  }
  if (!t.moe_permute_fusion && st.ok({"training.moe_permute_fusion", "training.framework", "model.experts"}) &&
      (m.experts <= 1 || !t.megatron_style())) {
    st.report("training.moe_permute_fusion",
              "false is Megatron-core 0.8-0.9's unfused MoE token permutation: needs a MoE model (model.experts > 1) "
              "and Megatron-style code, training.framework fused or cuda_graphs; got " + str(m.experts) +
                  " expert(s), framework " + t.framework);
  }
  if (t.moe_expert_gemm != "auto" && st.ok({"training.moe_expert_gemm", "model.experts"}) && m.experts <= 1) {
    st.report("training.moe_expert_gemm", t.moe_expert_gemm +
                                               " is how a MoE layer's local experts run their GEMMs: needs a MoE model "
                                               "(model.experts > 1); got " + str(m.experts) + " expert(s)");
  }
  if (t.fused_cross_entropy &&
      st.ok({"training.fused_cross_entropy", "training.framework", "parallel.tp", "training.compile_loss"}) &&
      (t.megatron_style() || p.tp > 1 || t.compile_loss)) {
    st.report("training.fused_cross_entropy",
              "is flash-attn's fused cross-entropy under PyTorch model code: needs training.framework eager or compile, "
              "parallel.tp 1 (its tensor-parallel form is not simulated) and no training.compile_loss; got framework " +
                  t.framework + ", tp " + str(p.tp) + (t.compile_loss ? " and compile_loss" : ""));
  }
  if (t.fused_mlp &&
      st.ok({"training.fused_mlp", "model.activation", "model.experts", "training.precision", "training.activation_checkpointing"}) &&
      (m.activation != "gelu" || m.experts > 1 || t.precision == "fp8" ||
       (t.activation_checkpointing != "none" && t.activation_checkpointing != "full"))) {
    st.report("training.fused_mlp",
              "is a dense GELU MLP whose activation runs in its GEMMs' epilogues (flash-attn's FusedMLP, Apex "
              "FusedDenseGeluDense): needs model.activation gelu, one expert, a bf16/fp16/fp32 recipe (its fp8 form is not "
              "simulated) and activation_checkpointing none or full; got activation " + m.activation + ", " +
                  str(m.experts) + " expert(s), precision " + t.precision + ", activation_checkpointing " +
                  t.activation_checkpointing);
  }
  if (t.fused_dropout_add_norm &&
      st.ok({"training.fused_dropout_add_norm", "model.experts", "training.activation_checkpointing"}) &&
      (m.experts > 1 || (t.activation_checkpointing != "none" && t.activation_checkpointing != "full"))) {
    st.report("training.fused_dropout_add_norm",
              "is flash-attn's dropout + residual add + norm kernel between dense blocks: needs one expert and "
              "activation_checkpointing none or full (the partial recompute policies rebuild the unfused ops); got " +
                  str(m.experts) + " expert(s), activation_checkpointing " + t.activation_checkpointing);
  }
  if (t.logit_metrics > 0 && st.ok({"training.logit_metrics", "parallel.pp", "parallel.tp", "training.framework"}) &&
      (p.pp > 1 || p.tp > 1 || t.megatron_style())) {
    st.report("training.logit_metrics",
              "are a PyTorch training loop's (Composer's) metrics on a microbatch's whole logits after its whole "
              "backward: needs training.framework eager or compile, parallel.pp 1 and parallel.tp 1 (not simulated "
              "with pipelines or vocabulary-parallel logits); got framework " + t.framework + ", pp " + str(p.pp) +
                  ", tp " + str(p.tp));
  }
  if (t.bf16_optimizer &&
      st.ok({"training.bf16_optimizer", "training.precision", "training.reduce_dtype", "parallel.zero",
             "training.gradient_accumulation_fusion"}) &&
      (t.precision != "bf16" || t.reduce_dtype != "fp32" || p.zero > 2 || t.gradient_accumulation_fusion)) {
    st.report("training.bf16_optimizer",
              "is DeepSpeed's BF16_Optimizer, which accumulates bf16 gradients into fp32 buffers outside ZeRO-3: "
              "needs training.precision bf16, training.reduce_dtype fp32, parallel.zero 0-2 and no "
              "gradient_accumulation_fusion; got " + t.precision + ", reduce_dtype " +
                  (t.reduce_dtype.empty() ? std::string("unset") : t.reduce_dtype) + ", zero " + str(p.zero) +
                  (t.gradient_accumulation_fusion ? " and gradient_accumulation_fusion" : ""));
  }
  if (t.optimizer_dtype == "bf16" &&
      st.ok({"training.optimizer_dtype", "training.framework", "training.precision", "training.autocast",
             "training.bf16_optimizer"})) {
    std::string why;
    if (!t.megatron_style()) {
      why = "Megatron-style model code (training.framework fused or cuda_graphs: PyTorch's optimizers are simulated "
            "with fp32 state), got " + t.framework;
    } else if (t.precision != "bf16" && t.precision != "fp8") {
      why = "bf16 parameters (training.precision bf16 or fp8), got " + t.precision;
    } else if (t.autocast || t.bf16_optimizer) {
      why = "no fp32 parameters or fp32 gradient buffers (training.autocast, training.bf16_optimizer)";
    }
    if (!why.empty())
      st.report("training.optimizer_dtype",
                "bf16 is NeMo's distributed_fused_adam with bf16 state, updating the bf16 parameters in place: "
                "needs " + why);
  }
  if (!t.communication_data_type.empty() &&
      st.ok({"training.communication_data_type", "training.bf16_optimizer"}) && !t.bf16_optimizer) {
    st.report("training.communication_data_type",
              "is DeepSpeed's dtype for the all-reduce of training.bf16_optimizer's fp32 gradients, the one DeepSpeed "
              "gradient reduction simulated: expected training.bf16_optimizer true, or the key unset");
  }
  if (m.qk_norm == "full" && p.tp > 1 && st.ok({"model.qk_norm", "parallel.tp"})) {
    st.report("model.qk_norm",
              "full normalises each token's whole query and key projections, which tensor parallelism splits "
              "over its ranks (the statistics' reduction across the TP group is not simulated): expected "
              "parallel.tp 1, or qk_norm head (per head, local to a shard); got tp " + str(p.tp));
  }
  if (m.tied_embeddings && p.pp > 1 && p.pp_runtime == "torch" &&
      st.ok({"model.tied_embeddings", "parallel.pp", "parallel.pp_runtime"})) {
    st.report("parallel.pp_runtime",
              "torch (torch.distributed.pipelining) does not keep a weight shared by two stages in step, and "
              "model.tied_embeddings puts the embedding on the first stage and its copy on the last: expected "
              "pp_runtime megatron or deepspeed (which all-reduce the tied gradients), model.tied_embeddings false, "
              "or parallel.pp 1");
  }
  if (t.autocast &&
      st.ok({"training.autocast", "training.precision", "training.framework", "parallel.zero", "training.reduce_dtype",
             "training.bf16_optimizer", "training.gradient_accumulation_fusion", "training.activation_checkpointing",
             "model.experts", "model.kv_lora_rank"})) {
    std::string why;
    if (t.precision != "bf16" && t.precision != "fp16") {
      why = "training.precision bf16 or fp16 (the dtype autocast runs the matmuls in), got " + t.precision;
    } else if (t.framework == "cuda_graphs") {
      why = "training.framework eager, compile or fused (autocast's weight cache under CUDA graphs is not simulated), "
            "got cuda_graphs";
    } else if (p.zero > 2) {
      why = "parallel.zero 0-2 (FSDP casts the parameters itself, by its MixedPrecision policy), got " + str(p.zero);
    } else if (!t.reduce_dtype.empty() && t.reduce_dtype != "fp32") {
      why = "fp32 gradient reduction (reduce_dtype unset or fp32: DDP reduces the fp32 gradients), got " + t.reduce_dtype;
    } else if (t.bf16_optimizer || t.gradient_accumulation_fusion) {
      why = "no DeepSpeed or Megatron fp32 gradient buffers (bf16_optimizer, gradient_accumulation_fusion)";
    } else if (t.activation_checkpointing != "none" && t.activation_checkpointing != "full") {
      why = "activation_checkpointing none or full (the casts under partial recompute are not simulated), got " +
            t.activation_checkpointing;
    } else if (m.layer_list || m.experts > 1 || m.kv_lora_rank > 0) {
      why = "a dense transformer without MLA (the casts of layer-list, MoE and MLA models are not simulated)";
    }
    if (!why.empty())
      st.report("training.autocast", "is torch.autocast over fp32 parameters: needs " + why);
  }
  if (!p.async_tensor_parallel_allreduce && p.async_tp &&
      st.ok({"parallel.async_tensor_parallel_allreduce", "parallel.async_tp"})) {
    st.report("parallel.async_tensor_parallel_allreduce",
              "false is Megatron's blocking all-reduce of input gradients; parallel.async_tp fuses the TP "
              "collectives instead: expected true with async_tp");
  }
  if (p.overlap_param_gather && st.ok({"parallel.overlap_param_gather", "parallel.zero", "training.framework"})) {
    if (p.zero != 1 && p.zero != 2) {
      st.report("parallel.overlap_param_gather", "overlaps the distributed optimizer's parameter all-gather; expected "
                                                 "parallel.zero 1 or 2, got " + str(p.zero));
    } else if (!t.megatron_style()) {
      st.report("parallel.overlap_param_gather", "is Megatron-core's; expected training.framework: fused or "
                                                 "cuda_graphs, got " + t.framework);
    }
  }
  if (p.moe_a2a_overlap &&
      st.ok({"parallel.moe_a2a_overlap", "model.experts", "parallel.ep", "parallel.pp_schedule", "parallel.pp_runtime"})) {
    if (!(m.experts > 1)) {
      st.report("parallel.moe_a2a_overlap", "overlaps the expert all-to-alls: needs a MoE model (model.experts > 1), got " +
                                             str(m.experts) + " expert(s)");
    } else if (p.ep <= 1) {
      st.report("parallel.moe_a2a_overlap", "overlaps the expert all-to-alls: needs parallel.ep > 1, got " + str(p.ep));
    } else if (p.pp > 1 ? p.pp_schedule != "interleaved" : (p.pp_schedule != "1f1b" && p.pp_schedule != "interleaved")) {
      // Megatron-core (transformer_config.py) asserts a virtual pipeline size whenever pp > 1:
      // its interleaved warm-up, (pp − rank − 1)·2 + …, plus the one extra forward the overlap
      // schedules, leaves each stage a pair ahead of the next. Under plain 1F1B's warm-up a pair
      // would wait for the next stage's whole pair, and that one for the previous stage's: every
      // stage idle half the time.
      st.report("parallel.moe_a2a_overlap", "pairs a backward with the forward after it in 1F1B's steady phase, which "
                                             "Megatron-core runs only in its interleaved schedule when pp > 1: expected "
                                             "parallel.pp_schedule interleaved (virtual_stages 1 or more)" +
                                             std::string(p.pp > 1 ? "" : " or 1f1b") + ", got " + p.pp_schedule);
    } else if (p.pp_runtime == "deepspeed") {
      st.report("parallel.moe_a2a_overlap", "is Megatron-core's (and DeepSeek's) schedule, not DeepSpeed's pipeline engine: "
                                             "expected parallel.pp_runtime megatron or torch");
    }
  }
  if (p.flex_dispatcher() && st.ok({"parallel.moe_dispatcher", "model.experts", "parallel.ep"}) &&
      (m.experts <= 1 || p.ep <= 1)) {
    st.report("parallel.moe_dispatcher", p.moe_dispatcher + " moves the tokens of expert parallelism: needs a MoE model "
                                         "(model.experts > 1) and parallel.ep > 1; got " + str(m.experts) +
                                         " expert(s), ep " + str(p.ep));
  }
  if (p.moe_dispatcher_sms > 0 && st.ok({"parallel.moe_dispatcher_sms", "parallel.moe_dispatcher"})) {
    if (!p.flex_dispatcher()) {
      st.report("parallel.moe_dispatcher_sms", "sets the SMs of the flex dispatcher's kernels: needs parallel.moe_dispatcher "
                                               "deepep or hybridep (the alltoall dispatcher's NCCL kernels take the "
                                               "topology's comm.kernel_sms), got " + p.moe_dispatcher);
    } else if (sc.topology.device.sm_count > 0 && p.moe_dispatcher_sms >= sc.topology.device.sm_count) {
      st.report("parallel.moe_dispatcher_sms", "must leave SMs to the computation beside the dispatcher: at most " +
                                               str(sc.topology.device.sm_count - 1) + " of the device's " +
                                               str(sc.topology.device.sm_count) + ", got " + str(p.moe_dispatcher_sms));
    }
  }
  if (p.fsdp_version != 0 &&
      st.ok({"parallel.fsdp_version", "parallel.zero", "training.framework", "parallel.pp", "training.fp8_all_gather"})) {
    if (p.zero != 3 || t.megatron_style()) {
      st.report("parallel.fsdp_version", "picks PyTorch's FSDP for ZeRO-3: needs parallel.zero 3 and training.framework "
                                         "eager or compile, got zero " + str(p.zero) + " and framework " + t.framework);
    } else if (p.fsdp1() && p.pp > 1) {
      st.report("parallel.fsdp_version", "1 (FullyShardedDataParallel) with pipeline parallelism is not simulated "
                                         "(torch's pipelining runs FSDP2): expected 2 with pp " + str(p.pp));
    } else if (p.fsdp1() && t.fp8_all_gather) {
      st.report("parallel.fsdp_version", "1 (FullyShardedDataParallel) has no fp8 all-gather (torchao's is FSDP2's): "
                                         "expected 2 with training.fp8_all_gather");
    }
  }
  if (!p.reshard_after_forward &&
      st.ok({"parallel.reshard_after_forward", "parallel.zero", "training.framework", "parallel.pp"})) {
    if (p.zero != 3 || t.megatron_style()) {
      st.report("parallel.reshard_after_forward", "false is PyTorch FSDP's SHARD_GRAD_OP: needs parallel.zero 3 and "
                                                  "training.framework eager or compile, got zero " + str(p.zero) +
                                                  " and framework " + t.framework);
    } else if (p.pp > 1) {
      st.report("parallel.reshard_after_forward", "is for pp 1: under pipeline parallelism FSDP never reshards after "
                                                  "forward (torchtitan) and the gradients wait for the last "
                                                  "microbatch; expected the default with pp " + str(p.pp));
    }
  }
  if (!p.async_tensor_parallel_allreduce && p.tp_comm_overlap &&
      st.ok({"parallel.async_tensor_parallel_allreduce", "parallel.tp_comm_overlap"})) {
    st.report("parallel.async_tensor_parallel_allreduce",
              "false is Megatron's blocking all-reduce of input gradients; parallel.tp_comm_overlap overlaps "
              "the TP collectives instead: expected true with tp_comm_overlap");
  }
  if (st.ok({"training.precision", "cluster.topology.device.peak_flops"}) &&
      sc.topology.device.peak_flops.count(t.precision) == 0) {
    st.report("training.precision",
              "the device " + sc.topology.device.name + " gives no peak_flops for " + t.precision);
  }
}

}  // namespace ironlaw::config::detail
