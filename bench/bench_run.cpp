// Benchmarks of whole scenarios: the wall time to simulate the default scenario's training
// step, with the events and flows it took (make bench).
#include <sys/resource.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "bench.hpp"
#include "config/load.hpp"
#include "core/records.hpp"
#include "run/simulation.hpp"

namespace {

void simulate_scenario(const char* label, const std::string& file, std::vector<std::string> overrides) {
  overrides.push_back("run.steps=1");
  const auto scenario = ironlaw::config::load_scenario(IRONLAW_SOURCE_DIR "/scenarios/" + file, overrides);
  ironlaw::NullSink sink;
  ironlaw::run::SimulationResult result;
  double cpu = 0;
  const double s = ironlaw::bench::wall_seconds([&] {
    cpu = ironlaw::bench::cpu_seconds([&] { result = ironlaw::run::simulate(scenario, sink, ironlaw::run::TraceLevel::none); });
  });
  const std::string base = std::string("run.") + label;
  auto per_cpu_s = [&](std::uint64_t n) { return cpu > 0 ? static_cast<double>(n) / cpu : 0.0; };
  ironlaw::bench::report((base + ".cpu_per_step").c_str(), cpu, "s (user+sys)");
  ironlaw::bench::report((base + ".wall_per_step").c_str(), s, "s");
  // The simulated step to the ns: an exact engine change leaves it (and every figure but the
  // event count) unchanged.
  ironlaw::bench::report((base + ".step_time_ns").c_str(), std::round(result.step_time_s * 1e9), "ns");
  ironlaw::bench::report((base + ".events").c_str(), static_cast<double>(result.events_executed), "events");
  ironlaw::bench::report((base + ".flows").c_str(), static_cast<double>(result.flows_started), "flows");
  ironlaw::bench::report((base + ".flow_records").c_str(), static_cast<double>(result.flow_records), "records");
  ironlaw::bench::report((base + ".resolves").c_str(), static_cast<double>(result.resolves), "re-solves");
  ironlaw::bench::report((base + ".tasks").c_str(), static_cast<double>(result.tasks), "tasks");
  ironlaw::bench::report((base + ".events_per_cpu_s").c_str(), per_cpu_s(result.events_executed), "events/s");
  ironlaw::bench::report((base + ".resolves_per_cpu_s").c_str(), per_cpu_s(result.resolves), "re-solves/s");
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);  // peak so far in this process: run the small cases first
  ironlaw::bench::report((base + ".peak_rss_so_far").c_str(), static_cast<double>(usage.ru_maxrss) / 1024.0, "MiB");
}

void bench_default_scenario() { simulate_scenario("default_llama3_8b_fsdp_128", "llama3-8b-fsdp-128.yaml", {}); }
void bench_gpt2_one_node() { simulate_scenario("gpt2_ddp_1node", "gpt2-ddp-1node.yaml", {}); }
void bench_gpt2_xl_16_nodes() {
  simulate_scenario("gpt2_xl_ddp_16nodes", "gpt2-1.5b-ddp-multinode.yaml", {"cluster.nodes=16"});
}

/// Issue 3's scale target: one step of Llama 3 405B (TP 8, PP 16, 1F1B), at 1,024 GPUs (DP 8,
/// the same 16 microbatches per pipeline) and at 16,384 GPUs (DP 128, the 16M-token batch).
void bench_405b_1k() {
  simulate_scenario("llama3_405b_1k", "llama3-405b-16k.yaml",
                    {"cluster.nodes=128", "parallel.dp=8", "training.global_batch_tokens=1 Mi"});
}
void bench_405b_16k() { simulate_scenario("llama3_405b_16k", "llama3-405b-16k.yaml", {}); }

/// Issue 6's speed targets: GPT-2 small with plain data parallelism on 512 GPUs (64 nodes), one
/// step of 8 × 1,024 tokens per GPU; GPT-3 175B with ZeRO-3 on 1,536 A100s.
void bench_gpt2_512() {
  simulate_scenario("gpt2_ddp_512", "gpt2-ddp-1node.yaml",
                    {"cluster.nodes=64", "training.global_batch_tokens=4 Mi", "parallel.microbatch_size=8"});
}
void bench_175b_zero3() { simulate_scenario("gpt3_175b_zero3_1536", "gpt3-175b-zero3-1536.yaml", {}); }

/// The Megatron-LM 2021 rows with the deepest pipelines (Narayanan et al. SC'21 Table 1): 530B on
/// 2,520 GPUs (pp 35, interleaved, 280 microbatches) and 1T on 3,072 GPUs (pp 64, 512
/// microbatches); `ironlaw validate` and the golden tests simulate both.
void bench_megatron_09() { simulate_scenario("megatron_2021_09_530b", "megatron-2021/09-gpt-530b.yaml", {}); }
void bench_megatron_10() { simulate_scenario("megatron_2021_10_1t", "megatron-2021/10-gpt-1t.yaml", {}); }

// Mixture of experts on the rail relay: Qwen3 30B-A3B on 2 DGX H100 at EP 16 (the mbridge-cards
// row), its HybridEP kernels at their measured rates (one kernel link per GPU and direction of
// use, comm.ep_kernels), and the same step as deepep, at DeepEP's rates (the relay's slower).
void bench_moe_hybridep() {
  simulate_scenario("qwen3_30b_ep16_hybridep", "validation/mbridge-cards/qwen3-30b-16gpu-bf16-card.yaml", {});
}
void bench_moe_deepep() {
  simulate_scenario("qwen3_30b_ep16_deepep", "validation/mbridge-cards/qwen3-30b-16gpu-bf16-card.yaml",
                    {"parallel.moe_dispatcher=deepep"});
}

const ironlaw::bench::Register reg_moe_hybridep("run.qwen3_30b_ep16_hybridep", bench_moe_hybridep);
const ironlaw::bench::Register reg_moe_deepep("run.qwen3_30b_ep16_deepep", bench_moe_deepep);
const ironlaw::bench::Register reg_gpt2_512("run.gpt2_ddp_512", bench_gpt2_512);
const ironlaw::bench::Register reg_175b("run.scale_3_gpt3_175b_zero3_1536", bench_175b_zero3);
const ironlaw::bench::Register reg_m09("run.scale_4_megatron_2021_09", bench_megatron_09);
const ironlaw::bench::Register reg_m10("run.scale_5_megatron_2021_10", bench_megatron_10);
const ironlaw::bench::Register reg_default("run.default_scenario", bench_default_scenario);
const ironlaw::bench::Register reg_405b_1k("run.scale_1_llama3_405b_1k", bench_405b_1k);
const ironlaw::bench::Register reg_405b_16k("run.scale_2_llama3_405b_16k", bench_405b_16k);
const ironlaw::bench::Register reg_gpt2("run.gpt2_ddp_1node", bench_gpt2_one_node);
const ironlaw::bench::Register reg_xl("run.gpt2_xl_ddp_16nodes", bench_gpt2_xl_16_nodes);

}  // namespace
