// How a run of ops splits its time for sharing the GPU with communication (run/gpu_sms.hpp):
// the execution of memory-bound ops, the gaps waiting for the host, and the compute-bound rest.
#include <catch2/catch.hpp>

#include <string>

#include "config/load.hpp"
#include "core/records.hpp"
#include "run/step_costs.hpp"
#include "workload/model_cost.hpp"

using namespace ironlaw;

TEST_CASE("a run of ops knows its memory-bound execution and its host waits", "[run][sms][hbm]") {
  const auto s = config::load_scenario(IRONLAW_SOURCE_DIR "/scenarios/validation/tt-8b-8gpu-eager.yaml");
  const auto& device = s.topology.device;
  NullSink sink;
  run::detail::OpTimer timer(device, "bf16", "eager", sink);
  const Time c = workload::host_dispatch_cost(device, "eager");
  REQUIRE(c > Time::zero());

  workload::Op gemm;  // 8192³: 1.1 TFLOP over 400 MB, compute-bound on any GPU
  gemm.name = "gemm";
  gemm.m = gemm.n = gemm.k = 8192;
  gemm.flops = 2.0 * 8192.0 * 8192.0 * 8192.0;
  gemm.bytes = 3 * 8192.0 * 8192.0 * 2;
  workload::Op norm;  // 1 ms of HBM traffic, no FLOPs: memory-bound
  norm.name = "norm";
  norm.bytes = device.hbm_bandwidth * 1e-3;
  workload::Op tiny;  // 10 kernels of 1 µs of traffic each, launched by the host one by one
  tiny.name = "tiny";
  tiny.bytes = device.hbm_bandwidth * 10e-6;
  tiny.kernels = 10;

  run::detail::TimedOps t;
  timer.add(t, gemm);
  timer.add(t, norm);
  const Time gemm_time = workload::op_time(gemm, device, "bf16");
  REQUIRE(gemm_time > workload::memory_time(gemm, device));
  CHECK(t.memory_bound == Time::from_seconds(1e-3));
  // The queue starts empty: the GEMM's kernel waits for its launch (c); the GEMM then runs long
  // enough for the host to queue the norm behind it.
  CHECK(t.host_wait == c);
  CHECK(t.total == c + gemm_time + Time::from_seconds(1e-3));

  run::detail::TimedOps u;
  timer.add(u, tiny);
  // Each 1 µs kernel waits for its own launch when a launch costs more than it runs: the GPU ends
  // at 10·c + 1 µs, of which 10 µs execute.
  const Time share = Time::from_seconds(1e-6);
  if (c >= share) {
    CHECK(u.host_wait == c * 10 + share - Time::from_seconds(10e-6));
  }
  CHECK(u.memory_bound == Time::from_seconds(10e-6));
  CHECK(u.total == u.memory_bound + u.host_wait);
}

TEST_CASE("the op timer charges a library GEMM the device's library_gemm_call and a library launch "
          "kernel_launch_overhead",
          "[run][host]") {
  auto d = config::load_scenario(IRONLAW_SOURCE_DIR "/scenarios/validation/tt-8b-8gpu-eager.yaml").topology.device;
  d.framework_dispatch["fused"] = Time::us(7);
  d.kernel_launch_overhead = Time::us(4);
  d.library_gemm_call = Time::us(25);
  NullSink sink;
  run::detail::OpTimer timer(d, "bf16", "fused", sink);
  // Three GEMM calls of 1 us (two from the library): 7, 32, 57 issued → 58 us.
  workload::Op gemm;
  gemm.name = "expert_gemm";
  gemm.m = gemm.n = gemm.k = 1;
  gemm.kernels = 3;
  gemm.library_kernels = 2;
  run::detail::TimedOps g;
  timer.add(g, gemm, Time::us(3));
  CHECK(g.total == Time::us(58));
  // Three quantization kernels of 1 us (two from the library): 7, 11, 15 → 16 us.
  workload::Op cast;
  cast.name = "expert_cast";
  cast.bytes = 1;
  cast.kernels = 3;
  cast.library_kernels = 2;
  run::detail::TimedOps c;
  timer.add(c, cast, Time::us(3));
  CHECK(c.total == Time::us(16));
  // Under CUDA graphs every kernel replays at the graph's cost, the library's too.
  d.framework_dispatch["cuda_graphs"] = Time::ns(500);
  run::detail::OpTimer graphs(d, "bf16", "cuda_graphs", sink);
  run::detail::TimedOps r;
  graphs.add(r, gemm, Time::us(3));
  CHECK(r.total == Time::ns(500) + Time::us(3));
}
