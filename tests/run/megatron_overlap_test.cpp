// Megatron-core's communication overlaps, on the timelines of tests/run/data/timeline.yaml
// (tiny-dense on the launch-bound node: timeline_fixture.hpp):
// - --tp-comm-overlap (parallel.tp_comm_overlap, Transformer Engine's userbuffers): the
//   sequence-parallel all-gathers and forward reduce-scatters run chunk by chunk beside their
//   GEMMs, as AsyncTP's fused parts do (async_tp_test.cpp has their timelines);
// - --overlap-param-gather (parallel.overlap_param_gather): the distributed optimizer's
//   parameter all-gather runs unit by unit during the forward instead of after the optimizer.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "timeline_fixture.hpp"

using namespace ironlaw;
using namespace ironlaw::run_test;

namespace {

std::vector<std::string> megatron_sp(std::vector<std::string> more = {}) {
  std::vector<std::string> o{"parallel.tp=2", "parallel.dp=1", "training.global_batch_tokens=512",
                             "parallel.sequence_parallel=true", "training.framework=fused"};
  o.insert(o.end(), more.begin(), more.end());
  return o;
}

/// Rank 0's first optimizer record.
EventRecord optimizer_of(const Trace& t) {
  EventRecord best{};
  best.start_ns = -1;
  for (const auto& e : t.sink.events)
    if (e.rank == 0 && e.kind == EventKind::optimizer && (best.start_ns < 0 || e.start_ns < best.start_ns)) best = e;
  REQUIRE(best.start_ns >= 0);
  return best;
}

std::vector<EventRecord> of_rank0(std::vector<EventRecord> events) {
  std::erase_if(events, [](const EventRecord& e) { return e.rank != 0; });
  return events;
}

}  // namespace

TEST_CASE("TE's comm overlap runs Megatron's sequence-parallel collectives beside their GEMMs",
          "[run][tp][tp-comm-overlap]") {
  // GEMM-bound as in async_tp_test.cpp (tensor cores at 1e11 FLOP/s, NVLink at 1.6384 GB/s):
  // each chunk's transfer hides under the GEMM on the chunk before it.
  const std::vector<std::string> slow{"cluster.topology.device.peak_flops.bf16=1e11 FLOPS",
                                      "cluster.topology.node.nvlink.bandwidth=1.6384 GB/s"};
  auto plain_set = megatron_sp(slow);
  auto overlap_set = megatron_sp(slow);
  overlap_set.push_back("parallel.tp_comm_overlap=true");
  const auto plain = simulate_timeline(plain_set);
  const auto overlapped = simulate_timeline(overlap_set);
  CHECK(plain->named("tp async all_gather").empty());
  CHECK_FALSE(overlapped->named("tp async all_gather").empty());
  CHECK_FALSE(overlapped->named("tp async reduce_scatter").empty());
  // Megatron's sequence-first layout: no relayout copies, overlapped or not.
  CHECK(overlapped->named("tp_gather_relayout").empty());
  CHECK(overlapped->named("tp_scatter_relayout").empty());
  INFO("plain exposed " << plain->result.exposed_comm_s << " s of " << plain->result.step_time_s
                        << " s; overlapped " << overlapped->result.exposed_comm_s << " s of "
                        << overlapped->result.step_time_s);
  CHECK(plain->result.exposed_comm_s > 0);
  CHECK(overlapped->result.exposed_comm_s < 0.5 * plain->result.exposed_comm_s);
  CHECK(overlapped->result.step_time_s < plain->result.step_time_s);
}

TEST_CASE("TE's comm overlap is refused where Megatron-core does not run it", "[run][tp][tp-comm-overlap][config]") {
  CHECK_NOTHROW(config::load_scenario(kTimeline, megatron_sp({"parallel.tp_comm_overlap=true"})));
  CHECK_THROWS_AS(config::load_scenario(kTimeline, megatron_sp({"parallel.tp_comm_overlap=true",
                                                                "parallel.sequence_parallel=false"})),
                  InputError);
  try {
    config::load_scenario(kTimeline, megatron_sp({"parallel.tp_comm_overlap=true", "training.framework=compile"}));
    FAIL("compile accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("parallel.tp_comm_overlap") != std::string::npos);
    CHECK(std::string(e.what()).find("fused") != std::string::npos);
  }
  // AsyncTP is torch's; both at once is refused.
  CHECK_THROWS_AS(config::load_scenario(kTimeline, megatron_sp({"parallel.tp_comm_overlap=true",
                                                                "parallel.async_tp=true"})),
                  InputError);
}

TEST_CASE("overlap_param_gather gathers each unit's parameters before its first forward, not after the optimizer",
          "[run][zero][overlap-param-gather]") {
  // ZeRO 1 over dp 2 (the timeline's default), Megatron-style code; tiny-dense holds 5 units:
  // the embedding, 3 layers and the head.
  const std::vector<std::string> zero1{"parallel.zero=1", "training.framework=fused"};
  auto gathered_set = zero1;
  gathered_set.push_back("parallel.overlap_param_gather=true");
  const auto after = simulate_timeline(zero1);
  const auto during = simulate_timeline(gathered_set);
  const auto optimizer = optimizer_of(*after);
  // Without it: one all-gather of every unit, after the optimizer.
  const auto whole = of_rank0(after->named("dp all_gather params"));
  REQUIRE(whole.size() == 1);
  CHECK(whole.front().start_ns >= optimizer.end_ns);
  // With it: one per unit, the embedding's first, all before the optimizer, and none after it.
  CHECK(during->named("dp all_gather params").empty());
  const std::vector<std::string> units{"embedding", "layer0", "layer1", "layer2", "head"};
  const auto first_forward = during->first("embedding", EventKind::forward);
  const auto opt = optimizer_of(*during);
  std::int64_t previous_start = -1;
  for (const auto& unit : units) {
    INFO(unit);
    const auto gathers = of_rank0(during->named("dp all_gather params " + unit));
    REQUIRE(gathers.size() == 1);
    CHECK(gathers.front().end_ns <= opt.start_ns);
    CHECK(gathers.front().start_ns >= previous_start);
    previous_start = gathers.front().start_ns;
  }
  CHECK(of_rank0(during->named("dp all_gather params embedding")).front().end_ns <= first_forward.start_ns);
  // The step ends with the optimizer instead of a gather after it.
  CHECK(during->result.step_time_s < after->result.step_time_s);
}

TEST_CASE("overlap_param_gather is refused without Megatron's distributed optimizer", "[run][zero][config]") {
  CHECK_NOTHROW(config::load_scenario(kTimeline, {"parallel.zero=2", "training.framework=fused",
                                                  "parallel.overlap_param_gather=true"}));
  CHECK_THROWS_AS(config::load_scenario(kTimeline, {"parallel.zero=0", "training.framework=fused",
                                                    "parallel.overlap_param_gather=true"}),
                  InputError);
  CHECK_THROWS_AS(config::load_scenario(kTimeline, {"parallel.zero=1", "training.framework=compile",
                                                    "parallel.overlap_param_gather=true"}),
                  InputError);
}
