// Memory of Megatron-core with Transformer Engine, as its code holds it: the DDP gradient buffer in
// the reduction's dtype (megatron/core/distributed/distributed_data_parallel.py: grad_dtype =
// torch.float under grad_reduce_in_fp32), and TE's fp8 linear layers keeping the fp8 copy of their
// input for the weight-gradient GEMM (transformer_engine/pytorch/module/linear.py, _Linear.forward:
// saved_inputmat = inputmat, the quantized input). Hand counts on round numbers and GPT-2 small.
#include <catch2/catch.hpp>

#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

config::TrainingSpec megatron(const std::string& precision, const std::string& reduce_dtype) {
  config::TrainingSpec t;
  t.precision = precision;
  t.optimizer = "adam";
  t.framework = "fused";
  t.reduce_dtype = reduce_dtype;
  t.sequence_length = 1024;
  return t;
}

}  // namespace

TEST_CASE("Megatron's DDP buffer holds the gradients in the reduction's dtype", "[workload][memory][megatron]") {
  // 1e9 parameters, bf16, distributed optimizer over 8 ranks, grad_reduce_in_fp32: a 4 B gradient
  // per parameter, whole on every rank; weights 2 B; master + moments 12 B / 8.
  const MemoryBreakdown m = model_state_memory(1e9, megatron("bf16", "fp32"), 1, 8);
  CHECK(m.gradients == 4e9);
  CHECK(m.weights == 2e9);
  CHECK(m.optimizer == 1.5e9);
  CHECK(model_state_memory(1e9, megatron("bf16", "fp32"), 0, 8).gradients == 4e9);
  // Reduced in bf16: a bf16 buffer.
  CHECK(model_state_memory(1e9, megatron("bf16", "bf16"), 1, 8).gradients == 2e9);
  // PyTorch's DDP and FSDP keep .grad in the parameter's dtype, whatever the reduction's.
  config::TrainingSpec torch = megatron("bf16", "fp32");
  torch.framework = "eager";
  CHECK(model_state_memory(1e9, torch, 1, 8).gradients == 2e9);
  // Sharded gradients (ZeRO 2) keep their 2 B / dp.
  CHECK(model_state_memory(1e9, megatron("bf16", "fp32"), 2, 8).gradients == 2e9 / 8);
}

TEST_CASE("Transformer Engine's fp8 linears keep fp8 inputs for the backward", "[workload][memory][megatron][fp8]") {
  // GPT-2 small (h 768, f 3,072), 2 sequences of 1,024 tokens, TP 1. Per token, fp8 against bf16:
  // the two norm outputs (QKV and MLP-up inputs) 2 × 768 × (2 − 1) B less, the MLP-down input
  // 3,072 × (2 − 1) B less, the output projection's fp8 copy of the attention output 768 B more:
  // 3,840 B per token, × 2,048 tokens.
  config::ParallelSpec p;
  const double bf16 = activation_bytes_per_layer(gpt2_124m(), megatron("bf16", "fp32"), p, 2);
  const double fp8 = activation_bytes_per_layer(gpt2_124m(), megatron("fp8", "fp32"), p, 2);
  CHECK(bf16 - fp8 == 3840.0 * 2048);
  // TP 2 with sequence parallelism: the norm outputs are sequence-sharded (768 / 2 each), the MLP
  // and attention widths split (3,072 / 2, 768 / 2): 768 + 1,536 − 384 = 1,920 B per token.
  config::ParallelSpec sp;
  sp.tp = 2;
  sp.sequence_parallel = true;
  CHECK(activation_bytes_per_layer(gpt2_124m(), megatron("bf16", "fp32"), sp, 2) -
            activation_bytes_per_layer(gpt2_124m(), megatron("fp8", "fp32"), sp, 2) ==
        1920.0 * 2048);
  // torchao's Float8Linear (PyTorch model code) keeps its high-precision input: no difference.
  config::TrainingSpec eager_bf16 = megatron("bf16", "fp32"), eager_fp8 = megatron("fp8", "fp32");
  eager_bf16.framework = eager_fp8.framework = "eager";
  CHECK(activation_bytes_per_layer(gpt2_124m(), eager_bf16, p, 2) == activation_bytes_per_layer(gpt2_124m(), eager_fp8, p, 2));
}
