#include "report/validation.hpp"

#include <stdexcept>

#include "comm/collective.hpp"
#include "config/load.hpp"
#include "workload/budget.hpp"

namespace ironlaw::report {

namespace {

/// Seed 003's arithmetic (../shared/seeds/README.md): the calculator must reproduce it.
ValidationCase seed003() {
  ValidationCase c{"seed003", "the 6ND training-compute arithmetic of seed 003 (ironlaw budget)", {}};
  const std::string src = "seed 003 (../shared/seeds/README.md)";
  const auto l8 = workload::compute_budget(workload::find_budget_preset("llama3-8b")->inputs);
  c.rows.push_back({"Llama 3 8B 6ND", 722.7, l8.six_nd.flops / 1e21, "ZFLOP", src});
  c.rows.push_back({"Llama 3 8B attention", 96.65, l8.attention_flops / 1e21, "ZFLOP", src});
  c.rows.push_back({"Llama 3 8B GPU-hours at MFU 0.4", 507201, l8.six_nd.gpu_hours, "h", src});
  c.rows.push_back({"Llama 3 8B wall days on 1,024", 20.6, l8.six_nd.wall_days, "d", src});
  c.rows.push_back({"Llama 3 8B cost at $2.5/h", 1268002, l8.six_nd.cost, "USD", src});
  c.rows.push_back({"Llama 3 8B implied MFU", 15.6, 100 * l8.implied_mfu.value_or(0), "%", src});
  const auto l70 = workload::compute_budget(workload::find_budget_preset("llama3-70b")->inputs);
  c.rows.push_back({"Llama 3 70B implied MFU", 27.9, 100 * l70.implied_mfu.value_or(0), "%", src});
  const auto g3 = workload::compute_budget(workload::find_budget_preset("gpt3-175b")->inputs);
  c.rows.push_back({"GPT-3 175B 6ND vs published 314.5", 315.0, g3.six_nd.flops / 1e21, "ZFLOP", src});
  return c;
}

/// nccl-tests all_reduce_perf bus bandwidth on DGX H100, against the simulated collective.
ValidationCase nccl_h100(const std::string& data_dir) {
  ValidationCase c{"nccl-h100", "ring all-reduce bus bandwidth on DGX H100 (ironlaw collective)", {}};
  const auto topo = config::load_topology(data_dir + "/topologies/dgx-h100-leaf-spine.yaml");
  const double size = 8.0 * 1024 * 1024 * 1024;
  const auto one = comm::bench_collective(topo, 1, comm::CollectiveOp::all_reduce, size, size, 2);
  c.rows.push_back({"all_reduce busbw, 1 node (8 GPUs), 8 GiB", 370, one.back().busbw_gbs, "GB/s",
                    "NVIDIA maintainer, nccl-tests issue #212 (../shared/reference/calibration.md)"});
  return c;
}

}  // namespace

std::vector<std::string> validation_case_names() { return {"seed003", "nccl-h100"}; }

ValidationCase run_validation(const std::string& name, const std::string& data_dir) {
  if (name == "seed003") return seed003();
  if (name == "nccl-h100") return nccl_h100(data_dir);
  throw std::invalid_argument("unknown validation case \"" + name + "\"");
}

}  // namespace ironlaw::report
