// Op roles: the workload says what each op is to the schedulers (OpRole), and the run layer
// cuts passes by role. Renaming an op must not move or drop a sync point.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/records.hpp"
#include "run/step_costs.hpp"
#include "workload/model_cost.hpp"

using namespace ironlaw;
using run::detail::After;
using workload::OpRole;

namespace {

const std::string kPipeline = IRONLAW_SOURCE_DIR "/tests/run/data/pipeline.yaml";

/// `ops` cut under TP (and EP when `experts`), the input gradients' all-reduces beside the
/// weight gradients unless `async_allreduce` is false.
run::detail::PartList parts(const std::vector<workload::Op>& ops, bool experts = false, bool async_allreduce = true) {
  const auto s = config::load_scenario(kPipeline);
  NullSink sink;
  run::detail::OpTimer timer(s.topology.device, "bf16", "fused", sink);
  run::detail::OpTimer::Cuts c;
  c.tensor_parallel = true;
  c.expert_parallel = experts;
  c.async_input_grad_allreduce = async_allreduce;
  return timer.parts(ops, c);
}

/// What follows each part of `ops` cut under TP (and EP when `experts`).
std::vector<After> cuts(const std::vector<workload::Op>& ops, bool experts = false) {
  std::vector<After> out;
  for (const auto& part : parts(ops, experts)) out.push_back(part.after);
  return out;
}

std::vector<workload::Op> renamed(std::vector<workload::Op> ops) {
  for (auto& op : ops) op.name = "renamed_" + op.name;
  return ops;
}

}  // namespace

TEST_CASE("Megatron's sync points are the roles of the ops", "[run][roles][tp]") {
  const auto s = config::load_scenario(kPipeline);
  const auto fwd = workload::layer_forward_ops(s.model, s.training, 1, 2);
  const auto bwd = workload::layer_backward_ops(s.model, s.training, 1, 2);
  auto role_of = [](const std::vector<workload::Op>& ops, const std::string& name) {
    for (const auto& op : ops)
      if (op.name == name) return op.role;
    FAIL("no op " << name);
    return OpRole::plain;
  };
  CHECK(role_of(fwd, "qkv") == OpRole::tp_column_parallel);
  CHECK(role_of(fwd, "attn_out") == OpRole::tp_row_parallel);
  CHECK(role_of(fwd, "mlp_up") == OpRole::tp_column_parallel);
  CHECK(role_of(fwd, "mlp_down") == OpRole::tp_row_parallel);
  CHECK(role_of(fwd, "attn_core") == OpRole::attention_core);
  CHECK(role_of(fwd, "norm_attn") == OpRole::plain);
  CHECK(role_of(bwd, "qkv_dgrad") == OpRole::tp_column_input_grad);
  CHECK(role_of(bwd, "qkv_wgrad") == OpRole::weight_grad);
  CHECK(role_of(bwd, "attn_out_dgrad") == OpRole::tp_row_input_grad);
  CHECK(role_of(bwd, "mlp_down_dgrad") == OpRole::tp_row_input_grad);
  CHECK(role_of(bwd, "attn_core_bwd") == OpRole::attention_core_grad);
  const auto root = workload::head_forward_ops(s.model, s.training, 1, 2);
  CHECK(role_of(root, "embedding") == OpRole::vocab_embedding);
  CHECK(role_of(root, "lm_head") == OpRole::tp_column_parallel);
  const auto rec = workload::layer_recompute_ops(s.model, s.training, 1, 2);
  for (const auto& op : rec) CHECK(op.role == OpRole::attention_core);  // selective: the core, role kept
}

TEST_CASE("a layer under TP has two forward all-reduces and two async backward ones, whatever the op names",
          "[run][roles][tp]") {
  // Megatron (Shoeybi et al. 2019, Fig. 3): f and g operators — one all-reduce after the
  // attention block and one after the MLP in forward, one per block's input gradient in
  // backward (overlapping the weight gradient that follows).
  const auto s = config::load_scenario(kPipeline);
  const auto fwd = workload::layer_forward_ops(s.model, s.training, 1, 2);
  const auto bwd = workload::layer_backward_ops(s.model, s.training, 1, 2);
  for (const auto& ops : {fwd, renamed(fwd)}) {
    const auto c = cuts(ops);
    CHECK(std::count(c.begin(), c.end(), After::sync) == 2);
    CHECK(std::count(c.begin(), c.end(), After::sync_async) == 0);
  }
  for (const auto& ops : {bwd, renamed(bwd)}) {
    const auto c = cuts(ops);
    CHECK(std::count(c.begin(), c.end(), After::sync_async) == 2);
    CHECK(std::count(c.begin(), c.end(), After::sync) == 0);
  }
}

TEST_CASE("the MoE markers cut a pass for the expert all-to-alls, whatever their names", "[run][roles][ep]") {
  const auto s = config::load_scenario(kPipeline, {"model=tiny-moe.yaml"});
  const auto fwd = workload::layer_forward_ops(s.model, s.training, 1, 1, 1, 4);  // layer 1 is a MoE layer
  for (const auto& ops : {fwd, renamed(fwd)}) {
    const auto c = cuts(ops, true);
    CHECK(std::count(c.begin(), c.end(), After::all_to_all) == 2);  // dispatch and combine
  }
}

TEST_CASE("without Megatron's async all-reduce, a column-parallel linear's input gradient is all-reduced after its "
          "weight gradient, blocking",
          "[run][roles][tp]") {
  // Megatron-LM before 2021-08-30 and the Megatron-DeepSpeed forks: copy_to_tensor_model_parallel_region
  // then F.linear, so autograd's linear node computes dgrad and wgrad, then the copy's backward
  // all-reduces. The two async all-reduces become two blocking ones, each after its wgrad.
  const auto s = config::load_scenario(kPipeline);
  const auto bwd = workload::layer_backward_ops(s.model, s.training, 1, 2);
  const auto split = parts(bwd, false, false);
  std::vector<After> c;
  for (const auto& part : split) c.push_back(part.after);
  CHECK(std::count(c.begin(), c.end(), After::sync_async) == 0);
  CHECK(std::count(c.begin(), c.end(), After::sync) == 2);
  // Each sync part ends with the weight gradient of the linear whose input gradient it reduces.
  for (const auto& part : split) {
    if (part.after != After::sync) continue;
    REQUIRE(part.ops.ops.size() >= 2);
    const auto& last = part.ops.ops.back();
    const auto& before = part.ops.ops[part.ops.ops.size() - 2];
    CHECK(last.role == OpRole::weight_grad);
    CHECK(before.role == OpRole::tp_column_input_grad);
  }
  // Nothing is lost or reordered: the parts hold the backward's ops in order.
  std::vector<std::string> names;
  for (const auto& part : split)
    for (const auto& op : part.ops.ops) names.push_back(op.name);
  REQUIRE(names.size() == bwd.size());
  for (std::size_t i = 0; i < bwd.size(); ++i) CHECK(names[i] == bwd[i].name);
}
