// Tensor parallelism as torch's DTensor runs it (PyTorch model code: training.framework eager or
// compile) against Megatron's (framework fused), on the timelines of tests/run/data/timeline.yaml
// (tiny-dense on the launch-bound node, where every kernel takes 1 us: timeline_fixture.hpp)
// with TP 2 and sequence parallelism:
// - autograd's MmBackward computes a linear layer's input and weight gradients in one node, and
//   only then does the redistribute's backward issue the collective (run/step_costs.cpp): no
//   backward kernel runs beside a TP collective, whatever parallel.async_tensor_parallel_allreduce
//   says;
// - the functional collectives over the sequence dimension (Shard(1)) copy their tensors into
//   rank order before a reduce-scatter and back into sequence order after an all-gather
//   (run/model_parallel.hpp, TensorParallel::relayouts): one copy per collective.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/records.hpp"
#include "timeline_fixture.hpp"

using namespace ironlaw;

namespace {

std::unique_ptr<run_test::Trace> sp_trace(const std::string& framework, bool async_allreduce) {
  return run_test::simulate_timeline({"parallel.tp=2", "parallel.dp=1", "parallel.sequence_parallel=true",
                                      "training.framework=" + framework,
                                      std::string("parallel.async_tensor_parallel_allreduce=") +
                                          (async_allreduce ? "true" : "false")});
}

}  // namespace

TEST_CASE("under torch's TP the input gradient's collective waits for the weight gradient", "[run][tp]") {
  // Megatron's fused code overlaps the collective with the weight-gradient GEMM by default...
  CHECK(run_test::backward_kernels_beside_collectives(*sp_trace("fused", true)) > 0);
  // ...torch's autograd order does not, and the key cannot make it: the same step either way.
  const auto torch_default = sp_trace("compile", true);
  const auto torch_blocking = sp_trace("compile", false);
  CHECK(run_test::backward_kernels_beside_collectives(*torch_default) == 0);
  CHECK(torch_default->result.step_time_s == torch_blocking->result.step_time_s);
}

TEST_CASE("torch's sequence-parallel collectives copy their tensors, Megatron's do not", "[run][tp]") {
  const auto torch_tp = sp_trace("compile", true);
  const auto megatron = sp_trace("fused", true);
  const auto scatter = torch_tp->named("tp_scatter_relayout");
  const auto gather = torch_tp->named("tp_gather_relayout");
  CHECK(megatron->named("tp_scatter_relayout").empty());
  CHECK(megatron->named("tp_gather_relayout").empty());
  // One copy on each member per collective: rank 0's copies match its reduce-scatters and
  // all-gathers one for one (a collective is recorded once per member).
  auto of_rank0 = [](std::vector<EventRecord> events) {
    std::erase_if(events, [](const EventRecord& e) { return e.rank != 0; });
    return events;
  };
  const auto rs = of_rank0(torch_tp->named("tp reduce_scatter"));
  const auto ag = of_rank0(torch_tp->named("tp all_gather"));
  REQUIRE_FALSE(rs.empty());
  CHECK(scatter.size() == rs.size());
  CHECK(gather.size() == ag.size());
  // Each copy is one kernel: 1 us on the launch-bound node (the bytes are free at its bandwidth).
  for (const auto& e : scatter) CHECK(run_test::ns(e.end_ns - e.start_ns) == Approx(run_test::task_ns(1)));
  for (const auto& e : gather) CHECK(run_test::ns(e.end_ns - e.start_ns) == Approx(run_test::task_ns(1)));
  // A gather's copy starts once its all-gather has ended; a scatter's ends before its
  // reduce-scatter starts.
  for (std::size_t i = 0; i < gather.size(); ++i) CHECK(gather[i].start_ns >= ag[i].end_ns);
  for (std::size_t i = 0; i < scatter.size(); ++i) CHECK(scatter[i].end_ns <= rs[i].start_ns);
}

TEST_CASE("PyTorch model code on Megatron-style TP layers (parallel.tp_runtime megatron) runs Megatron's collectives",
          "[run][tp]") {
  // Eager code whose linears are Megatron-style Column/RowParallelLinear (fairscale's model-parallel
  // layers): the sequence-first collectives copy nothing, and the input gradient's collective
  // follows parallel.async_tensor_parallel_allreduce as under Megatron's own code.
  auto trace = [](bool async_allreduce) {
    return run_test::simulate_timeline({"parallel.tp=2", "parallel.dp=1", "parallel.sequence_parallel=true",
                                        "training.framework=eager", "parallel.tp_runtime=megatron",
                                        std::string("parallel.async_tensor_parallel_allreduce=") +
                                            (async_allreduce ? "true" : "false")});
  };
  const auto overlapped = trace(true);
  CHECK(overlapped->named("tp_scatter_relayout").empty());
  CHECK(overlapped->named("tp_gather_relayout").empty());
  CHECK(run_test::backward_kernels_beside_collectives(*overlapped) > 0);
  CHECK(run_test::backward_kernels_beside_collectives(*trace(false)) == 0);
  // The same eager code on torch's TP copies around every sequence-dimension collective.
  const auto dtensor = run_test::simulate_timeline(
      {"parallel.tp=2", "parallel.dp=1", "parallel.sequence_parallel=true", "training.framework=eager"});
  CHECK_FALSE(dtensor->named("tp_gather_relayout").empty());
}

TEST_CASE("PyTorch's recompute reruns the layer's all-gathers but not the reduction after its down projection",
          "[run][tp][recompute]") {
  // tiny-dense (3 layers) at TP 2 with sequence parallelism. Per layer and microbatch, Megatron's reentrant
  // full recompute reruns the forward's two reduce-scatter + all-gather pairs (after attn_out
  // and mlp_down). PyTorch's stops at mlp_down's input: the pair after attn_out and an
  // all-gather of the layer input, 1 reduce-scatter and 2 all-gathers. torchtitan's op policy,
  // compiled, keeps attn_out's reduce-scattered output: the two norm outputs' all-gathers only.
  auto collectives = [](const std::string& framework, const std::string& recompute, bool async_tp = false) {
    const auto t = run_test::simulate_timeline({"parallel.tp=2", "parallel.dp=1", "parallel.sequence_parallel=true",
                                                "training.framework=" + framework,
                                                "training.activation_checkpointing=" + recompute,
                                                std::string("parallel.async_tp=") + (async_tp ? "true" : "false")});
    auto count = [&](const std::string& name) {
      auto events = t->named(name);
      std::erase_if(events, [](const EventRecord& e) { return e.rank != 0; });
      return static_cast<int>(events.size());
    };
    return std::pair{count("tp reduce_scatter"), count("tp all_gather")};
  };
  const int layers = 3 * 2;  // layer passes: 3 layers × 2 microbatches (1,024 tokens of 512 with dp 1)
  const auto [fused_rs, fused_ag] = collectives("fused", "none");
  const auto [fused_full_rs, fused_full_ag] = collectives("fused", "full");
  CHECK(fused_full_rs - fused_rs == 2 * layers);
  CHECK(fused_full_ag - fused_ag == 2 * layers);
  const auto [torch_rs, torch_ag] = collectives("compile", "none");
  const auto [torch_full_rs, torch_full_ag] = collectives("compile", "full");
  CHECK(torch_full_rs - torch_rs == layers);
  CHECK(torch_full_ag - torch_ag == 2 * layers);
  const auto [torch_op_rs, torch_op_ag] = collectives("compile", "op");
  CHECK(torch_op_rs == torch_rs);
  CHECK(torch_op_ag - torch_ag == 2 * layers);
  // Under AsyncTP the recompute's GEMMs gather for themselves (fused parts: the column-parallel
  // qkv and mlp_up, 2 per layer pass) and attn_out reduce-scatters fused: the markers add no
  // plain collective.
  const auto [async_rs, async_ag] = collectives("compile", "none", true);
  const auto [async_full_rs, async_full_ag] = collectives("compile", "full", true);
  CHECK(async_full_rs == async_rs);
  CHECK(async_full_ag == async_ag);
}

TEST_CASE("Float8 TP gathers fp8 in the recompute too — only the LM head's and the embedding's gathers stay bf16",
          "[run][tp][recompute][precision]") {
  // tiny-dense at TP 2 with sequence parallelism, compile + fp8 + full recompute, 2 microbatches.
  // Float8 TP casts before the all-gather that feeds a Float8 linear: every gather is fp8 (half
  // of bf16's bytes) but the forward's last (the LM head's input) and the backward's last (the
  // embedding's gradient), one each per microbatch. A recompute's gathers feed its own layer's
  // linears, the last layer's included.
  const auto t = run_test::simulate_timeline({"parallel.tp=2", "parallel.dp=1", "parallel.sequence_parallel=true",
                                              "training.framework=compile", "training.precision=fp8",
                                              "cluster.topology.device.peak_flops.fp8=1e19 FLOPS",
                                              "training.activation_checkpointing=full"});
  std::vector<double> sizes;
  for (const auto& e : t->named("tp all_gather"))
    if (e.rank == 0) sizes.push_back(e.bytes);
  REQUIRE_FALSE(sizes.empty());
  const double bf16 = *std::max_element(sizes.begin(), sizes.end());
  const auto at_bf16 = std::count(sizes.begin(), sizes.end(), bf16);
  const auto at_fp8 = std::count(sizes.begin(), sizes.end(), bf16 / 2);
  CHECK(at_bf16 == 2 * 2);
  CHECK(at_fp8 + at_bf16 == static_cast<long>(sizes.size()));
}
