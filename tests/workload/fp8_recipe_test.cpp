// training.fp8_recipe: how Transformer Engine's fp8 linear layers scale and cast their operands
// (current, delayed, blockwise), counted by hand from the code and the DeepSeek-V3 report, and
// the blockwise GEMM checked against DeepGEMM's published H800 measurement; torchao's rowwise
// recipe counted by hand from torchao 0.10's code.
#include <catch2/catch.hpp>

#include <string>

#include "config/load.hpp"
#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

// Llama 3 8B's layer, one sequence of 8,192 tokens, bf16 operands, Megatron-style code.
config::TrainingSpec te_fp8(const std::string& recipe) {
  config::TrainingSpec t;
  t.sequence_length = 8192;
  t.precision = "fp8";
  t.framework = "fused";
  t.optimizer = "adam";
  t.activation_checkpointing = "none";
  t.flash_attention = true;
  t.fp8_recipe = recipe;
  return t;
}

constexpr double kTokens = 8192;

// The same layer as PyTorch model code under torch.compile with torchao's Float8 (the weights
// gathered in bf16: each GEMM casts its own copy).
config::TrainingSpec torchao_fp8(const std::string& recipe) {
  config::TrainingSpec t = te_fp8(recipe);
  t.framework = "compile";
  return t;
}

}  // namespace

TEST_CASE("blockwise fp8 casts each operand in one pass and promotes every GEMM's sums", "[workload][precision]") {
  // DeepSeek-V3 §3.3.1: 1×128 tiles for activations and gradients, 128×128 blocks for weights,
  // each scale found in the pass that casts; both directions written at once (the row tiles this
  // GEMM reads, the column tiles the weight gradient reads): read 2, write 1 + 1, and an fp32
  // scale per 128 elements in each direction: 4 + 8/128 B per element.
  const auto fwd = layer_forward_ops(llama3_8b(), te_fp8("blockwise"), 1, 1);
  CHECK(find(fwd, "qkv_cast").bytes == Approx(kTokens * 4096 * (4.0 + 8.0 / 128)).epsilon(1e-12));
  CHECK(find(fwd, "qkv_cast").kernels == 1);
  // §3.3.2: partial sums promoted to fp32 every 128 elements of K, in every GEMM, forward too.
  CHECK(find(fwd, "qkv").fp8_split_accumulator);
  CHECK(find(fwd, "mlp_down").fp8_split_accumulator);
  const auto bwd = layer_backward_ops(llama3_8b(), te_fp8("blockwise"), 1, 1);
  // Backward: the output gradient alone (qkv: n = 6,144), with its two tile directions.
  CHECK(find(bwd, "qkv_bwd_cast").bytes == Approx(kTokens * 6144 * (4.0 + 8.0 / 128)).epsilon(1e-12));
  CHECK(find(bwd, "qkv_dgrad").fp8_split_accumulator);
  CHECK(find(bwd, "qkv_wgrad").fp8_split_accumulator);
  // Per-tensor recipes promote only in backward (TE's _2X_ACC_DGRAD / _WGRAD); their forward
  // GEMMs accumulate fast.
  for (const std::string recipe : {"current", "delayed"}) {
    INFO(recipe);
    CHECK_FALSE(find(layer_forward_ops(llama3_8b(), te_fp8(recipe), 1, 1), "qkv").fp8_split_accumulator);
    CHECK(find(layer_backward_ops(llama3_8b(), te_fp8(recipe), 1, 1), "qkv_dgrad").fp8_split_accumulator);
  }
  // Per element cast: current 6 B (amax 2, cast 2 + 1 + 1), delayed 4 B, blockwise 4 + 1/16 B.
  CHECK(find(layer_forward_ops(llama3_8b(), te_fp8("current"), 1, 1), "mlp_down_cast").bytes ==
        kTokens * 14336 * 6);
  CHECK(find(layer_forward_ops(llama3_8b(), te_fp8("delayed"), 1, 1), "mlp_down_cast").bytes ==
        kTokens * 14336 * 4);
}

TEST_CASE("under sequence parallelism Transformer Engine casts the local rows before the gather", "[workload][precision]") {
  // TE module/linear.py (v1.9): with sequence_parallel the input of a column-parallel layer is
  // cast on this rank's rows alone (no fp8_cast_transpose_fused), all-gathered in fp8, and the
  // gathered copy transposed in backward for the weight gradient; a row-parallel layer's output
  // gradient likewise (base.py grad_output_preprocess: cast, gather, transpose). TP 8, current
  // scaling (amax 2 + cast 2 + 1 = 5 B without the transposed copy, 6 B with it).
  const auto t = te_fp8("current");
  const auto fwd = layer_forward_ops(llama3_8b(), t, 1, 8, 0, 1, true);
  const auto bwd = layer_backward_ops(llama3_8b(), t, 1, 8, 0, 1, true);
  // qkv: 8,192 / 8 local rows of 4,096 cast; backward: dY (8,192 x 6,144 / 8) cast with its
  // transpose, and the gathered fp8 input (8,192 x 4,096) transposed.
  CHECK(find(fwd, "qkv_cast").bytes == kTokens / 8 * 4096 * 5);
  CHECK(find(bwd, "qkv_bwd_cast").bytes == kTokens * 6144 / 8 * 6 + kTokens * 4096 * 2);
  // attn_out: its input is local (every row, 4,096 / 8 columns): cast with its transpose as
  // without sequence parallelism; backward: the local 1/8 of dY's rows cast, the gathered copy
  // transposed.
  CHECK(find(fwd, "attn_out_cast").bytes == kTokens * 4096 / 8 * 6);
  CHECK(find(bwd, "attn_out_bwd_cast").bytes == kTokens / 8 * 4096 * 5 + kTokens * 4096 * 2);
  // Without sequence parallelism the full rows are cast with their transposes and nothing more.
  const auto plain = layer_forward_ops(llama3_8b(), t, 1, 8, 0, 1, false);
  CHECK(find(plain, "qkv_cast").bytes == kTokens * 4096 * 6);
  CHECK(find(layer_backward_ops(llama3_8b(), t, 1, 8, 0, 1, false), "qkv_bwd_cast").bytes == kTokens * 6144 / 8 * 6);
}

TEST_CASE("the blockwise GEMM model lands on DeepGEMM's published H800 rate", "[workload][precision][roofline]") {
  // deepseek-ai/DeepGEMM README (a6d97a1, 2025-02-25), normal GEMMs on H800 (the H100's tensor
  // throughput): M 4,096, N 7,168, K 16,384 at 1,358 TFLOPS, a benchmark burst at the boost
  // clock. The model: H100 SXM's fp8 peak at the bf16 MAMF mainloop fraction (0.801) times the
  // split accumulator's measured ratio (0.882, stas00/ml-engineering: cuBLAS fp8 with fast
  // accumulation off), the MAMF shape, 256 of K of pipeline fill, and the burst clock (no power
  // limit below the MAMF measurement's). The long K loop puts this shape at the measured
  // ceiling, 1978.9 · 0.801 · 0.882 = 1,398 TFLOPS: 2.9 % above DeepGEMM's kernel, an independent
  // measurement of the same fine-grained recipe (1×128 / 128×128 scales, fp32 promotion every 128
  // of K) that the split-accumulator ratio, taken from cuBLAS, was not set from.
  config::DeviceSpec d = h100_shaped();  // at its MAMF measurement's own 700 W: the burst clock
  d.fp8_split_accumulator_rate = 0.882;
  Op g;
  g.name = "gemm";
  g.m = 4096;
  g.n = 7168;
  g.k = 16384;
  g.batch = 1;
  g.flops = 2.0 * g.m * g.n * g.k;
  g.dtype = "fp8";
  g.fp8_split_accumulator = true;
  const double tflops = g.flops / op_time(g, d, "fp8").seconds() / 1e12;
  CHECK(tflops == Approx(1978.9 * 0.801 * 0.882).epsilon(1e-3));
  CHECK(tflops == Approx(1358).epsilon(0.05));
}

TEST_CASE("delayed and blockwise fp8 are refused outside Transformer Engine's code", "[config][precision]") {
  const std::string scenario = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  CHECK_NOTHROW(config::load_scenario(
      scenario, {"training.framework=fused", "training.precision=fp8", "training.fp8_recipe=blockwise"}));
  for (const std::string recipe : {"delayed", "blockwise"}) {
    INFO(recipe);
    CHECK_THROWS_WITH(config::load_scenario(scenario, {"training.framework=compile", "training.precision=fp8",
                                                       "training.fp8_recipe=" + recipe}),
                      Catch::Contains("training.fp8_recipe") && Catch::Contains("framework compile"));
    CHECK_THROWS_WITH(
        config::load_scenario(scenario, {"training.framework=fused", "training.fp8_recipe=" + recipe}),
        Catch::Contains("training.fp8_recipe") && Catch::Contains("precision bf16"));
  }
  CHECK_THROWS_WITH(config::load_scenario(scenario, {"training.fp8_recipe=rowwise"}),
                    Catch::Contains("training.fp8_recipe"));
  // Named without fp8, even the default recipe would be accepted and ignored: refused.
  CHECK_THROWS_WITH(config::load_scenario(scenario, {"training.fp8_recipe=current"}),
                    Catch::Contains("training.fp8_recipe") && Catch::Contains("needs training.precision fp8"));
}

TEST_CASE("torchao's rowwise fp8 casts every backward operand along its own axis and rescales cuBLAS's output",
          "[workload][precision]") {
  // Llama 3 8B's MLP down projection on 8,192 tokens: m = 8,192, k = 14,336, n = 4,096.
  const double m = kTokens, k = 14336, n = 4096;
  // Forward (torchao float8_linear.py): the input and the weight, each an amax reduction along K
  // and a scaled cast (read 2 + 2, write 1 B), as the tensorwise recipe.
  const auto row_fwd = layer_forward_ops(llama3_8b(), torchao_fp8("rowwise"), 1, 1);
  const auto tensor_fwd = layer_forward_ops(llama3_8b(), torchao_fp8("current"), 1, 1);
  CHECK(find(row_fwd, "mlp_down_cast").bytes == (m * k + k * n) * 5);
  CHECK(find(row_fwd, "mlp_down_cast").bytes == find(tensor_fwd, "mlp_down_cast").bytes);
  // Forward GEMM with fast accumulation (gemm_config_output), its operands cast after any gather.
  CHECK_FALSE(find(row_fwd, "mlp_down").fp8_split_accumulator);
  CHECK(find(row_fwd, "mlp_down").fp8_cast_after_gather);
  CHECK_FALSE(find(tensor_fwd, "mlp_down").fp8_cast_after_gather);
  // Backward: dY along N and the weight along N for dgrad, dY along M and the input along M for
  // wgrad: four casts of 5 B per element, 8 kernels; nothing transposed.
  const auto row_bwd = layer_backward_ops(llama3_8b(), torchao_fp8("rowwise"), 1, 1);
  const Op& cast = find(row_bwd, "mlp_down_bwd_cast");
  CHECK(cast.bytes == (2 * m * n + m * k + k * n) * 5);
  CHECK(cast.bytes == 1216348160.0);
  CHECK(cast.kernels == 8);
  // Tensorwise casts dY and the input once each with a transposed copy (5 + 2 B) and the weight.
  const auto tensor_bwd = layer_backward_ops(llama3_8b(), torchao_fp8("current"), 1, 1);
  CHECK(find(tensor_bwd, "mlp_down_bwd_cast").bytes == (m * n + m * k) * 7 + k * n * 5);
  // The backward GEMMs run cuBLAS's per-tensor kernel without fast accumulation (pytorch/ao#1325),
  // then a pass multiplies each output by its scales: read and write 2 B per element.
  for (const std::string g : {"mlp_down_dgrad", "mlp_down_wgrad"}) {
    INFO(g);
    CHECK(find(row_bwd, g).fp8_split_accumulator);
    CHECK(find(row_bwd, g).fp8_cast_after_gather);
    CHECK_FALSE(has(tensor_bwd, g + "_rescale"));
  }
  CHECK(find(row_bwd, "mlp_down_dgrad_rescale").bytes == m * k * 4);
  CHECK(find(row_bwd, "mlp_down_wgrad_rescale").bytes == k * n * 4);
  CHECK(find(row_bwd, "mlp_down_wgrad_rescale").kernels == 1);
  // Every fp8 linear of the layer gets its two rescale passes: qkv, attn_out, mlp_up, mlp_down.
  int rescales = 0;
  for (const Op& op : row_bwd) rescales += op.name.size() > 8 && op.name.ends_with("_rescale");
  CHECK(rescales == 8);
}

TEST_CASE("the rowwise recipe is torchao's: refused under Megatron-style code and with the fp8 all-gather",
          "[config][precision]") {
  const std::string scenario = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  CHECK_NOTHROW(config::load_scenario(
      scenario, {"training.framework=compile", "training.precision=fp8", "training.fp8_recipe=rowwise"}));
  CHECK_THROWS_WITH(config::load_scenario(scenario, {"training.framework=fused", "training.precision=fp8",
                                                     "training.fp8_recipe=rowwise"}),
                    Catch::Contains("training.fp8_recipe") && Catch::Contains("framework fused"));
  // torchao gathers fp8 weights for its tensorwise recipe only.
  CHECK_THROWS_WITH(config::load_scenario(scenario, {"training.framework=compile", "training.precision=fp8",
                                                     "training.fp8_recipe=rowwise", "parallel.zero=3",
                                                     "training.fp8_all_gather=true"}),
                    Catch::Contains("training.fp8_all_gather") && Catch::Contains("tensorwise recipe only"));
}

TEST_CASE("torchao's tensorwise Float8 TP casts the sharded input before the gather and transposes the saved fp8 copies",
          "[workload][precision][tp]") {
  // torchao float8_tensor_parallel.py: PrepareFloat8ModuleInput / Float8ColwiseParallel cast the
  // Shard(1) input before the all-gather; Float8RowwiseParallel casts its local input and, in
  // backward, the output gradient on the local rows before the gather (NoopFwToFloat8BwDynamic).
  // Llama 3 8B, 8,192 tokens, TP 8 with sequence parallelism, weights cast each microbatch (5 B).
  const double m = kTokens, tp = 8;
  const auto fwd = layer_forward_ops(llama3_8b(), torchao_fp8("current"), 1, 8, 0, 1, true);
  const auto bwd = layer_backward_ops(llama3_8b(), torchao_fp8("current"), 1, 8, 0, 1, true);
  // Column-parallel QKV (k 4,096, n 6,144 / 8): the 1/8 of the rows before the gather + the weight.
  const double qkv_n = 6144 / tp, h = 4096;
  CHECK(find(fwd, "qkv_cast").bytes == (m / tp * h + h * qkv_n) * 5);
  // Row-parallel MLP down (k 14,336 / 8, n 4,096): its local input, all rows.
  const double down_k = 14336 / tp;
  CHECK(find(fwd, "mlp_down_cast").bytes == (m * down_k + down_k * h) * 5);
  // Backward, column-parallel: dY (local, m × n/8) cast with its transposed copy, the saved fp8
  // input transposed (2 B per element), the weight re-cast.
  CHECK(find(bwd, "qkv_bwd_cast").bytes == m * qkv_n * (5 + 2) + m * h * 2 + h * qkv_n * 5);
  // Row-parallel: dY cast on the local 1/8 of the rows, the gathered fp8 copy transposed, the
  // saved input transposed, the weight re-cast.
  CHECK(find(bwd, "mlp_down_bwd_cast").bytes == m / tp * h * 5 + m * h * 2 + m * down_k * 2 + down_k * h * 5);
  // Without sequence parallelism nothing is gathered: every operand cast whole, the kept input
  // re-cast in backward (5 B + 2 B transposed copy).
  const auto plain = layer_backward_ops(llama3_8b(), torchao_fp8("current"), 1, 8, 0, 1, false);
  CHECK(find(plain, "qkv_bwd_cast").bytes == (m * qkv_n + m * h) * 7 + h * qkv_n * 5);
  // The rowwise recipe runs the plain TP styles: its input is cast whole after the gather.
  const auto rowwise = layer_forward_ops(llama3_8b(), torchao_fp8("rowwise"), 1, 8, 0, 1, true);
  CHECK(find(rowwise, "qkv_cast").bytes == (m * h + h * qkv_n) * 5);
}
