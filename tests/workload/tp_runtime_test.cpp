// parallel.tp_runtime: whose tensor-parallel layers PyTorch model code runs. torch's DTensor
// (torchtitan's parallelize_module, the default under training.framework eager or compile) keeps
// the all-gathered input of each sequence-parallel column linear; Megatron-style layers
// (Megatron-LM, fairscale's model-parallel layers in the first LLaMA's released code) keep their
// own sequence shard and re-gather it in backward (Korthikanti et al. 2022 §4.2.2).
#include <catch2/catch.hpp>

#include <string>

#include "config/load.hpp"
#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

TEST_CASE("tp_runtime megatron takes PyTorch model code off DTensor's tensor parallelism", "[workload][tp]") {
  config::ParallelSpec p;
  p.tp = 2;
  p.sequence_parallel = true;
  const auto eager = bf16_adam_1k("eager");
  CHECK(torch_tensor_parallel(eager, p));
  CHECK_FALSE(torch_tensor_parallel(bf16_adam_1k("fused"), p));
  config::ParallelSpec megatron = p;
  megatron.tp_runtime = "megatron";
  CHECK_FALSE(torch_tensor_parallel(eager, megatron));
  config::ParallelSpec one = p;
  one.tp = 1;
  CHECK_FALSE(torch_tensor_parallel(eager, one));
  // GPT-2 small, 2 sequences of 1,024 tokens, TP 2 with SP, bf16: DTensor keeps the two gathered
  // norm outputs (2 × 768 × 2 B per token, every token), Megatron-style layers their shard (half):
  // 1,536 B per token, × 2,048 tokens.
  CHECK(activation_bytes_per_layer(gpt2_124m(), eager, p, 2) - activation_bytes_per_layer(gpt2_124m(), eager, megatron, 2) ==
        1536.0 * 2048);
}

TEST_CASE("tp_runtime is refused where it does not apply", "[config][tp]") {
  const std::string gpt2 = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  // Without tensor parallelism there are no TP layers to choose.
  CHECK_THROWS_WITH(config::load_scenario(gpt2, {"parallel.tp_runtime=megatron"}), Catch::Contains("parallel.tp_runtime"));
  CHECK_NOTHROW(config::load_scenario(gpt2, {"parallel.tp=2", "parallel.dp=auto", "training.framework=eager",
                                             "parallel.tp_runtime=megatron"}));
  // DTensor is PyTorch model code's.
  CHECK_THROWS_WITH(config::load_scenario(gpt2, {"parallel.tp=2", "parallel.dp=auto", "training.framework=fused",
                                                 "parallel.tp_runtime=torch"}),
                    Catch::Contains("parallel.tp_runtime") && Catch::Contains("eager or compile"));
  // AsyncTP is torch's micro-pipelining of DTensor's collectives.
  CHECK_THROWS_WITH(config::load_scenario(gpt2, {"parallel.tp=2", "parallel.dp=auto", "training.framework=compile",
                                                 "parallel.sequence_parallel=true", "parallel.async_tp=true",
                                                 "parallel.tp_runtime=megatron"}),
                    Catch::Contains("parallel.async_tp") && Catch::Contains("tp_runtime"));
}
