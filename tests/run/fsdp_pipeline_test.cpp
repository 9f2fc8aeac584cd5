// ZeRO-3/FSDP composed with pipeline parallelism as torchtitan runs FSDP2 under PP
// (torchtitan parallelize_llama.py apply_fsdp: reshard_after_forward=False when PP is on;
// torch.distributed.pipelining stage.py: gradient sync off for every microbatch but the last
// backward, whose post-backward reduce-scatters every FSDP unit of the stage), and the recipe
// settings of its collectives (reduce_dtype, fp8 all-gather). Timelines on the launch-bound
// node of tests/run/data/timeline.yaml (every kernel 1,001 ns; see timeline_test.cpp), two
// nodes: pp 2 × dp 2, two microbatches of one 512-token sequence; NVLink and NICs ideal, so
// the collectives and pipeline sends take a few ns at most.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "timeline_fixture.hpp"

using namespace ironlaw;
using namespace ironlaw::run_test;

namespace {

/// pp 2 × dp 2 with ZeRO-3 on two launch-bound nodes; ranks 0 and 1 are the two stages of
/// replica 0 (the simulated one). Stage 0 holds the embedding and layer 0, stage 1 layers 1
/// and 2 and the head (split_layers(3, 2) = {1, 2}).
std::unique_ptr<Trace> trace(std::vector<std::string> extra = {}) {
  std::vector<std::string> o{"cluster.nodes=2",
                             "cluster.topology.node.nvlink.bandwidth=1e18 B/s",
                             "parallel.pp=2",
                             "parallel.dp=2",
                             "parallel.zero=3",
                             "parallel.pp_schedule=1f1b",
                             "training.framework=eager",  // FSDP2's copies (Megatron-FSDP has none)
                             "training.global_batch_tokens=2048"};
  o.insert(o.end(), extra.begin(), extra.end());
  return simulate_timeline(o);
}

/// Time of an op list on the launch-bound node in kernels (timeline_test.cpp).
double kernels(const std::vector<workload::Op>& ops) {
  double total = 0;
  for (const auto& op : ops) total += task_ns(op.kernels);
  return total / kKernel;
}

/// Linear weights of one tiny-dense layer (tests/run/data/tiny-dense.yaml: hidden 64, FFN 256,
/// 2 heads of 32, GELU, no biases): Q, K, V, O 4·64² = 16,384 and the MLP 2·64·256 = 32,768.
constexpr double kLayerLinear = 4.0 * 64 * 64 + 2.0 * 64 * 256;

}  // namespace

TEST_CASE("under pipeline parallelism ZeRO-3 gathers each unit once per step, before its first forward",
          "[run][timeline][zero3][pipeline]") {
  const auto t = trace();
  REQUIRE(t->result.layout.microbatches == 2);
  // One gather per unit and step: the second microbatch and the backwards reuse the weights.
  for (const char* unit : {"embedding", "layer0", "layer1", "layer2", "head"}) {
    INFO(unit);
    CHECK(t->named(std::string("dp all_gather ") + unit).size() == 1);
  }
  // Stage 1's first forward runs layer 1, layer 2, the head. The gathers of layers 1 and 2 go
  // at once; the head's waits until the buffer of layer 1's gather is free, i.e. until FSDP's
  // copy-out of layer 1 (1 kernel) is done. That copy-out is the first task of the stage's
  // forward, which waits for the activations from stage 0 (torch.distributed.pipelining waits
  // for the receive before it runs the stage's module, whose FSDP pre-forward copies out): stage
  // 0 runs the embedding's copy-out and forward and layer 0's copy-out (1 kernel each) and
  // layer 0's forward (f kernels), so the copy-out ends, the head's gather starts and layer 1's
  // forward begins at 4 + f kernels.
  const auto& s = t->scenario;
  const double f = kernels(workload::layer_forward_ops(s.model, s.training, 1, 1));
  CHECK(ns(t->named("dp all_gather layer1")[0].start_ns) == Approx(0).margin(10));
  CHECK(ns(t->named("dp all_gather layer2")[0].start_ns) == Approx(0).margin(10));
  CHECK(ns(t->named("dp all_gather head")[0].start_ns) == Approx((4 + f) * kKernel).margin(20));
  const auto norm = t->named("norm_attn", 1);
  REQUIRE(!norm.empty());
  CHECK(ns(norm[0].start_ns) == Approx((4 + f) * kKernel).margin(20));
}

TEST_CASE("under pipeline parallelism ZeRO-3 reduce-scatters each unit once, after its chunk's last backward",
          "[run][timeline][zero3][pipeline]") {
  const auto t = trace();
  // Gradients accumulate unsharded over the microbatches; the stage's post-backward runs once
  // the last microbatch's backward of the whole chunk is done. Under 1F1B that backward is the
  // last compute of each stage before the optimizer: every reduce-scatter of stage 1 (head,
  // layer 2, layer 1) starts when rank 1's last backward ends, stage 0's (layer 0, embedding)
  // when rank 0's does.
  const std::int64_t stage1_done = t->last_end(EventKind::backward, 1);
  const std::int64_t stage0_done = t->last_end(EventKind::backward, 0);
  REQUIRE(stage1_done > 0);
  REQUIRE(stage0_done > stage1_done);
  for (const char* unit : {"head", "layer2", "layer1"}) {
    INFO(unit);
    const auto rs = t->named(std::string("dp reduce_scatter ") + unit);
    REQUIRE(rs.size() == 1);
    CHECK(ns(rs[0].start_ns) >= ns(stage1_done));
    CHECK(ns(rs[0].start_ns) == Approx(ns(stage1_done)).margin(20));
  }
  for (const char* unit : {"layer0", "embedding"}) {
    INFO(unit);
    const auto rs = t->named(std::string("dp reduce_scatter ") + unit);
    REQUIRE(rs.size() == 1);
    CHECK(ns(rs[0].start_ns) == Approx(ns(stage0_done)).margin(20));
  }
}

TEST_CASE("fp32 gradient reduction doubles the reduce-scatter bytes of bf16 gradients", "[run][zero3][recipe]") {
  const auto bf16 = trace({"training.reduce_dtype=bf16"});
  const auto fp32 = trace({"training.reduce_dtype=fp32"});
  const auto unset = trace();
  for (const char* unit : {"layer0", "layer1", "head"}) {
    INFO(unit);
    const std::string name = std::string("dp reduce_scatter ") + unit;
    const double b16 = bf16->named(name).at(0).bytes;
    CHECK(fp32->named(name).at(0).bytes == Approx(2 * b16));
    CHECK(unset->named(name).at(0).bytes == Approx(b16));  // unset: the parameters' bf16
  }
  // A layer's gradients: its linear weights and its norm gains (at most 2·64), 2 bytes each.
  const double layer = bf16->named("dp reduce_scatter layer1").at(0).bytes / 2;
  CHECK(layer >= kLayerLinear);
  CHECK(layer <= kLayerLinear + 2 * 64);
}

TEST_CASE("fp8 all-gather moves one byte per linear weight and the parameters' bytes for the rest",
          "[run][zero3][recipe]") {
  const std::vector<std::string> fp8{"cluster.topology.device.peak_flops.fp8=1e19 FLOPS", "training.precision=fp8"};
  auto with = fp8;
  with.push_back("training.fp8_all_gather=true");
  const auto plain = trace(fp8);
  const auto gathered = trace(with);
  // bf16 gathers 2 B per parameter; fp8 all-gather 1 B per linear weight: a layer's gather
  // shrinks by exactly its linear weights, the embedding's and the head's not at all.
  for (const char* unit : {"layer0", "layer1", "layer2"}) {
    INFO(unit);
    const std::string name = std::string("dp all_gather ") + unit;
    CHECK(plain->named(name).at(0).bytes - gathered->named(name).at(0).bytes == Approx(kLayerLinear));
  }
  for (const char* unit : {"embedding", "head"}) {
    INFO(unit);
    const std::string name = std::string("dp all_gather ") + unit;
    CHECK(gathered->named(name).at(0).bytes == Approx(plain->named(name).at(0).bytes));
  }
  // The reduce-scatters are untouched (bf16 gradients).
  CHECK(gathered->named("dp reduce_scatter layer1").at(0).bytes ==
        Approx(plain->named("dp reduce_scatter layer1").at(0).bytes));
}

TEST_CASE("fp8 all-gather is refused without the fp8 recipe or without ZeRO-3", "[config][zero3][recipe]") {
  CHECK_THROWS_WITH(config::load_scenario(kTimeline, {"parallel.zero=3", "training.fp8_all_gather=true"}),
                    Catch::Contains("training.fp8_all_gather") && Catch::Contains("needs training.precision fp8"));
  CHECK_THROWS_WITH(config::load_scenario(kTimeline, {"cluster.topology.device.peak_flops.fp8=1e19 FLOPS",
                                                      "training.precision=fp8", "training.fp8_all_gather=true"}),
                    Catch::Contains("zero 0"));
}

TEST_CASE("under pipeline parallelism ZeRO-3 holds the stage's weights gathered and its gradients unsharded",
          "[workload][memory][zero3][pipeline]") {
  // Llama 3 8B by hand (models/llama3-8b.yaml: 32 layers, hidden 4,096, FFN 14,336, 32 heads
  // and 8 KV heads of 128, vocabulary 128,256, untied): per layer Q and O 4,096² each, K and V
  // 4,096·1,024 each, the MLP 3·4,096·14,336: 218,103,808 linear weights; embedding and LM
  // head 525,336,576 each; norms (2·32 + 1)·4,096 = 266,240.
  const auto model = config::load_model(IRONLAW_SOURCE_DIR "/models/llama3-8b.yaml");
  const double layer = 2.0 * 4096 * 4096 + 2.0 * 4096 * 1024 + 3.0 * 4096 * 14336;
  REQUIRE(layer == 218103808.0);
  const double other = 2.0 * 128256 * 4096 + 65.0 * 4096;
  config::ParallelSpec p;
  p.pp = 2;
  p.zero = 3;
  config::TrainingSpec t;
  t.sequence_length = 8192;
  t.activation_checkpointing = "full";
  // pp 2: each stage holds half of everything, 16 layers' linear weights + half the rest.
  const double linear = 16 * layer, rest = other / 2;
  SECTION("bf16 gathers and bf16 gradients: 2 + 2 bytes per parameter of the stage") {
    t.precision = "bf16";
    const auto m = workload::memory_per_gpu(model, t, p, 4, 2);
    CHECK(m.unsharded == Approx((linear + rest) * 4.0).epsilon(1e-12));
  }
  SECTION("fp8 all-gather and fp32 reduction: 1 B per linear weight, 2 B for the rest, 4 B gradients") {
    t.precision = "fp8";
    t.fp8_all_gather = true;
    t.reduce_dtype = "fp32";
    const auto m = workload::memory_per_gpu(model, t, p, 4, 2);
    CHECK(m.unsharded == Approx(linear * 1.0 + rest * 2.0 + (linear + rest) * 4.0).epsilon(1e-12));
    CHECK(m.unsharded == Approx(20601122816.0).epsilon(1e-12));
    // Beyond what ZeRO-1 keeps around one layer (its recomputed activations), one layer's fresh
    // bf16 gradients and its fp32 reduce-scatter input: 218,103,808 · (2 + 4) bytes.
    config::ParallelSpec z1 = p;
    z1.zero = 1;
    const auto base = workload::memory_per_gpu(model, t, z1, 4, 2);
    CHECK(m.transient - base.transient == Approx(layer * 6.0).epsilon(1e-12));
  }
  SECTION("without pipeline parallelism nothing stays gathered for the step") {
    p.pp = 1;
    t.precision = "bf16";
    CHECK(workload::memory_per_gpu(model, t, p, 4, 1).unsharded == 0);
  }
}

TEST_CASE("ZeRO-3 with pipeline parallelism gives the same step in symmetric and in full detail, for every schedule",
          "[run][zero3][pipeline][detail]") {
  // Without an input pipeline the data-parallel replicas are identical, so simulating one of
  // them (symmetric) or all four ranks (full) must give the same step to the nanosecond.
  for (const char* schedule : {"gpipe", "1f1b", "zb-h1", "interleaved"}) {
    INFO(schedule);
    const bool interleaved = std::string(schedule) == "interleaved";
    std::vector<std::string> o{"training.global_batch_tokens=4096", std::string("parallel.pp_schedule=") + schedule,
                               "training.reduce_dtype=fp32"};
    if (interleaved) {
      o.push_back("parallel.virtual_stages=2");
      o.push_back("model.layers=4");
    }
    auto full = o;
    full.push_back("run.detail=full");
    const auto a = trace(o);
    const auto b = trace(full);
    CHECK(a->result.step_time_s == b->result.step_time_s);
    CHECK(a->result.step_time_s > 0);
  }
}
