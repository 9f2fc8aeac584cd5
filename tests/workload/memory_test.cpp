// Memory per GPU: model state under ZeRO, activations after Korthikanti et al. 2022.
#include <catch2/catch.hpp>

#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

config::TrainingSpec mixed_adam() {
  config::TrainingSpec t;
  t.precision = "bf16";
  t.optimizer = "adam";
  return t;
}

}  // namespace

TEST_CASE("mixed-precision Adam holds 16 bytes per parameter: 112 GB at 7B", "[workload][memory]") {
  const MemoryBreakdown m = model_state_memory(7e9, mixed_adam(), 0, 1);
  CHECK(m.weights == 14e9);      // bf16 weights 2 B
  CHECK(m.gradients == 14e9);    // bf16 gradients 2 B
  CHECK(m.optimizer == 84e9);    // fp32 master 4 + m 4 + v 4
  CHECK(m.activations == 0);
  CHECK(m.total() == 112e9);
}

TEST_CASE("ZeRO stages shard optimizer state, then gradients, then weights", "[workload][memory]") {
  const double n = 7e9;
  // ZeRO-1 over 8: 2 + 2 + 12/8 = 5.5 B/param.
  CHECK(model_state_memory(n, mixed_adam(), 1, 8).total() == 5.5 * n);
  // ZeRO-2: 2 + (2 + 12)/8 = 3.75 B/param.
  CHECK(model_state_memory(n, mixed_adam(), 2, 8).total() == 3.75 * n);
  // ZeRO-3: 16/8 = 2 B/param; 16/dp in general.
  CHECK(model_state_memory(n, mixed_adam(), 3, 8).total() == 2.0 * n);
  CHECK(model_state_memory(n, mixed_adam(), 3, 64).total() == Approx(16.0 * n / 64).epsilon(1e-15));
  // dp = 1: sharding changes nothing.
  CHECK(model_state_memory(n, mixed_adam(), 3, 1).total() == 16.0 * n);
}

TEST_CASE("optimizer state bytes follow the optimizer and the precision", "[workload][memory]") {
  config::TrainingSpec t = mixed_adam();
  t.optimizer = "sgd";  // master copy only
  CHECK(model_state_memory(1, t, 0, 1).optimizer == 4);
  t.optimizer = "momentum";  // master + velocity
  CHECK(model_state_memory(1, t, 0, 1).optimizer == 8);
  t.optimizer = "rmsprop";  // master + mean square
  CHECK(model_state_memory(1, t, 0, 1).optimizer == 8);
  t.optimizer = "adam";
  t.precision = "fp32";  // no separate master: 4 + 4 + 8 = 16 B/param again
  const MemoryBreakdown fp32 = model_state_memory(1, t, 0, 1);
  CHECK((fp32.weights == 4 && fp32.gradients == 4 && fp32.optimizer == 8));
  CHECK_THROWS(model_state_memory(1, t, 4, 1));
}

TEST_CASE("activations per layer follow Korthikanti et al. 2022", "[workload][memory]") {
  // GPT-3 175B shape, s = 2048, b = 1: sbh = 2048·12288 = 25,165,824; 5·a·s/h = 5·96·2048/12288 = 80.
  const config::ModelSpec m = gpt3_175b();
  config::TrainingSpec t = mixed_adam();
  t.sequence_length = 2048;
  t.flash_attention = false;
  config::ParallelSpec p;
  const double sbh = 25'165'824.0;
  CHECK(activation_bytes_per_layer(m, t, p, 1) == sbh * (34 + 80));  // 2,868,903,936 B
  // TP 8 without sequence parallelism: sbh·(10 + 24/8 + 80/8) = 23·sbh.
  p.tp = 8;
  CHECK(activation_bytes_per_layer(m, t, p, 1) == 23 * sbh);
  // ... with it: sbh·(34/8 + 80/8) = 14.25·sbh.
  p.sequence_parallel = true;
  CHECK(activation_bytes_per_layer(m, t, p, 1) == 14.25 * sbh);
  p = config::ParallelSpec{};
  // Flash attention never stores the s² scores: 34·sbh.
  t.flash_attention = true;
  CHECK(activation_bytes_per_layer(m, t, p, 1) == 34 * sbh);
  // Selective recompute drops the score term too; full keeps only the layer input 2·sbh.
  t.flash_attention = false;
  t.activation_checkpointing = "selective";
  CHECK(activation_bytes_per_layer(m, t, p, 1) == 34 * sbh);
  t.activation_checkpointing = "full";
  CHECK(activation_bytes_per_layer(m, t, p, 1) == 2 * sbh);
  // Linear in the microbatch.
  CHECK(activation_bytes_per_layer(m, t, p, 4) == 8 * sbh);
}

TEST_CASE("memory per GPU divides parameters by tp·pp and adds activations and logits", "[workload][memory]") {
  const config::ModelSpec m = llama3_8b();
  config::TrainingSpec t = mixed_adam();
  t.sequence_length = 8192;
  t.activation_checkpointing = "selective";
  config::ParallelSpec p;
  p.tp = 2;
  p.pp = 2;
  p.zero = 1;
  p.microbatch_size = 1;
  const double n = 8'030'261'248.0 / 4;
  const MemoryBreakdown mem = memory_per_gpu(m, t, p, 16, 2);
  CHECK(mem.weights == 2 * n);
  CHECK(mem.gradients == 2 * n);
  CHECK(mem.optimizer == 12 * n / 16);
  // Per layer sbh·(10 + 24/2) with sbh = 8192·4096 = 33,554,432; 16 layers on this stage;
  // 2 microbatches in flight; fp32 logits 8192·128256/2·4 = 2,101,346,304 B.
  const double per_layer = 33'554'432.0 * 22;
  CHECK(mem.activations == per_layer * 16 * 2 + 2'101'346'304.0);
  CHECK(mem.total() == mem.weights + mem.gradients + mem.optimizer + mem.activations);
}
