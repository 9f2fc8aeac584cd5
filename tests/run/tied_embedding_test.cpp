// Tied word embeddings under pipeline parallelism (run/data_parallel.cpp, tied_embedding_reduction):
// the first stage holds the table, the last its copy as the LM head, and the two copies'
// gradients are all-reduced between them every step — before the data-parallel reduction under
// DeepSpeed's engine (ReduceTiedGrads, then ReduceGrads), after it under Megatron
// (finish_grad_sync, then _allreduce_word_embedding_grads). Timelines of tests/run/data/timeline.yaml
// (tiny-dense on the launch-bound node, see timeline_test.cpp) with four layers on two stages in
// two nodes and two data-parallel replicas.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/error.hpp"
#include "core/records.hpp"
#include "timeline_fixture.hpp"

using namespace ironlaw;

namespace {

const std::string kTied = "emb all_reduce tied word embedding";
// tiny-dense: vocabulary 8, hidden 64; the tied table (and its copy) has 8 · 64 parameters.
constexpr double kTable = 8.0 * 64;

std::unique_ptr<run_test::Trace> tied_trace(const std::string& runtime, bool tied, int pp = 2,
                                            std::vector<std::string> extra = {}) {
  std::vector<std::string> set{"model.layers=4",
                               "model.tied_embeddings=" + std::string(tied ? "true" : "false"),
                               "parallel.pp=" + std::to_string(pp),
                               "parallel.dp=2",
                               "cluster.nodes=" + std::to_string(pp),
                               "training.global_batch_tokens=2048"};
  if (pp > 1) set.push_back("parallel.pp_runtime=" + runtime);  // no pipeline runtime without a pipeline
  set.insert(set.end(), extra.begin(), extra.end());
  return run_test::simulate_timeline(set);
}

/// The earliest start and the latest end of the collectives named `name`.
std::pair<std::int64_t, std::int64_t> span(const run_test::Trace& t, const std::string& name) {
  const auto records = t.named(name);
  REQUIRE(!records.empty());
  std::int64_t first = records.front().start_ns, last = 0;
  for (const auto& r : records) last = std::max(last, r.end_ns);
  return {first, last};
}

}  // namespace

TEST_CASE("tied embeddings on two stages all-reduce the table's gradients between them, in the dtype each runtime reduces",
          "[run][pipeline][tied]") {
  // Megatron: main_grad's dtype, the reduce dtype (the parameters' bf16 unless reduce_dtype).
  const auto megatron = tied_trace("megatron", true);
  const auto records = megatron->named(kTied);
  REQUIRE(!records.empty());
  for (const auto& r : records) CHECK(r.bytes == kTable * 2);
  const auto fp32 = tied_trace("megatron", true, 2, {"training.reduce_dtype=fp32"});
  CHECK(fp32->named(kTied).front().bytes == kTable * 4);
  // DeepSpeed: the parameters' gradient, or BF16_Optimizer's fp32 _hp_grad.
  CHECK(tied_trace("deepspeed", true)->named(kTied).front().bytes == kTable * 2);
  const auto hp = tied_trace("deepspeed", true, 2,
                             {"training.bf16_optimizer=true", "training.reduce_dtype=fp32", "parallel.zero=1"});
  CHECK(hp->named(kTied).front().bytes == kTable * 4);
  // Nothing to keep in step: untied tables, or both on one rank.
  CHECK(tied_trace("megatron", false)->named(kTied).empty());
  CHECK(tied_trace("megatron", true, 1)->named(kTied).empty());
}

TEST_CASE("the tied copy's gradient is reduced over data parallelism on the last stage like any other",
          "[run][pipeline][tied]") {
  // DDP's one bucket (ZeRO 0): the last stage holds layers 2-3 and the head — the table's copy
  // when tied, its own 8 · 64 weights when not: the same bytes either way; the first stage holds
  // layers 0-1 and the table, the same again.
  const auto tied = tied_trace("megatron", true);
  const auto untied = tied_trace("megatron", false);
  const auto buckets = [](const run_test::Trace& t, int rank) {
    double bytes = 0;
    for (const auto& e : t.sink.events)
      if (e.kind == EventKind::collective && e.rank == rank && t.sink.names.at(e.name) == "dp all_reduce bucket0")
        bytes += e.bytes;
    return bytes;
  };
  // Ranks in the default [tp, cp, pp, dp] order: rank 0 stage 0, rank 1 stage 1 (replica 0).
  // Layers of 4·64² attention, 2·64·256 MLP and 2·64 norm weights, in bf16.
  const double layer = 4.0 * 64 * 64 + 2.0 * 64 * 256 + 2.0 * 64;
  CHECK(buckets(*tied, 1) == (2 * layer + kTable) * 2);
  CHECK(buckets(*tied, 1) == buckets(*untied, 1));
  CHECK(buckets(*tied, 0) == (2 * layer + kTable) * 2);
}

TEST_CASE("DeepSpeed reduces the tied gradients before the data-parallel gradients, Megatron after them",
          "[run][pipeline][tied]") {
  const auto megatron = tied_trace("megatron", true);
  const auto [dp_start_m, dp_end_m] = span(*megatron, "dp all_reduce bucket0");
  CHECK(span(*megatron, kTied).first >= dp_end_m);
  const auto deepspeed = tied_trace("deepspeed", true);
  const auto [dp_start_d, dp_end_d] = span(*deepspeed, "dp all_reduce bucket0");
  CHECK(span(*deepspeed, kTied).second <= dp_start_d);
  // Either way the two stages' optimizers wait for it.
  for (const auto* t : {megatron.get(), deepspeed.get()}) {
    const auto tied_end = span(*t, kTied).second;
    for (int rank : {0, 1}) CHECK(t->first("optimizer_step", EventKind::optimizer, rank).start_ns >= tied_end);
  }
}

TEST_CASE("torch.distributed.pipelining with a table tied across stages is refused",
          "[run][pipeline][tied][config]") {
  const std::vector<std::string> set{"model.tied_embeddings=true", "parallel.pp=2", "cluster.nodes=2",
                                     "parallel.dp=2", "parallel.pp_runtime=torch"};
  CHECK_THROWS_AS(config::load_scenario(run_test::kTimeline, set), InputError);
  CHECK_THROWS_WITH(config::load_scenario(run_test::kTimeline, set),
                    Catch::Contains("parallel.pp_runtime") && Catch::Contains("tied"));
  // The runtimes that keep the copies in step are accepted.
  std::vector<std::string> megatron = set;
  megatron.back() = "parallel.pp_runtime=megatron";
  CHECK_NOTHROW(config::load_scenario(run_test::kTimeline, megatron));
}
