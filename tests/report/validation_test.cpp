// The megatron-2021 validation case: Narayanan et al. (SC'21) Table 1 against the simulated
// step of the same configuration, in the paper's FLOP convention.
//
// Aim: every row within 10 % of the published TFLOP/s per GPU. Where the model stood when this
// test was written (predicted vs published TFLOP/s per GPU, symmetric detail, 1 step, A100 HBM
// 1.80 TB/s measured):
//   row 1 (1.7B,  TP1 PP1,   32 GPUs) 182.9 vs 137 → +33.5 %
//   row 2 (3.6B,  TP2 PP1,   64 GPUs) 181.3 vs 138 → +31.3 %
//   row 3 (7.5B,  TP4 PP1,  128 GPUs) 184.4 vs 142 → +29.9 %
//   row 4 (18.4B, TP8 PP1,  256 GPUs) 172.9 vs 135 → +28.1 %
//   rows 5–10: not simulated to the end (minutes to hours each; reported to the lead).
// Every simulated row over-predicts by about a third, far outside the aim, so no error bound is
// asserted here: a 25 % bound would fail and loosening it to 35 % would enshrine the miss. The
// test asserts what must hold whatever the model: the case runs, every simulated row gives a
// finite positive prediction, the published figures are the paper's, and the prediction is the
// paper's FLOP formula over the simulated step time. Rows 1–2 only (≈4 s); row 3 takes ≈12 s
// and row 4 minutes, because of the data-parallel all-reduce flows.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/records.hpp"
#include "report/validation.hpp"
#include "run/layout.hpp"
#include "run/simulation.hpp"

using namespace ironlaw;
namespace fs = std::filesystem;

namespace {

const std::string kRepo = IRONLAW_SOURCE_DIR;
const std::vector<std::string> kRowFiles{"01-gpt-1.7b", "02-gpt-3.6b", "03-gpt-7.5b", "04-gpt-18b",
                                         "05-gpt-39b",  "06-gpt-76b",  "07-gpt-145b", "08-gpt-310b",
                                         "09-gpt-530b", "10-gpt-1t"};

/// A data directory holding the topologies and only the named rows' scenarios: the case runs
/// the rows whose scenario file exists, so the slow large rows are left out here.
fs::path subset_data_dir(const std::vector<std::string>& rows) {
  const fs::path dir = fs::temp_directory_path() / "ironlaw_validation_megatron_subset";
  fs::remove_all(dir);
  fs::create_directories(dir / "scenarios" / "megatron-2021");
  fs::create_directory_symlink(fs::path(kRepo) / "topologies", dir / "topologies");
  for (const auto& r : rows) {
    fs::copy_file(fs::path(kRepo) / "scenarios" / "megatron-2021" / (r + ".yaml"),
                  dir / "scenarios" / "megatron-2021" / (r + ".yaml"));
  }
  return dir;
}

/// Megatron's model FLOPs per token of Qwen3 30B-A3B (the nemo-h100 and mbridge-cards rows'
/// TFLOP/s columns): 48 layers of hidden 2,048, 32 query heads of 128 (a·d/h = 2), 4 groups, 8
/// routed experts of 768 per token, vocabulary 151,936, sequence 4,096 (s/h = 2):
/// 12·48·2048²·((1 + 4/32 + 1)·2 + 768/2048·8·1.5 + 151936/(2·48·2048)) = 2.4159e9 · 9.5228 =
/// 23.006 GFLOP per token.
constexpr double kQwen3_30bFlopsPerToken =
    12.0 * 48 * 2048 * 2048 *
    ((1 + 4.0 / 32 + 4096.0 / 2048 * 0.5) * 2 + 768.0 / 2048 * 8 * 1.5 + 151936.0 / (2 * 48 * 2048));

}  // namespace

TEST_CASE("the megatron-2021 FLOP convention reproduced by hand for row 1", "[validation][megatron]") {
  // Narayanan et al. SC'21 §5.1: FLOPs per iteration = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)).
  // Row 1: B = 512 sequences, s = 2,048, l = 24, h = 2,304, V = 51,200.
  //   96 · 512 · 2,048 · 24 = 2,415,919,104;  h² = 5,308,416
  //   2,415,919,104 · 5,308,416 = 12,824,703,626,379,264
  //   s/(6h) = 2,048 / 13,824 = 4/27 = 64/432;  V/(16·l·h) = 51,200 / 884,736 = 25/432
  //   1 + 64/432 + 25/432 = 521/432
  //   12,824,703,626,379,264 · 521 / 432 = 15,466,830,067,924,992 FLOPs per iteration.
  const double head = 96.0 * 512 * 2048 * 24 * 2304.0 * 2304.0;
  CHECK(head == 12824703626379264.0);
  const double factor = 1.0 + 2048.0 / (6 * 2304) + 51200.0 / (16.0 * 24 * 2304);
  CHECK(factor == Approx(521.0 / 432.0).epsilon(1e-15));
  CHECK(head * factor == Approx(15466830067924992.0).epsilon(1e-15));
  // The published 137 TFLOP/s per GPU on 32 GPUs therefore means a step of
  // 15,466,830,067,924,992 / (137e12 · 32) = 3.528 s.
  CHECK(15466830067924992.0 / (137e12 * 32) == Approx(3.528).epsilon(1e-3));
}

TEST_CASE("every megatron-2021 scenario is its Table 1 row and resolves", "[validation][megatron]") {
  // Cheap: loading and layout only, no simulation. Microbatches per step from
  // examples/sc21/run_table_1.sh: batch / dp / micro batch.
  const std::vector<int> microbatches{1, 1, 1, 4, 12, 28, 48, 144, 280, 512};
  const std::vector<int> virtual_stages{1, 1, 1, 1, 1, 3, 2, 2, 3, 1};
  for (std::size_t i = 0; i < kRowFiles.size(); ++i) {
    INFO(kRowFiles[i]);
    const auto s = config::load_scenario(kRepo + "/scenarios/megatron-2021/" + kRowFiles[i] + ".yaml");
    const auto lay = run::resolve_layout(s);
    CHECK(lay.microbatches == microbatches[i]);
    CHECK(lay.virtual_stages == virtual_stages[i]);
    CHECK(s.parallel.zero == 0);
    CHECK(s.training.activation_checkpointing == "full");
    CHECK_FALSE(s.training.flash_attention);
  }
}

TEST_CASE("the megatron-2021 case predicts every fast row and uses the paper's formula", "[validation][megatron]") {
  const auto dir = subset_data_dir({"01-gpt-1.7b", "02-gpt-3.6b"});
  const auto c = report::run_validation("megatron-2021", dir.string());
  fs::remove_all(dir);
  REQUIRE(c.rows.size() == 10);
  const std::vector<double> published{137, 138, 142, 135, 138, 140, 148, 155, 163, 163};
  for (std::size_t i = 0; i < c.rows.size(); ++i) {
    INFO(c.rows[i].label);
    CHECK(c.rows[i].published == published[i]);
    CHECK(c.rows[i].unit == "TFLOP/s");
    if (i < 2) {
      CHECK(std::isfinite(c.rows[i].predicted));
      CHECK(c.rows[i].predicted > 0);
    } else {
      // Left out of the subset: no prediction, and the label says why.
      CHECK(std::isnan(c.rows[i].predicted));
      CHECK(c.rows[i].label.find("no scenario") != std::string::npos);
    }
  }

  // Megatron's FLOP count includes the recomputed forward, so no row can beat the A100's dense
  // fp16 peak of 312 TFLOP/s (NVIDIA A100 datasheet) — a prediction above it means the step is
  // too short for its work — nor fall below half the published figure without a visible miss.
  for (std::size_t i = 0; i < 2; ++i) {
    INFO(c.rows[i].label);
    CHECK(c.rows[i].predicted < 312.0);
    CHECK(c.rows[i].predicted > 0.5 * c.rows[i].published);
  }
}

TEST_CASE("megatron-2021 is a known validation case", "[validation][megatron]") {
  const auto names = report::validation_case_names();
  CHECK(std::find(names.begin(), names.end(), "megatron-2021") != names.end());
  CHECK(std::find(names.begin(), names.end(), "seed003") != names.end());
  CHECK(std::find(names.begin(), names.end(), "nccl-h100") != names.end());
  CHECK(std::find(names.begin(), names.end(), "torchtitan") != names.end());
  CHECK(std::find(names.begin(), names.end(), "korthikanti-2022") != names.end());
  CHECK(std::find(names.begin(), names.end(), "mt-nlg") != names.end());
}

TEST_CASE("a validation scenario that drifted from its published row is refused before it is simulated", "[validation]") {
  // BLOOM's logged run has 70 layers: a file with 71 would validate something else.
  const fs::path dir = fs::temp_directory_path() / ("ironlaw-drift-" + std::to_string(::getpid()));
  fs::create_directories(dir / "scenarios" / "validation" / "bloom");
  fs::create_directory_symlink(fs::path(kRepo) / "topologies", dir / "topologies");
  std::ifstream in(fs::path(kRepo) / "scenarios/validation/bloom/bloom-176b-384gpu.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = text.find("  layers: 70\n");
  REQUIRE(at != std::string::npos);
  text.replace(at, std::string("  layers: 70\n").size(), "  layers: 71\n");
  std::ofstream(dir / "scenarios/validation/bloom/bloom-176b-384gpu.yaml") << text;
  try {
    report::run_validation("bigscience", dir.string());
    FAIL("a drifted scenario was validated");
  } catch (const std::logic_error& e) {
    CHECK(std::string(e.what()).find("does not match BigScience's tr11-176B-ml run") != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("the mt-nlg case gives MT-NLG's three published iteration times as durations", "[validation]") {
  // Smith et al. 2022 section 2.4: 60.1 / 50.2 / 44.4 s on 280 / 350 / 420 DGX A100 servers. A data
  // directory without the scenarios keeps the test cheap: each row is then "(no scenario)".
  const fs::path dir = fs::temp_directory_path() / ("ironlaw-mtnlg-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto c = report::run_validation("mt-nlg", dir.string());
  fs::remove_all(dir);
  REQUIRE(c.rows.size() == 3);
  const std::vector<double> published{60.1, 50.2, 44.4};
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(c.rows[i].published == published[i]);
    CHECK(c.rows[i].duration);
    CHECK(c.rows[i].unit == "s");
    CHECK(std::isnan(c.rows[i].predicted));
  }
  // With the shipped scenarios, each names its row's layout (the plan checks the file against it).
  const auto plan = report::plan_validation("mt-nlg", kRepo);
  REQUIRE(plan.jobs.size() == 3);
  CHECK(plan.jobs[2].label == "530b-420nodes");
}

TEST_CASE("the olmo-core case takes OLMo-core's throughput table", "[validation]") {
  // allenai/OLMo-core README.md at e27ba7455: 8 rows, tokens/s per device. Without the
  // scenarios every row is "(no scenario)".
  const fs::path dir = fs::temp_directory_path() / ("ironlaw-olmo-core-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto c = report::run_validation("olmo-core", dir.string());
  fs::remove_all(dir);
  REQUIRE(c.rows.size() == 8);
  const std::vector<double> published{55000, 65000, 10000, 13000, 9500, 12500, 4600, 5500};
  for (std::size_t i = 0; i < published.size(); ++i) {
    INFO(c.rows[i].label);
    CHECK(c.rows[i].published == published[i]);
    CHECK(c.rows[i].unit == "tok/s/GPU");
    CHECK(std::isnan(c.rows[i].predicted));
  }
  // The scripts' settings at that commit, by hand: rank_microbatch_size / 4,096 sequences per
  // microbatch (1B 8, 7B and 8B 2, 13B 1), global batch 1,024 x 4,096 tokens (13B 2,048 x 4,096)
  // on one 8-GPU node: 16, 64, 64 and 256 microbatches per rank; the dolma2 vocabulary 100,278
  // padded to a multiple of 128: 100,352.
  CHECK(128 * ((100278 + 127) / 128) == 100352);
  struct Row { const char* file; int microbatch, accumulation; };
  for (const Row& row : {Row{"olmo-1b-bf16", 8, 16}, Row{"olmo-7b-fp8", 2, 64}, Row{"llama-8b-bf16", 2, 64},
                         Row{"olmo-13b-fp8", 1, 256}}) {
    INFO(row.file);
    const auto s = config::load_scenario(kRepo + "/scenarios/validation/olmo-core/" + row.file + ".yaml", {"run.steps=1"});
    CHECK(s.gpus() == 8);
    CHECK(s.parallel.microbatch_size == row.microbatch);
    CHECK(s.training.global_batch_tokens / (8.0 * row.microbatch * 4096) == row.accumulation);
    CHECK(s.model.vocab == 100352);
    CHECK(s.training.framework == "compile");
    CHECK(s.training.compile_loss);
  }
  // OLMo 2's query/key norms over the whole projections; Llama 8B has none.
  CHECK(config::load_scenario(kRepo + "/scenarios/validation/olmo-core/olmo-7b-bf16.yaml", {}).model.qk_norm == "full");
  CHECK(config::load_scenario(kRepo + "/scenarios/validation/olmo-core/llama-8b-bf16.yaml", {}).model.qk_norm == "none");
}

TEST_CASE("the torchao-float8 case takes torchao's H100 float8 training table", "[validation]") {
  // pytorch/ao torchao/float8/README.md at 8c81863ba: 3 rows (bf16, tensorwise, rowwise), median
  // tokens/s and peak memory [GiB] each. Without the scenarios every row is "(no scenario)".
  const fs::path dir = fs::temp_directory_path() / ("ironlaw-torchao-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto c = report::run_validation("torchao-float8", dir.string());
  fs::remove_all(dir);
  REQUIRE(c.rows.size() == 6);
  const std::vector<double> published{6150, 47.65, 7689.5, 47.77, 6768, 47.79};
  for (std::size_t i = 0; i < published.size(); ++i) {
    INFO(c.rows[i].label);
    CHECK(c.rows[i].published == published[i]);
    CHECK(c.rows[i].unit == (i % 2 == 0 ? "tok/s/GPU" : "GiB"));
    CHECK(std::isnan(c.rows[i].predicted));
  }
  CHECK(c.rows[4].label.find("rowwise tokens/s (no scenario)") != std::string::npos);
  // The launcher's settings by hand: batch 1 of 8,192 tokens on each of the 8 GPUs, one microbatch,
  // FSDP (ZeRO 3), per-op SAC, compile; Float8 with the fp8 all-gather only in the tensorwise row,
  // the rowwise row's recipe rowwise.
  for (const std::string file : {"8b-8gpu-compile-bf16", "8b-8gpu-compile-fp8-tensorwise", "8b-8gpu-compile-fp8-rowwise"}) {
    INFO(file);
    const auto s = config::load_scenario(kRepo + "/scenarios/validation/torchao/" + file + ".yaml", {"run.steps=1"});
    CHECK(s.gpus() == 8);
    CHECK(s.parallel.microbatch_size == 1);
    CHECK(s.training.global_batch_tokens == 8.0 * 8192);
    CHECK(s.parallel.zero == 3);
    CHECK(s.training.activation_checkpointing == "op");
    CHECK(s.training.framework == "compile");
    CHECK(s.training.fp8_all_gather == (file == "8b-8gpu-compile-fp8-tensorwise"));
    CHECK(s.training.fp8_recipe == (file == "8b-8gpu-compile-fp8-rowwise" ? "rowwise" : "current"));
  }
}

TEST_CASE("the megatron-2024 case takes the Megatron-LM README's H100 model table", "[validation]") {
  // NVIDIA/Megatron-LM README.md at f2e5db402c, images/model_table.png: 9 rows, teraFLOP/s per
  // GPU. Without the scenarios every row is "(no scenario)".
  const fs::path dir = fs::temp_directory_path() / ("ironlaw-megatron-2024-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto c = report::run_validation("megatron-2024", dir.string());
  fs::remove_all(dir);
  REQUIRE(c.rows.size() == 9);
  const std::vector<double> published{408.8, 465.9, 489.1, 459.6, 419.7, 420.5, 432.8, 474.4, 459.9};
  for (std::size_t i = 0; i < published.size(); ++i) {
    INFO(c.rows[i].label);
    CHECK(c.rows[i].published == published[i]);
    CHECK(c.rows[i].unit == "TFLOP/s");
    CHECK(std::isnan(c.rows[i].predicted));
  }
  // The shipped scenarios: the table's parameter counts need untied embeddings (by hand, 12·L·h²
  // + 2·V·h for the 1.7B: 12·24·2048² + 2·131072·2048 = 1.745e9, "1.7B"; tied, 1.476e9), and
  // Megatron's count of one 1.7B iteration, 12·B·s·L·h²·(2 + s/h + 4 + V/(2Lh)) with B 192,
  // s 4,096, L 24, h 2,048, V 131,072: 9.50e14 · (6 + 2 + 4/3) = 8.866e15 FLOP, so the table's
  // 408.8 TFLOP/s on 48 GPUs is a 0.4518 s iteration.
  const auto s = config::load_scenario(kRepo + "/scenarios/validation/megatron-2024/gpt-1.7b-48gpu.yaml", {"run.steps=1"});
  CHECK_FALSE(s.model.tied_embeddings);
  CHECK(s.model.vocab == 131072);
  CHECK(s.gpus() == 48);
  CHECK(s.training.global_batch_tokens / s.training.sequence_length == 192);
  CHECK(s.training.reduce_dtype == "fp32");  // --bf16 forces fp32 gradient reduction (arguments.py)
  CHECK(12.0 * 24 * 2048 * 2048 + 2.0 * 131072 * 2048 == Approx(1.745e9).epsilon(1e-3));
  CHECK(report::megatron_core_iteration_flops(s, 192) == Approx(8.866e15).epsilon(1e-3));
  CHECK(report::megatron_core_iteration_flops(s, 192) / (408.8e12 * 48) == Approx(0.4518).epsilon(1e-3));
  // The same count with grouped keys/values and a gated MLP (Llama 3 8B's shape, TP 1): by hand
  // 12·1·8192·32·4096²·((1 + 8/32 + 2)·1 + 3.5·1.5 + 128256/(2·32·4096)) = 5.2777e13 · 8.9893
  // = 4.7443e14 (the vocabulary, 128,256, already a multiple of 128).
  const auto l = config::load_scenario(kRepo + "/scenarios/validation/nemo/llama3-8b-8gpu-fp8cs.yaml", {"run.steps=1"});
  REQUIRE(l.model.kv_heads == 8);
  CHECK(report::megatron_core_iteration_flops(l, 1) == Approx(4.7443e14).epsilon(1e-3));
}

TEST_CASE("the megatron-moe case counts Mixtral 8x7B's routed experts as Megatron-core does", "[validation]") {
  // megatron/core/transformer/moe/README.md: 438 TFLOPS (MCore v0.8) and 468 (v0.9) for Mixtral
  // 8x7B. Without the scenario both rows are "(no scenario)".
  const fs::path dir = fs::temp_directory_path() / ("ironlaw-megatron-moe-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto c = report::run_validation("megatron-moe", dir.string());
  fs::remove_all(dir);
  REQUIRE(c.rows.size() == 2);
  CHECK(c.rows[0].published == 438);
  CHECK(c.rows[1].published == 468);
  for (const auto& row : c.rows) {
    INFO(row.label);
    CHECK(row.unit == "TFLOP/s");
    CHECK(std::isnan(row.predicted));
  }
  // Megatron-core's count (num_floating_point_operations, core_v0.8.0 and core_v0.9.0) of one
  // iteration, by hand: 12·B·s·L·h²·((1 + g/a + s/h)·(a·d/h) + (f/h)·k·3/2 + V/(2·L·h)) with B 256,
  // s 4,096, L 32, h 4,096, a 32 of d 128, g 8, f 14,336, k 2 routed experts, V 32,000 (a multiple of
  // 128): 6.7554e15 · (2.25 + 10.5 + 0.12207) = 8.6956e16 FLOP. The dense count (k = 1) would be
  // 6.7554e15 · (2.25 + 5.25 + 0.12207) = 5.1490e16: the experts a token visits are counted, not
  // the 8 it could.
  const auto s = config::load_scenario(kRepo + "/scenarios/validation/megatron-moe/mixtral-8x7b-64gpu.yaml", {"run.steps=1"});
  REQUIRE(s.model.experts == 8);
  REQUIRE(s.model.experts_per_token == 2);
  CHECK(s.gpus() == 64);
  CHECK(s.training.global_batch_tokens / s.training.sequence_length == 256);
  CHECK(report::megatron_core_iteration_flops(s, 256) == Approx(8.6956e16).epsilon(1e-4));
  config::Scenario dense = s;
  dense.model.experts = 1;
  CHECK(report::megatron_core_iteration_flops(dense, 256) == Approx(5.1490e16).epsilon(1e-4));
}

TEST_CASE("the llama1 case gives the first LLaMA's throughputs as tokens/s per GPU", "[validation]") {
  // Touvron et al. 2023: §2.4 gives 380 tokens/s/GPU for 65B; the carbon table's GPU-hours over
  // Table 2's tokens give the others: 1.4e12 / (530,432 h × 3,600 s) = 733.2 (33B),
  // 1.0e12 / (135,168 × 3,600) = 2,055.1 (13B), 1.0e12 / (82,432 × 3,600) = 3,369.8 (7B). The 65B's
  // own GPU-hours, 1,022,362, give 380.4: the §2.4 figure. Without the scenarios every row is
  // "(no scenario)".
  const fs::path dir = fs::temp_directory_path() / ("ironlaw-llama1-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto c = report::run_validation("llama1", dir.string());
  fs::remove_all(dir);
  REQUIRE(c.rows.size() == 4);
  const std::vector<double> published{380.0, 733.2, 2055.1, 3369.8};
  for (std::size_t i = 0; i < 4; ++i) {
    INFO(c.rows[i].label);
    CHECK(c.rows[i].published == Approx(published[i]).epsilon(1e-4));
    CHECK(c.rows[i].unit == "tok/s/GPU");
    CHECK_FALSE(c.rows[i].duration);
    CHECK(std::isnan(c.rows[i].predicted));
  }
  CHECK(1.4e12 / (1022362 * 3600.0) == Approx(380.0).epsilon(2e-3));
  // The shipped scenarios hold their rows' layouts: 2,048 GPUs, TP 1/2/4/8, 4M-token batches.
  const auto plan = report::plan_validation("llama1", kRepo);
  REQUIRE(plan.jobs.size() == 4);
  for (const auto* size : {"7b", "13b", "33b", "65b"}) {
    const auto s = config::load_scenario(kRepo + "/scenarios/validation/llama1/llama1-" + size + "-2048gpu.yaml",
                                         {"run.steps=1"});
    INFO(size);
    CHECK(s.gpus() == 2048);
    CHECK(s.training.global_batch_tokens == 2048.0 * 2048);
    CHECK(s.parallel.tp * s.parallel.dp == 2048);
  }
}

TEST_CASE("the nemo-h100-2407 case takes the NeMo 24.07 pre-training rows", "[validation]") {
  // the NeMo 24.07 container's performance table (FP8): its 12 pre-training rows (the three Nemotron rows since
  // model.activation squared_relu). Each published rate against the table's model TFLOP/s: the
  // tokens/s × 6·N per token must stay below it (the table adds attention FLOPs), e.g. GPT-3 175B
  // on 128 GPUs 716 × 6 × 174.6e9 = 750 TFLOP/s < 771.
  const fs::path dir = fs::temp_directory_path() / ("ironlaw-nemo2407-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto c = report::run_validation("nemo-h100-2407", dir.string());
  fs::remove_all(dir);
  REQUIRE(c.rows.size() == 12);
  const std::vector<double> published{23406, 5851, 716, 825, 16934, 8715, 1728, 12273, 1524, 12507, 4312, 326};
  for (std::size_t i = 0; i < published.size(); ++i) {
    INFO(c.rows[i].label);
    CHECK(c.rows[i].published == published[i]);
    CHECK(std::isnan(c.rows[i].predicted));
  }
  CHECK(716 * 6 * 174.6e9 / 1e12 < 771);
  // The 512-GPU GPT-3 row is the layout NeMo 25.02 measured at 866, run with the 24.07 launcher's
  // settings (its own scenario): the same GPUs, layout and batch as the 25.02 row's, not its code.
  const auto plan = report::plan_validation("nemo-h100-2407", kRepo);
  REQUIRE(plan.jobs.size() == 12);
  CHECK(plan.jobs[3].label == "2407-gpt3-175b-512gpu");
  const auto earlier = report::plan_validation("nemo-h100", kRepo);
  CHECK(std::any_of(earlier.jobs.begin(), earlier.jobs.end(), [](const auto& j) { return j.label == "gpt3-175b-512gpu-fp8"; }));
  const std::string nemo = kRepo + "/scenarios/validation/nemo/";
  const auto s2407 = config::load_scenario(nemo + "2407-gpt3-175b-512gpu.yaml", {"run.steps=1"});
  const auto s2502 = config::load_scenario(nemo + "gpt3-175b-512gpu-fp8.yaml", {"run.steps=1"});
  CHECK(s2407.gpus() == s2502.gpus());
  CHECK(s2407.parallel.virtual_stages == s2502.parallel.virtual_stages);
  CHECK(s2407.parallel.microbatch_size == s2502.parallel.microbatch_size);
  CHECK(s2407.training.global_batch_tokens == s2502.training.global_batch_tokens);
  // The 24.07 launcher (NVIDIA/NeMo-Framework-Launcher at tag 24.07): no fp8_params, gpt3/175b.yaml's
  // ub_tp_comm_overlap False and dropout 0.1, the fp8 example's grad_sync_dtype bf16.
  CHECK_FALSE(s2407.training.fp8_all_gather);
  CHECK_FALSE(s2407.parallel.tp_comm_overlap);
  CHECK(s2407.model.hidden_dropout == 0.1);
  CHECK(s2407.training.reduce_dtype == "bf16");
  // Nemotron-4 340B as its 24.07 config trains it: bf16 optimizer state, bf16 gradient reduction,
  // selective recompute.
  const auto n340 = config::load_scenario(nemo + "2407-nemotron-340b-128gpu.yaml", {"run.steps=1"});
  CHECK(n340.training.optimizer_dtype == "bf16");
  CHECK(n340.training.reduce_dtype == "bf16");
  CHECK(n340.training.activation_checkpointing == "selective");
}

TEST_CASE("the summary gives the median and maximum |error| of the measured rows", "[validation]") {
  // Measured rows +10 %, −20 %, +5 % and one not simulated (NaN); an arithmetic case at +50 %
  // is left out. |errors| sorted 5, 10, 20 → median 10 %, max 20 %; two too fast, one too slow.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  report::ValidationCase measured{"m", "", {{"a", 100, 110, "", ""}, {"b", 100, 80, "", ""},
                                            {"c", 100, 105, "", ""}, {"d", 100, nan, "", ""}}, true};
  report::ValidationCase arithmetic{"x", "", {{"e", 100, 150, "", ""}}, false};
  const auto s = report::summarize({measured, arithmetic});
  CHECK(s.rows == 3);
  CHECK(s.median_abs_error == Approx(0.10));
  CHECK(s.max_abs_error == Approx(0.20));
  CHECK(s.positive == 2);
  CHECK(s.negative == 1);
  // The row without a prediction is counted apart; none is beyond the 20 % bound (−20 % is on it).
  CHECK(s.without_prediction == 1);
  CHECK(s.beyond_speed_bound == 0);
  CHECK(s.beyond_memory_bound == 0);
  // An even count takes the mean of the middle two.
  measured.rows.push_back({"f", 100, 70, "", ""});  // 5, 10, 20, 30 → 15 %
  CHECK(report::summarize({measured}).median_abs_error == Approx(0.15));
  CHECK(report::summarize({measured}).beyond_speed_bound == 1);  // the −30 % row
}

TEST_CASE("a duration row predicted below its published figure counts as too fast", "[validation]") {
  // An iteration time of 0.9 s against a published 1.0 s is a step 10 % too short: error −10 %,
  // counted with the rates that are too high (too fast), not with the ones too low.
  report::ValidationRow time{"t", 1.0, 0.9, "s", "", true};
  report::ValidationRow rate{"r", 100, 90, "TFLOP/s", ""};
  CHECK(time.error() == Approx(-0.10));
  const auto s = report::summarize({{"m", "", {time, rate}, true}});
  CHECK(s.rows == 2);
  CHECK(s.positive == 1);  // the short iteration time
  CHECK(s.negative == 1);  // the low rate
}

TEST_CASE("a memory row counts as over or under its published peak, never as fast or slow", "[validation]") {
  // 66 GiB against a published 82.5 GiB is −20 %: in the median and maximum with the speed
  // rows, counted as under, and neither too fast nor too slow; 90 against 80 is over.
  report::ValidationRow low{"m1", 82.5, 66.0, "GiB", "", false, true};
  report::ValidationRow high{"m2", 80.0, 90.0, "GiB", "", false, true};
  report::ValidationRow rate{"r", 100, 110, "tok/s/GPU", ""};
  const auto s = report::summarize({{"m", "", {low, high, rate}, true}});
  CHECK(s.rows == 3);
  CHECK(s.max_abs_error == Approx(0.20));
  CHECK(s.median_abs_error == Approx(0.125));  // 0.10, 0.125, 0.20
  CHECK(s.positive == 1);
  CHECK(s.negative == 0);
  CHECK(s.memory_under == 1);
  CHECK(s.memory_over == 1);
  // Memory rows are held to 10 %: both are beyond it (−20 %, +12.5 %); the +10 % rate row is
  // within its 20 %.
  CHECK(s.beyond_memory_bound == 2);
  CHECK(s.beyond_speed_bound == 0);
}

TEST_CASE("the torchtitan case marks its memory rows as memory", "[validation]") {
  const auto plan = report::plan_validation("torchtitan", kRepo);
  REQUIRE_FALSE(plan.jobs.empty());
  // Planning is cheap; the rows' kinds are fixed by the job that builds them, so the first
  // (smallest, 8 GPUs) job is run: a tokens/s row, then a memory row.
  const auto rows = plan.jobs.front().run();
  REQUIRE(rows.size() == 2);
  CHECK_FALSE(rows[0].memory);
  CHECK(rows[1].memory);
  CHECK(rows[1].unit == "GiB");
}

TEST_CASE("the torchtitan-2025 case runs each AsyncTP-page scenario twice", "[validation]") {
  const auto plan = report::plan_validation("torchtitan-2025", kRepo);
  // The AsyncTP page: 2 models × 3 quantizations (bf16, Float8 tensorwise and rowwise), each file
  // with a vanilla-TP and an AsyncTP job; the H200 page: 2 rows.
  REQUIRE(plan.jobs.size() == 6 * 2 + 2);
  std::vector<report::ValidationRow> tp, async;
  for (const auto& job : plan.jobs) {
    if (job.label == "8b-64gpu-tp-bf16 TP") tp = job.run();
    if (job.label == "8b-64gpu-tp-bf16 AsyncTP") async = job.run();
  }
  REQUIRE(tp.size() == 1);
  REQUIRE(async.size() == 1);
  CHECK(tp[0].published == 4378);
  CHECK(async[0].published == Approx(4809.4));
  // The same file with parallel.async_tp=true: AsyncTP hides TP collectives that vanilla TP
  // waits for, so it is faster (the page measures 1.10×), and no more than the collectives'
  // share could give (the 8B TP 8 step of 12 × 8,192 tokens spends about a quarter of its time in
  // exposed TP collectives on NVLink: well under 2×).
  CHECK(async[0].predicted > tp[0].predicted);
  CHECK(async[0].predicted < 2 * tp[0].predicted);
}

namespace {
const std::vector<std::string> kKorthikantiFiles{"01-gpt-22b-full",      "02-gpt-22b-selective", "03-gpt-175b-full",
                                                 "04-gpt-175b-selective", "05-gpt-530b-full",     "06-gpt-530b-selective",
                                                 "07-gpt-1t-full",        "08-gpt-1t-selective"};
}  // namespace

TEST_CASE("the korthikanti-2022 selective rows' iteration times are Megatron-LM's published MFU", "[validation][korthikanti]") {
  // Two sources, checked against each other by hand: the iteration times of the selective +
  // sequence-parallel rows (1.10, 13.75, 37.83, 71.49 s; calculon-ai/calculon's transcription of
  // arXiv:2205.05198) and the MFU that NVIDIA/Megatron-LM's README (commit 841f789f, May 2022)
  // publishes for the same runs (41.5, 51.4, 56.0, 56.3 %). Model FLOPs per iteration without
  // recompute (the paper's §6 convention): 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)), V = 51,200,
  // s = 2,048, over (time · GPUs · 312 TFLOP/s, the A100's dense fp16 peak).
  //   22B: 72·4·2048·48·6144² = 1.068725e15; factor 1 + 0.055556 + 0.014468 = 1.070023
  //        → 1.143561e15 / (1.10 · 8 · 312e12) = 41.65 % (published 41.5: 1.10 s is rounded)
  //   175B: 72·64·2048·96·12288² = 1.367968e17 · 1.031395 = 1.410915e17 / (13.75·64·312e12) = 51.39 %
  struct Row {
    int batch, layers, hidden, gpus;
    double seconds, mfu;
  };
  for (const Row& r : {Row{4, 48, 6144, 8, 1.10, 41.5}, Row{64, 96, 12288, 64, 13.75, 51.4},
                       Row{280, 105, 20480, 280, 37.83, 56.0}, Row{512, 128, 25600, 512, 71.49, 56.3}}) {
    INFO(r.layers);
    const double h = r.hidden, l = r.layers, s = 2048, v = 51200;
    const double flops = 72.0 * r.batch * s * l * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * l * h));
    CHECK(100.0 * flops / (r.seconds * r.gpus * 312e12) == Approx(r.mfu).margin(0.2));
  }
}

TEST_CASE("every korthikanti-2022 scenario is its row and resolves", "[validation][korthikanti]") {
  // Cheap: loading and layout only. Data parallel 1 everywhere ("measured using a data
  // parallel size of one"), so microbatches = global batch / micro batch: 4/4, 64, 280, 512.
  const std::vector<int> microbatches{1, 1, 64, 64, 280, 280, 512, 512};
  const std::vector<int> virtual_stages{1, 1, 3, 3, 3, 3, 1, 1};
  for (std::size_t i = 0; i < kKorthikantiFiles.size(); ++i) {
    INFO(kKorthikantiFiles[i]);
    const auto s = config::load_scenario(kRepo + "/scenarios/validation/korthikanti-2022/" + kKorthikantiFiles[i] + ".yaml");
    const auto lay = run::resolve_layout(s);
    CHECK(lay.dp == 1);
    CHECK(lay.tp == 8);
    CHECK(lay.microbatches == microbatches[i]);
    CHECK(lay.virtual_stages == virtual_stages[i]);
    const bool selective = i % 2 == 1;
    CHECK(s.parallel.sequence_parallel == selective);
    CHECK(s.training.activation_checkpointing == (selective ? "selective" : "full"));
    CHECK_FALSE(s.training.flash_attention);
  }
}

TEST_CASE("the korthikanti-2022 case gives iteration times as durations", "[validation][korthikanti]") {
  // The two 22B rows (one node each) run; the others are left out of the data directory.
  const fs::path dir = fs::temp_directory_path() / "ironlaw_validation_korthikanti_subset";
  fs::remove_all(dir);
  fs::create_directories(dir / "scenarios" / "validation" / "korthikanti-2022");
  fs::create_directory_symlink(fs::path(kRepo) / "topologies", dir / "topologies");
  for (const char* f : {"01-gpt-22b-full", "02-gpt-22b-selective"}) {
    fs::copy_file(fs::path(kRepo) / "scenarios/validation/korthikanti-2022" / (std::string(f) + ".yaml"),
                  dir / "scenarios/validation/korthikanti-2022" / (std::string(f) + ".yaml"));
  }
  const auto c = report::run_validation("korthikanti-2022", dir.string());
  fs::remove_all(dir);
  REQUIRE(c.rows.size() == 8);
  const std::vector<double> published{1.42, 1.10, 18.13, 13.75, 49.05, 37.83, 94.42, 71.49};
  for (std::size_t i = 0; i < c.rows.size(); ++i) {
    INFO(c.rows[i].label);
    CHECK(c.rows[i].published == published[i]);
    CHECK(c.rows[i].unit == "s");
    CHECK(c.rows[i].duration);
    if (i < 2) {
      // Not fitted, so no error bound; but a step cannot beat the work at the A100's peak: the
      // 22B iteration's model FLOPs (1.1436e15, above) over 8 GPUs at 312 TFLOP/s take 0.458 s.
      CHECK(c.rows[i].predicted > 0.458);
      CHECK(c.rows[i].predicted < 2.0 * c.rows[i].published);
    } else {
      CHECK(std::isnan(c.rows[i].predicted));
      CHECK(c.rows[i].label.find("no scenario") != std::string::npos);
    }
  }
  // Selective recompute with sequence parallelism does less work than full recompute.
  CHECK(c.rows[1].predicted < c.rows[0].predicted);
}

TEST_CASE("every torchtitan 8B layout fits in the 96 GB card it ran on", "[validation][torchtitan]") {
  // The published runs ran: none of them may be refused as out of memory.
  for (const char* file : {"tt-8b-8gpu-eager", "tt-8b-8gpu-compile", "tt-8b-8gpu-compile-fp8", "tt-8b-128gpu-eager",
                           "tt-8b-128gpu-compile", "tt-8b-128gpu-compile-fp8"}) {
    INFO(file);
    const auto s = config::load_scenario(kRepo + "/scenarios/validation/" + file + ".yaml", {"run.steps=1"});
    NullSink sink;
    const auto r = run::simulate(s, sink, run::TraceLevel::none);
    CHECK_FALSE(r.out_of_memory);
    CHECK(r.memory.total() < s.topology.device.hbm_bytes);
  }
}

TEST_CASE("the torchtitan 70B layout (FSDP 32 × TP 8, local batch 16) fits in the 96 GB card", "[validation][torchtitan]") {
  // Table 4 of the benchmark page ran at 71.9 GiB (67.6 with AsyncTP): no refusal for memory.
  for (const char* file : {"tt-70b-256gpu-2d", "tt-70b-256gpu-2d-asynctp"}) {
    INFO(file);
    const auto s = config::load_scenario(kRepo + "/scenarios/validation/" + file + ".yaml", {"run.steps=1"});
    REQUIRE(s.parallel.tp == 8);
    REQUIRE(s.parallel.sequence_parallel);
    const auto r = run::simulate_memory(s);
    CHECK_FALSE(r.out_of_memory);
    CHECK(r.memory_reserved < s.topology.device.hbm_bytes);
  }
}

TEST_CASE("the torchtitan 405B layouts (FSDP with PP) are simulated and fit in the 96 GB card", "[validation][torchtitan]") {
  // FSDP 8 × TP 8 × PP 8 ran on the 96 GB H100s of the benchmark page (82.5 and 72.7 GiB peak):
  // the run layer must simulate ZeRO-3 with pipeline parallelism, not refuse it, and the layout
  // must fit.
  for (const char* file : {"tt-405b-512gpu-1f1b", "tt-405b-512gpu-interleaved"}) {
    INFO(file);
    const auto s = config::load_scenario(kRepo + "/scenarios/validation/" + file + ".yaml", {"run.steps=1"});
    REQUIRE(s.parallel.zero == 3);
    REQUIRE(s.parallel.pp == 8);
    NullSink sink;
    run::SimulationResult r;
    REQUIRE_NOTHROW(r = run::simulate(s, sink, run::TraceLevel::none));
    CHECK_FALSE(r.out_of_memory);
    CHECK(r.memory.total() < s.topology.device.hbm_bytes);
    CHECK(r.memory.unsharded > 0);  // the stage's gathered weights and unsharded gradients
    CHECK(r.step_time_s > 0);
  }
}

TEST_CASE("under context parallelism ZeRO-3 shards model state over dp × cp, as torchtitan's dp_shard_cp mesh does",
          "[validation][torchtitan][cp]") {
  // torchtitan 9dec370 parallelize_llama.py applies fully_shard over the ("dp_shard_cp",) mesh:
  // with FSDP 1 × CP 8 on 8 GPUs (benchmark table 2, last row) each GPU holds 1/8 of the
  // weights, as with FSDP 8 × CP 1. Llama 3 8B by hand: embedding and LM head 128,256 × 4,096 =
  // 525,336,576 each; per layer 2·4,096² + 2·4,096·1,024 + 3·4,096·14,336 + 2·4,096 =
  // 218,112,000, × 32 = 6,979,584,000; final norm 4,096: 8,030,261,248 parameters. bf16
  // weights: 2 B each / 8 ranks; fp32 master + Adam m, v: 12 B each / 8.
  const double params = 2 * 525336576.0 + 32 * 218112000.0 + 4096;
  REQUIRE(params == 8030261248.0);
  for (const char* file : {"tt-8b-8gpu-cp1", "tt-8b-8gpu-cp8"}) {
    INFO(file);
    const auto s = config::load_scenario(kRepo + "/scenarios/validation/" + file + ".yaml", {"run.steps=1"});
    const auto r = run::simulate_memory(s);
    CHECK(r.layout.dp * r.layout.cp == 8);
    CHECK(r.memory.weights == Approx(params * 2 / 8).epsilon(1e-12));
    CHECK(r.memory.optimizer == Approx(params * 12 / 8).epsilon(1e-12));
  }
}

TEST_CASE("under context parallelism the optimizer step updates the dp × cp shard", "[run][cp]") {
  // The same 8 GPUs and parameters sharded 8 ways, FSDP 8 × CP 1 against FSDP 1 × CP 8 (short
  // sequences keep the run cheap): the AdamW update touches 1/8 of the parameters in both, so
  // its time is the same up to the clock the step's kernel mix sustains (a few %), not 8 × longer.
  auto optimizer_s = [](const char* file) {
    const auto s = config::load_scenario(kRepo + "/scenarios/validation/" + file + ".yaml",
                                         {"run.steps=1", "training.sequence_length=2048",
                                          "training.global_batch_tokens=16384"});
    NullSink sink;
    return run::simulate(s, sink, run::TraceLevel::none).optimizer_s;
  };
  const double fsdp8 = optimizer_s("tt-8b-8gpu-cp1");
  const double cp8 = optimizer_s("tt-8b-8gpu-cp8");
  REQUIRE(fsdp8 > 0);
  CHECK(cp8 / fsdp8 == Approx(1.0).epsilon(0.1));
}

TEST_CASE("the BLOOM-176B scenario is BigScience's logged run and its two published figures agree", "[validation][bigscience]") {
  // bigscience-workshop/bigscience train/tr11-176B-ml/chronicles.md, 2022-03-18: "elapsed time per
  // iteration (s): 105.22 | ... global batch size: 2048 | ... TFLOPs: 149.02". Megatron-DeepSpeed
  // counts 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) per iteration with activation checkpointing
  // (README "Throughput": the 4·2 coefficient). B = 2,048, s = 2,048, l = 70, h = 14,336,
  // V = 250,880: 96·2,048·2,048·70 = 28,185,722,880; · h² (205,520,896) = 5.79274e18;
  // 1 + 2,048/86,016 + 250,880/16,056,320 = 1 + 1/42 + 1/64 = 1.0394345...; 6.02118e18 FLOPs,
  // / 105.22 s / 384 GPUs = 149.02 TFLOP/s: the log's two figures are the same measurement.
  const double flops = 96.0 * 2048 * 2048 * 70 * 14336.0 * 14336.0 * (1 + 1.0 / 42 + 1.0 / 64);
  CHECK(flops / 105.22 / 384 / 1e12 == Approx(149.02).epsilon(1e-3));
  const auto s = config::load_scenario(kRepo + "/scenarios/validation/bloom/bloom-176b-384gpu.yaml", {"run.steps=1"});
  CHECK(s.model.layers == 70);
  CHECK(s.model.hidden == 14336);
  CHECK(s.model.heads == 112);
  CHECK(s.model.vocab == 250880);
  CHECK(s.model.ffn_hidden == 4 * 14336);
  CHECK(s.gpus() == 384);
  CHECK(s.parallel.tp == 4);
  CHECK(s.parallel.pp == 12);
  CHECK(s.parallel.microbatch_size == 2);
  CHECK(s.training.global_batch_tokens == 2048.0 * 2048);
  CHECK(s.training.activation_checkpointing == "full");
  const auto r = run::simulate_memory(s);
  CHECK(r.layout.dp == 8);
  CHECK(r.layout.microbatches == 128);  // 2,048 / (8 replicas · 2 sequences), as the chronicles say for GBS 2,048
  CHECK_FALSE(r.out_of_memory);
}

TEST_CASE("the NeMo H100 rows: tokens/s and model TFLOP/s agree under Megatron's FLOP formula, and each scenario is its row",
          "[validation][nemo]") {
  // Megatron-LM's num_floating_point_operations (training.py), which NeMo / Megatron-Bridge
  // report: per token 12·L·h²·[(1 + g/n + (s/h)·c)  +  (f/h)·1.5 (SwiGLU; 1 for GELU)  +  V/(2·L·h)],
  // c = 1/2 for causal attention (the Megatron-Bridge rows) and 1 in NeMo 25.02's GPT-3 row.
  // By hand: Llama 3 8B (L 32, h 4096, g/n 8/32, f 14336, V 128256, s 8192): 7.9893 · 6.4425e9 =
  // 51.47 GFLOP/token; 70B (80, 8192, 8/64, 28672): 6.9729 · 64.425e9 = 449.2 GFLOP; 405B (126,
  // 16384, 8/128, 53248): 6.2186 · 405.88e9 = 2,524 GFLOP; GPT-3 175B (96, 12288, 1, 49152,
  // 50257, s 2048, non-causal): 6.1880 · 173.95e9 = 1,076 GFLOP. Times the published tokens/s
  // these give the published TFLOP/s (744, 719, 728, 737, 932) to the table's rounding: the
  // tables were transcribed with the right columns, and their TFLOP/s are not ironlaw's MFU
  // convention (12·L·H·Q·T non-causal, every matmul parameter), hence tokens/s in validate.
  auto per_token = [](double L, double h, double gn, double f, double gated, double V, double s, double c) {
    return 12.0 * L * h * h * ((1 + gn + s / h * c) + f / h * gated + V / (2 * L * h));
  };
  CHECK(14451 * per_token(32, 4096, 0.25, 14336, 1.5, 128256, 8192, 0.5) / 1e12 == Approx(744).margin(1));
  CHECK(1602 * per_token(80, 8192, 0.125, 28672, 1.5, 128256, 8192, 0.5) / 1e12 == Approx(719).margin(1));
  CHECK(1621 * per_token(80, 8192, 0.125, 28672, 1.5, 128256, 8192, 0.5) / 1e12 == Approx(728).margin(1));
  CHECK(292 * per_token(126, 16384, 0.0625, 53248, 1.5, 128256, 8192, 0.5) / 1e12 == Approx(737).margin(1));
  CHECK(866 * per_token(96, 12288, 1.0, 49152, 1.0, 50257, 2048, 1.0) / 1e12 == Approx(932).margin(1));
  // The long case's 26.02 405B row at GBS 1,536 (311 tokens/s, 784 TFLOP/s).
  CHECK(311 * per_token(126, 16384, 0.0625, 53248, 1.5, 128256, 8192, 0.5) / 1e12 == Approx(784).margin(1));
  // The 25.11 Qwen3 235B-A22B row (1,575 tokens/s, 233 TFLOP/s): 94 layers of hidden 4,096, 64
  // query heads of 128 (a·d/h = 2), 4 groups, 8 routed experts of 1,536 per token, vocabulary
  // 151,936, sequence 4,096: 12·94·4096²·((1 + 1/16 + 0.5)·2 + 1536/4096·8·1.5 + 151936/(2·94·4096))
  // = 1.8923e10 · 7.8223 = 148.0 GFLOP per token.
  CHECK(1575 * 12.0 * 94 * 4096 * 4096 * ((1 + 4.0 / 64 + 0.5) * 2 + 1536.0 / 4096 * 8 * 1.5 + 151936.0 / (2 * 94 * 4096)) /
            1e12 ==
        Approx(233).margin(1));
  // The 26.02.01 and 26.04.01 Qwen3 30B-A3B rows (9,058 and 8,960 tokens/s; 208 and 206 TFLOP/s),
  // at kQwen3_30bFlopsPerToken (above).
  CHECK(9058 * kQwen3_30bFlopsPerToken / 1e12 == Approx(208).margin(1));
  CHECK(8960 * kQwen3_30bFlopsPerToken / 1e12 == Approx(206).margin(1));
  // The scenarios hold the tables' settings (and fit: no published layout is refused for memory).
  struct Row { const char* file; int gpus, tp, pp, cp, vp, gbs, mbs, seq; };
  const Row rows[] = {{"llama3-8b-8gpu-fp8cs", 8, 1, 1, 1, 1, 128, 1, 8192},
                      {"llama3-70b-64gpu-fp8cs", 64, 4, 8, 1, 5, 128, 1, 8192},
                      {"llama3-70b-64gpu-fp8cs-gbs256", 64, 4, 8, 1, 5, 256, 1, 8192},
                      {"llama31-405b-1024gpu-fp8cs", 1024, 8, 8, 2, 8, 512, 1, 8192},
                      {"gpt3-175b-512gpu-fp8", 512, 4, 8, 1, 6, 2048, 2, 2048},
                      {"llama31-405b-1024gpu-fp8-gbs1536", 1024, 8, 8, 2, 8, 1536, 1, 8192},
                      {"qwen3-235b-256gpu-fp8cs", 256, 2, 8, 1, 4, 2048, 1, 4096},
                      {"qwen3-30b-16gpu-fp8cs-2602", 16, 1, 2, 1, 12, 1024, 1, 4096},
                      {"qwen3-30b-16gpu-fp8cs-2604", 16, 1, 1, 1, 1, 1024, 1, 4096}};
  for (const auto& row : rows) {
    INFO(row.file);
    const auto s = config::load_scenario(kRepo + "/scenarios/validation/nemo/" + row.file + ".yaml", {"run.steps=1"});
    CHECK(s.gpus() == row.gpus);
    CHECK(s.parallel.tp == row.tp);
    CHECK(s.parallel.pp == row.pp);
    CHECK(s.parallel.cp == row.cp);
    CHECK(s.parallel.virtual_stages == row.vp);
    CHECK(s.training.global_batch_tokens == double(row.gbs) * row.seq);
    CHECK(s.parallel.microbatch_size == row.mbs);
    CHECK(s.training.sequence_length == row.seq);
    CHECK(s.training.precision == "fp8");
    CHECK_FALSE(run::simulate_memory(s).out_of_memory);
  }
  // The GBS-1,536 row is a long case (192 microbatches per step: 70–90 CPU s): `validate --case
  // nemo-h100-long` runs it, a plain `validate` leaves it out.
  CHECK(report::plan_validation("nemo-h100", kRepo).jobs.size() == 8);
  CHECK(report::plan_validation("nemo-h100-long", kRepo).jobs.size() == 1);
  const auto long_names = report::validation_long_case_names();
  CHECK(std::find(long_names.begin(), long_names.end(), "nemo-h100-long") != long_names.end());
  const auto names = report::validation_case_names();
  CHECK(std::find(names.begin(), names.end(), "nemo-h100-long") == names.end());
}

TEST_CASE("the Llama 3 paper rows: Table 4's columns agree with each other, and each scenario is its row",
          "[validation][llama3-paper]") {
  // Dubey et al. 2024 (arXiv:2407.21783) Table 4, by hand: GPUs = TP · CP · PP · DP
  // (8·1·16·64 = 8,192; 8·1·16·128 = 8·16·16·8 = 16,384); tokens per batch = batch per DP ·
  // DP · sequence (32·64·8,192 = 16·128·8,192 = 16·8·131,072 = 16,777,216 = 16M); the BF16 MFU
  // is TFLOPs/GPU over the H100 SXM's 989.4 dense BF16 TFLOPS (430 → 43.5 %, 400 → 40.4 %,
  // 380 → 38.4 % against the table's 43, 41, 38: the table rounds both columns).
  struct Row { const char* file; int gpus, cp, dp, seq, batch_per_dp; double tflops, mfu; };
  const Row rows[] = {{"405b-8192gpu", 8192, 1, 64, 8192, 32, 430, 0.43},
                      {"405b-16384gpu", 16384, 1, 128, 8192, 16, 400, 0.41},
                      {"405b-16384gpu-cp16", 16384, 16, 8, 131072, 16, 380, 0.38}};
  for (const auto& row : rows) {
    INFO(row.file);
    CHECK(8 * row.cp * 16 * row.dp == row.gpus);
    CHECK(double(row.batch_per_dp) * row.dp * row.seq == 16777216.0);
    CHECK(row.tflops / 989.4 == Approx(row.mfu).margin(0.01));
    const auto s = config::load_scenario(kRepo + "/scenarios/validation/llama3-paper/" + row.file + ".yaml", {"run.steps=1"});
    CHECK(s.gpus() == row.gpus);
    CHECK(s.parallel.tp == 8);
    CHECK(s.parallel.pp == 16);
    CHECK(s.parallel.cp == row.cp);
    CHECK(s.parallel.dp == row.dp);
    CHECK(s.training.sequence_length == row.seq);
    CHECK(s.training.global_batch_tokens == 16777216.0);
    CHECK(s.training.precision == "bf16");
    CHECK(s.training.activation_checkpointing == "none");  // §3.3.2: no activation checkpointing at 8K
    CHECK(s.parallel.order == std::vector<std::string>{"tp", "cp", "pp", "dp"});  // §3.3.2's [TP, CP, PP, DP]
  }
  // §3.3.2: the first and the last stage hold one transformer layer fewer. 126 layers over the
  // 16 · 4 chunks of the scenarios: 128 slots of 2, the 2 missing taken from chunk 0 (stage 0)
  // and chunk 63 (stage 15's last chunk), so stages 0 and 15 hold 7 layers and the others 8.
  const auto split = run::split_layers(126, 64);
  REQUIRE(split.size() == 64);
  CHECK(split.front() == 1);
  CHECK(split.back() == 1);
  for (std::size_t j = 1; j + 1 < split.size(); ++j) CHECK(split[j] == 2);
  // The llama3-paper case is a long case: `validate --case llama3-paper` runs it, a plain
  // `validate` leaves it out (see validation.cpp).
  CHECK(report::plan_validation("llama3-paper", kRepo).jobs.size() == 3);
  const auto long_names = report::validation_long_case_names();
  CHECK(std::find(long_names.begin(), long_names.end(), "llama3-paper") != long_names.end());
  const auto names = report::validation_case_names();
  CHECK(std::find(names.begin(), names.end(), "llama3-paper") == names.end());
}

TEST_CASE("the mosaic-mpt-h100 case runs the 38 rows at sequence 2,048 of both H100 tables", "[validation]") {
  // llm-foundry's README: 20 rows of "H100 80GB BF16" (b2a43a147) and 18 of the large-scale table
  // (5e85bd62d) at sequence 2,048. The six SHARD_GRAD_OP rows (1B and 3B at 128-512 GPUs) run
  // with parallel.reshard_after_forward false.
  const auto plan = report::plan_validation("mosaic-mpt-h100", kRepo);
  REQUIRE(plan.jobs.size() == 38);
  int shard_grad_op = 0;
  for (const auto& job : plan.jobs) {
    const auto s = config::load_scenario(kRepo + "/scenarios/validation/mosaic-mpt-h100/" + job.label + ".yaml");
    if (!s.parallel.reshard_after_forward) ++shard_grad_op;
  }
  CHECK(shard_grad_op == 6);
  // One simulated row end to end: MPT-1B on 8 H100 (14 sequences per microbatch, one microbatch),
  // 45,455 tokens/s per GPU published (= 177.56 sequences/s x 2,048 / 8, the table's columns).
  for (const auto& job : plan.jobs) {
    if (job.label != "mpt-1b-8gpu-h100") continue;
    const auto rows = job.run();
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].published == 45455);
    CHECK(std::isfinite(rows[0].predicted));
  }
}

TEST_CASE("the mosaic-mpt-a100-torch2 case runs the 9 re-measured A100 rows, each against its own scenario", "[validation]") {
  // llm-foundry b2a43a147's A100 80GB table: its amp_bf16 rows at sequence 2,048, all on 8 GPUs,
  // two of them MPT-125M at microbatches 40 and 32; every one a gradient-accumulation step
  // (GradAccum = GlobalBatchSize / 8 / MicroBatchSize: 21, 3, 2, 2, 4, 2, 2, 2, 2).
  const auto plan = report::plan_validation("mosaic-mpt-a100-torch2", kRepo);
  REQUIRE(plan.jobs.size() == 9);
  for (const auto& job : plan.jobs) {
    const auto s = config::load_scenario(kRepo + "/scenarios/validation/mosaic-mpt-a100-torch2/" + job.label + ".yaml");
    INFO(job.label);
    CHECK(s.gpus() == 8);
    CHECK(s.training.reduce_dtype == "fp32");  // MP Mode DEFAULT
    CHECK(s.training.global_batch_tokens / s.training.sequence_length / 8 / s.parallel.microbatch_size >= 2);
  }
}

TEST_CASE("the flash-attn-gpt3 case runs the 5 rows of FlashAttention's GPT-3 table, each against its own scenario", "[validation]") {
  // Dao-AILab/flash-attention training/README.md (4a6eaa9f): tokens/s of the 8 GPUs, 1310k, 503k,
  // 245k, 169k, 85k; per GPU an eighth. The experiment configs' batch per GPU at 80 GB (32, 32, 16,
  // 8, 4) and global batch (256, 256, 256, 512, 512 sequences) give 1, 1, 2, 8, 16 microbatches.
  const auto plan = report::plan_validation("flash-attn-gpt3", kRepo);
  REQUIRE(plan.jobs.size() == 5);
  const std::map<std::string, int> microbatches{
      {"gpt3-125m-8gpu", 1}, {"gpt3-355m-8gpu", 1}, {"gpt3-760m-8gpu", 2}, {"gpt3-1.3b-8gpu", 8}, {"gpt3-2.7b-8gpu", 16}};
  for (const auto& job : plan.jobs) {
    const auto s = config::load_scenario(kRepo + "/scenarios/validation/flash-attn-gpt3/" + job.label + ".yaml");
    INFO(job.label);
    REQUIRE(microbatches.count(job.label) == 1);
    CHECK(s.gpus() == 8);
    CHECK(s.training.attention_kernel == "flash1");
    CHECK(s.training.global_batch_tokens / s.training.sequence_length / 8 / s.parallel.microbatch_size ==
          microbatches.at(job.label));
  }
  for (const auto& job : plan.jobs) {
    if (job.label != "gpt3-125m-8gpu") continue;
    const auto rows = job.run();
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].published == Approx(1310e3 / 8));
    CHECK(std::isfinite(rows[0].predicted));
  }
}

TEST_CASE("the flash-attn-gpt2 case predicts the README's TFLOP/s, 3/4 of Narayanan et al.'s formula", "[validation]") {
  // FlashAttention's GPT-2 figure: 159, 170, 164 TFLOP/s per A100 for 355M, 760M, 1.6B at sequence
  // 1,024, global batch 512 (per GPU 64, 32, 16 sequences: 1, 2, 4 microbatches), fp16.
  const auto plan = report::plan_validation("flash-attn-gpt2", kRepo);
  REQUIRE(plan.jobs.size() == 3);
  for (const auto& job : plan.jobs) {
    const auto s = config::load_scenario(kRepo + "/scenarios/validation/flash-attn-gpt2/" + job.label + ".yaml");
    INFO(job.label);
    CHECK(s.training.precision == "fp16");
    CHECK(s.training.fused_mlp);
    CHECK(s.training.fused_dropout_add_norm);
    CHECK(s.training.global_batch_tokens == 512.0 * 1024);
  }
  // GPT2-355M's prediction is the README's formula over the simulated step: per iteration
  // 0.75 · 96 · 512 · 1024 · 24 · 1024² · (1 + 1024/6144 + 50257/(16 · 24 · 1024)) = 1.2297e15 FLOPs.
  const double flops = 0.75 * 96 * 512 * 1024 * 24 * 1024.0 * 1024 * (1 + 1024.0 / 6144 + 50257.0 / (16 * 24 * 1024));
  CHECK(flops == Approx(1.2297e15).epsilon(1e-4));
  for (const auto& job : plan.jobs) {
    if (job.label != "gpt2-355m-8gpu") continue;
    const auto rows = job.run();
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].published == 159);
    NullSink sink;
    const auto r = run::simulate(config::load_scenario(kRepo + "/scenarios/validation/flash-attn-gpt2/" + job.label + ".yaml",
                                                       {"run.steps=1"}),
                                 sink, run::TraceLevel::none);
    CHECK(rows[0].predicted == Approx(flops / (r.step_time_s * 8) / 1e12));
  }
}

TEST_CASE("the mosaic-mpt case runs its 66 table rows, each against its own scenario", "[validation]") {
  // 18 A100 40GB rows and 2 A100 80GB rows (round 18), 16 more A100 80GB rows (round 19), 30 rows
  // at other sequence lengths on 8 GPUs (round 20: 14 A100 40GB, 16 A100 80GB).
  const auto plan = report::plan_validation("mosaic-mpt", kRepo);
  REQUIRE(plan.jobs.size() == 66);
  // The smallest row (MPT-125M on 8 A100 40GB, 26 sequences per microbatch) is predicted: the
  // fused cross-entropy keeps 2 × 2 B per logit, which fits where the eager loss's 12 B did not.
  for (const auto& job : plan.jobs) {
    if (job.label != "mpt-125m-8gpu-a100-40gb") continue;
    const auto rows = job.run();
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].published == 136334);
    CHECK(std::isfinite(rows[0].predicted));
    CHECK(rows[0].predicted > 0);
  }
}

TEST_CASE("the bigscience-prequel case runs its 21 rows, each against its own scenario", "[validation]") {
  // chronicles-prequel.md: 17 rows of "Rebalancing layers" (2022-02-28, BF16 optimizer, global
  // batch 2,048) and the 4 of "Batchsize Warmup" (2022-02-26, fp16, global batch 512-2,048); all
  // on 48 nodes of 8, so DP = 384 / (TP x PP).
  const auto plan = report::plan_validation("bigscience-prequel", kRepo);
  REQUIRE(plan.jobs.size() == 21);
  int bf16_rows = 0;
  for (const auto& job : plan.jobs) {
    const auto s = config::load_scenario(kRepo + "/scenarios/validation/bloom-prequel/" + job.label + ".yaml");
    INFO(job.label);
    CHECK(s.gpus() == 384);
    CHECK(s.parallel.pp_runtime == "deepspeed");
    CHECK(s.training.activation_checkpointing == "full");
    if (s.training.bf16_optimizer) {
      ++bf16_rows;
      CHECK(s.training.global_batch_tokens == 2048.0 * 2048);
    }
  }
  CHECK(bf16_rows == 17);
  // The production layout (176B: 14,336 x 70, 112 heads, TP 4 PP 12 DP 8, MBS 2), 104.50 s published.
  for (const auto& job : plan.jobs) {
    if (job.label != "h14336-l70-a112-tp4-pp12-mbs2") continue;
    const auto rows = job.run();
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].published == 104.50);
    CHECK(std::isfinite(rows[0].predicted));
  }
}

TEST_CASE("the mbridge-cards row: the card's three figures agree, and the scenario is the recipe it names",
          "[validation][nemo]") {
  // The Qwen3-30B-A3B card's pretrain_performance.H100 (Megatron-Bridge 067f987df): steps 41-50 at
  // 20,147.290 ms, 299.352 model TFLOP/s and 13,011.378 tokens/s per GPU. By hand: 1,024 sequences of
  // 4,096 tokens over 16 GPUs in 20.14729 s is 262,144 / 20.14729 = 13,011.4 tokens/s per GPU, and
  // Megatron's count for this model, 23.006 GFLOP per token (kQwen3_30bFlopsPerToken), gives
  // 13,011.378 · 23.006e9 = 299.35 TFLOP/s.
  CHECK(1024.0 * 4096 / 16 / 20.14729 == Approx(13011.378).margin(0.5));
  CHECK(13011.378 * kQwen3_30bFlopsPerToken / 1e12 == Approx(299.352).margin(0.05));
  // qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config at 3a9559f01283: TP 1, PP 1, CP 1, EP 16, GBS
  // 1,024, MBS 1, sequence 4,096, BF16 with bf16 gradient reduction, no recompute, the distributed
  // optimizer, the flex dispatcher (hybridep) and expert-parallel communication overlap.
  const auto s = config::load_scenario(kRepo + "/scenarios/validation/mbridge-cards/qwen3-30b-16gpu-bf16-card.yaml",
                                       {"run.steps=1"});
  CHECK(s.gpus() == 16);
  CHECK(s.parallel.tp == 1);
  CHECK(s.parallel.pp == 1);
  CHECK(s.parallel.cp == 1);
  CHECK(s.parallel.ep == 16);
  CHECK(s.parallel.microbatch_size == 1);
  CHECK(s.training.global_batch_tokens == 1024.0 * 4096);
  CHECK(s.training.sequence_length == 4096);
  CHECK(s.training.precision == "bf16");
  CHECK(s.training.reduce_dtype == "bf16");
  CHECK(s.training.activation_checkpointing == "none");
  CHECK(s.parallel.zero == 1);
  CHECK(s.parallel.moe_dispatcher == "hybridep");  // moe_flex_dispatcher_backend hybridep
  CHECK(s.parallel.moe_a2a_overlap);
  CHECK_FALSE(run::simulate_memory(s).out_of_memory);
  CHECK(report::plan_validation("mbridge-cards", kRepo).jobs.size() == 1);
}
