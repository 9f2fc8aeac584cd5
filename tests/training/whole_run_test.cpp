// The whole-run process: GPU-hours without failures, failure counts against the configured
// rates, lost work per failure, asynchronous against synchronous checkpoints, and the failure
// file's input checks. Expected figures come from closed forms stated at each test.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "config/failures.hpp"
#include "config/load.hpp"
#include "core/error.hpp"
#include "training/whole_run.hpp"

using namespace ironlaw;
using namespace ironlaw::training;

namespace {

std::string data(const std::string& name) { return std::string(IRONLAW_SOURCE_DIR "/tests/training/data/") + name; }

config::Scenario fleet(std::vector<std::string> overrides = {}) {
  return config::load_scenario(data("fleet.yaml"), overrides);
}

/// fleet.yaml with a synchronous checkpoint every hour of training.
config::Scenario fleet_hourly(std::vector<std::string> overrides = {}) {
  overrides.insert(overrides.begin(), "reliability.checkpoint.interval=1 h");
  return fleet(overrides);
}

constexpr double kStepS = 10.0;
constexpr double kForwardStepS = 3.0;  ///< a forward-only (evaluation) step of fixed_step
constexpr double kWeightsBytes = 1e9;
constexpr double kOptimizerBytes = 6e9;

/// A step simulation replaced by a fixed step time: a warm-up step, then steps of kStepS
/// (kForwardStepS for a forward-only step).
run::SimulationResult fixed_step(const config::Scenario& s) {
  run::SimulationResult r;
  r.gpus = s.gpus();
  r.layout.dp = s.parallel.dp;
  r.tokens_per_step = s.training.global_batch_tokens;
  r.model_flops_per_step = 6 * 124e6 * r.tokens_per_step;
  r.peak_flops_per_gpu = 989e12;
  r.memory.weights = kWeightsBytes;
  r.memory.optimizer = kOptimizerBytes;
  const std::int64_t step_ns = static_cast<std::int64_t>((s.run.forward_only ? kForwardStepS : kStepS) * 1e9);
  r.steps.push_back(StepRecord{.step = 0, .start_ns = 0, .end_ns = 2 * step_ns});
  r.steps.push_back(StepRecord{.step = 1, .start_ns = 2 * step_ns, .end_ns = 3 * step_ns});
  r.step_time_s = 1.5 * kStepS;
  return r;
}

WholeRunResult run_fixed(const config::Scenario& s) { return simulate_whole_run(s, nullptr, {}, fixed_step); }

}  // namespace

TEST_CASE("without failures or checkpoints, GPU-hours are steps x simulated step time x GPUs", "[training]") {
  const auto s = config::load_scenario(IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml",
                                       {"run.mode=full", "training.tokens=1 G"});
  const run::SimulationResult step = simulate_step(s);
  REQUIRE(step.steps.size() == 2);
  const double step_s = (step.steps[1].end_ns - step.steps[1].start_ns) * 1e-9;  // the warm-up step dropped
  const WholeRunResult w = simulate_whole_run(s, &step);
  const double steps = std::ceil(1e9 / (512.0 * 1024));  // 1,908 steps of 512 Ki tokens
  CHECK(w.steps == static_cast<std::int64_t>(steps));
  CHECK(w.interruptions == 0);
  CHECK(w.checkpoints.empty());
  CHECK(w.allocated_gpu_hours == Approx(steps * step_s * 8 / 3600).epsilon(1e-9));
  CHECK(w.productive_gpu_hours == Approx(w.allocated_gpu_hours).epsilon(1e-12));
  CHECK(w.ettr == Approx(1.0).epsilon(1e-12));
  CHECK(w.goodput == Approx(1.0).epsilon(1e-9));
  CHECK(w.mfu_productive == Approx(w.mfu_step).epsilon(1e-9));
  CHECK(w.step_simulations == 0);  // the step result given was reused
}

TEST_CASE("exponential failure counts match the configured rate within Poisson noise", "[training][failures]") {
  // 50 failures per 1,000 node-days on 64 nodes. The count over the simulated wall time W is
  // Poisson with mean E = 0.05/d × 64 × W; |N − E| ≤ 4·√E fails by chance with probability
  // ≈ 6.3e-5 (two-sided normal tail at 4σ). The seed is fixed, so the test is deterministic.
  const WholeRunResult w = run_fixed(fleet_hourly());
  const double wall_days = w.wall_s / 86400;
  const double expected = 50.0 / 1000 * 64 * wall_days;
  INFO("interruptions " << w.interruptions << ", expected " << expected << " over " << wall_days << " days");
  REQUIRE(expected > 300);
  CHECK(std::abs(w.interruptions - expected) <= 4 * std::sqrt(expected));
  CHECK(w.interruptions_by_cause.at("gpu") == w.interruptions);
  CHECK(static_cast<int>(w.failures.size()) == w.interruptions);
  CHECK(w.mtbf_s == Approx(86400.0 / (0.05 * 64)));
}

TEST_CASE("Weibull failure counts match the renewal function within its noise", "[training][failures]") {
  // Per node a renewal process with Weibull(k = 0.7) gaps of mean μ = 20 d (50 per 1,000 node-days). Renewal theory:
  // E[N(W)] ≈ W/μ + (c² − 1)/2 per node, Var ≈ c²·W/μ, c² = Γ(1+2/k)/Γ(1+1/k)² − 1. The bound
  // 4σ gives a false-failure probability ≈ 6.3e-5 (normal approximation), seed fixed.
  const WholeRunResult w = run_fixed(fleet_hourly({"reliability.failures=failures-weibull.yaml"}));
  const double k = 0.7;
  const double c2 = std::tgamma(1 + 2 / k) / std::pow(std::tgamma(1 + 1 / k), 2) - 1;
  const double per_node = w.wall_s / 86400 / 20.0;
  const double expected = 64 * (per_node + (c2 - 1) / 2);
  const double sigma = std::sqrt(64 * c2 * per_node);
  INFO("interruptions " << w.interruptions << ", expected " << expected << " ± " << sigma);
  CHECK(std::abs(w.interruptions - expected) <= 4 * sigma);
}

TEST_CASE("lost work per failure is bounded by the checkpoint interval and one step — hangs wait for the timeout",
          "[training][failures]") {
  SECTION("synchronous: lost ≤ interval + one step") {
    const WholeRunResult w = run_fixed(fleet_hourly({"reliability.failures=failures-mixed.yaml"}));
    REQUIRE(w.failures.size() > 100);
    int hangs = 0;
    for (const auto& f : w.failures) {
      if (f.while_down) continue;
      CHECK(f.lost_work_s <= 3600 + kStepS + 1e-6);
      CHECK(f.lost_work_s >= 0);
      const double delay = (f.detected - f.time).seconds();
      if (f.cause == "nccl_hang") {
        ++hangs;
        CHECK(delay == Approx(600));  // reliability.restart.detection
      } else {
        CHECK(delay == 0);
      }
    }
    CHECK(hangs > 0);
  }
  SECTION("asynchronous: lost ≤ interval + background write + two steps") {
    const WholeRunResult w = run_fixed(fleet_hourly({"reliability.failures=failures-mixed.yaml",
                                              "reliability.checkpoint.mode=async",
                                              "reliability.checkpoint.storage_bandwidth=1 GB/s"}));
    // Distinct checkpoint bytes under DDP (dp 512 over 512 GPUs): weights and optimizer once each.
    const double write_s = (kWeightsBytes + kOptimizerBytes) / 1e9;
    REQUIRE(w.failures.size() > 100);
    for (const auto& f : w.failures) {
      if (!f.while_down) CHECK(f.lost_work_s <= 3600 + write_s + 2 * kStepS + 1e-6);
    }
  }
}

TEST_CASE("a sync checkpoint pauses for bytes over the storage bandwidth — a restart loads them back",
          "[training][checkpoint]") {
  const WholeRunResult w = run_fixed(fleet_hourly({"reliability.failures=failures-gpu.yaml"}));
  // 7 GB distinct over 100 GB/s = 0.07 s (the 64 nodes' 8 NICs at 47 GB/s are not the bound).
  REQUIRE(!w.checkpoints.empty());
  const auto& c = w.checkpoints.front();
  CHECK((c.resumed - c.start).seconds() == Approx(0.07).epsilon(1e-6));
  CHECK(c.bytes == Approx(7e9));
  // Each of 512 GPUs reads its 7 GB back: 3.584 TB over 100 GB/s = 35.84 s.
  bool loaded = false;
  for (const auto& r : w.restarts) {
    if (r.load_s > 0) {
      CHECK(r.load_s == Approx(35.84).epsilon(1e-9));
      loaded = true;
    }
    CHECK(r.reschedule_s == Approx(120));
    CHECK(r.initialize_s == Approx(60));
  }
  CHECK(loaded);
  // Checkpoint pauses: 0.07 s each, counted once per completed checkpoint.
  int completed = 0;
  for (const auto& k : w.checkpoints) completed += k.resumed != Time::max();
  CHECK(w.checkpoint_pause_s == Approx(completed * 0.07).epsilon(1e-6));
}

TEST_CASE("the Young/Daly interval is sqrt(2 x write cost x MTBF) from the simulated rates", "[training][checkpoint]") {
  const WholeRunResult w = run_fixed(fleet({"reliability.checkpoint.policy=young_daly"}));
  const double mtbf = 86400.0 / (0.05 * 64);
  CHECK(w.checkpoint_write_s == Approx(0.07).epsilon(1e-6));
  CHECK(w.young_daly_interval_s == Approx(std::sqrt(2 * 0.07 * mtbf)).epsilon(1e-6));
  CHECK(w.checkpoint_interval_s == Approx(w.young_daly_interval_s));
}

TEST_CASE("asynchronous checkpoints cost less than synchronous ones, their cost the network they share",
          "[training][checkpoint]") {
  // GPT-2 small on 2 nodes with 5 GB/s NICs: the gradient all-reduce crosses them, exposed.
  // The background write (1.74 GB over 20 GB/s of storage, half from each node over its 8
  // NICs) takes 1.25 GB/s of each NIC, so the steps that run beside it slow down.
  const std::string file = IRONLAW_SOURCE_DIR "/tests/training/data/gpt2-2node.yaml";
  const std::string nic = "cluster.topology.node.nic.bandwidth=5 GB/s";
  const auto off = config::load_scenario(file, {nic, "reliability.checkpoint.interval=0 s"});  // 0: no checkpoints
  const auto sync = config::load_scenario(file, {nic});
  const auto async = config::load_scenario(file, {nic, "reliability.checkpoint.mode=async"});
  const run::SimulationResult step = simulate_step(off);
  const WholeRunResult w_off = simulate_whole_run(off, &step);
  const WholeRunResult w_sync = simulate_whole_run(sync, &step);
  const WholeRunResult w_async = simulate_whole_run(async, &step);
  INFO("step " << step.step_time_s << " s, wall " << w_off.wall_s << " s, checkpoint write " << w_sync.checkpoint_write_s
                << " s, snapshot+sharing " << w_async.checkpoint_write_s << " s");
  REQUIRE(w_sync.checkpoints.size() > 3);
  REQUIRE(w_async.checkpoints.size() > 3);
  const double cost_sync = w_sync.wall_s - w_off.wall_s;
  const double cost_async = w_async.wall_s - w_off.wall_s;
  INFO("sync cost " << cost_sync << " s, async cost " << cost_async << " s");
  CHECK(cost_async < cost_sync);
  // Sync: the paused writes, nothing else.
  CHECK(cost_sync == Approx(w_sync.checkpoint_pause_s).epsilon(1e-6));
  // Async: the snapshot pauses plus the slowdown of steps sharing the NICs with the write; the
  // second part is positive, and it is what re-simulating the step with the NIC capacity the
  // write leaves gives.
  const double sharing = cost_async - w_async.checkpoint_pause_s;
  CHECK(sharing > 0);
  CHECK(w_async.step_simulations == 1);  // the contended configuration, once
  // By hand: DDP over 16 GPUs stores weights + optimizer once, B = per-GPU state; the write
  // takes B / 20 GB/s, each node writes B/2 over 8 NICs: 20e9 / 16 = 1.25 GB/s per NIC. The
  // steps beside the write are those of the same configuration with 5 − 1.25 GB/s NICs; after
  // each snapshot, ceil(write / slow step) of them run before the write is durable.
  const auto slowed = config::load_scenario(file, {"cluster.topology.node.nic.bandwidth=3.75 GB/s",
                                                   "reliability.checkpoint.interval=0 s"});
  const run::SimulationResult slow = simulate_step(slowed);
  const auto duration = [](const run::SimulationResult& r) {
    return (r.steps.back().end_ns - r.steps.back().start_ns) * 1e-9;
  };
  const double write_s = (step.memory.weights + step.memory.optimizer) / 20e9;
  const double slow_steps = std::ceil(write_s / duration(slow));
  CHECK(duration(slow) > duration(step));
  CHECK(sharing == Approx(w_async.checkpoints.size() * slow_steps * (duration(slow) - duration(step))).epsilon(1e-6));
  CHECK(w_async.goodput < w_off.goodput);
  CHECK(w_async.ettr == Approx(w_async.productive_s / w_async.wall_s));
}

TEST_CASE("an unknown key or a bad value in the failures file is an input error at file:line:col", "[training][input]") {
  try {
    config::load_scenario(data("fleet.yaml"), {"reliability.failures=failures-bad.yaml"});
    FAIL("no error");
  } catch (const InputError& e) {
    std::vector<std::string> lines;
    for (const auto& d : e.diagnostics()) lines.push_back(d.str());
    const std::string bad = data("failures-bad.yaml");
    auto has = [&](const std::string& line) { return std::find(lines.begin(), lines.end(), line) != lines.end(); };
    for (const auto& l : lines) UNSCOPED_INFO(l);
    const std::string known = "unknown key; expected one of count, per_1000_node_days, detection, distribution, shape";
    CHECK(has(bad + ":4:9: reliability.failures.causes.gpu.rat: " + known));
    CHECK(has(bad + ":4:18: reliability.failures.causes.gpu.bogus_key: " + known));
    CHECK(has(bad + ":4:3: reliability.failures.causes.gpu: missing required key: count or per_1000_node_days"));
  }
  CHECK_THROWS_AS(config::load_failures(data("failures-bad.yaml")), InputError);
}

TEST_CASE("an interval under a policy that sets none is refused, not ignored", "[training][input]") {
  const auto s = fleet({"reliability.checkpoint.policy=young_daly", "reliability.checkpoint.interval=1 h"});
  CHECK_THROWS_AS(run_fixed(s), InputError);
  const auto steps = config::load_scenario(IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml",
                                           {"reliability.checkpoint.mode=sync"});
  CHECK_THROWS_AS(refuse_unsimulated(steps), InputError);
  CHECK_NOTHROW(refuse_unsimulated(config::load_scenario(IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml")));
}

TEST_CASE("the failure files in topologies/ load, with the Llama 3 counts as rates", "[training][input]") {
  const auto llama = config::load_failures(IRONLAW_SOURCE_DIR "/topologies/failure-rates-llama3.yaml");
  double unexpected = 0, planned = 0;
  for (const auto& c : llama.causes) (c.detection == "planned" ? planned : unexpected) += c.rate_per_node_s;
  const double window = 2048.0 * 54 * 86400;  // node-seconds of the 54-day snapshot
  CHECK(unexpected * window == Approx(419));
  CHECK(planned * window == Approx(47));
  const auto rsc = config::load_failures(IRONLAW_SOURCE_DIR "/topologies/failure-rates-meta-rsc1.yaml");
  REQUIRE(rsc.causes.size() == 1);
  CHECK(rsc.causes[0].rate_per_node_s * 86400 * 1000 == Approx(6.50));
}

TEST_CASE("a sweep of checkpoint intervals finds its simulated optimum at the Young/Daly interval",
          "[training][checkpoint]") {
  // Sync writes of 7 GB at 1 GB/s: δ = 7 s; MTBF = 1 / (0.05/d × 64) = 27,000 s, so
  // T* = sqrt(2 · 7 · 27,000) = 614.8 s. First-order waste per unit time δ/T + T/(2·MTBF) is 25 %
  // higher at T*/2 or 2·T* than at T*, and 2.1 times at T*/4 or 4·T*; with ~380 failures the
  // lost-work noise is a few per cent of the waste, so the simulated optimum lands on T*.
  const double t_star = std::sqrt(2 * 7.0 * 27000.0);
  const WholeRunResult yd =
      run_fixed(fleet({"reliability.checkpoint.storage_bandwidth=1 GB/s", "reliability.checkpoint.policy=young_daly"}));
  CHECK(yd.young_daly_interval_s == Approx(t_star).epsilon(1e-6));
  double best_goodput = 0, best_factor = 0;
  for (const double factor : {0.25, 0.5, 1.0, 2.0, 4.0}) {
    const WholeRunResult w = run_fixed(fleet({"reliability.checkpoint.storage_bandwidth=1 GB/s",
                                              "reliability.checkpoint.interval=" + std::to_string(factor * t_star) + " s"}));
    INFO("interval " << factor * t_star << " s: goodput " << w.goodput << " ettr " << w.ettr << " wall " << w.wall_s
                     << " lost " << w.lost_work_s << " pause " << w.checkpoint_pause_s << " down " << w.down_s
                     << " n " << w.interruptions << " productive " << w.productive_s);
    CHECK(w.young_daly_interval_s == Approx(t_star).epsilon(1e-6));
    if (w.goodput > best_goodput) {
      best_goodput = w.goodput;
      best_factor = factor;
    }
  }
  CHECK(best_factor == 1.0);
}

namespace {

/// A step simulation whose step time is set by the sequences each data-parallel replica
/// runs: kStepS per sequence per replica (fleet.yaml: 512 sequences over 512 replicas, 10 s).
run::SimulationResult per_replica_step(const config::Scenario& s) {
  run::SimulationResult r = fixed_step(s);
  const int dp = s.parallel.dp > 0 ? s.parallel.dp : s.gpus();
  r.layout.dp = dp;
  const double sequences_per_replica = s.training.global_batch_tokens / s.training.sequence_length / dp;
  const auto step_ns = static_cast<std::int64_t>(kStepS * sequences_per_replica * 1e9);
  r.steps = {StepRecord{.step = 0, .start_ns = 0, .end_ns = step_ns}};
  r.step_time_s = kStepS * sequences_per_replica;
  return r;
}

/// fleet.yaml for ~1.2 days with no checkpoints, no spares, a node back from repair in 2 h, and
/// a failure rate at which seed 17 gives exactly one failure (at 6.1 h).
config::Scenario elastic_fleet(const std::string& rule) {
  return fleet({"seed=17", "training.tokens=" + std::to_string(10000LL * 512 * 1024), "reliability.checkpoint.interval=0 s",
                "reliability.failures=failures-rare.yaml", "reliability.restart.node_repair=2 h",
                "reliability.elastic=" + rule});
}

}  // namespace

TEST_CASE("elastic: with no spare, the job shrinks by the failed node's replicas until the node is back",
          "[training][elastic]") {
  // By hand, for a failure at tf (crash, found at once; no checkpoint, so all work before it is
  // lost): restart = reschedule 120 s + initialise 60 s. DDP over 512 GPUs puts 8 replicas on a
  // node, so the job goes on with dp 504 on 63 nodes. The node is back at tf + 7,200 s; the job
  // then stops at the next step boundary, writes a checkpoint (7 GB at 100 GB/s: 0.07 s) and
  // restarts on 64 nodes (180 s, no load: checkpoints are off).
  const double restart = 180, write = 0.07, repair = 7200;
  const double steps = 10000;
  SECTION("global batch kept: 512 sequences over 504 replicas, 2 per replica, 20 s a step") {
    const WholeRunResult w = simulate_whole_run(elastic_fleet("global_batch"), nullptr, {}, per_replica_step);
    REQUIRE(w.failures.size() == 1);
    const double tf = w.failures[0].time.seconds();
    const double shrunk_steps = std::ceil((repair - restart) / 20);  // 351 steps until the node is back
    CHECK(w.elastic_shrinks == 1);
    CHECK(w.elastic_grows == 1);
    CHECK(w.steps == static_cast<std::int64_t>(steps));
    CHECK(w.wall_s == Approx(tf + restart + shrunk_steps * 20 + write + restart + (steps - shrunk_steps) * 10).epsilon(1e-12));
    CHECK(w.lost_work_s == Approx(tf).epsilon(1e-12));
    CHECK(w.productive_s == Approx(shrunk_steps * 20 + (steps - shrunk_steps) * 10).epsilon(1e-12));
    CHECK(w.productive_gpu_hours ==
          Approx((shrunk_steps * 20 * 504 + (steps - shrunk_steps) * 10 * 512) / 3600).epsilon(1e-12));
    CHECK(w.shrunk_idle_gpu_hours == Approx(shrunk_steps * 20 * 8 / 3600).epsilon(1e-12));
    REQUIRE(w.restarts.size() == 2);
    CHECK(w.restarts[0].dp == 504);
    CHECK(w.restarts[0].wait_for_node_s == 0);
    CHECK(w.restarts[1].elastic_grow);
    CHECK(w.restarts[1].dp == 512);
    // Without elastic shrinking the job waits for the node: 7,200 s idle instead of 351 slow steps.
    const WholeRunResult off = simulate_whole_run(elastic_fleet("off"), nullptr, {}, per_replica_step);
    REQUIRE(off.failures.size() == 1);
    CHECK(off.wall_s == Approx(tf + repair + restart + steps * 10).epsilon(1e-12));
    CHECK(w.wall_s < off.wall_s);
  }
  SECTION("replica batch kept: 504 sequences a step at 10 s until the node is back") {
    const WholeRunResult w = simulate_whole_run(elastic_fleet("replica_batch"), nullptr, {}, per_replica_step);
    REQUIRE(w.failures.size() == 1);
    const double tf = w.failures[0].time.seconds();
    const double shrunk_steps = std::ceil((repair - restart) / 10);  // 702
    const double total = steps * 512 * 1024;
    const double after = std::ceil((total - shrunk_steps * 504 * 1024) / (512 * 1024));
    CHECK(w.steps == static_cast<std::int64_t>(shrunk_steps + after));
    CHECK(w.tokens == Approx(shrunk_steps * 504 * 1024 + after * 512 * 1024));
    CHECK(w.wall_s == Approx(tf + restart + shrunk_steps * 10 + write + restart + after * 10).epsilon(1e-12));
  }
}

TEST_CASE("elastic shrinking is refused for a layout whose replicas do not sit on whole nodes", "[training][elastic]") {
  // 3 GPUs per replica (pp 3 over 8-GPU nodes): neither fills whole nodes nor fits whole in one.
  const auto s = config::load_scenario(data("fleet.yaml"),
                                       {"cluster.nodes=3", "parallel.pp=3", "reliability.elastic=global_batch"});
  CHECK_THROWS_AS(simulate_whole_run(s, nullptr, {}, per_replica_step), InputError);
}

TEST_CASE("evaluation pauses add their time to the wall clock, not to productive time", "[training][evaluation]") {
  // 1,000 steps of 10 s; after every 100th step except the last (9 times) an evaluation over
  // 2.5 batches of tokens: ⌈2.5⌉ = 3 forward-only steps of 3 s = 9 s each (fixed_step).
  // Wall = 10,000 + 9 × 9 s; ETTR = goodput = 10,000 / 10,081.
  const auto s = fleet({"training.tokens=" + std::to_string(1000LL * 512 * 1024), "reliability.failures=",
                        "reliability.checkpoint.interval=0 s", "training.evaluation.every_steps=100",
                        "training.evaluation.tokens=" + std::to_string(5 * 512 * 1024 / 2)});
  const WholeRunResult w = run_fixed(s);
  CHECK(w.steps == 1000);
  CHECK(w.evaluations == 9);
  CHECK(w.evaluation_s == Approx(81));
  CHECK(w.wall_s == Approx(10081).epsilon(1e-12));
  CHECK(w.ettr == Approx(10000.0 / 10081).epsilon(1e-12));
  CHECK(w.goodput == Approx(10000.0 / 10081).epsilon(1e-12));
  CHECK(w.allocated_gpu_hours == Approx(10081.0 * 512 / 3600).epsilon(1e-12));
  // every_steps without tokens, or tokens without every_steps, is refused; a given duration is
  // no longer a key (the time is simulated).
  CHECK_THROWS_AS(run_fixed(fleet({"training.evaluation.every_steps=100"})), InputError);
  CHECK_THROWS_AS(run_fixed(fleet({"training.evaluation.tokens=1 M"})), InputError);
  CHECK_THROWS_AS(fleet({"training.evaluation.every_steps=100", "training.evaluation.duration=5 min"}), InputError);
}

TEST_CASE("an evaluation step runs forward only: about a third of a training step's compute", "[training][evaluation]") {
  // GPT-2 124M with DDP on one DGX node, no recomputation. Per token, the forward pass is
  // 2·N + 4·L·H·Q·T FLOPs of the training step's 6·N + 12·L·H·Q·T (PaLM count): a third
  // exactly. Its kernel time is near a third of the step's compute: the backward's GEMMs have
  // the forward's shapes transposed, and its element-wise passes about twice the forward's
  // bytes. The optimizer step (memory-bound, part of the step's compute) and the flash-attention
  // backward's extra recomputation pull the ratio below 1/3; the band 0.25–0.40 holds both.
  // No gradient all-reduce and no optimizer run: the forward step has no communication at all
  // (tp = pp = 1), so its time is its compute.
  const std::string file = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  const auto train = config::load_scenario(file, {"training.activation_checkpointing=none"});
  auto forward = train;
  forward.run.forward_only = true;
  const run::SimulationResult t = simulate_step(train);
  const run::SimulationResult f = simulate_step(forward);
  REQUIRE(t.comm_s > 0);
  CHECK(f.comm_s == 0);
  CHECK(f.model_flops_per_step == Approx(t.model_flops_per_step / 3).epsilon(1e-12));
  CHECK(f.hardware_flops_per_step == Approx(f.model_flops_per_step).epsilon(1e-12));
  const double ratio = f.compute_s / t.compute_s;
  CHECK(ratio > 0.25);
  CHECK(ratio < 0.40);
  CHECK(f.step_time_s < t.step_time_s / 2);
}

TEST_CASE("an evaluation pause is the simulated forward-only steps over the evaluation tokens", "[training][evaluation]") {
  // Whole run of GPT-2 on one node; an evaluation after every 100th step over 3 batches of
  // tokens: each pause is 3 forward-only steps of the same configuration at their simulated
  // (steady-state) time.
  const std::string file = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  const auto s = config::load_scenario(file, {"run.mode=full", "training.tokens=" + std::to_string(300LL * 512 * 1024),
                                              "training.evaluation.every_steps=100",
                                              "training.evaluation.tokens=" + std::to_string(3LL * 512 * 1024)});
  auto forward = config::load_scenario(file);
  forward.run.forward_only = true;
  const run::SimulationResult f = simulate_step(forward);
  REQUIRE(f.steps.size() == 2);
  const double forward_s = (f.steps[1].end_ns - f.steps[1].start_ns) * 1e-9;  // warm-up step dropped
  const WholeRunResult w = simulate_whole_run(s);
  CHECK(w.evaluations == 2);  // after steps 100 and 200 (none after the last)
  CHECK(w.evaluation_s == Approx(2 * 3 * forward_s).epsilon(1e-6));
}

TEST_CASE("scenarios that differ only in run-level keys share one step simulation", "[training][cache]") {
  const std::string file = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  // A seed no other test uses, so the first request is a miss whatever ran before.
  const std::vector<std::string> base{"seed=90210", "run.mode=full", "reliability.checkpoint.storage_bandwidth=10 GB/s"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), base.begin(), base.end());
    return config::load_scenario(file, extra);
  };
  const std::uint64_t before = shared_step_simulations();
  const auto a = shared_simulate_step(with({"reliability.checkpoint.interval=10 min"}));
  CHECK(shared_step_simulations() == before + 1);
  // Another checkpoint interval, mode and run length: the same step, answered from the cache.
  const auto b = shared_simulate_step(
      with({"reliability.checkpoint.interval=1 h", "reliability.checkpoint.mode=sync", "training.tokens=1 T"}));
  CHECK(shared_step_simulations() == before + 1);
  REQUIRE(a.steps.size() == b.steps.size());
  for (std::size_t i = 0; i < a.steps.size(); ++i) CHECK(a.steps[i].end_ns == b.steps[i].end_ns);
  // The answer is the step simulation's own.
  const auto direct = simulate_step(with({}));
  REQUIRE(direct.steps.size() == a.steps.size());
  CHECK(direct.steps.back().end_ns == a.steps.back().end_ns);
  // A key the step reads (the batch) is another configuration.
  shared_simulate_step(with({"training.global_batch_tokens=256 Ki"}));
  CHECK(shared_step_simulations() == before + 2);
}
