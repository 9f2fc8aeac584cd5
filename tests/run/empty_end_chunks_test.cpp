// Pipeline chunks without a transformer layer: with up to two chunks more than layers the first
// chunk holds the embedding alone and the last the LM head and loss alone (run::split_layers), as
// Llama 3 405B runs 126 layers on 16 stages × 8 chunks (Dubey et al. 2024 §3.3.2: "the first model
// chunk on the first stage has only the embedding, and the last model chunk on the last stage has
// only output projection and loss calculation"; Megatron-core's account_for_embedding_in_pipeline_
// split / account_for_loss_in_pipeline_split). On the ideal node of tests/run/data/pipeline.yaml.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/records.hpp"
#include "run/simulation.hpp"

using namespace ironlaw;

namespace {

const std::string kPipeline = IRONLAW_SOURCE_DIR "/tests/run/data/pipeline.yaml";

/// Forward records of `name` on `rank`.
int forwards(const MemorySink& sink, int rank, const std::string& name) {
  int n = 0;
  for (const auto& e : sink.events)
    if (e.kind == EventKind::forward && e.rank == rank && sink.names.at(e.name) == name) ++n;
  return n;
}

}  // namespace

TEST_CASE("a first chunk of the embedding alone and a last of the LM head alone run no layer",
          "[run][pipeline][layout]") {
  // 6 layers on pp 4 × 2 interleaved chunks = 8 chunks: {0, 1, 1, 1, 1, 1, 1, 0}. Stage 0 holds
  // chunk 0 (the embedding) and chunk 4 (layer 3); stage 3 chunk 3 (layer 2) and chunk 7 (the
  // head); stages 1 and 2 one layer in each of their chunks. 8 microbatches.
  const auto s = config::load_scenario(
      kPipeline, {"model.layers=6", "parallel.pp_schedule=interleaved", "parallel.virtual_stages=2",
                  "cluster.topology.device.memory_allocator=" IRONLAW_SOURCE_DIR "/topologies/pytorch-caching-allocator.yaml"});
  MemorySink sink;
  const auto r = run::simulate(s, sink, run::TraceLevel::op);
  REQUIRE(r.layout.chunk_layers == std::vector<int>{0, 1, 1, 1, 1, 1, 1, 0});
  const int m = r.layout.microbatches;
  REQUIRE(m == 8);
  // One QKV GEMM per layer and microbatch: the end stages run one layer, the middle ones two;
  // the embedding runs on stage 0 only, the LM head on stage 3 only.
  for (int rank = 0; rank < 4; ++rank) {
    INFO("rank " << rank);
    CHECK(forwards(sink, rank, "qkv") == (rank == 0 || rank == 3 ? 1 : 2) * m);
    CHECK(forwards(sink, rank, "embedding") == (rank == 0 ? m : 0));
    CHECK(forwards(sink, rank, "lm_head") == (rank == 3 ? m : 0));
  }
  // The stages replay their memory too; the empty last chunk frees its loss buffers after the
  // head's backward, so the last stage (one layer and the 8-wide head) holds the least.
  REQUIRE(r.memory_by_stage.size() == 4);
  CHECK(r.memory_by_stage[3].allocated < r.memory_by_stage[2].allocated);
  CHECK(r.step_time_s > 0);
}

TEST_CASE("more than two chunks beyond the layers are refused at the key", "[config][pipeline][layout]") {
  CHECK_THROWS_WITH(config::load_scenario(kPipeline, {"model.layers=1"}),
                    Catch::Contains("parallel.pp") && Catch::Contains("model.layers + 2"));
  CHECK_NOTHROW(config::load_scenario(kPipeline, {"model.layers=2"}));
}
