// The GPU-hours waterfall of `ironlaw explain`: each bar equals the quantity it names, computed
// here by hand from the step breakdown and the whole run, and the bars add up to the simulated
// whole run's allocated GPU-hours. The inverse search's rows are checked the same way.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "report/inverse_search.hpp"
#include "report/waterfall.hpp"
#include "training/whole_run.hpp"

using namespace ironlaw;

namespace {

const std::string kFleet = IRONLAW_SOURCE_DIR "/tests/training/data/fleet.yaml";

// fleet.yaml: GPT-2 small (12 layers, 12 heads of 64, 124,439,808 parameters of which the
// 50257 x 768 token and 1024 x 768 position lookups take part in no matmul), 1,024-token
// sequences, 512 Ki tokens per step on 64 nodes x 8 GPUs, 500G tokens.
// (Tied embeddings: the 50257 x 768 table is counted once in N and is the LM head's matmul.)
constexpr double kGpus = 512;
constexpr double kPeak = 989.4e12;
constexpr double kTokensPerStep = 512.0 * 1024;
constexpr double kSteps = 953675;  // ⌈500e9 / 524,288⌉ = ⌈953,674.3⌉
constexpr double kStepS = 10.0, kComputeS = 6.0, kExposedS = 1.5, kBubbleS = 0, kDataS = 0.5, kOtherS = 2.0;
constexpr double kRecomputeFlopsPerStep = 1e17;

/// A step result with a hand-made breakdown (sums to kStepS), both simulated steps kStepS long.
run::SimulationResult fixed_step(const config::Scenario& s) {
  run::SimulationResult r;
  r.gpus = s.gpus();
  r.layout.dp = r.gpus;
  r.layout.tp = r.layout.pp = r.layout.cp = r.layout.ep = 1;
  r.tokens_per_step = s.training.global_batch_tokens;
  const auto fpt = workload::flops_per_token(s.model, s.training.sequence_length);
  r.model_flops_per_step = fpt.palm * r.tokens_per_step;
  r.model_flops_6n_per_step = fpt.six_n * r.tokens_per_step;
  r.hardware_flops_per_step = r.model_flops_per_step + kRecomputeFlopsPerStep;
  r.peak_flops_per_gpu = kPeak;
  r.memory.weights = 0.25e9;
  r.memory.optimizer = 1.5e9;
  const auto ns = static_cast<std::int64_t>(kStepS * 1e9);
  r.steps.push_back(StepRecord{.step = 0, .start_ns = 0, .end_ns = ns});
  r.steps.push_back(StepRecord{.step = 1, .start_ns = ns, .end_ns = 2 * ns});
  r.step_time_s = kStepS;
  r.compute_s = kComputeS;
  r.exposed_comm_s = kExposedS;
  r.bubble_s = kBubbleS;
  r.data_stall_s = kDataS;
  r.other_s = kOtherS;
  return r;
}

double bar(const report::Waterfall& w, const std::string& prefix) {
  for (const auto& b : w.bars)
    if (b.name.rfind(prefix, 0) == 0) return b.gpu_hours;
  FAIL("no bar named " << prefix);
  return 0;
}

}  // namespace

TEST_CASE("each waterfall bar equals the quantity it names, and the bars add up to the whole run", "[report][explain]") {
  const auto s = config::load_scenario(kFleet, {"reliability.checkpoint.interval=1 h"});
  const auto r = fixed_step(s);
  const auto whole = training::simulate_whole_run(s, &r, {}, fixed_step);
  REQUIRE(whole.interruptions > 0);  // the fleet's GPU failures: lost work and down time are not zero
  REQUIRE(whole.checkpoint_pause_s > 0);
  const auto w = report::build_waterfall(s, r, &whole);
  const double h = kGpus / 3600.0;  // GPU-hours per second of the whole job

  CHECK(w.steps == kSteps);
  CHECK(w.tokens == kSteps * kTokensPerStep);
  const double d = kSteps * kTokensPerStep;
  // 6·N·D with N = 124,439,808, and the PaLM attention term 12·L·H·Q·T = 12·12·12·64·1024.
  CHECK(bar(w, "6ND at peak") == Approx(6 * 124439808.0 * d / (kPeak * 3600)).epsilon(1e-12));
  CHECK(bar(w, "attention FLOPs") == Approx(12.0 * 12 * 12 * 64 * 1024 * d / (kPeak * 3600)).epsilon(1e-12));
  // Parameters outside matmuls: the 1,024 x 768 position table and the 25 LayerNorms' gains and
  // biases (2 x 768 each). The token table is tied to the LM head, a matmul, so it stays in.
  CHECK(bar(w, "parameters outside matmuls") ==
        Approx(-6.0 * (1024.0 * 768 + 25 * 2 * 768) * d / (kPeak * 3600)).epsilon(1e-9));
  CHECK(bar(w, "recomputation") == Approx(kRecomputeFlopsPerStep * kSteps / (kPeak * 3600)).epsilon(1e-12));
  CHECK(w.model_flops_hours + bar(w, "recomputation") + bar(w, "kernel efficiency") ==
        Approx(kSteps * kComputeS * h).epsilon(1e-12));
  CHECK(bar(w, "exposed communication") == Approx(kSteps * kExposedS * h).epsilon(1e-12));
  CHECK(bar(w, "pipeline bubble") == 0);
  CHECK(bar(w, "data stalls") == Approx(kSteps * kDataS * h).epsilon(1e-12));
  CHECK(bar(w, "stragglers") == Approx(kSteps * kOtherS * h).epsilon(1e-12));
  CHECK(w.step_hours == Approx(kSteps * kStepS * h).epsilon(1e-12));

  // Every kept step took kStepS (sync checkpoints slow no step): the kept steps cost exactly the
  // step subtotal, so that bar is zero up to rounding.
  CHECK(std::fabs(bar(w, "kept steps")) < 1e-9 * w.step_hours);
  CHECK(bar(w, "checkpoint pauses") == Approx(whole.checkpoint_pause_s * h).epsilon(1e-12));
  CHECK(bar(w, "lost work") == Approx(whole.lost_work_s * h).epsilon(1e-12));
  CHECK(bar(w, "down:") == Approx(whole.down_s * h).epsilon(1e-12));
  CHECK(bar(w, "lost work") > 0);

  double sum = 0;
  for (const auto& b : w.bars) sum += b.gpu_hours;
  CHECK(sum == Approx(w.simulated_hours).epsilon(1e-12));
  CHECK(w.simulated_hours == Approx(whole.allocated_gpu_hours).epsilon(1e-9));
  CHECK(w.simulated_hours == Approx(whole.wall_s * h).epsilon(1e-9));
  CHECK(w.simulated_mfu == Approx(r.model_flops_per_step * kSteps / (kPeak * w.simulated_hours * 3600)).epsilon(1e-12));
}

TEST_CASE("without a whole run the waterfall ends at the steps' GPU-hours", "[report][explain]") {
  const auto s = config::load_scenario(kFleet, {"reliability.checkpoint.interval=1 h"});
  const auto r = fixed_step(s);
  const auto w = report::build_waterfall(s, r, nullptr);
  CHECK_FALSE(w.whole_run);
  CHECK(w.simulated_hours == Approx(kSteps * kStepS * kGpus / 3600).epsilon(1e-12));
  const std::string text = report::format_waterfall(w, 2 * w.simulated_hours);
  CHECK(text.find("unexplained (published - simulated)") != std::string::npos);
}

TEST_CASE("hot spares are a bar of their own: wall time x spare GPUs", "[report][explain]") {
  const auto s = config::load_scenario(kFleet, {"reliability.checkpoint.interval=1 h", "reliability.restart.hot_spares=2"});
  const auto r = fixed_step(s);
  const auto whole = training::simulate_whole_run(s, &r, {}, fixed_step);
  const auto w = report::build_waterfall(s, r, &whole);
  CHECK(bar(w, "hot spares held") == Approx(whole.wall_s * 2 * 8 / 3600).epsilon(1e-12));
  CHECK(w.simulated_hours == Approx(whole.allocated_gpu_hours).epsilon(1e-9));
}

TEST_CASE("the inverse search's needed ETTR is each candidate's step GPU-hours over the published hours",
          "[report][explain]") {
  // One DGX H100 of GPT-2 small (scenarios/gpt2-ddp-1node.yaml), 1G tokens: candidates at 1 and
  // 2 nodes (0.5 rounds to 1, a duplicate) and batches of 256 Ki and 512 Ki tokens.
  const auto s = config::load_scenario(IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml",
                                       {"training.tokens=1 G", "run.steps=1"});
  report::SearchBounds bounds;
  bounds.node_factors = {0.5, 1, 2};
  bounds.batch_factors = {0.5, 1};
  const double published = 50;
  const auto res = report::inverse_search(s, published, bounds, nullptr, 2);
  REQUIRE(res.rows.size() == 4);
  for (const auto& row : res.rows) {
    INFO(row.nodes << " nodes, batch " << row.batch_tokens << ": " << row.status);
    REQUIRE(row.status.empty());
    CHECK(row.gpus == row.nodes * 8);
    CHECK(row.dp == row.gpus);
    const double steps = std::ceil(1e9 / row.batch_tokens);
    CHECK(row.step_gpu_hours == Approx(steps * row.step_time_s * row.gpus / 3600).epsilon(1e-12));
    CHECK(row.needed_ettr == Approx(row.step_gpu_hours / published).epsilon(1e-12));
  }
  for (std::size_t i = 1; i < res.rows.size(); ++i) CHECK(res.rows[i - 1].distance <= res.rows[i].distance);
}

TEST_CASE("evaluation pauses and GPUs idle while shrunk are bars of their own — the bars still add up",
          "[report][explain]") {
  // The fleet with an evaluation over one batch of tokens after every 1,000th step (one
  // forward-only step of fixed_step, 10 s, whether the job is shrunk or not: a shrunk step
  // holds at least the batch) and elastic shrinking with no spares (its GPU failures then
  // shrink the job until the node is back from repair).
  const auto s = config::load_scenario(kFleet, {"reliability.checkpoint.interval=1 h", "training.evaluation.every_steps=1000",
                                                "training.evaluation.tokens=524288", "reliability.elastic=global_batch",
                                                "reliability.restart.node_repair=2 h"});
  const auto r = fixed_step(s);
  const auto whole = training::simulate_whole_run(s, &r, {}, fixed_step);
  REQUIRE(whole.evaluations > 0);
  REQUIRE(whole.elastic_shrinks > 0);
  const auto w = report::build_waterfall(s, r, &whole);
  const double h = kGpus / 3600.0;
  CHECK(bar(w, "evaluation pauses") == Approx(whole.evaluations * kStepS * h).epsilon(1e-12));
  CHECK(bar(w, "GPUs idle while shrunk") == Approx(whole.shrunk_idle_gpu_hours).epsilon(1e-12));
  CHECK(bar(w, "GPUs idle while shrunk") > 0);
  double sum = 0;
  for (const auto& b : w.bars) sum += b.gpu_hours;
  CHECK(sum == Approx(w.simulated_hours).epsilon(1e-12));
  CHECK(w.simulated_hours == Approx(whole.allocated_gpu_hours).epsilon(1e-9));
}
