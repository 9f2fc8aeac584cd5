// Parameter counts and FLOPs per token from the shape alone, against hand arithmetic.
#include <catch2/catch.hpp>

#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

TEST_CASE("Llama 3 8B counts 8,030,261,248 parameters", "[workload][params]") {
  const ParamCount p = count_params(llama3_8b());
  // embedding 128256·4096 = 525,336,576, and the same again for the untied LM head.
  CHECK(p.embedding == 525'336'576.0);
  CHECK(p.lm_head == 525'336'576.0);
  CHECK(p.position == 0.0);
  // attention per layer: Q, O 4096² = 16,777,216 each; K, V 4096·(8·128) = 4,194,304 each
  // → 41,943,040; × 32 = 1,342,177,280.
  CHECK(p.attention == 1'342'177'280.0);
  // SwiGLU 3·4096·14336 = 176,160,768 per layer; × 32 = 5,637,144,576.
  CHECK(p.mlp == 5'637'144'576.0);
  CHECK(p.mlp_active == p.mlp);
  // RMSNorm 4096 per norm, 2·32 + 1 = 65 norms → 266,240.
  CHECK(p.norm == 266'240.0);
  // 2·525,336,576 + 1,342,177,280 + 5,637,144,576 + 266,240 = 8,030,261,248 ≈ 8.03e9.
  CHECK(p.total() == 8'030'261'248.0);
  CHECK(p.non_embedding() == 8'030'261'248.0 - 525'336'576.0);
}

TEST_CASE("Llama 3 70B counts 70.6e9 parameters", "[workload][params]") {
  // attention 2·8192² + 2·8192·1024 = 150,994,944; SwiGLU 3·8192·28672 = 704,643,072;
  // norms 2·8192 = 16,384 → 855,654,400 per layer × 80 = 68,452,352,000; embedding + head
  // 2·128256·8192 = 2,101,346,304; final norm 8192 → 70,553,706,496.
  CHECK(count_params(llama3_70b()).total() == 70'553'706'496.0);
}

TEST_CASE("GPT-2 small counts 124,439,808 parameters", "[workload][params]") {
  const ParamCount p = count_params(gpt2_124m());
  // embedding 50257·768 = 38,597,376 (tied: no separate head); positions 1024·768 = 786,432.
  CHECK(p.embedding == 38'597'376.0);
  CHECK(p.position == 786'432.0);
  CHECK(p.lm_head == 0.0);
  CHECK(p.lm_head_matmul == 38'597'376.0);
  // per layer: attention 4·768² + 4·768 = 2,362,368; MLP 2·768·3072 + 3072 + 768 = 4,722,432;
  // two LayerNorms 2·2·768 = 3,072 → 7,087,872 × 12 = 85,054,464; final LayerNorm 1,536.
  CHECK(p.attention == 12 * 2'362'368.0);
  CHECK(p.mlp == 12 * 4'722'432.0);
  CHECK(p.norm == 12 * 3'072.0 + 1'536.0);
  CHECK(p.total() == 124'439'808.0);
}

TEST_CASE("GPT-2 XL counts 1,557,611,200 parameters", "[workload][params]") {
  // embedding 50257·1600 = 80,411,200; positions 1024·1600 = 1,638,400; per layer: attention
  // 4·1600² + 4·1600 = 10,246,400, MLP 2·1600·6400 + 6400 + 1600 = 20,488,000, norms 6,400
  // → 30,740,800 × 48 = 1,475,558,400; final norm 3,200 → 1,557,611,200 ≈ 1.558e9.
  CHECK(count_params(gpt2_1558m()).total() == 1'557'611'200.0);
}

TEST_CASE("GPT-3 175B counts 174.6e9 parameters", "[workload][params]") {
  // per layer: attention 4·12288² + 4·12288 = 604,028,928; MLP 2·12288·49152 + 49152 + 12288
  // = 1,208,020,992; norms 4·12288 = 49,152 → 1,812,099,072 × 96 = 173,961,510,912;
  // embedding 50257·12288 = 617,558,016; positions 2048·12288 = 25,165,824; final norm 24,576
  // → 174,604,259,328.
  CHECK(count_params(gpt3_175b()).total() == 174'604'259'328.0);
}

TEST_CASE("Chinchilla 70B counts 70.06e9 parameters with relative positions", "[workload][params]") {
  const config::ModelSpec m = chinchilla_70b();
  // per layer: attention 4·8192² + relative-position projection 8192² = 335,544,320; GELU MLP
  // 2·8192·32768 = 536,870,912; RMSNorms 2·8192 → 872,431,616 × 80 = 69,794,529,280;
  // tied embedding 32000·8192 = 262,144,000; final norm 8,192 → 70,056,681,472 (13·L·h² + V·h,
  // the Gopher-family count; 0.08 % from the published 70e9).
  const double n = count_params(m).total();
  CHECK(n == 70'056'681'472.0);
  CHECK(n == Approx(70e9).epsilon(0.03));
  // Treated as RoPE (no position parameters at all) the shape gives 12·L·h² + V·h ≈ 64.7e9,
  // 7.6 % short: the relative projection is why the published count is 70B.
  config::ModelSpec rope = m;
  rope.position_embedding = "rope";
  CHECK(count_params(rope).total() == 70'056'681'472.0 - 80.0 * 8192.0 * 8192.0);
}

TEST_CASE("a mixture of experts counts all experts in mlp and the routed ones in mlp_active",
          "[workload][params]") {
  config::ModelSpec m = llama3_8b();
  m.experts = 8;
  m.experts_per_token = 2;
  const ParamCount p = count_params(m);
  const double expert = 3.0 * 4096 * 14336;  // one SwiGLU expert
  const double router = 4096.0 * 8;
  CHECK(p.mlp == 32 * (8 * expert + router));
  CHECK(p.mlp_active == 32 * (2 * expert + router));
}

TEST_CASE("six_n counts 6 per parameter and palm 6 per matmul parameter plus attention",
          "[workload][flops]") {
  const FlopsPerToken f = flops_per_token(llama3_8b(), 8192);
  CHECK(f.six_n == 6.0 * 8'030'261'248.0);
  // N_matmul = attention 1,342,177,280 + MLP 5,637,144,576 + LM head 525,336,576
  // = 7,504,658,432; 12·L·H·Q·T = 12·32·32·128·8192 = 12,884,901,888.
  CHECK(f.attention_palm == 12'884'901'888.0);
  CHECK(f.palm == 6.0 * 7'504'658'432.0 + 12'884'901'888.0);
}

TEST_CASE("palm counts a tied LM head as a matmul but no lookup table", "[workload][flops]") {
  // GPT-2 small at T = 1024: N_matmul = 12·(2,362,368 + 4,722,432) + 38,597,376
  // = 85,017,600 + 38,597,376 = 123,614,976;
  // attention 12·12·12·64·1024 = 113,246,208.
  const FlopsPerToken f = flops_per_token(gpt2_124m(), 1024);
  CHECK(count_params(gpt2_124m()).matmul_active() == 123'614'976.0);
  CHECK(f.attention_palm == 113'246'208.0);
  CHECK(f.palm == 6.0 * 123'614'976.0 + 113'246'208.0);
  CHECK(f.six_n == 6.0 * 124'439'808.0);
}

TEST_CASE("a shape with an unknown activation is rejected by name", "[workload][params]") {
  config::ModelSpec m = llama3_8b();
  m.activation = "relu2";
  CHECK_THROWS_WITH(count_params(m), Catch::Contains("activation") && Catch::Contains("relu2"));
  m = llama3_8b();
  m.heads = 30;  // does not divide 4096
  CHECK_THROWS_WITH(count_params(m), Catch::Contains("heads must divide hidden"));
}
