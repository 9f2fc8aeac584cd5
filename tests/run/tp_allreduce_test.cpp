// The backward all-reduce of a column-parallel linear's input gradient (run/step_costs.hpp,
// OpTimer::Cuts::async_input_grad_allreduce): beside the weight-gradient GEMM under Megatron's
// async_tensor_model_parallel_allreduce (its default since Sept 2021), after it and blocking
// without (parallel.async_tensor_parallel_allreduce: false, Megatron-LM of 2021 and the
// Megatron-DeepSpeed forks). Timelines of tests/run/data/timeline.yaml (tiny-dense on the
// launch-bound node, see timeline_test.cpp) with TP 2.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "core/records.hpp"
#include "timeline_fixture.hpp"

using namespace ironlaw;

namespace {

std::unique_ptr<run_test::Trace> tp_trace(bool async) {
  return run_test::simulate_timeline({"parallel.tp=2", "parallel.dp=1",
                                      std::string("parallel.async_tensor_parallel_allreduce=") + (async ? "true" : "false")});
}

}  // namespace

TEST_CASE("Megatron's async all-reduce runs the input gradient's all-reduce beside the weight gradient",
          "[run][tp]") {
  const auto async = tp_trace(true);
  const auto blocking = tp_trace(false);
  // Async: the qkv and mlp_up wgrad GEMMs of each of the 3 layers (and the LM head's) overlap
  // their all-reduce; blocking: no backward kernel runs while a TP collective is in flight.
  CHECK(run_test::backward_kernels_beside_collectives(*async) > 0);
  CHECK(run_test::backward_kernels_beside_collectives(*blocking) == 0);
  // The blocking order: each qkv wgrad ends before the next TP collective starts (the one that
  // reduces its input gradient), so the step is longer.
  CHECK(blocking->result.step_time_s > async->result.step_time_s);
  // The same work either way: the same kernels and collectives.
  CHECK(blocking->named("qkv_wgrad").size() == async->named("qkv_wgrad").size());
}
