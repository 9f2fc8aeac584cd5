// The large model cards in models/ load, carry the shapes the workload tests build in C++, and
// reproduce their published parameter counts.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <tuple>

#include "config/load.hpp"
#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

config::ModelSpec card(const std::string& name) {
  return config::load_model((std::filesystem::path(IRONLAW_SOURCE_DIR) / "models" / (name + ".yaml")).string());
}

/// Every shape field the workload reads.
void check_same_shape(const config::ModelSpec& a, const config::ModelSpec& b) {
  CHECK(a.layers == b.layers);
  CHECK(a.hidden == b.hidden);
  CHECK(a.ffn_hidden == b.ffn_hidden);
  CHECK(a.heads == b.heads);
  CHECK(a.kv_heads == b.kv_heads);
  CHECK(a.vocab == b.vocab);
  CHECK(a.activation == b.activation);
  CHECK(a.norm == b.norm);
  CHECK(a.bias == b.bias);
  CHECK(a.tied_embeddings == b.tied_embeddings);
  CHECK(a.position_embedding == b.position_embedding);
  CHECK(a.experts == b.experts);
  CHECK(a.experts_per_token == b.experts_per_token);
  CHECK(a.shared_experts == b.shared_experts);
  CHECK(a.moe_ffn_hidden == b.moe_ffn_hidden);
  CHECK(a.dense_layers == b.dense_layers);
  CHECK(a.head_dim == b.head_dim);
  CHECK(a.q_lora_rank == b.q_lora_rank);
  CHECK(a.kv_lora_rank == b.kv_lora_rank);
  CHECK(a.qk_nope_head_dim == b.qk_nope_head_dim);
  CHECK(a.qk_rope_head_dim == b.qk_rope_head_dim);
  CHECK(a.v_head_dim == b.v_head_dim);
}

}  // namespace

TEST_CASE("models/llama3-405b.yaml is the 405B shape with its published facts", "[workload][cards]") {
  const config::ModelSpec m = card("llama3-405b");
  check_same_shape(m, llama3_405b());
  REQUIRE((m.published.params && m.published.tokens && m.published.gpu_hours));
  CHECK(count_params(m).total() == Approx(*m.published.params).epsilon(0.01));
  CHECK(*m.published.tokens == Approx(15.6e12));
  CHECK(*m.published.gpu_hours == Approx(30.84e6));
  // The published throughput (38–43 % BF16 MFU) is text for comparison, never a number the
  // simulation reads.
  CHECK(m.published.throughput.find("43 % BF16 MFU on 8,192 GPUs") != std::string::npos);
  CHECK(m.published.throughput.find("380 = 38 % on 16,384 GPUs") != std::string::npos);
  CHECK(m.published.sources.at("throughput") == "Llama 3 paper Table 4");
}

TEST_CASE("models/deepseek-v3.yaml is the DeepSeek-V3 shape with its published facts", "[workload][cards][moe]") {
  const config::ModelSpec m = card("deepseek-v3");
  check_same_shape(m, deepseek_v3());
  const ParamCount p = count_params(m);
  REQUIRE(m.published.params);
  REQUIRE((m.published.active_params && m.published.tokens && m.published.gpu_hours));
  CHECK(p.total() == Approx(*m.published.params).epsilon(0.03));
  CHECK(p.active() == Approx(*m.published.active_params).epsilon(0.05));
  CHECK(*m.published.tokens == Approx(14.8e12));
  CHECK(*m.published.gpu_hours == Approx(2.788e6));
  CHECK(m.published.hardware == "H800");
}

TEST_CASE("the MPT cards reproduce the parameter counts of MosaicML's benchmark table", "[workload][params][cards]") {
  // mosaicml/llm-foundry scripts/train/benchmarking/README.md, NumParams at sequence 2,048 (the
  // learned position table has max_seq_len rows): 12·L·h² + 13·L·h + V·h + 2,048·h + 2·h.
  const std::pair<const char*, double> published[] = {
      {"mpt-125m", 125'311'488}, {"mpt-350m", 355'985'408},     {"mpt-760m", 760'470'528},
      {"mpt-1b", 1'315'950'592}, {"mpt-3b", 2'651'837'440},     {"mpt-7b", 6'658'859'008},
      {"mpt-13b", 12'853'954'560}, {"mpt-30b", 29'975'214'080}, {"mpt-70b", 64'862'437'376}};
  for (const auto& [name, params] : published) {
    INFO(name);
    config::ModelSpec m = card(name);
    // The cards give max_position: sequence (MPT's max_seq_len is the run's): read alone, no rows.
    CHECK(m.max_position_follows_sequence);
    CHECK(m.max_position == 0);
    m.max_position = 2048;
    CHECK(count_params(m).total() == params);
  }
  // The same table at other sequence lengths: the position table grows by h per position.
  const std::tuple<const char*, int, double> longer[] = {
      {"mpt-125m", 65536, 174'070'272}, {"mpt-125m", 512, 124'131'840}, {"mpt-7b", 65536, 6'918'905'856},
      {"mpt-7b", 512, 6'652'567'552},   {"mpt-13b", 32768, 13'011'240'960}};
  for (const auto& [name, sequence, params] : longer) {
    INFO(name << " at " << sequence);
    config::ModelSpec m = card(name);
    m.max_position = sequence;
    CHECK(count_params(m).total() == params);
  }
}

TEST_CASE("max_position: sequence sizes the position table to the scenario's sequence", "[workload][params][cards]") {
  const std::string file = IRONLAW_SOURCE_DIR "/scenarios/validation/mosaic-mpt/mpt-125m-8gpu-a100-80gb.yaml";
  const auto at = [&](int sequence) {
    return config::load_scenario(file, {"training.sequence_length=" + std::to_string(sequence),
                                        "training.global_batch_tokens=" + std::to_string(64 * 8 * sequence)});
  };
  CHECK(at(4096).model.max_position == 4096);
  CHECK(count_params(at(4096).model).total() == 126'884'352);  // the table's NumParams at 4,096
  CHECK(at(512).model.max_position == 512);
}
