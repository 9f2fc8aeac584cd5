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

#include <memory>
#include <string>
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
