// Dropout ops (ModelSpec attention_dropout / hidden_dropout) against hand arithmetic, and the
// model-card keys that set them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/error.hpp"
#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

/// GPT-2 small (h 768, 12 heads) trained with Megatron-LM's default dropouts.
config::ModelSpec gpt2_dropout() {
  config::ModelSpec m = gpt2_124m();
  m.attention_dropout = 0.1;
  m.hidden_dropout = 0.1;
  return m;
}

config::TrainingSpec training_1k(bool flash, const std::string& recompute = "none",
                                 const std::string& precision = "fp16") {
  config::TrainingSpec t;
  t.sequence_length = 1024;
  t.precision = precision;
  t.optimizer = "adam";
  t.activation_checkpointing = recompute;
  t.flash_attention = flash;
  return t;
}

std::vector<std::string> names(const std::vector<Op>& ops) {
  std::vector<std::string> out;
  for (const Op& op : ops) out.push_back(op.name);
  return out;
}

std::vector<std::string> dropout_names(const std::vector<Op>& ops) {
  std::vector<std::string> out;
  for (const Op& op : ops) {
    if (op.name.find("dropout") != std::string::npos) out.push_back(op.name);
  }
  return out;
}

double total_bytes(const std::vector<Op>& ops) {
  double sum = 0;
  for (const Op& op : ops) sum += op.bytes;
  return sum;
}

std::string write_card(const std::string& name, const std::string& extra) {
  const auto path = std::filesystem::temp_directory_path() / ("ironlaw_dropout_" + name + ".yaml");
  std::ofstream out(path);
  out << "layers: 2\nhidden: 64\nffn_hidden: 256\nheads: 4\nvocab: 1000\n" << extra;
  return path.string();
}

std::vector<std::string> card_errors(const std::string& name, const std::string& extra) {
  try {
    config::load_model(write_card(name, extra));
  } catch (const InputError& e) {
    std::vector<std::string> out;
    for (const auto& d : e.diagnostics()) out.push_back(d.key + ": " + d.message);
    return out;
  }
  return {"(no error)"};
}

}  // namespace

TEST_CASE("hidden dropout follows attn_out and mlp_down on t·h elements", "[workload][ops][dropout]") {
  const auto ops = layer_forward_ops(gpt2_dropout(), training_1k(false), 2, 1);
  const auto order = names(ops);
  const auto at = [&](const std::string& n) { return std::find(order.begin(), order.end(), n) - order.begin(); };
  CHECK(at("hidden_dropout_attn") == at("attn_out") + 1);
  CHECK(at("residual_attn") == at("hidden_dropout_attn") + 1);
  CHECK(at("hidden_dropout_mlp") == at("mlp_down") + 1);
  CHECK(at("residual_mlp") == at("hidden_dropout_mlp") + 1);
  // t·h = 2·1024·768 = 1,572,864 elements; read 2 B, write 2 B + a 1-byte mask: 5 B each.
  const Op& attn = find(ops, "hidden_dropout_attn");
  CHECK(attn.bytes == 7'864'320.0);
  CHECK_FALSE(attn.is_gemm());
  CHECK(find(ops, "hidden_dropout_mlp").bytes == 7'864'320.0);
  // Not split by TP (no sequence parallelism): every rank drops all t·h.
  CHECK(find(layer_forward_ops(gpt2_dropout(), training_1k(false), 2, 4), "hidden_dropout_mlp").bytes ==
        7'864'320.0);
  // fp32: 4 + 4 + 1 = 9 B per element, 14,155,776 B.
  CHECK(find(layer_forward_ops(gpt2_dropout(), training_1k(false, "none", "fp32"), 2, 1), "hidden_dropout_attn")
            .bytes == 14'155'776.0);
}

TEST_CASE("unfused attention drops the s² probabilities after the softmax", "[workload][ops][dropout]") {
  const auto ops = layer_forward_ops(gpt2_dropout(), training_1k(false), 2, 1);
  const auto order = names(ops);
  const auto at = [&](const std::string& n) { return std::find(order.begin(), order.end(), n) - order.begin(); };
  CHECK(at("attn_dropout") == at("attn_softmax") + 1);
  CHECK(at("attn_values") == at("attn_dropout") + 1);
  // 2 sequences · 12 heads · 1024² = 25,165,824 probabilities at 5 B: 125,829,120 B.
  CHECK(find(ops, "attn_dropout").bytes == 125'829'120.0);
  // TP 2: 6 local heads, half the probabilities.
  CHECK(find(layer_forward_ops(gpt2_dropout(), training_1k(false), 2, 2), "attn_dropout").bytes == 62'914'560.0);
}

TEST_CASE("flash attention fuses the attention dropout into its kernel", "[workload][ops][dropout]") {
  config::ModelSpec hidden_only = gpt2_dropout();
  hidden_only.attention_dropout = 0;
  const auto with = layer_forward_ops(gpt2_dropout(), training_1k(true), 2, 1);
  const auto without = layer_forward_ops(hidden_only, training_1k(true), 2, 1);
  CHECK(dropout_names(with) == std::vector<std::string>{"hidden_dropout_attn", "hidden_dropout_mlp"});
  CHECK(names(with) == names(without));
  CHECK(find(with, "attn_core").bytes == find(without, "attn_core").bytes);
  CHECK(find(with, "attn_core").flops == find(without, "attn_core").flops);
  const auto bwd = layer_backward_ops(gpt2_dropout(), training_1k(true), 2, 1);
  CHECK(dropout_names(bwd) == std::vector<std::string>{"hidden_dropout_mlp_bwd", "hidden_dropout_attn_bwd"});
}

TEST_CASE("each dropout is switched by its own probability", "[workload][ops][dropout]") {
  config::ModelSpec attention_only = gpt2_dropout();
  attention_only.hidden_dropout = 0;
  CHECK(dropout_names(layer_forward_ops(attention_only, training_1k(false), 2, 1)) ==
        std::vector<std::string>{"attn_dropout"});
  // The probability does not change the cost.
  config::ModelSpec half = gpt2_dropout();
  half.attention_dropout = 0.5;
  half.hidden_dropout = 0.5;
  CHECK(total_bytes(layer_forward_ops(half, training_1k(false), 2, 1)) ==
        total_bytes(layer_forward_ops(gpt2_dropout(), training_1k(false), 2, 1)));
}

TEST_CASE("a dropout's backward reads the gradient and the mask and writes the gradient", "[workload][ops][dropout]") {
  const auto bwd = layer_backward_ops(gpt2_dropout(), training_1k(false), 2, 1);
  CHECK(dropout_names(bwd) ==
        std::vector<std::string>{"hidden_dropout_mlp_bwd", "hidden_dropout_attn_bwd", "attn_dropout_bwd"});
  CHECK(bwd.front().name == "residual_mlp_bwd");
  const auto order = names(bwd);
  const auto at = [&](const std::string& n) { return std::find(order.begin(), order.end(), n) - order.begin(); };
  CHECK(at("hidden_dropout_mlp_bwd") == at("residual_mlp_bwd") + 1);
  CHECK(at("mlp_down_dgrad") == at("hidden_dropout_mlp_bwd") + 1);
  CHECK(at("hidden_dropout_attn_bwd") == at("residual_attn_bwd") + 1);
  CHECK(at("attn_out_dgrad") == at("hidden_dropout_attn_bwd") + 1);
  CHECK(at("attn_dropout_bwd") == at("attn_values_wgrad") + 1);
  CHECK(at("attn_softmax_bwd") == at("attn_dropout_bwd") + 1);
  // Same elements · (2 + 2 + 1) B as forward.
  CHECK(find(bwd, "hidden_dropout_mlp_bwd").bytes == 7'864'320.0);
  CHECK(find(bwd, "hidden_dropout_attn_bwd").bytes == 7'864'320.0);
  CHECK(find(bwd, "attn_dropout_bwd").bytes == 125'829'120.0);
  CHECK_FALSE(find(bwd, "attn_dropout_bwd").is_gemm());
}

TEST_CASE("recompute repeats the forward dropouts", "[workload][ops][dropout]") {
  CHECK(dropout_names(layer_recompute_ops(gpt2_dropout(), training_1k(false, "full"), 2, 1)) ==
        std::vector<std::string>{"recompute_attn_dropout", "recompute_hidden_dropout_attn",
                                 "recompute_hidden_dropout_mlp"});
  CHECK(find(layer_recompute_ops(gpt2_dropout(), training_1k(false, "full"), 2, 1), "recompute_hidden_dropout_mlp")
            .bytes == 7'864'320.0);
  // Selective recompute repeats the attention core, its dropout included.
  CHECK(dropout_names(layer_recompute_ops(gpt2_dropout(), training_1k(false, "selective"), 2, 1)) ==
        std::vector<std::string>{"recompute_attn_dropout"});
}

TEST_CASE("MoE layers drop the combined MLP output", "[workload][ops][dropout]") {
  config::ModelSpec m = deepseek_v3();
  m.hidden_dropout = 0.1;
  const auto ops = layer_forward_ops(m, training_1k(true, "none", "bf16"), 1, 1, m.dense_layers, 8);
  const auto order = names(ops);
  const auto at = [&](const std::string& n) { return std::find(order.begin(), order.end(), n) - order.begin(); };
  CHECK(at("hidden_dropout_mlp") == at("residual_mlp") - 1);
  CHECK(at("hidden_dropout_mlp") > at("moe_unpermute"));
  CHECK(at("hidden_dropout_mlp") > at("shared_down"));
  // 1024 tokens · 7168 · 5 B.
  CHECK(find(ops, "hidden_dropout_mlp").bytes == 1024.0 * 7168 * 5);
}

TEST_CASE("a Llama card without dropout keys gets no dropout ops", "[workload][ops][dropout][cards]") {
  const config::ModelSpec m =
      config::load_model((std::filesystem::path(IRONLAW_SOURCE_DIR) / "models" / "llama3-8b.yaml").string());
  CHECK(m.attention_dropout == 0);
  CHECK(m.hidden_dropout == 0);
  for (bool flash : {true, false}) {
    CHECK(dropout_names(layer_forward_ops(m, training_1k(flash, "full"), 1, 1)).empty());
    CHECK(dropout_names(layer_backward_ops(m, training_1k(flash, "full"), 1, 1)).empty());
    CHECK(dropout_names(layer_recompute_ops(m, training_1k(flash, "full"), 1, 1)).empty());
  }
}

TEST_CASE("model cards set dropout probabilities of at least 0 and below 1", "[workload][dropout][cards]") {
  const config::ModelSpec m =
      config::load_model(write_card("good", "attention_dropout: 0.1\nhidden_dropout: { value: 0.2, source: test }\n"));
  CHECK(m.attention_dropout == 0.1);
  CHECK(m.hidden_dropout == 0.2);
  CHECK(config::load_model(write_card("zero", "attention_dropout: 0\n")).attention_dropout == 0);
  const auto one = card_errors("one", "hidden_dropout: 1\n");
  REQUIRE(one.size() == 1);
  CHECK(one.front().rfind("hidden_dropout: must be below 1", 0) == 0);
  const auto negative = card_errors("negative", "attention_dropout: -0.1\n");
  REQUIRE(negative.size() == 1);
  CHECK(negative.front().rfind("attention_dropout: ", 0) == 0);
}

TEST_CASE("the Megatron-LM 2021 scenarios train with dropout 0.1", "[workload][dropout][cards]") {
  const auto dir = std::filesystem::path(IRONLAW_SOURCE_DIR) / "scenarios" / "megatron-2021";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    const config::Scenario sc = config::load_scenario(entry.path().string());
    INFO(entry.path().filename().string());
    CHECK(sc.model.attention_dropout == 0.1);
    CHECK(sc.model.hidden_dropout == 0.1);
  }
  CHECK(files == 10);
}
