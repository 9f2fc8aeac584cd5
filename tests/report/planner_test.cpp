// report/planner: enumeration counted by hand on a tiny case, the reasons layouts are pruned
// for, the memory the planner prunes with against the run layer's, determinism across thread
// counts, and the predictor's agreement with the simulation on a small case.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include "config/load.hpp"
#include "config/schema.hpp"
#include "core/records.hpp"
#include "report/planner.hpp"
#include "run/simulation.hpp"

using ironlaw::report::PlanQuestion;
using ironlaw::report::PlanRow;
using ironlaw::report::PlanSpace;

namespace {

std::string repo(const std::string& rel) { return std::string(IRONLAW_SOURCE_DIR) + "/" + rel; }

/// GPT-2 124M (12 layers, 12 heads) on one 8-GPU DGX H100, 128 sequences of 1,024 per step.
ironlaw::config::Scenario tiny(const std::string& model = "models/gpt2-124m.yaml") {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("ironlaw-planner-test-" + std::to_string(::getpid()) + ".yaml"))
                               .string();
  {
    std::ofstream out(path);
    out << "name: planner-tiny\nmodel: " << repo(model) << "\ncluster:\n  topology: "
        << repo("topologies/dgx-h100-leaf-spine.yaml") << "\n  nodes: 1\n"
        << "parallel:\n  tp: 4\n  dp: auto\n  microbatch_size: 1\n"
        << "training:\n  sequence_length: 1024\n  global_batch_tokens: 128 Ki\n  tokens: 10 G\n"
        << "run:\n  steps: 1\noutput:\n  path: none\n";
  }
  auto s = ironlaw::config::load_scenario(path);
  std::filesystem::remove(path);
  return s;
}

/// One value per axis except those the test sets.
PlanSpace narrow() {
  PlanSpace sp;
  sp.gpus = {8};
  sp.tp = {1};
  sp.pp = {1};
  sp.cp = {1};
  sp.ep = {1};
  sp.zero = {0};
  sp.microbatch_size = {1};
  sp.virtual_stages = {2};
  sp.schedules = {"1f1b"};
  sp.recompute = {"none"};
  sp.precisions = {"bf16"};
  sp.sequence_parallel = {0};
  return sp;
}

std::size_t count_status(const std::vector<PlanRow>& rows, const std::string& prefix) {
  return static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), [&](const PlanRow& r) {
    return r.status.rfind(prefix, 0) == 0;
  }));
}

}  // namespace

TEST_CASE("the planner enumerates every combination and prunes those the loader refuses", "[report][planner]") {
  const auto base = tiny();
  PlanSpace sp = narrow();
  sp.tp = {1, 2, 4, 8};
  sp.pp = {1, 2, 3};
  const auto rows = ironlaw::report::enumerate_layouts(base, sp);
  // 4 tp × 3 pp = 12. Refused: pp 3 with every tp (tp·pp = 3, 6, 12, 24 do not divide the 8
  // GPUs: 4 rows), tp 8 with pp 1 (8 does not divide the 12 heads) and pp 2 (tp·pp = 16 > 8).
  // Left: (tp, pp) = (1,1) (1,2) (2,1) (2,2) (4,1) (4,2), 6 rows; dp = 8, 4, 4, 2, 2, 1.
  REQUIRE(rows.size() == 12);
  CHECK(count_status(rows, "invalid: parallel.tp") == 6);
  CHECK(count_status(rows, "predicted") == 6);
  for (const auto& r : rows) {
    if (r.status != "predicted") continue;
    CHECK(r.tp * r.pp * r.dp == 8);
  }
  const auto it = std::find_if(rows.begin(), rows.end(), [](const PlanRow& r) { return r.tp == 8 && r.pp == 1; });
  REQUIRE(it != rows.end());
  CHECK(it->status == "invalid: parallel.tp: must divide model.heads (12), got 8");
}

TEST_CASE("with one pipeline stage only one schedule is enumerated — interleaved adds its virtual stages",
          "[report][planner]") {
  const auto base = tiny();
  PlanSpace sp = narrow();
  sp.pp = {1, 2};
  sp.schedules = {"gpipe", "1f1b", "interleaved"};
  sp.virtual_stages = {2, 3};
  const auto rows = ironlaw::report::enumerate_layouts(base, sp);
  // pp 1: 1f1b alone (the three orders are the same with one stage) = 1; pp 2: gpipe, 1f1b,
  // interleaved × 2 virtual stages = 4. 5 rows. Interleaved needs microbatches (128 / dp 4 =
  // 32) a multiple of pp (2): fine; 12 layers ≥ 2·3 chunks: fine.
  CHECK(rows.size() == 5);
  CHECK(count_status(rows, "predicted") == 5);
}

TEST_CASE("the planner prunes what the run layer does not simulate and what does not fit in memory",
          "[report][planner]") {
  SECTION("ZeRO-3 with pipeline parallelism is simulated (as torchtitan runs it), so it is kept") {
    const auto base = tiny();
    PlanSpace sp = narrow();
    sp.tp = {1, 2};
    sp.pp = {1, 2};
    sp.zero = {0, 3};
    const auto rows = ironlaw::report::enumerate_layouts(base, sp);
    REQUIRE(rows.size() == 8);  // tp × pp × zero, each valid for the tiny model
    CHECK(count_status(rows, "not simulated") == 0);
    CHECK(count_status(rows, "predicted") == 8);
  }
  SECTION("expert parallelism of a dense model is refused by the loader's own check") {
    const auto base = tiny();
    PlanSpace sp = narrow();
    sp.tp = {1, 2};
    sp.ep = {1, 2};
    const auto rows = ironlaw::report::enumerate_layouts(base, sp);
    REQUIRE(rows.size() == 4);
    // ep 2 must divide model.experts, which is 1 for a dense model (config/validate.cpp)
    CHECK(count_status(rows, "invalid: parallel.ep") == 2);  // tp 1 and 2 with ep 2
    CHECK(count_status(rows, "predicted") == 2);
  }
  SECTION("Llama 3 70B without sharding does not fit on one node") {
    // 16 B per parameter under mixed-precision Adam at ZeRO 0 (2 weights + 2 gradients + 12
    // optimizer): 70.6e9 × 16 / 8 GPUs = 141 GB per GPU > 80 GB, whatever the activations.
    const auto base = tiny("models/llama3-70b.yaml");
    PlanSpace sp = narrow();
    sp.tp = {8};
    const auto rows = ironlaw::report::enumerate_layouts(base, sp);
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].status.rfind("out of memory", 0) == 0);
    CHECK(rows[0].memory_bytes > 70.6e9 * 16 / 8);
  }
}

TEST_CASE("the planner's memory is the run layer's", "[report][planner]") {
  // Llama 3 8B on 8 GPUs: tp 1 at ZeRO 0 needs 16 B × 8.03e9 = 128 GB per GPU (out of memory);
  // the other combinations span both sides of the 80 GB.
  const auto base = tiny("models/llama3-8b.yaml");
  PlanSpace sp = narrow();
  sp.tp = {1, 8};
  sp.pp = {1, 2};
  sp.zero = {0, 1};
  sp.recompute = {"none", "full"};
  sp.microbatch_size = {1, 2};
  const auto rows = ironlaw::report::enumerate_layouts(base, sp);
  int compared = 0;
  for (const auto& r : rows) {
    if (r.memory_bytes == 0) continue;
    auto s = ironlaw::report::scenario_for(base, r);
    if (!r.status.starts_with("out of memory")) continue;  // simulate() returns at once only when OOM
    ironlaw::NullSink sink;
    const auto res = ironlaw::run::simulate(s, sink, ironlaw::run::TraceLevel::none);
    INFO(r.layout());
    CHECK(res.out_of_memory);
    CHECK(res.memory.total() == r.memory_bytes);
    ++compared;
  }
  CHECK(compared > 0);
  // And one that fits, simulated: the planner's figure is the one simulate() reports.
  PlanSpace one = narrow();
  one.tp = {8};
  one.zero = {1};
  one.recompute = {"full"};
  const auto fit = ironlaw::report::enumerate_layouts(base, one);
  REQUIRE(fit.size() == 1);
  REQUIRE(fit[0].status == "predicted");
  auto s = ironlaw::report::scenario_for(base, fit[0]);
  ironlaw::NullSink sink;
  const auto res = ironlaw::run::simulate(s, sink, ironlaw::run::TraceLevel::none);
  CHECK_FALSE(res.out_of_memory);
  CHECK(res.memory.total() == fit[0].memory_bytes);
}

TEST_CASE("a plan is the same on one thread and on two", "[report][planner]") {
  const auto base = tiny();
  PlanSpace sp = narrow();
  sp.tp = {1, 2, 4};
  sp.pp = {1, 2};
  sp.zero = {0, 1};
  PlanQuestion q;
  const auto one = ironlaw::report::plan(base, sp, q, 5, 1);
  const auto two = ironlaw::report::plan(base, sp, q, 5, 2);
  REQUIRE(one.rows.size() == two.rows.size());
  CHECK(one.simulated == 5);
  for (std::size_t i = 0; i < one.rows.size(); ++i) {
    INFO(i);
    CHECK(one.rows[i].layout() == two.rows[i].layout());
    CHECK(one.rows[i].status == two.rows[i].status);
    CHECK(one.rows[i].step_time_s == two.rows[i].step_time_s);
    CHECK(one.rows[i].predicted.step_s == two.rows[i].predicted.step_s);
    CHECK(one.rows[i].rank == two.rows[i].rank);
  }
}

TEST_CASE("a deadline plan answers with the fewest GPUs whose simulated run meets it", "[report][planner]") {
  const auto base = tiny();
  PlanSpace sp = narrow();
  sp.gpus = {8, 16};
  sp.tp = {1, 2};
  PlanQuestion q;
  q.goal = PlanQuestion::Goal::deadline;
  q.deadline_days = 1e6;  // every layout meets it: the answer is the smallest cluster
  const auto res = ironlaw::report::plan(base, sp, q, 4, 2);
  REQUIRE(res.simulated == 4);
  REQUIRE(res.rows.front().rank == 1);
  CHECK(res.rows.front().gpus == 8);
  // days = ⌈tokens / batch⌉ × step / 86,400, GPU-hours = days × 24 × GPUs.
  const auto& r = res.rows.front();
  CHECK(r.days == Approx(std::ceil(10e9 / 131072.0) * r.step_time_s / 86400.0).epsilon(1e-12));
  CHECK(r.gpu_hours == Approx(r.days * 24 * 8).epsilon(1e-12));
}

TEST_CASE("the predictor agrees with the simulation on a small case", "[report][planner]") {
  // GPT-2 124M on one node, every tp × pp × ZeRO stage that divides: 12 layouts, all simulated.
  const auto base = tiny();
  PlanSpace sp = narrow();
  sp.tp = {1, 2, 4};
  sp.pp = {1, 2};
  sp.zero = {0, 1};
  const auto res = ironlaw::report::plan(base, sp, PlanQuestion{}, 100, 2);
  REQUIRE(res.simulated == 12);
  // The predictor is a ranking device: it must order the layouts as the simulation does for
  // the most part, and find the best one.
  CHECK(res.agreement.top_choice);
  CHECK(res.agreement.kendall_tau > 0.5);
  CHECK(res.agreement.median_abs_error < 0.3);
}

TEST_CASE("layouts that differ only in ZeRO 1 and 2 share one step simulation, each with its own memory",
          "[report][planner]") {
  const auto base = tiny();
  PlanSpace sp = narrow();
  sp.tp = {2};
  sp.zero = {1, 2};
  const auto res = ironlaw::report::plan(base, sp, PlanQuestion{}, 2, 1);
  REQUIRE(res.simulated == 2);
  CHECK(res.step_simulations == 1);
  CHECK(res.shared == 1);
  // The oracle: each layout simulated on its own by the run layer.
  for (const auto& r : res.rows) {
    if (r.status != "ok") continue;
    INFO(r.layout());
    ironlaw::config::Scenario s = ironlaw::report::scenario_for(base, r);
    s.run.steps = 1;
    ironlaw::NullSink sink;
    const auto own = ironlaw::run::simulate(s, sink, ironlaw::run::TraceLevel::none);
    CHECK(r.step_time_s == own.step_time_s);
    CHECK(r.compute_s == own.compute_s);
    CHECK(r.exposed_comm_s == own.exposed_comm_s);
    CHECK(r.memory_bytes == own.memory_reserved);  // the figure simulate() compared with HBM
  }
  const auto z1 = std::find_if(res.rows.begin(), res.rows.end(), [](const PlanRow& r) { return r.zero == 1; });
  const auto z2 = std::find_if(res.rows.begin(), res.rows.end(), [](const PlanRow& r) { return r.zero == 2; });
  REQUIRE(z1 != res.rows.end());
  REQUIRE(z2 != res.rows.end());
  CHECK(z2->memory_bytes < z1->memory_bytes);  // ZeRO 2 also shards the gradients over dp 4

  // The step is simulated on the twin with the least memory (ZeRO 2): if either fits in the
  // simulation's own memory check, that one does, so no twin waits for a simulation of its own.
  std::vector<int> simulated_zero;
  const ironlaw::report::SimulateRows watch = [&](std::vector<PlanRow>& rows, const auto& one) {
    for (auto& r : rows) {
      simulated_zero.push_back(r.zero);
      one(r);
    }
    return true;
  };
  const auto watched = ironlaw::report::plan(base, sp, PlanQuestion{}, 2, 1, watch);
  CHECK(simulated_zero == std::vector<int>{2});
  CHECK(watched.shared == 1);
  REQUIRE(watched.rows.size() == res.rows.size());
  for (std::size_t i = 0; i < res.rows.size(); ++i) {
    CHECK(watched.rows[i].layout() == res.rows[i].layout());
    CHECK(watched.rows[i].step_time_s == res.rows[i].step_time_s);
    CHECK(watched.rows[i].memory_bytes == res.rows[i].memory_bytes);
  }
}

TEST_CASE("without a data pipeline every simulated step is the first, so the planner simulates one",
          "[report][planner]") {
  // What makes one step exact: no loader (data.storage_bandwidth_per_node 0), so nothing is
  // random and nothing is carried from one step to the next.
  auto s = tiny();
  REQUIRE(s.data.storage_bandwidth_per_node == 0);
  s.parallel.pp = 2;
  s.parallel.dp = 0;
  REQUIRE(ironlaw::config::recheck_scenario(s).empty());
  s.run.steps = 3;
  ironlaw::NullSink sink;
  const auto three = ironlaw::run::simulate(s, sink, ironlaw::run::TraceLevel::none);
  REQUIRE(three.steps.size() == 3);
  const auto first = three.steps[0].end_ns - three.steps[0].start_ns;
  for (const auto& st : three.steps) {
    CHECK(st.end_ns - st.start_ns == first);
    CHECK(st.bubble_s == three.steps[0].bubble_s);
    CHECK(st.exposed_comm_s == three.steps[0].exposed_comm_s);
  }
}

TEST_CASE("a plan whose simulations are spread elsewhere is the plan simulated here", "[report][planner]") {
  const auto base = tiny();
  PlanSpace sp = narrow();
  sp.tp = {1, 2, 4};
  sp.pp = {1, 2};
  sp.zero = {0, 1, 2};
  const auto here = ironlaw::report::plan(base, sp, PlanQuestion{}, 7, 1);
  // As cli/mpi does it: each row simulated by "another process" (last first), sent back as text.
  std::size_t calls = 0;
  const ironlaw::report::SimulateRows spread = [&](std::vector<PlanRow>& rows, const auto& one) {
    ++calls;
    for (std::size_t i = rows.size(); i-- > 0;) {
      PlanRow elsewhere = rows[i];
      one(elsewhere);
      ironlaw::report::decode_simulated(ironlaw::report::encode_simulated(elsewhere), rows[i]);
    }
    return true;
  };
  const auto there = ironlaw::report::plan(base, sp, PlanQuestion{}, 7, 1, spread);
  CHECK(calls == 1);
  REQUIRE(here.rows.size() == there.rows.size());
  CHECK(here.simulated == 7);
  CHECK(here.shared == there.shared);
  for (std::size_t i = 0; i < here.rows.size(); ++i) {
    INFO(i);
    CHECK(here.rows[i].layout() == there.rows[i].layout());
    CHECK(here.rows[i].status == there.rows[i].status);
    CHECK(here.rows[i].rank == there.rows[i].rank);
    CHECK(here.rows[i].step_time_s == there.rows[i].step_time_s);
    CHECK(here.rows[i].days == there.rows[i].days);
    CHECK(here.rows[i].memory_bytes == there.rows[i].memory_bytes);
  }
  // A process that does not gather returns an empty plan.
  const ironlaw::report::SimulateRows not_root = [](std::vector<PlanRow>&, const auto&) { return false; };
  CHECK(ironlaw::report::plan(base, sp, PlanQuestion{}, 7, 1, not_root).rows.empty());
}

TEST_CASE("a simulated row travels as text bit for bit and a damaged text is refused", "[report][planner]") {
  PlanRow r;
  r.status = "ok";
  r.step_time_s = 0.1 + 0.2;  // not a short decimal
  r.days = 1.0 / 3.0;
  r.mfu = std::nextafter(0.5, 1.0);
  r.memory_bytes = 7.5e10;
  r.meets = false;
  PlanRow back;
  ironlaw::report::decode_simulated(ironlaw::report::encode_simulated(r), back);
  CHECK(back.status == "ok");
  CHECK(back.step_time_s == r.step_time_s);
  CHECK(back.days == r.days);
  CHECK(back.mfu == r.mfu);
  CHECK(back.memory_bytes == r.memory_bytes);
  CHECK_FALSE(back.meets);
  const std::string text = ironlaw::report::encode_simulated(r);
  CHECK_THROWS_AS(ironlaw::report::decode_simulated(text.substr(0, text.size() - 3), back), std::runtime_error);
  CHECK_THROWS_AS(ironlaw::report::decode_simulated(text + "x", back), std::runtime_error);
  CHECK_THROWS_AS(ironlaw::report::decode_simulated("99999999999999999999999:ok", back), std::runtime_error);
}

TEST_CASE("plan decides its best candidates' memory as the simulation does, not by the per-term total",
          "[report][planner]") {
  // torchtitan's Llama 3.1 405B row (FSDP 8 x TP 8 x PP 8, 1F1B, full recompute, Float8): its
  // allocator replay reserves less than the per-term total of memory_per_gpu (which holds every
  // term at once on stage 0). On a device whose HBM lies between the two, the layout runs in the
  // simulation; the enumeration's total prunes it, and plan() must take it back.
  auto base = ironlaw::config::load_scenario(repo("scenarios/validation/tt-405b-512gpu-1f1b.yaml"),
                                             {"output.path=none", "parallel.async_tp=false"});
  const auto own = ironlaw::run::simulate_memory(base);
  REQUIRE(own.memory_reserved < own.memory.total());
  base.topology.device.hbm_bytes = (own.memory_reserved + own.memory.total()) / 2;
  PlanSpace sp = narrow();
  sp.gpus = {512};
  sp.tp = {8};
  sp.pp = {8};
  sp.zero = {3};
  sp.microbatch_size = {4};
  sp.recompute = {"full"};
  sp.precisions = {"fp8"};
  sp.sequence_parallel = {1};
  const auto rows = ironlaw::report::enumerate_layouts(base, sp);
  REQUIRE(rows.size() == 1);
  INFO(rows[0].status);
  CHECK(rows[0].status.starts_with("out of memory: "));  // by the total
  PlanQuestion q;
  // No step simulation: the rows the plan would simulate are left as they are.
  const auto skip = [](std::vector<PlanRow>&, const std::function<void(PlanRow&)>&) { return true; };
  const auto res = ironlaw::report::plan(base, sp, q, 1, 1, skip);
  CHECK(res.memory_replayed == 1);
  CHECK(res.memory_rescued == 1);
  CHECK(res.pruned_memory == 0);
  CHECK(res.survivors == 1);
  // Below the replay's figure it stays pruned, and its status now quotes the simulation's check.
  base.topology.device.hbm_bytes = own.memory_reserved * 0.99;
  const auto over = ironlaw::report::plan(base, sp, q, 1, 1, skip);
  CHECK(over.memory_replayed == 1);
  CHECK(over.memory_rescued == 0);
  CHECK(over.pruned_memory == 1);
  REQUIRE(over.rows.size() == 1);
  CHECK(over.rows[0].status.find("the simulation's check") != std::string::npos);
}

TEST_CASE("a row the loader accepts with its own values is not refused for the first value of an inner axis",
          "[report][planner]") {
  // AsyncTP fuses sequence parallelism's collectives, so the loader refuses it without sequence
  // parallelism (config/validate.cpp, which also wants torch.compile). A search over sequence parallelism {off, on} checks each
  // layout shape first with the axis's first value (off): the rows with it on must be judged
  // with their own value, and only the rows with it off refused for it.
  auto base = tiny();
  base.parallel.async_tp = true;
  base.training.framework = "compile";  // AsyncTP is an inductor pass
  PlanSpace sp = narrow();
  sp.tp = {2};
  sp.sequence_parallel = {0, 1};
  const auto rows = ironlaw::report::enumerate_layouts(base, sp);
  REQUIRE(rows.size() == 2);
  int off = 0, on = 0;
  for (const auto& r : rows) {
    INFO(r.layout() << ": " << r.status);
    if (r.sequence_parallel) {
      ++on;
      CHECK(r.status == "predicted");
      CHECK(r.dp == 4);  // 8 GPUs / tp 2
    } else {
      ++off;
      CHECK(r.status.starts_with("invalid: parallel.async_tp"));
    }
  }
  CHECK(off == 1);
  CHECK(on == 1);
}

TEST_CASE("a row chosen for simulation has passed the loader's checks with its own values", "[report][planner]") {
  // fp8 all-gathers need the fp8 recipe and ZeRO 3 (config/validate.cpp). Over precisions
  // {fp8, bf16} the layout shape is checked with fp8, the first: its bf16 row must still be
  // refused, before it could be chosen, by the check with its own precision.
  auto base = tiny();
  base.training.fp8_all_gather = true;
  PlanSpace sp = narrow();
  sp.tp = {2};
  sp.zero = {3};
  sp.precisions = {"fp8", "bf16"};
  const auto skip = [](std::vector<PlanRow>&, const std::function<void(PlanRow&)>&) { return true; };
  const auto res = ironlaw::report::plan(base, sp, PlanQuestion{}, 2, 1, skip);
  REQUIRE(res.rows.size() == 2);
  for (const auto& r : res.rows) {
    INFO(r.layout() << ": " << r.status);
    if (r.precision == "bf16") {
      CHECK(r.status.starts_with("invalid: training.fp8_all_gather"));
    } else {
      CHECK(r.status == "predicted");
    }
  }
  CHECK(res.pruned_invalid == 1);
  CHECK(res.survivors == 1);
}
