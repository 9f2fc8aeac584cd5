// DeepSpeed's BF16_Optimizer at the end of a step (training.bf16_optimizer; run/data_parallel.cpp,
// Bf16OptimizerReduction): the engine flattens the rank's unsharded fp32 gradients, casts them to
// communication_data_type, all-reduces them (not a reduce-scatter), scales and copies them back;
// the optimizer takes their norm, clips them, zeroes the buffers, updates its shard and
// all-gathers the bf16 parameters. Bytes by hand for tests/run/data/timeline.yaml's tiny-dense
// (hidden 64, MLP 256, vocabulary 8) with four layers on two stages (DeepSpeed's pipeline engine)
// and two data-parallel replicas.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/error.hpp"
#include "core/records.hpp"
#include "timeline_fixture.hpp"

using namespace ironlaw;

namespace {

// Stage 0's parameters: two layers (4·64² attention, 2·64·256 MLP, 2·64 norm weights) and the
// 8 · 64 embedding table.
constexpr double kLayer = 4.0 * 64 * 64 + 2.0 * 64 * 256 + 2.0 * 64;
constexpr double kP = 2 * kLayer + 8.0 * 64;

std::unique_ptr<run_test::Trace> bf16_trace(const std::string& comm_dtype) {
  std::vector<std::string> set{"model.layers=4",           "parallel.pp=2",
                               "parallel.dp=2",            "cluster.nodes=2",
                               "training.global_batch_tokens=2048", "parallel.pp_runtime=deepspeed",
                               "parallel.zero=1",          "training.bf16_optimizer=true",
                               "training.reduce_dtype=fp32", "training.optimizer=adam"};
  if (!comm_dtype.empty()) set.push_back("training.communication_data_type=" + comm_dtype);
  return run_test::simulate_timeline(set);
}

/// Rank 0's record of the collective `name`.
EventRecord collective(const run_test::Trace& t, const std::string& name) {
  for (const auto& e : t.named(name))
    if (e.rank == 0) return e;
  FAIL("no " << name << " on rank 0");
  return {};
}

double bytes_of(const run_test::Trace& t, const std::string& name) { return t.first(name, EventKind::backward).bytes; }
double optimizer_bytes(const run_test::Trace& t, const std::string& name) {
  return t.first(name, EventKind::optimizer).bytes;
}

}  // namespace

TEST_CASE("BF16_Optimizer's fp32 gradients are all-reduced whole, cast to the communication dtype, with their copies",
          "[run][bf16_optimizer]") {
  const auto bf16 = bf16_trace("bf16");
  // An all-reduce of every gradient of the rank in bf16 on the wire; no reduce-scatter.
  const EventRecord ar = collective(*bf16, "dp all_reduce fp32 gradients");
  CHECK(ar.bytes == kP * 2);
  CHECK(bf16->named("dp reduce_scatter bucket0").empty());
  // engine.py allreduce_bucket: torch.cat (read 4, write 4), .to(bf16) (read 4, write 2), the
  // postscale mul_ (read 2, write 2), the copy back into the fp32 bucket (read 2, write 4), the
  // unflattened copies into the buffers (read 4, write 4).
  CHECK(bytes_of(*bf16, "grad_flatten") == kP * 8);
  CHECK(bytes_of(*bf16, "grad_to_comm_dtype") == kP * 6);
  CHECK(bytes_of(*bf16, "grad_postscale") == kP * 4);
  CHECK(bytes_of(*bf16, "grad_from_comm_dtype") == kP * 6);
  CHECK(bytes_of(*bf16, "grad_unflatten") == kP * 8);
  // The step (bf16_optimizer.py): the norm of the unsharded fp32 gradients (read 4), the clip
  // (read 4, write 4), clear_hp_grads (write 4); then Adam on the 1/dp shard without a clipping
  // pass of its own: fp32 weights 8, two moments 16, the gradient 2 and the bf16 copy 2 per
  // parameter; and the bf16 parameters all-gathered.
  CHECK(optimizer_bytes(*bf16, "grad_norm") == kP * 4);
  CHECK(optimizer_bytes(*bf16, "grad_clip") == kP * 8);
  CHECK(optimizer_bytes(*bf16, "hp_grad_zero") == kP * 4);
  CHECK(bf16->first("optimizer_step", EventKind::optimizer).bytes == Approx(kP / 2 * 28));
  const EventRecord gather = collective(*bf16, "dp all_gather params");
  CHECK(gather.bytes == kP * 2);
  // In that order on the rank.
  CHECK(bf16->first("grad_to_comm_dtype", EventKind::backward).end_ns <= ar.start_ns);
  CHECK(bf16->first("grad_postscale", EventKind::backward).start_ns >= ar.end_ns);
  CHECK(bf16->first("optimizer_step", EventKind::optimizer).start_ns >=
        bf16->first("hp_grad_zero", EventKind::optimizer).end_ns);
  CHECK(gather.start_ns >= bf16->first("optimizer_step", EventKind::optimizer).end_ns);

  // Left to the gradients' own fp32: no casts, four bytes on the wire, the postscale over fp32.
  const auto fp32 = bf16_trace("");
  CHECK(collective(*fp32, "dp all_reduce fp32 gradients").bytes == kP * 4);
  CHECK(fp32->named("grad_to_comm_dtype", 0).empty());
  CHECK(fp32->named("grad_from_comm_dtype", 0).empty());
  CHECK(bytes_of(*fp32, "grad_postscale") == kP * 8);
}

TEST_CASE("communication_data_type without BF16_Optimizer is refused: no other DeepSpeed reduction is simulated",
          "[run][bf16_optimizer][config]") {
  const std::vector<std::string> set{"training.communication_data_type=bf16"};
  CHECK_THROWS_AS(config::load_scenario(run_test::kTimeline, set), InputError);
  CHECK_THROWS_WITH(config::load_scenario(run_test::kTimeline, set),
                    Catch::Contains("training.communication_data_type") && Catch::Contains("bf16_optimizer"));
}
