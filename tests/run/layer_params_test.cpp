// The parameters the step builder assigns to each layer, the embedding and the LM head: what
// FSDP gathers and reduce-scatters per unit and what the optimizer updates.
#include <catch2/catch.hpp>
#include <string>

#include "config/load.hpp"
#include "core/records.hpp"
#include "run/layout.hpp"
#include "run/step_costs.hpp"

using namespace ironlaw;

TEST_CASE("Llama 3 8B's layers, embedding and LM head hold its published parameters but the final norm",
          "[run][params]") {
  // Llama 3 8B (meta-llama/Meta-Llama-3-8B, 8,030,261,248 parameters in its safetensors):
  // hidden 4,096, 32 layers, FFN 14,336, 8 KV heads of 128, vocabulary 128,256, RMSNorm.
  // Per layer: Q and O 2·4,096² = 33,554,432, K and V 2·4,096·1,024 = 8,388,608, MLP
  // 3·4,096·14,336 = 176,160,768, two RMSNorm gains 2·4,096 = 8,192: 218,112,000.
  // Embedding and LM head 128,256·4,096 = 525,336,576 each; the final norm 4,096.
  const auto s = config::load_scenario(IRONLAW_SOURCE_DIR "/scenarios/gpt2-1.5b-ddp-multinode.yaml",
                                       {"model=../models/llama3-8b.yaml", "cluster.nodes=1", "parallel.dp=8",
                                        "parallel.microbatch_size=1", "data.storage_bandwidth_per_node=0"});
  const auto lay = run::resolve_layout(s);
  NullSink sink;
  const auto costs = run::detail::build_costs(s, lay, s.training, sink);
  CHECK(costs.layer(0).params == 218112000.0);
  CHECK(costs.layer(0).params - costs.layer(0).linear_params == 8192.0);
  double sum = costs.embed_params + costs.head_params;
  for (int l = 0; l < s.model.layers; ++l) sum += costs.layer(l).params;
  CHECK(sum + 4096.0 == 8030261248.0);
}
