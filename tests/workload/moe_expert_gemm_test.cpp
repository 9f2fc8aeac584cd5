// How a MoE layer's local experts issue their GEMMs (training.moe_expert_gemm): Transformer
// Engine's GroupedLinear, one cuBLASLt GEMM and one quantization per local expert from TE's C++
// loop (common/gemm/cublaslt_gemm.cu nvte_multi_stream_cublas_gemm; pytorch/csrc/extensions/
// cast.cpp split_quantize, unfused for current scaling up to TE 2.18), against one grouped
// kernel. Hand counts on Qwen3-30B-A3B's layer (h 2,048, 128 experts of width 768, 8 per token)
// at EP 8: 16 local experts.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "config/load.hpp"
#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

config::ModelSpec qwen3_30b_a3b() {
  config::ModelSpec m;
  m.name = "qwen3-30b-a3b";
  m.layers = 48;
  m.hidden = 2048;
  m.ffn_hidden = 6144;
  m.heads = 32;
  m.kv_heads = 4;
  m.head_dim = 128;
  m.vocab = 151936;
  m.activation = "swiglu";
  m.norm = "rmsnorm";
  m.experts = 128;
  m.experts_per_token = 8;
  m.moe_ffn_hidden = 768;
  return m;
}

config::TrainingSpec megatron(const std::string& precision, const std::string& gemm = "auto",
                              const std::string& framework = "fused") {
  config::TrainingSpec t = bf16_adam_1k(framework);
  t.sequence_length = 4096;
  t.precision = precision;
  t.fp8_recipe = "current";
  t.moe_expert_gemm = gemm;
  return t;
}

constexpr int kEp = 8;
constexpr int kLocal = 128 / kEp;

}  // namespace

TEST_CASE("TE's GroupedLinear issues one GEMM and one current-scaling quantization per local expert",
          "[workload][moe][host]") {
  const auto t = megatron("fp8");
  const auto fwd = layer_forward_ops(qwen3_30b_a3b(), t, 1, 1, 0, kEp);
  const auto bwd = layer_backward_ops(qwen3_30b_a3b(), t, 1, 1, 0, kEp);
  // Each expert's GEMM: 16 cuBLASLt calls, the 15 after the framework's call from TE's loop.
  for (const char* name : {"mlp_up", "mlp_down"}) {
    CHECK(find(fwd, name).kernels == kLocal);
    CHECK(find(fwd, name).library_kernels == kLocal - 1);
  }
  for (const char* name : {"mlp_up_dgrad", "mlp_up_wgrad", "mlp_down_dgrad", "mlp_down_wgrad"}) {
    CHECK(find(bwd, name).kernels == kLocal);
    CHECK(find(bwd, name).library_kernels == kLocal - 1);
  }
  // Each expert's input (forward) and output gradient (backward) quantized on its own: zero the
  // amax, reduce, compute the scale, cast: 4 kernels each, 64 in all (the weights arrive cached).
  for (const auto* ops : {&fwd, &bwd}) {
    for (const Op& op : *ops) {
      if (op.name != "mlp_up_cast" && op.name != "mlp_down_cast" && op.name != "mlp_up_bwd_cast" &&
          op.name != "mlp_down_bwd_cast") {
        continue;
      }
      CHECK(op.kernels == 4 * kLocal);
      CHECK(op.library_kernels == 4 * kLocal - 1);
    }
  }
  // The dense attention projections are one GEMM each, their input cast one quantization.
  CHECK(find(fwd, "qkv").kernels == 1);
  CHECK(find(fwd, "qkv_cast").kernels == 4);
}

TEST_CASE("a grouped kernel, and auto under PyTorch model code, issue one GEMM per batch of experts",
          "[workload][moe][host]") {
  const auto grouped = layer_forward_ops(qwen3_30b_a3b(), megatron("fp8", "grouped"), 1, 1, 0, kEp);
  CHECK(find(grouped, "mlp_up").kernels == 1);
  CHECK(find(grouped, "mlp_up").library_kernels == 0);
  CHECK(find(grouped, "mlp_up_cast").kernels == 4);  // one quantization pass over all experts
  // bf16: the per-expert GEMMs without quantization.
  const auto bf16 = layer_forward_ops(qwen3_30b_a3b(), megatron("bf16"), 1, 1, 0, kEp);
  CHECK(find(bf16, "mlp_down").kernels == kLocal);
  CHECK_FALSE(has(bf16, "mlp_down_cast"));
  // auto: torchtitan-style code runs torch._grouped_mm.
  const auto compiled = layer_forward_ops(qwen3_30b_a3b(), megatron("bf16", "auto", "compile"), 1, 1, 0, kEp);
  CHECK(find(compiled, "mlp_down").kernels == 1);
  // The GPU's time is the same either way: only the host's launches differ.
  const auto device = h100_sxm();
  CHECK(op_time(find(grouped, "mlp_up"), device, "fp8") ==
        op_time(find(layer_forward_ops(qwen3_30b_a3b(), megatron("fp8"), 1, 1, 0, kEp), "mlp_up"), device, "fp8"));
}

TEST_CASE("a library's kernels cost its own call on the host, after the framework's one dispatch",
          "[workload][host]") {
  // Framework dispatch c = 10 us, library call l = 25 us; four 1 us kernels, the last three from
  // the library: issued at 10, 35, 60, 85 us, each ending 1 us later: 86 us.
  HostQueue q(Time::us(10));
  CHECK(q.push(Time::us(4), 4, 0, 3, Time::us(25)) == Time::us(86));
  CHECK(q.host_end() == Time::us(85));
  // All four through the framework: 10, 20, 30, 40 → 41 us.
  HostQueue framework(Time::us(10));
  CHECK(framework.push(Time::us(4), 4) == Time::us(41));
  // Long kernels hide the library's calls: four 100 us kernels end at 10 + 400 us.
  HostQueue hidden(Time::us(10));
  CHECK(hidden.push(Time::us(400), 4, 0, 3, Time::us(25)) == Time::us(410));
}

TEST_CASE("training.moe_expert_gemm is refused without experts", "[config][moe]") {
  const std::string dense = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  CHECK_THROWS_WITH(config::load_scenario(dense, {"training.moe_expert_gemm=grouped"}),
                    Catch::Contains("training.moe_expert_gemm") && Catch::Contains("needs a MoE model"));
  CHECK_NOTHROW(config::load_scenario(dense, {"training.moe_expert_gemm=auto"}));
  const std::string moe = IRONLAW_SOURCE_DIR "/scenarios/validation/megatron-moe/mixtral-8x7b-64gpu.yaml";
  CHECK_NOTHROW(config::load_scenario(moe, {"training.moe_expert_gemm=per_expert"}));
  CHECK_THROWS_WITH(config::load_scenario(moe, {"training.moe_expert_gemm=batched"}),
                    Catch::Contains("training.moe_expert_gemm"));
}
