// parallel.moe_a2a_overlap (Megatron-core's --overlap-moe-expert-parallel-comm, the overlap of
// DeepSeek-V3's DualPipe): in 1F1B's steady phase a backward and the forward after it are laid
// together, their parts alternating, so that each expert all-to-all runs beside the other pass's
// computation. Checked against a count of the all-to-alls that have a pass beside them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/error.hpp"
#include "core/records.hpp"
#include "run/simulation.hpp"

using namespace ironlaw;

namespace {

const std::string kPipeline = IRONLAW_SOURCE_DIR "/tests/run/data/pipeline.yaml";

// tiny-moe (one dense layer, three MoE layers of 8 experts, 2 per token, and a shared expert)
// on one ideal node of 4 GPUs: EP 4 = DP 4, pp 1, 4 microbatches of one 2,048-token sequence per
// rank. NVLink slowed to 1 TB/s (and nothing else), so that an all-to-all takes a time of its own
// beside parts of microseconds.
std::vector<std::string> moe(bool overlap) {
  return {"model=tiny-moe.yaml",        "parallel.pp=1",
          "parallel.dp=4",              "parallel.ep=4",
          "training.global_batch_tokens=32 Ki",
          "cluster.topology.node.nvlink.bandwidth=1 TB/s",
          std::string("parallel.moe_a2a_overlap=") + (overlap ? "true" : "false")};
}

/// The time rank 0's compute records spend beside its own expert all-to-alls [ns] (a collective
/// is recorded once per participant, with the participant's rank).
double compute_beside_all_to_alls(const MemorySink& sink) {
  double beside = 0;
  for (const auto& c : sink.events) {
    if (c.kind != EventKind::collective || c.rank != 0 || sink.names.at(c.name) != "ep all_to_all") continue;
    for (const auto& e : sink.events) {
      if (e.rank != 0 || e.kind == EventKind::collective || e.kind == EventKind::data) continue;
      const auto from = std::max(c.start_ns, e.start_ns), to = std::min(c.end_ns, e.end_ns);
      if (to > from) beside += static_cast<double>(to - from);
    }
  }
  return beside;
}

}  // namespace

TEST_CASE("moe_a2a_overlap hides the all-to-alls of every co-scheduled pass", "[run][ep]") {
  MemorySink off_sink, on_sink;
  const auto off = run::simulate(config::load_scenario(kPipeline, moe(false)), off_sink, run::TraceLevel::op);
  const auto on = run::simulate(config::load_scenario(kPipeline, moe(true)), on_sink, run::TraceLevel::op);
  // One all-to-all: each rank sends the 3/4 of its t·k·h·2 B = 2,048 · 2 · 1,024 · 2 B = 8 MiB
  // that go to the other 3 ranks, over NVLink at 1e12 B/s (launch and step latencies 0):
  // 0.75 · 8,388,608 B / 1e12 B/s = 6.291 us. Per rank and step: 4 per MoE layer and microbatch
  // (dispatch and combine, forward and backward) · 3 MoE layers · 4 microbatches = 48.
  const double a2a_ns = 0.75 * 8388608.0 / 1e12 * 1e9;
  // Without the overlap each runs alone: the compute stream waits for it (nothing else is queued).
  CHECK(compute_beside_all_to_alls(off_sink) == Approx(0).margin(1));
  // With it the schedule is F0 | B0+F1 | B1+F2 | B2+F3 | B3: the 3 pairs' 2 · 12 all-to-alls run
  // beside the other pass's parts (each longer than 6.3 us on this GPU); the first forward's 6 and
  // the last backward's 6 have nothing beside them. So exposed communication drops by 36 of them,
  // and the step by as much (the computation is the same: one SM of 128 taken by a collective).
  const double saved = 36 * a2a_ns;
  CHECK((off.exposed_comm_s - on.exposed_comm_s) * 1e9 == Approx(saved).epsilon(0.02));
  CHECK((off.step_time_s - on.step_time_s) * 1e9 == Approx(saved).epsilon(0.02));
  CHECK(on.compute_s == Approx(off.compute_s).epsilon(0.01));
  CHECK(compute_beside_all_to_alls(on_sink) >= 0.95 * saved);
  // The same work: every op, every collective.
  CHECK(on.model_flops_per_step == Approx(off.model_flops_per_step));
  CHECK(on_sink.events.size() == off_sink.events.size());
}

TEST_CASE("moe_a2a_overlap is refused where Megatron-core does not run it", "[run][ep][config]") {
  CHECK_NOTHROW(config::load_scenario(kPipeline, moe(true)));
  // A dense model has no all-to-all to overlap; nor has EP 1.
  CHECK_THROWS_AS(config::load_scenario(kPipeline, {"parallel.pp=1", "parallel.moe_a2a_overlap=true"}), InputError);
  auto no_ep = moe(true);
  no_ep.push_back("parallel.ep=1");
  CHECK_THROWS_AS(config::load_scenario(kPipeline, no_ep), InputError);
  // pp > 1 needs the interleaved schedule (transformer_config.py asserts a virtual pipeline size):
  // under plain 1F1B's warm-up each pair would wait for the next stage's whole pair.
  auto pipelined = moe(true);
  pipelined.push_back("parallel.pp=2");
  pipelined.push_back("parallel.dp=2");
  pipelined.push_back("parallel.ep=2");
  pipelined.push_back("parallel.pp_schedule=1f1b");
  CHECK_THROWS_AS(config::load_scenario(kPipeline, pipelined), InputError);
  pipelined.push_back("parallel.pp_schedule=interleaved");
  CHECK_NOTHROW(config::load_scenario(kPipeline, pipelined));
  // Not DeepSpeed's pipeline engine.
  pipelined.push_back("parallel.pp_runtime=deepspeed");
  CHECK_THROWS_AS(config::load_scenario(kPipeline, pipelined), InputError);
}

TEST_CASE("moe_a2a_overlap with an interleaved pipeline runs every pass and hides all-to-alls", "[run][ep]") {
  // pp 2 with the interleaved schedule (one chunk per rank): the co-scheduled pairs start after
  // the warm-up's extra forward, and the step still runs every pass once. The all-to-alls the
  // pairs hide leave exposed communication; whether the step shortens is the pipeline's to say
  // (each pair sends its forward's output and its backward's input gradient only at its end):
  // here, 2 stages and 16 microbatches, it does not — the time reappears as bubble.
  std::vector<std::string> base = moe(false);
  for (const char* o : {"parallel.pp=2", "parallel.dp=2", "parallel.ep=2", "parallel.pp_schedule=interleaved",
                        "parallel.virtual_stages=1", "training.global_batch_tokens=64 Ki"})
    base.emplace_back(o);
  std::vector<std::string> paired = base;
  paired.emplace_back("parallel.moe_a2a_overlap=true");
  MemorySink off_sink, on_sink;
  const auto off = run::simulate(config::load_scenario(kPipeline, base), off_sink, run::TraceLevel::op);
  const auto on = run::simulate(config::load_scenario(kPipeline, paired), on_sink, run::TraceLevel::op);
  CHECK(on_sink.events.size() == off_sink.events.size());
  CHECK(on.compute_s == Approx(off.compute_s).epsilon(0.01));
  CHECK(compute_beside_all_to_alls(off_sink) == Approx(0).margin(1));
  CHECK(compute_beside_all_to_alls(on_sink) > 0);
  CHECK(on.exposed_comm_s < 0.5 * off.exposed_comm_s);
}

TEST_CASE("the deepep dispatcher's kernels hold the SMs they are given beside the overlapped computation",
          "[run][ep][sms]") {
  // Megatron-core's moe_flex_dispatcher_num_sms (parallel.moe_dispatcher_sms): DeepEP's dispatch
  // and combine kernels run on that many SMs, so the pass computed beside them runs on the rest.
  // On this 128-SM node a computation beside a dispatcher of 1 SM runs at 127/128 of its speed,
  // beside one of 65 at 63/128: for each stretch of time t the two overlap, the second run owes
  // (127 − 63)/128 · t = t/2 more kernel time once the all-to-all has ended (the all-to-all itself
  // moves the same bytes at the same link rate, whatever its SMs).
  auto with = [](int sms) {
    auto o = moe(true);
    o.push_back("parallel.moe_dispatcher=deepep");
    o.push_back("parallel.moe_dispatcher_sms=" + std::to_string(sms));
    return o;
  };
  MemorySink one_sink, many_sink;
  const auto one = run::simulate(config::load_scenario(kPipeline, with(1)), one_sink, run::TraceLevel::op);
  const auto many = run::simulate(config::load_scenario(kPipeline, with(65)), many_sink, run::TraceLevel::op);
  const double beside_s = compute_beside_all_to_alls(one_sink) * 1e-9;
  REQUIRE(beside_s > 0);
  CHECK(many.compute_s - one.compute_s == Approx(0.5 * beside_s).epsilon(0.05));
  CHECK(many.model_flops_per_step == Approx(one.model_flops_per_step));
  // Unset, DeepEP's own default: deep_ep/buffer.py Buffer.num_sms = 20.
  const auto unset = config::load_scenario(kPipeline, with(1));
  CHECK(config::ParallelSpec{}.dispatcher_sms(true) == 20);
  CHECK(unset.parallel.dispatcher_sms(true) == 1);
  // HybridEP's own: 24 within a node, 8 across nodes (csrc/hybrid_ep/config.cuh).
  config::ParallelSpec hybridep;
  hybridep.moe_dispatcher = "hybridep";
  CHECK(hybridep.dispatcher_sms(false) == 24);
  CHECK(hybridep.dispatcher_sms(true) == 8);
  hybridep.moe_dispatcher_sms = 32;
  CHECK(hybridep.dispatcher_sms(true) == 32);
}

TEST_CASE("parallel.moe_dispatcher_sms is refused where no deepep kernels run or no SM would be left", "[run][ep][config]") {
  auto alltoall = moe(true);
  alltoall.push_back("parallel.moe_dispatcher_sms=32");  // NCCL's all-to-all takes its channels
  CHECK_THROWS_AS(config::load_scenario(kPipeline, alltoall), InputError);
  auto all_sms = moe(true);
  all_sms.push_back("parallel.moe_dispatcher=deepep");
  all_sms.push_back("parallel.moe_dispatcher_sms=128");  // the ideal node's GPU has 128
  CHECK_THROWS_AS(config::load_scenario(kPipeline, all_sms), InputError);
  all_sms.back() = "parallel.moe_dispatcher_sms=127";
  CHECK_NOTHROW(config::load_scenario(kPipeline, all_sms));
  all_sms.back() = "parallel.moe_dispatcher_sms=0";
  CHECK_THROWS_AS(config::load_scenario(kPipeline, all_sms), InputError);
  all_sms.back() = "parallel.moe_dispatcher_sms=32";
  all_sms[all_sms.size() - 2] = "parallel.moe_dispatcher=hybridep";
  CHECK_NOTHROW(config::load_scenario(kPipeline, all_sms));
}
