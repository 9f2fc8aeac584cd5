// Megatron sequence parallelism (Korthikanti et al. 2022, "Reducing Activation Recomputation
// in Large Transformer Models", §4.2.2): each TP all-reduce becomes a reduce-scatter and an
// all-gather of the same buffer, and the ops between them (norms, dropout, residual adds) run
// on 1/tp of the sequence. Timelines on the launch-bound node of tests/run/data/timeline.yaml
// (see timeline_test.cpp): TP 2 over NVLink at 16.384 GB/s, one 512-token sequence of hidden
// 64 in bf16, so a TP buffer is S = 512·64·2 = 65,536 B.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "timeline_fixture.hpp"

using namespace ironlaw;
using namespace ironlaw::run_test;

namespace {

std::unique_ptr<Trace> trace(bool sequence_parallel) {
  return simulate_timeline({"parallel.tp=2", "parallel.dp=1", "training.global_batch_tokens=512",
                            std::string("parallel.sequence_parallel=") + (sequence_parallel ? "true" : "false")});
}

}  // namespace

TEST_CASE("under sequence parallelism a TP all-reduce is a reduce-scatter then an all-gather of the same bytes",
          "[run][timeline][tp][sequence-parallel]") {
  const auto t = trace(true);
  CHECK(t->named("tp all_reduce").empty());
  // After the row-parallel attn_out: the reduce-scatter, (2−1)/2 · 65,536 B / 16.384 GB/s =
  // 2 us, then the all-gather, 2 us more; the residual add waits for both: 4 us, as the ring
  // all-reduce of the same buffer (2·(2−1)/2 · S/B) took without SP.
  const EventRecord out = t->first("attn_out", EventKind::forward);
  const auto rs = t->named("tp reduce_scatter");
  const auto ag = t->named("tp all_gather");
  REQUIRE(!rs.empty());
  REQUIRE(rs.size() == ag.size());
  const auto after = [&](const std::vector<EventRecord>& records, std::int64_t at) {
    for (const auto& e : records)
      if (e.start_ns >= at - 3) return e;
    FAIL("none after " << at);
    return EventRecord{};
  };
  const EventRecord r = after(rs, out.end_ns);
  CHECK(ns(r.start_ns - out.end_ns) == Approx(0).margin(3));
  CHECK(ns(r.end_ns - r.start_ns) == Approx(2 * kUs).margin(3));
  CHECK(r.bytes == 65536.0);
  const EventRecord g = after(ag, r.end_ns);
  CHECK(ns(g.start_ns - r.end_ns) == Approx(0).margin(3));
  CHECK(ns(g.end_ns - g.start_ns) == Approx(2 * kUs).margin(3));
  CHECK(g.bytes == 65536.0);
  const EventRecord residual = t->first("residual_attn", EventKind::forward);
  CHECK(ns(residual.start_ns - out.end_ns) == Approx(4 * kUs).margin(5));

  // Without SP the same sync point is one all-reduce of the same 4 us.
  const auto plain = trace(false);
  CHECK(plain->named("tp reduce_scatter").empty());
  CHECK(plain->named("tp all_reduce").size() == rs.size());
}

TEST_CASE("under sequence parallelism the norms and residual adds run on 1/tp of the tokens",
          "[workload][sequence-parallel]") {
  const auto s = config::load_scenario(kTimeline);
  // 512 tokens × 64 features; a fused RMSNorm reads and writes each bf16 element once:
  // 512·64·2·2 = 131,072 B on every TP rank, 65,536 B on each of 2 under SP; a residual add
  // reads two and writes one: 196,608 B, 98,304 B under SP.
  const auto plain = workload::layer_forward_ops(s.model, s.training, 1, 2, 0, 1, false);
  const auto split = workload::layer_forward_ops(s.model, s.training, 1, 2, 0, 1, true);
  const auto bytes = [](const std::vector<workload::Op>& ops, const std::string& name) {
    for (const auto& op : ops)
      if (op.name == name) return op.bytes;
    FAIL("no " << name);
    return 0.0;
  };
  CHECK(bytes(plain, "norm_attn") == 131072.0);
  CHECK(bytes(split, "norm_attn") == 65536.0);
  CHECK(bytes(split, "norm_mlp") == 65536.0);
  CHECK(bytes(plain, "residual_mlp") == 196608.0);
  CHECK(bytes(split, "residual_mlp") == 98304.0);
  // The TP regions are unchanged: the GEMMs and the attention core see the whole sequence.
  CHECK(bytes(split, "qkv") == bytes(plain, "qkv"));
  CHECK(bytes(split, "attn_core") == bytes(plain, "attn_core"));
}

TEST_CASE("under Float8 TP the sequence-parallel all-gathers that feed fp8 linear layers move one byte per element",
          "[run][timeline][tp][sequence-parallel][recipe]") {
  // torchao's Float8ColwiseParallel casts the activations to fp8 before the all-gather (and
  // Float8RowwiseParallel the output gradients before theirs): 32,768 B instead of 65,536, in
  // (2−1)/2 · 32,768 / 16.384 GB/s = 1 us. The reduce-scatters stay bf16. In forward, the
  // embedding's and every layer's gathers feed a Float8 linear, except the last layer's last,
  // which feeds the LM head (not converted by torchtitan): 6 fp8 gathers, then one bf16.
  auto t = std::make_unique<Trace>();
  t->scenario = config::load_scenario(
      kTimeline, {"parallel.tp=2", "parallel.dp=1", "training.global_batch_tokens=512", "parallel.sequence_parallel=true",
                  "cluster.topology.device.peak_flops.fp8=1e19 FLOPS", "training.precision=fp8"});
  t->result = run::simulate(t->scenario, t->sink, run::TraceLevel::op);
  const EventRecord head = t->first("lm_head", EventKind::forward);
  std::vector<EventRecord> forward;
  for (const auto& e : t->named("tp all_gather"))
    if (e.rank == 0 && e.end_ns <= head.start_ns) forward.push_back(e);
  REQUIRE(forward.size() == 7);
  for (std::size_t i = 0; i < 6; ++i) {
    INFO("gather " << i);
    CHECK(forward[i].bytes == 32768.0);
    CHECK(ns(forward[i].end_ns - forward[i].start_ns) == Approx(1 * kUs).margin(3));
  }
  CHECK(forward[6].bytes == 65536.0);
  for (const auto& e : t->named("tp reduce_scatter")) CHECK(e.bytes == 65536.0);
}

TEST_CASE("under sequence parallelism a backward all-gather follows the weight gradient its reduce-scatter overlapped",
          "[run][timeline][tp][sequence-parallel]") {
  // Megatron-LM (megatron/mpu/layers.py, LinearWithGradAccumulationAndAsyncCommunication, at
  // the May 2022 merge of sequence parallelism, d898a89): a column-parallel layer's input
  // gradient is reduce-scattered asynchronously while its weight-gradient GEMM runs; the
  // scattered gradient goes through the norm's backward on its half of the sequence and is then
  // all-gathered (the backward of the forward's reduce-scatter) before the row-parallel layer
  // before it. NVLink at 65.536 GB/s here, so each collective takes (2−1)/2 · 65,536 B /
  // 65.536 GB/s = 0.5 us, shorter than the 1 us weight-gradient kernel: after mlp_up_dgrad the
  // reduce-scatter (0.5 us) runs beside mlp_up_wgrad; the all-gather (0.5 us) starts when the
  // weight gradient ends, not when the reduce-scatter does; norm_mlp_bwd waits for it.
  const auto t = simulate_timeline({"parallel.tp=2", "parallel.dp=1", "training.global_batch_tokens=512",
                                    "parallel.sequence_parallel=true", "cluster.topology.node.nvlink.bandwidth=65.536 GB/s"});
  const EventRecord dgrad = t->first("mlp_up_dgrad", EventKind::backward);
  const EventRecord wgrad = t->first("mlp_up_wgrad", EventKind::backward);
  const auto starting_at = [](const std::vector<EventRecord>& records, std::int64_t at) {
    for (const auto& e : records)
      if (e.start_ns >= at - 3) return e;
    FAIL("none after " << at);
    return EventRecord{};
  };
  const EventRecord rs = starting_at(t->named("tp reduce_scatter"), dgrad.end_ns);
  CHECK(ns(rs.start_ns - dgrad.end_ns) == Approx(0).margin(3));
  CHECK(ns(rs.end_ns - rs.start_ns) == Approx(0.5 * kUs).margin(3));
  CHECK(wgrad.start_ns < rs.end_ns);  // the weight gradient overlaps the reduce-scatter
  CHECK(wgrad.end_ns > rs.end_ns);    // and outlasts it
  const EventRecord ag = starting_at(t->named("tp all_gather"), rs.end_ns);
  CHECK(ns(ag.start_ns - wgrad.end_ns) == Approx(0).margin(3));
  CHECK(ns(ag.end_ns - ag.start_ns) == Approx(0.5 * kUs).margin(3));
  const EventRecord norm = starting_at(t->named("norm_mlp_bwd"), dgrad.end_ns);
  CHECK(norm.start_ns >= ag.end_ns - 3);
}
