#pragma once
// Model shapes and a device profile built in C++ for the workload tests (the YAML loader is
// tested on its own; these tests must not depend on it). Shapes are the published ones cited
// in models/*.yaml.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "config/spec.hpp"
#include "workload/caching_allocator.hpp"
#include "workload/model_cost.hpp"

namespace ironlaw::workload::testing {

/// Allocator rules under which every request is its own size and any cached block that is large
/// enough serves it: no rounding, so a replay's allocated peak is the sum of the live tensors.
inline AllocatorRules byte_granular() {
  AllocatorRules r;
  r.min_block = 1;
  r.small_size = 1;
  r.small_buffer = 1;
  r.large_buffer = 1;
  r.min_large_alloc = 1;
  r.round_large = 1;
  return r;
}

// Llama 3 8B: 32 layers, 4096 hidden, FFN 14336, 32 heads, 8 KV heads, vocab 128256, SwiGLU,
// RMSNorm, untied, RoPE (Llama 3 paper Table 3; ../shared/reference/calibration.md).
inline config::ModelSpec llama3_8b() {
  config::ModelSpec m;
  m.name = "llama3-8b";
  m.layers = 32;
  m.hidden = 4096;
  m.ffn_hidden = 14336;
  m.heads = 32;
  m.kv_heads = 8;
  m.vocab = 128256;
  m.activation = "swiglu";
  m.norm = "rmsnorm";
  m.bias = false;
  m.tied_embeddings = false;
  m.position_embedding = "rope";
  return m;
}

// Llama 3 70B: 80 / 8192 / 28672 / 64 heads / 8 KV heads, otherwise as 8B.
inline config::ModelSpec llama3_70b() {
  config::ModelSpec m = llama3_8b();
  m.name = "llama3-70b";
  m.layers = 80;
  m.hidden = 8192;
  m.ffn_hidden = 28672;
  m.heads = 64;
  m.kv_heads = 8;
  return m;
}

// Llama 3 405B: 126 / 16384 / 53248 / 128 heads / 8 KV heads, otherwise as 8B (Llama 3 paper
// Table 3; models/llama3-405b.yaml).
inline config::ModelSpec llama3_405b() {
  config::ModelSpec m = llama3_8b();
  m.name = "llama3-405b";
  m.layers = 126;
  m.hidden = 16384;
  m.ffn_hidden = 53248;
  m.heads = 128;
  m.kv_heads = 8;
  return m;
}

// DeepSeek-V3 (report arXiv:2412.19437 §4.2; HF config.json; models/deepseek-v3.yaml): 61
// layers, hidden 7168, 128 heads, first 3 layers dense with FFN 18432, then 256 routed + 1
// shared experts of 2048, 8 routed per token; MLA with q/kv ranks 1536/512, qk_nope 128,
// qk_rope 64, v 128; vocab 129280, SwiGLU, RMSNorm, untied, RoPE. MTP module not modelled.
inline config::ModelSpec deepseek_v3() {
  config::ModelSpec m = llama3_8b();
  m.name = "deepseek-v3";
  m.layers = 61;
  m.hidden = 7168;
  m.ffn_hidden = 18432;
  m.heads = 128;
  m.kv_heads = 128;
  m.vocab = 129280;
  m.experts = 256;
  m.experts_per_token = 8;
  m.shared_experts = 1;
  m.moe_ffn_hidden = 2048;
  m.dense_layers = 3;
  m.q_lora_rank = 1536;
  m.kv_lora_rank = 512;
  m.qk_nope_head_dim = 128;
  m.qk_rope_head_dim = 64;
  m.v_head_dim = 128;
  return m;
}

// GPT-2 small (HF config "gpt2"): 12 layers, 768, FFN 3072, 12 heads, vocab 50257, GELU,
// LayerNorm, biases, tied, learned positions of 1024.
inline config::ModelSpec gpt2_124m() {
  config::ModelSpec m;
  m.name = "gpt2-124m";
  m.layers = 12;
  m.hidden = 768;
  m.ffn_hidden = 3072;
  m.heads = 12;
  m.vocab = 50257;
  m.activation = "gelu";
  m.norm = "layernorm";
  m.bias = true;
  m.tied_embeddings = true;
  m.position_embedding = "learned";
  m.max_position = 1024;
  return m;
}

// GPT-2 XL (HF "gpt2-xl"): 48 layers, 1600, FFN 6400, 25 heads, as GPT-2 small otherwise.
inline config::ModelSpec gpt2_1558m() {
  config::ModelSpec m = gpt2_124m();
  m.name = "gpt2-1.5b";
  m.layers = 48;
  m.hidden = 1600;
  m.ffn_hidden = 6400;
  m.heads = 25;
  return m;
}

// GPT-3 175B (Brown et al. 2020 Table 2.1): 96 layers, 12288, FFN 4·12288, 96 heads, context
// 2048, GPT-2's vocabulary and architecture.
inline config::ModelSpec gpt3_175b() {
  config::ModelSpec m = gpt2_124m();
  m.name = "gpt3-175b";
  m.layers = 96;
  m.hidden = 12288;
  m.ffn_hidden = 49152;
  m.heads = 96;
  m.max_position = 2048;
  return m;
}

// Chinchilla 70B (Hoffmann et al. 2022 Table 4): 80 layers, 64 heads, d_model 8192, FFN
// 4·d_model (Table A9's convention), vocab 32000, Gopher's relative positions, tied.
inline config::ModelSpec chinchilla_70b() {
  config::ModelSpec m;
  m.name = "chinchilla-70b";
  m.layers = 80;
  m.hidden = 8192;
  m.ffn_hidden = 32768;
  m.heads = 64;
  m.vocab = 32000;
  m.activation = "gelu";
  m.norm = "rmsnorm";
  m.bias = false;
  m.tied_embeddings = true;
  m.position_embedding = "relative";
  return m;
}

// H100 SXM5 from ../shared/reference/hardware.md: dense BF16 989.4 TFLOP/s, FP8 1,978.9,
// FP32 66.9 (NVIDIA H100 datasheet); HBM3 80 GB at 3.35 TB/s (datasheet); 132 SMs
// (datasheet); best measured BF16 GEMM 80.1 % of peak (stas00/ml-engineering). The launch
// overhead is not on any datasheet: tests that want one set it themselves.
inline config::DeviceSpec h100_sxm() {
  config::DeviceSpec d;
  d.name = "h100-sxm";
  d.peak_flops = {{"bf16", 989.4e12}, {"fp16", 989.4e12}, {"fp8", 1978.9e12}, {"fp32", 66.9e12}};
  d.hbm_bytes = 80e9;
  d.hbm_bandwidth = 3.35e12;
  d.sm_count = 132;
  d.max_gemm_fraction = 0.801;
  d.gemm_tile_m = 128;
  d.gemm_tile_n = 256;
  d.kernel_launch_overhead = Time::zero();
  return d;
}

/// The H100 SXM profile with the per-shape and power mechanisms of topologies/h100-sxm.yaml:
/// the MAMF shape 6144 × 17920 × 2816 (stas00/ml-engineering), 256 of K of pipeline fill per
/// tile, 700 W limit (datasheet), 120 W static.
inline config::DeviceSpec h100_shaped() {
  config::DeviceSpec d = h100_sxm();
  d.max_gemm_shape_m = 6144;
  d.max_gemm_shape_n = 17920;
  d.max_gemm_shape_k = 2816;
  d.gemm_k_fill = 256;
  d.power_limit_w = 700;
  d.max_gemm_power_limit_w = 700;
  d.static_power_w = 120;
  return d;
}

/// The op called `name` in `ops` (fails the test if there is none).
inline const Op& find(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name) return op;
  }
  FAIL("no op named " << name);
  return ops.front();
}

/// Whether `ops` holds an op called `name`.
inline bool has(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name) return true;
  }
  return false;
}

/// GPT-2 small's training step as the op tests count it by hand: 1,024-token sequences, bf16,
/// Adam, the model code of `framework` (fused, eager or compile).
inline config::TrainingSpec bf16_adam_1k(const std::string& framework) {
  config::TrainingSpec t;
  t.sequence_length = 1024;
  t.precision = "bf16";
  t.optimizer = "adam";
  t.framework = framework;
  return t;
}

/// The sum of `field` (bytes, flops) over `ops`.
inline double total(const std::vector<Op>& ops, double Op::*field) {
  double sum = 0;
  for (const Op& op : ops) sum += op.*field;
  return sum;
}

}  // namespace ironlaw::workload::testing
