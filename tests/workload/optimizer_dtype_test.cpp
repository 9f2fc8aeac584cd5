// training.optimizer_dtype bf16: NeMo 1.x's distributed_fused_adam under optim.dtype bf16 (apex
// DistributedFusedAdam's dtype, the moments in bf16; megatron_base_model.setup_optimization sets
// store_params false when the optimizer's dtype equals the model's, so the bf16 parameters are
// updated in place with no fp32 master copy). Hand counts per parameter.
#include <catch2/catch.hpp>

#include <string>

#include "config/load.hpp"
#include "workload/model_cost.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;

namespace {

config::TrainingSpec nemo(const std::string& optimizer_dtype) {
  config::TrainingSpec t;
  t.precision = "bf16";
  t.optimizer = "adam";
  t.framework = "fused";
  t.reduce_dtype = "bf16";
  t.optimizer_dtype = optimizer_dtype;
  return t;
}

}  // namespace

TEST_CASE("a bf16 optimizer holds two bf16 moments and no master copy", "[workload][memory][optimizer_dtype]") {
  // 1e9 parameters, distributed optimizer (ZeRO 1) over 8 ranks. fp32 state: master 4 + m 4 + v 4
  // = 12 B per parameter / 8 = 1.5e9 B. bf16 state: m 2 + v 2 = 4 B / 8 = 0.5e9 B. The bf16 weights
  // (2 B) and the bf16 gradient buffer (2 B) are the same either way.
  const MemoryBreakdown fp32 = model_state_memory(1e9, nemo("fp32"), 1, 8);
  const MemoryBreakdown bf16 = model_state_memory(1e9, nemo("bf16"), 1, 8);
  CHECK(fp32.optimizer == 1.5e9);
  CHECK(bf16.optimizer == 0.5e9);
  CHECK(bf16.weights == fp32.weights);
  CHECK(bf16.gradients == fp32.gradients);
  CHECK(bf16.weights == 2e9);
  CHECK(bf16.gradients == 2e9);
  // Unsharded (ZeRO 0): 2 + 2 + 4 = 8 B per parameter, half of the mixed-precision 16.
  CHECK(model_state_memory(1e9, nemo("bf16"), 0, 8).total() == 8e9);
  CHECK(model_state_memory(1e9, nemo("fp32"), 0, 8).total() == 16e9);
  // Momentum keeps one bf16 buffer: 2 B.
  config::TrainingSpec momentum = nemo("bf16");
  momentum.optimizer = "momentum";
  CHECK(model_state_memory(1e9, momentum, 0, 1).optimizer == 2e9);
}

TEST_CASE("a bf16 optimizer's fused update moves 20 B per parameter", "[workload][optimizer_dtype]") {
  // Fused Adam, fp32 state: master read + write 8, m and v read + write 16, the gradient read 2,
  // the bf16 copy written 2 = 28; clipping (norm read, scale read + write) 3 × 2 = 6: 34 B.
  // bf16 state, in place: the bf16 weights read + written 4, m and v read + written 8, the
  // gradient read 2 = 14; clipping 6: 20 B.
  CHECK(optimizer_op(nemo("fp32"), 1e6).bytes == 34e6);
  CHECK(optimizer_op(nemo("bf16"), 1e6).bytes == 20e6);
  CHECK(optimizer_op(nemo("bf16"), 1e6).flops == optimizer_op(nemo("fp32"), 1e6).flops);
  CHECK(optimizer_state_bytes(nemo("bf16")) == 2);
  CHECK(optimizer_state_bytes(nemo("fp32")) == 4);
}

TEST_CASE("optimizer_dtype bf16 needs Megatron-style code and bf16 parameters", "[config][optimizer_dtype]") {
  const std::string nemo_row = IRONLAW_SOURCE_DIR "/scenarios/validation/nemo/2407-gpt3-5b-64gpu.yaml";
  CHECK(config::load_scenario(nemo_row, {"training.optimizer_dtype=bf16"}).training.optimizer_dtype == "bf16");
  CHECK(config::load_scenario(nemo_row, {}).training.optimizer_dtype == "fp32");
  CHECK_THROWS_WITH(config::load_scenario(nemo_row, {"training.optimizer_dtype=fp16"}),
                    Catch::Contains("training.optimizer_dtype"));
  const std::string gpt2 = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  CHECK_THROWS_WITH(config::load_scenario(gpt2, {"training.optimizer_dtype=bf16", "training.framework=eager"}),
                    Catch::Contains("training.optimizer_dtype") && Catch::Contains("Megatron-style"));
  CHECK_THROWS_WITH(config::load_scenario(nemo_row, {"training.optimizer_dtype=bf16", "training.precision=fp32",
                                                     "training.fp8_all_gather=false"}),
                    Catch::Contains("training.optimizer_dtype") && Catch::Contains("bf16 parameters"));
}
