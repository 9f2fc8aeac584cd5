// Context parallelism (ring attention) and expert parallelism (all-to-all), each checked
// against what its mechanism implies on an otherwise ideal system.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/records.hpp"
#include "run/simulation.hpp"

using namespace ironlaw;

namespace {

const std::string kPipeline = IRONLAW_SOURCE_DIR "/tests/run/data/pipeline.yaml";

run::SimulationResult simulate(const std::vector<std::string>& overrides, RecordSink& sink,
                               run::TraceLevel trace = run::TraceLevel::none) {
  return run::simulate(config::load_scenario(kPipeline, overrides), sink, trace);
}

/// Bytes and count of the communication records named `name`, over all ranks.
std::pair<double, int> traffic(const MemorySink& sink, const std::string& name) {
  double bytes = 0;
  int count = 0;
  for (const auto& e : sink.events) {
    if (e.kind == EventKind::collective && sink.names.at(e.name) == name) {
      bytes += e.bytes;
      ++count;
    }
  }
  return {bytes, count};
}

}  // namespace

TEST_CASE("context parallelism splits a sequence's work evenly over the CP ring", "[run][cp]") {
  // The same global batch on 2 GPUs with cp = 2 takes half the time it takes on 1 GPU: every
  // token-wise op halves, and ring attention gives each rank cp causal blocks of (s/cp)^2/2
  // cells = half of the s^2/2 cells of the whole sequence. The network is ideal.
  NullSink a, b;
  const auto one = simulate({"parallel.pp=1", "parallel.dp=1", "cluster.topology.node.gpus=1"}, a);
  const auto two = simulate({"parallel.pp=1", "parallel.dp=1", "parallel.cp=2", "cluster.topology.node.gpus=2"}, b);
  CHECK(two.step_time_s - two.optimizer_s == Approx((one.step_time_s - one.optimizer_s) / 2).epsilon(0.01));
}

TEST_CASE("ring attention all-gathers K and V once per pass and passes fp32 dK, dV on in backward", "[run][cp]") {
  // cp = 4 on one 4-GPU node, 8 sequences of 2,048 tokens: a rank holds 512 tokens; its K and V
  // block is 512 tokens x 2 x 32 heads x 128 dims x 2 bytes = 8 MiB. As torch's context_parallel
  // runs it (_attention.py: the "allgather" rotation for K/V, _AllToAllRotater for dK/dV), per
  // layer and microbatch: forward one all-gather of the four blocks (32 MiB gathered), backward
  // the same all-gather and, after each of the cp = 4 steps, this rank's dK and dV in fp32
  // (16 MiB) sent to the next rank: 6 records of 2 x 32 + 4 x 16 = 128 MiB, on each CP rank.
  MemorySink sink;
  const auto r = simulate({"parallel.pp=1", "parallel.dp=1", "parallel.cp=4"}, sink, run::TraceLevel::op);
  const auto [bytes, count] = traffic(sink, "cp ring exchange");
  const double block = 512.0 * 2 * 32 * 128 * 2;
  const int layers = 8, microbatches = 8, ranks = 4;
  CHECK(count == (1 + 1 + 4) * layers * microbatches * ranks);
  CHECK(bytes == Approx((2 * 4 * block + 4 * 2 * block) * layers * microbatches * ranks));
  CHECK(r.exposed_comm_s >= 0);
}

TEST_CASE("PyTorch model code rings K and V expanded to every query head — Megatron-style code the grouped ones",
          "[run][cp]") {
  // The model above with grouped-query attention, 8 K/V heads for 32 query heads. torchtitan's
  // Llama (9dec370, models/llama/model.py) calls repeat_kv on K and V before
  // F.scaled_dot_product_attention, so torch's context_parallel gathers the expanded tensors:
  // per rank 512 tokens x 2 x 32 heads x 128 x 2 B = 8 MiB, as with 32 K/V heads; under
  // Megatron-style code (fused: Transformer Engine takes grouped K/V) 8 / 32 of it, 2 MiB. The
  // ring traffic per layer, microbatch and rank is 2 x 4 + 4 x 2 = 16 blocks either way.
  const int layers = 8, microbatches = 8, ranks = 4;
  const double per_block_records = 16.0 * layers * microbatches * ranks;
  for (const char* framework : {"compile", "eager", "fused"}) {
    MemorySink sink;
    simulate({"parallel.pp=1", "parallel.dp=1", "parallel.cp=4", "model.kv_heads=8",
              std::string("training.framework=") + framework},
             sink, run::TraceLevel::op);
    const double heads = std::string(framework) == "fused" ? 8 : 32;
    INFO(framework);
    CHECK(traffic(sink, "cp ring exchange").first == Approx(per_block_records * 512.0 * 2 * heads * 128 * 2));
  }
}

TEST_CASE("expert parallelism sends every routed token copy through an all-to-all", "[run][ep]") {
  // tiny-moe on 4 GPUs, ep = 4 = dp: per MoE layer and microbatch a rank dispatches and
  // combines t*k*h*2 bytes (2,048 tokens x 2 experts x 1,024 x 2 B = 8 MiB each way), forward
  // and backward: 4 all-to-alls; 3 of the 4 layers are MoE layers.
  MemorySink sink;
  const auto r = simulate({"model=tiny-moe.yaml", "parallel.pp=1", "parallel.dp=4", "parallel.ep=4",
                           "run.detail=full", "training.global_batch_tokens=32 Ki"},
                          sink, run::TraceLevel::op);
  const auto [bytes, count] = traffic(sink, "ep all_to_all");
  const int moe_layers = 3, microbatches = 4, ranks = 4;
  CHECK(count == 4 * moe_layers * microbatches * ranks);
  CHECK(bytes == Approx(2048.0 * 2 * 1024 * 2 * 4 * moe_layers * microbatches * ranks));
  CHECK(r.step_time_s > 0);
}

TEST_CASE("MFU of a mixture of experts counts activated parameters only", "[run][ep]") {
  NullSink sink;
  const auto r = simulate({"model=tiny-moe.yaml", "parallel.pp=1", "parallel.dp=4", "parallel.ep=4"}, sink);
  const auto s = config::load_scenario(kPipeline, {"model=tiny-moe.yaml", "parallel.pp=1", "parallel.dp=4", "parallel.ep=4"});
  const auto fpt = workload::flops_per_token(s.model, s.training.sequence_length);
  // By hand, tiny-moe (h 1024, 8 heads of 128, 4 layers, the first dense with f 4096 swiglu,
  // three MoE layers of 2 routed + 1 shared expert of 512 swiglu, 8 experts, vocab 1024, no
  // biases): N_matmul = 4 × 4h² attention (16,777,216) + 3·h·4096 (12,582,912) + 3 × (3 ×
  // 3·h·512 + h·8 router) (14,180,352) + V·h LM head (1,048,576) = 44,589,056; 6N = 267,534,336
  // per token. Attention 12·L·H·Q·T = 12·4·8·128·2048 = 100,663,296. 16 Ki tokens per step.
  CHECK(fpt.palm - fpt.attention_palm == Approx(267534336.0));
  CHECK(r.model_flops_per_step == Approx((267534336.0 + 100663296.0) * 16384));
  const auto params = workload::count_params(s.model);
  // Only the 2 routed experts a token visits (and the shared one) count.
  CHECK(params.matmul_active() < params.total() - params.embedding - params.routed_experts * 0.5);
}
