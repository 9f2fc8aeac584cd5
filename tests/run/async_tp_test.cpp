// AsyncTP (parallel.async_tp): torch's micro-pipelined tensor parallelism
// (torch/_inductor/fx_passes/micro_pipeline_tp.py fuses an all-gather with the matmuls that take
// its result as their left operand and a reduce-scatter with the one matmul it reduces;
// torch/distributed/_symmetric_memory runs them chunk by chunk over copy-engine pulls).
// Timelines on the launch-bound node of tests/run/data/timeline.yaml (timeline_test.cpp): every
// compute task of one kernel takes 1 us + 1 ns; NVLink 16.384 GB/s with no latency. TP 2 under
// sequence parallelism, one 512-token sequence of hidden 64 in bf16: a rank's shard of a
// projection's input is 256·64·2 = 32,768 B, pulled in 32,768 / 16.384 GB/s = 2 us, and the
// rows a row-parallel GEMM produces for the other rank are the same 32,768 B.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "timeline_fixture.hpp"

using namespace ironlaw;
using namespace ironlaw::run_test;

namespace {

std::vector<std::string> async_tp(std::vector<std::string> more = {}) {
  std::vector<std::string> o{"parallel.tp=2",         "parallel.dp=1",        "training.global_batch_tokens=512",
                             "parallel.sequence_parallel=true", "training.framework=compile", "parallel.async_tp=true"};
  o.insert(o.end(), more.begin(), more.end());
  return o;
}

/// The records named `name` of rank 0 and `kind` that start at or after `at`, by start.
std::vector<EventRecord> from(const Trace& t, const std::string& name, EventKind kind, std::int64_t at) {
  std::vector<EventRecord> out;
  for (const auto& e : t.named(name))
    if (e.kind == kind && e.start_ns >= at - 3) out.push_back(e);
  return out;
}

EventRecord first_from(const std::vector<EventRecord>& records, std::int64_t at) {
  for (const auto& e : records)
    if (e.start_ns >= at - 3) return e;
  FAIL("none at or after " << at);
  return {};
}

}  // namespace

TEST_CASE("AsyncTP: an all-gather fused with its GEMM runs the own shard at once and the pulled one after its copy",
          "[run][timeline][tp][async-tp]") {
  const auto t = simulate_timeline(async_tp());
  // The shard into the symmetric buffer (1 kernel), then the GEMM on the own shard (1 kernel,
  // half the rows) while the other rank's shard is pulled (2 us, by the copy engines: no SMs
  // taken, so the kernel keeps its 1 us); the second half starts when the pull ends.
  const EventRecord copy = t->first("mlp_up_ag_copy", EventKind::forward);
  CHECK(ns(copy.end_ns - copy.start_ns) == Approx(task_ns(1)).margin(3));
  const auto chunks = from(*t, "mlp_up", EventKind::forward, copy.end_ns);
  REQUIRE(chunks.size() >= 2);
  CHECK(ns(chunks[0].start_ns - copy.end_ns) == Approx(0).margin(3));
  CHECK(ns(chunks[0].end_ns - chunks[0].start_ns) == Approx(task_ns(1)).margin(3));
  const EventRecord pull = first_from(t->named("tp async all_gather"), copy.end_ns);
  CHECK(pull.bytes == 32768.0);
  CHECK(ns(pull.start_ns - copy.end_ns) == Approx(0).margin(3));
  CHECK(ns(pull.end_ns - pull.start_ns) == Approx(2 * kUs).margin(3));
  CHECK(ns(chunks[1].start_ns - pull.end_ns) == Approx(0).margin(3));
  CHECK(ns(chunks[1].end_ns - chunks[1].start_ns) == Approx(task_ns(1)).margin(3));
  // Half the GEMM's FLOPs in each chunk.
  CHECK(chunks[0].flops * 2 == Approx(chunks[0].flops + chunks[1].flops));
  // No plain all-gather in forward: every gather is fused (the embedding's reduce-scatter stays plain).
  const EventRecord head = t->first("lm_head", EventKind::forward);
  for (const auto& e : t->named("tp all_gather")) CHECK(e.start_ns > head.start_ns);
  CHECK(t->named("tp all_reduce").empty());
}

TEST_CASE("AsyncTP under Float8: tensorwise fuses the fp8 gather with the GEMM, rowwise gathers bf16 before its cast",
          "[run][timeline][tp][async-tp][precision]") {
  // torchao's tensorwise Float8 TP casts the activations before the sequence-parallel all-gather
  // (torchtitan's Float8ColwiseParallel), and torch's micro-pipeline pass fuses the gather with
  // the _scaled_mm that reads it: the pulled shard is 256·64 fp8 elements, 16,384 B.
  const auto tensorwise = simulate_timeline(async_tp({"cluster.topology.device.peak_flops.fp8=1e19 FLOPS",
                                                      "training.precision=fp8", "training.fp8_recipe=current"}));
  const EventRecord copy = tensorwise->first("mlp_up_ag_copy", EventKind::forward);
  CHECK(first_from(tensorwise->named("tp async all_gather"), copy.end_ns).bytes == 16384.0);
  // torchtitan applies the plain TP styles to the rowwise recipe: the gathered bf16 rows go to
  // the rowwise cast, not to a matmul, so the pass (_find_consumer_matmuls) fuses nothing with
  // that gather: a plain all-gather of the 512·64 bf16 rows (65,536 B in the record; in fp8 it
  // would be half) ends before the cast, and the GEMM runs whole (not in two chunks). The forward reduce-scatter after the row-parallel
  // GEMM (its _scaled_mm output, read by the reduce-scatter alone) stays fused.
  const auto rowwise = simulate_timeline(async_tp({"cluster.topology.device.peak_flops.fp8=1e19 FLOPS",
                                                   "training.precision=fp8", "training.fp8_recipe=rowwise"}));
  CHECK(rowwise->named("mlp_up_ag_copy").empty());
  const EventRecord cast = rowwise->first("mlp_up_cast", EventKind::forward);
  EventRecord gather;
  gather.start_ns = -1;
  for (const auto& e : rowwise->named("tp all_gather"))
    if (e.end_ns <= cast.start_ns + 3 && e.start_ns > gather.start_ns) gather = e;
  CHECK(gather.bytes == 65536.0);
  CHECK(rowwise->first("mlp_up", EventKind::forward).flops == tensorwise->first("mlp_up", EventKind::forward).flops * 2);
  CHECK_FALSE(rowwise->named("mlp_down_rs_sum").empty());
}

TEST_CASE("AsyncTP: a reduce-scatter fused with its GEMM sends each rank its rows, then sums the partials",
          "[run][timeline][tp][async-tp]") {
  const auto t = simulate_timeline(async_tp());
  // Rank 0 first computes rank 1's rows (1 kernel), which rank 1 pulls (2 us) while rank 0
  // computes its own (1 kernel); the sum of its 2 partials (1 kernel) waits for the pull of its
  // rows from rank 1, which ends with rank 0's: 2 us after the first chunk.
  const auto chunks = t->named("attn_out");
  REQUIRE(chunks.size() >= 2);
  CHECK(ns(chunks[1].start_ns - chunks[0].end_ns) == Approx(0).margin(3));
  const EventRecord push = first_from(t->named("tp async reduce_scatter"), chunks[0].end_ns);
  CHECK(push.bytes == 32768.0);
  CHECK(ns(push.start_ns - chunks[0].end_ns) == Approx(0).margin(3));
  CHECK(ns(push.end_ns - push.start_ns) == Approx(2 * kUs).margin(3));
  const EventRecord sum = first_from(t->named("attn_out_rs_sum"), chunks[1].end_ns);
  CHECK(ns(sum.start_ns - push.end_ns) == Approx(0).margin(3));
  CHECK(ns(sum.end_ns - sum.start_ns) == Approx(task_ns(1)).margin(3));
  // The sum reads the 2 partials of the rank's 256 rows and writes one: 3 · 32,768 B.
  CHECK(sum.bytes == 3.0 * 32768.0);
  // The next op (the residual add) follows the sum on the stream.
  CHECK(ns(t->next_compute(sum.end_ns).start_ns - sum.end_ns) == Approx(0).margin(3));
}

TEST_CASE("AsyncTP: backward fuses the row-parallel input gradient with its gather — the reduce-scatters stay plain",
          "[run][timeline][tp][async-tp]") {
  const auto t = simulate_timeline(async_tp());
  // mlp_down's input gradient takes the gathered output gradient as its left operand: fused,
  // two chunks around a 2 us pull. The input gradients of the column-parallel layers are
  // reduce-scattered by plain collectives (torchtitan's separate linears sum theirs first),
  // and the embedding's gradient is all-gathered plainly before its lookup's backward.
  const auto dgrad = t->named("mlp_down_dgrad");
  REQUIRE(dgrad.size() >= 2);
  const EventRecord pull = first_from(t->named("tp async all_gather"), dgrad[0].start_ns);
  CHECK(ns(dgrad[1].start_ns - pull.end_ns) == Approx(0).margin(3));
  CHECK(!t->named("tp reduce_scatter").empty());
  std::vector<EventRecord> plain_gathers;  // one record per participant: rank 0's
  for (const auto& e : t->named("tp all_gather"))
    if (e.rank == 0) plain_gathers.push_back(e);
  REQUIRE(plain_gathers.size() == 1);
  const EventRecord embedding = t->first("embedding_bwd", EventKind::backward);
  CHECK(embedding.start_ns >= plain_gathers.front().end_ns - 3);
}

TEST_CASE("AsyncTP is refused where torch does not run it", "[run][tp][async-tp][config]") {
  CHECK_NOTHROW(config::load_scenario(kTimeline, async_tp()));
  CHECK_THROWS_AS(config::load_scenario(kTimeline, async_tp({"parallel.sequence_parallel=false"})), InputError);
  CHECK_THROWS_AS(config::load_scenario(kTimeline, async_tp({"training.framework=eager"})), InputError);
  CHECK_THROWS_AS(config::load_scenario(kTimeline, async_tp({"parallel.tp=1", "parallel.sequence_parallel=false"})),
                  InputError);
  try {
    config::load_scenario(kTimeline, async_tp({"training.framework=eager"}));
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("parallel.async_tp") != std::string::npos);
    CHECK(std::string(e.what()).find("compile") != std::string::npos);
  }
}

TEST_CASE("AsyncTP hides the TP collectives of a GEMM-bound step", "[run][tp][async-tp]") {
  // GEMMs that take time of their own (tensor cores at 1e11 FLOP/s: the qkv projection's
  // 2·512·96·64 FLOPs alone take over 60 us) and NVLink ten times slower (a shard's pull
  // 20 us): each pull hides under the GEMM on the previous shard, so the TP communication the
  // step exposes shrinks to a fraction of the plain collectives', and the step is shorter.
  const std::vector<std::string> slow{"cluster.topology.device.peak_flops.bf16=1e11 FLOPS",
                                      "cluster.topology.node.nvlink.bandwidth=1.6384 GB/s"};
  std::vector<std::string> plain_set{"parallel.tp=2", "parallel.dp=1", "training.global_batch_tokens=512",
                                     "parallel.sequence_parallel=true", "training.framework=compile"};
  plain_set.insert(plain_set.end(), slow.begin(), slow.end());
  const auto plain = simulate_timeline(plain_set);
  const auto fused = simulate_timeline(async_tp(slow));
  INFO("plain exposed " << plain->result.exposed_comm_s << " s of " << plain->result.step_time_s
                        << " s; fused " << fused->result.exposed_comm_s << " s of " << fused->result.step_time_s);
  CHECK(plain->result.exposed_comm_s > 0);
  CHECK(fused->result.exposed_comm_s < 0.5 * plain->result.exposed_comm_s);
  CHECK(fused->result.step_time_s < plain->result.step_time_s);
}
