// MoE parallel folding (parallel.expert_tp 1 with tp > 1; Megatron-core's
// --expert-tensor-parallel-size 1): each TP rank routes its own sequence-parallel tokens to whole
// experts on EP ranks drawn from the stage's TP x DP ranks, and the MoE block runs no TP
// collective. Checked against hand counts on tiny-moe.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/error.hpp"
#include "core/records.hpp"
#include "run/layout.hpp"
#include "run/simulation.hpp"
#include "workload/model_cost.hpp"

using namespace ironlaw;

namespace {

const std::string kPipeline = IRONLAW_SOURCE_DIR "/tests/run/data/pipeline.yaml";

// tiny-moe (h 1,024, 4 layers: one dense, three MoE of 8 experts of width 512, 2 per token, and
// one shared expert) without its shared expert, on one ideal node of 4 GPUs: TP 2 × DP 2, one
// 2,048-token sequence per microbatch.
std::vector<std::string> folded(std::vector<std::string> more = {}) {
  std::vector<std::string> o{"model=tiny-moe.yaml",
                             "model.shared_experts=0",
                             "parallel.pp=1",
                             "parallel.tp=2",
                             "parallel.dp=2",
                             "parallel.sequence_parallel=true",
                             "parallel.ep=4",
                             "parallel.expert_tp=1",
                             "training.global_batch_tokens=8 Ki"};
  o.insert(o.end(), more.begin(), more.end());
  return o;
}

const workload::Op* find(const std::vector<workload::Op>& ops, const std::string& name) {
  for (const auto& op : ops)
    if (op.name == name) return &op;
  return nullptr;
}

}  // namespace

TEST_CASE("folded experts run on the rank's own tokens, whole, with no TP role", "[workload][moe][ep]") {
  const config::Scenario s = config::load_scenario(kPipeline, folded());
  const int layer = 1;  // the first MoE layer (one dense layer first)
  const auto ops = workload::layer_forward_ops(s.model, s.training, 1, 2, layer, 4, true, true);
  const auto classic = workload::layer_forward_ops(s.model, s.training, 1, 2, layer, 4, true, false);
  // By hand: 2,048 tokens over TP 2 → 1,024 routed by this rank; each goes to k = 2 experts,
  // spread over the EP group of 4 ranks holding 8 / 4 = 2 experts each: 1,024 · 2 · 4 / 8 = 1,024
  // rows per local expert, each expert whole (SwiGLU up 2 · 512 wide, down 512 deep).
  const auto* router = find(ops, "router");
  REQUIRE(router);
  CHECK(router->m == 1024);
  CHECK(router->n == 8);
  const auto* up = find(ops, "mlp_up");
  const auto* down = find(ops, "mlp_down");
  REQUIRE(up);
  REQUIRE(down);
  CHECK(up->m == 1024);
  CHECK(up->n == 2 * 512);
  CHECK(up->k == 1024);
  CHECK(up->batch == 2);
  CHECK(down->k == 512);
  CHECK(up->role == workload::OpRole::plain);
  CHECK(down->role == workload::OpRole::plain);
  // The permutation copies the rank's 1,024 · 2 token copies of 1,024 values.
  const auto* permute = find(ops, "moe_permute");
  REQUIRE(permute);
  CHECK(permute->bytes == Approx(1024.0 * 2 * 1024 * (1 + 1) * 2));
  // Classic (expert TP = TP): every token, each expert split over TP 2, TP roles.
  CHECK(find(classic, "router")->m == 2048);
  CHECK(find(classic, "mlp_up")->m == 2048);
  CHECK(find(classic, "mlp_up")->n == 512);
  CHECK(find(classic, "mlp_up")->role == workload::OpRole::tp_column_parallel);
  // The same expert FLOPs either way: the work is redistributed, not changed.
  CHECK(up->flops == Approx(find(classic, "mlp_up")->flops));
  // A shared expert stays split over TP as the dense MLP: every token, half its width, TP roles.
  const config::Scenario shared = config::load_scenario(kPipeline, folded({"model.shared_experts=1"}));
  const auto with_shared = workload::layer_forward_ops(shared.model, shared.training, 1, 2, layer, 4, true, true);
  const auto* shared_up = find(with_shared, "shared_up");
  REQUIRE(shared_up);
  CHECK(shared_up->m == 2048);
  CHECK(shared_up->n == 512);  // SwiGLU 2 · 512 over TP 2
  CHECK(shared_up->role == workload::OpRole::tp_column_parallel);
  CHECK(find(with_shared, "mlp_up")->m == 1024);
  // A dense layer is not folded.
  const auto dense = workload::layer_forward_ops(s.model, s.training, 1, 2, 0, 4, true, true);
  CHECK(find(dense, "mlp_up")->role == workload::OpRole::tp_column_parallel);
}

TEST_CASE("a folded EP group takes consecutive TP x DP ranks, TP fastest", "[run][ep]") {
  const config::Scenario s = config::load_scenario(kPipeline, folded());
  const run::Layout lay = run::resolve_layout(s);
  REQUIRE(lay.expert_folded);
  // TP 2 × DP 2 = 4 ranks, EP 4: one group of every rank, in the order (tp 0, dp 0), (tp 1, dp 0),
  // (tp 0, dp 1), (tp 1, dp 1).
  std::vector<int> expected;
  for (int dp = 0; dp < 2; ++dp)
    for (int tp = 0; tp < 2; ++tp) {
      run::Coord c{};
      c[run::Dim::tp] = tp;
      c[run::Dim::dp] = dp;
      expected.push_back(lay.rank_of(c));
    }
  CHECK(lay.ep_group(expected[0]) == expected);
  CHECK(lay.ep_group(expected[3]) == expected);
  CHECK(lay.ep_groups() == 1);
  // EP 2: two groups, each one DP index's two TP ranks.
  const run::Layout two = run::resolve_layout(config::load_scenario(kPipeline, folded({"parallel.ep=2"})));
  CHECK(two.ep_group(expected[0]) == std::vector<int>{expected[0], expected[1]});
  CHECK(two.ep_group(expected[2]) == std::vector<int>{expected[2], expected[3]});
  CHECK(two.ep_groups() == 2);
  CHECK(two.ep_group_index(expected[3]) == 1);
}

TEST_CASE("a folded MoE layer runs no TP collective and all-to-alls over TP x DP", "[run][ep]") {
  // 8 Ki tokens over DP 2: 2 sequences per replica, 2 microbatches of one.
  for (const std::string detail : {"full", "symmetric"}) {
    INFO(detail);
    MemorySink sink;
    const auto r = run::simulate(config::load_scenario(kPipeline, folded({"run.detail=" + detail})), sink,
                                 run::TraceLevel::op);
    REQUIRE(r.step_time_s > 0);
    int tp_collectives = 0, all_to_alls = 0;
    std::set<int> a2a_ranks;
    for (const auto& e : sink.events) {
      if (e.kind != EventKind::collective) continue;
      const std::string& n = sink.names.at(e.name);
      if (n == "ep all_to_all") {
        ++all_to_alls;
        a2a_ranks.insert(e.rank);
      } else if (n.rfind("tp ", 0) == 0) {
        ++tp_collectives;
      }
    }
    // The EP group is all 4 ranks; a rank records 4 all-to-alls per MoE layer and microbatch
    // (dispatch, combine, and both in backward): 4 · 3 layers · 2 microbatches = 24 per rank.
    const int simulated = detail == "full" ? 4 : 2;  // symmetric: one replica, its 2 TP ranks
    CHECK(static_cast<int>(a2a_ranks.size()) == simulated);
    CHECK(all_to_alls == 24 * simulated);
    // Against the same run with each expert split over TP (expert_tp 2, EP 2 along DP): that
    // run's MoE layers also gather their tokens before the experts and reduce-scatter after them,
    // forward and backward — 4 TP collectives per MoE layer and microbatch, 3 · 4 · 2 per rank more.
    MemorySink classic_sink;
    run::simulate(config::load_scenario(kPipeline, folded({"run.detail=" + detail, "parallel.expert_tp=2",
                                                           "parallel.ep=2"})),
                  classic_sink, run::TraceLevel::op);
    int classic_tp = 0;
    for (const auto& e : classic_sink.events)
      if (e.kind == EventKind::collective && classic_sink.names.at(e.name).rfind("tp ", 0) == 0) ++classic_tp;
    CHECK(classic_tp - tp_collectives == 3 * 4 * 2 * simulated);
  }
}

TEST_CASE("folded experts are whole on a rank: E/ep of them", "[run][ep][memory]") {
  const config::Scenario s = config::load_scenario(kPipeline, folded());
  const auto p = workload::count_params(s.model);
  // 3 MoE layers · 8 experts · 3 · 1,024 · 512 (SwiGLU) = 37,748,736 routed weights; folded over
  // EP 4 a rank holds 2 whole experts per layer, a quarter of them, where the rest of the layer
  // is split over TP 2.
  CHECK(p.routed_experts == 3.0 * 8 * 3 * 1024 * 512);
  CHECK(workload::expert_split(s.parallel) == 2.0);  // (rest + routed / 2) / 2 = rest / 2 + routed / 4
  config::ParallelSpec classic = s.parallel;
  classic.expert_tp = 2;
  CHECK(workload::expert_split(classic) == 4.0);  // routed / 4 / 2: each expert halved as well
}

TEST_CASE("expert_tp is refused where folding is not simulated", "[run][ep][config]") {
  CHECK_NOTHROW(config::load_scenario(kPipeline, folded()));
  CHECK_THROWS_AS(config::load_scenario(kPipeline, folded({"parallel.expert_tp=3"})), InputError);
  CHECK_THROWS_AS(config::load_scenario(kPipeline, folded({"parallel.sequence_parallel=false"})), InputError);
  // EP inside TP × DP (4), not DP (2) alone; 8 divides neither.
  CHECK_THROWS_AS(config::load_scenario(kPipeline, folded({"parallel.ep=8"})), InputError);
  CHECK_THROWS_AS(config::load_scenario(kPipeline, folded({"parallel.expert_tp=2"})), InputError);  // ep 4 > dp 2
  // A dense model has nothing to fold.
  CHECK_THROWS_AS(config::load_scenario(kPipeline, {"parallel.pp=1", "parallel.tp=2", "parallel.dp=2",
                                                    "parallel.sequence_parallel=true", "parallel.expert_tp=1"}),
                  InputError);
}

TEST_CASE("routed experts' gradients are reduced over the ranks that hold the same experts", "[run][ep][zero]") {
  // Layout::edp_group by hand. Classic, DP 4 with EP 2 (TP 1): DP indices 0 and 2 hold the same
  // experts, 1 and 3 the others. Folded (TP 2 × DP 2, EP 2): q = tp + 2·dp, same experts where
  // q mod 2 agrees: (tp 0, dp 0) with (tp 0, dp 1).
  const auto classic_s = config::load_scenario(kPipeline, {"model=tiny-moe.yaml", "parallel.pp=1", "parallel.dp=4",
                                                           "parallel.ep=2", "training.global_batch_tokens=8 Ki"});
  const run::Layout classic = run::resolve_layout(classic_s);
  auto rank = [](const run::Layout& l, int tp, int dp) {
    run::Coord c{};
    c[run::Dim::tp] = tp;
    c[run::Dim::dp] = dp;
    return l.rank_of(c);
  };
  CHECK(classic.edp_group(rank(classic, 0, 2)) == std::vector<int>{rank(classic, 0, 0), rank(classic, 0, 2)});
  CHECK(classic.edp_group(rank(classic, 0, 1)) == std::vector<int>{rank(classic, 0, 1), rank(classic, 0, 3)});
  const run::Layout folded_l = run::resolve_layout(config::load_scenario(kPipeline, folded({"parallel.ep=2"})));
  CHECK(folded_l.edp_group(rank(folded_l, 0, 1)) == std::vector<int>{rank(folded_l, 0, 0), rank(folded_l, 0, 1)});
  // EP 4 = TP·DP: every rank alone with its experts.
  const run::Layout alone = run::resolve_layout(config::load_scenario(kPipeline, folded()));
  CHECK(alone.edp_group(rank(alone, 1, 1)).size() == 1);

  // The classic run's gradient buckets (ZeRO 1, reduce-scattered): by hand tiny-moe's routed
  // experts are 3 layers · 8 · 3 · 1,024 · 512 = 37,748,736 weights, 18,874,368 on a rank of EP 2,
  // reduced in bf16 (2 B) over their group of 2: 37,748,736 B in "edp" buckets per rank; every
  // other parameter in the "dp" buckets over all 4 ranks, but the final norm's 1,024 gains (the
  // head unit holds the LM head alone, step_costs.hpp).
  MemorySink sink;
  const auto r = run::simulate(classic_s, sink, run::TraceLevel::op);
  REQUIRE(r.step_time_s > 0);
  double edp_bytes = 0, dp_bytes = 0;
  for (const auto& e : sink.events) {
    if (e.kind != EventKind::collective || e.rank != 0) continue;
    const std::string& n = sink.names.at(e.name);
    if (n.rfind("edp reduce_scatter", 0) == 0) edp_bytes += e.bytes;
    if (n.rfind("dp reduce_scatter", 0) == 0) dp_bytes += e.bytes;
  }
  const double expert_bytes = 3.0 * 8 * 3 * 1024 * 512 / 2 * 2;
  const auto p = workload::count_params(classic_s.model);
  CHECK(edp_bytes == Approx(expert_bytes));
  CHECK(dp_bytes == Approx((p.total() - p.routed_experts - 1024) * 2));
}

TEST_CASE("ZeRO shards the routed experts' state over the ranks that hold the same experts", "[workload][ep][memory]") {
  // Megatron-core's distributed optimizer keeps the experts in buffers of their own, sharded
  // over the expert-data-parallel group. Classic EP 2 on DP 4: 2 ranks hold the same experts;
  // folded EP 4 on TP 2 × DP 2: 1; folded EP 2: 2.
  const auto classic_s = config::load_scenario(kPipeline, {"model=tiny-moe.yaml", "parallel.pp=1", "parallel.dp=4",
                                                           "parallel.ep=2", "training.global_batch_tokens=8 Ki"});
  CHECK(workload::expert_zero_ranks(classic_s.parallel, 4) == 2);
  CHECK(workload::expert_zero_ranks(config::load_scenario(kPipeline, folded()).parallel, 2) == 1);
  CHECK(workload::expert_zero_ranks(config::load_scenario(kPipeline, folded({"parallel.ep=2"})).parallel, 2) == 2);
  // By hand, ZeRO 1 with Adam in bf16 (fp32 master, m, v: 12 B per parameter, sharded): 1,000
  // parameters of which 400 experts, dense over 4 ranks and experts over 2: optimizer
  // 600 · 12 / 4 + 400 · 12 / 2 = 1,800 + 2,400 = 4,200 B; the weights whole (1,000 · 2 B).
  config::TrainingSpec t = classic_s.training;
  t.optimizer = "adam";
  config::ParallelSpec p = classic_s.parallel;
  p.zero = 1;
  const auto m = workload::model_state_memory(1000, 400, t, p, 4);
  CHECK(m.optimizer == Approx(4200));
  CHECK(m.weights == Approx(2000));
  // Without experts it is the plain count.
  CHECK(workload::model_state_memory(1000, 0, t, p, 4).optimizer == Approx(3000));
}
