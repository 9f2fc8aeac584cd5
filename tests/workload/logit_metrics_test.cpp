// The training loop's metrics on each microbatch's logits (training.logit_metrics): Composer
// (0.12-0.14 trainer.py, _train_microbatch -> _eval_train_metrics) updates the model's
// train_metrics after every microbatch's backward, under the precision's autocast, and keeps the
// logits (state.outputs) until then; llm-foundry's models list LanguageCrossEntropy and
// LanguagePerplexity, each a torch.nn.CrossEntropyLoss over the logits. Against hand counts.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "config/load.hpp"
#include "workload/model_cost.hpp"
#include "workload/step_memory.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

config::TrainingSpec composer(const std::string& precision, int metrics) {
  config::TrainingSpec t;
  t.sequence_length = 1024;
  t.precision = precision;
  t.optimizer = "sgd";  // no torch.optim state: nothing allocated at the optimizer step
  t.framework = "eager";
  t.fused_cross_entropy = true;
  t.logit_metrics = metrics;
  return t;
}

}  // namespace

TEST_CASE("each logit metric is an eager fp32 cross-entropy over the microbatch's logits", "[workload][ops][loss]") {
  // GPT-2 small, 2 sequences of 1,024: 2,048 × 50,257 = 102,926,336 logits. Under bf16's autocast
  // cross_entropy runs in fp32: the copy (read 2, write 4), log-softmax (read 4, write 4), the NLL
  // gather, the summed loss and the count of targets: 14 B per logit, 5 kernels.
  const double logits = 2.0 * 1024 * 50257;
  const auto bf16 = logit_metric_ops(gpt2_124m(), composer("bf16", 2), 2, 1);
  REQUIRE(bf16.size() == 2);
  for (const Op& op : bf16) {
    CHECK(op.bytes == logits * 14.0);
    CHECK(op.kernels == 5);
    CHECK_FALSE(op.is_gemm());
  }
  CHECK(bf16[0].name != bf16[1].name);
  // fp32 training needs no copy: 8 B per logit, 4 kernels.
  const auto fp32 = logit_metric_ops(gpt2_124m(), composer("fp32", 1), 2, 1);
  REQUIRE(fp32.size() == 1);
  CHECK(fp32[0].bytes == logits * 8.0);
  CHECK(fp32[0].kernels == 4);
  CHECK(logit_metric_ops(gpt2_124m(), composer("bf16", 0), 2, 1).empty());
}

TEST_CASE("the logits are kept for the metrics and each metric holds an fp32 copy and its log-softmax",
          "[workload][memory][loss]") {
  // A vocabulary of 4,000,000 makes the logits outweigh everything else, so the replay's peak is
  // the first metric after the backward: the kept bf16 logits (2 B per logit), the fp32 copy and
  // the fp32 log-softmax (4 B each), and nothing of the forward left.
  config::ModelSpec m = gpt2_124m();
  m.vocab = 4000000;
  config::ParallelSpec p;
  p.microbatch_size = 1;
  StageMemory stage;
  stage.passes = {{true, 0, 0}, {false, 0, 0}};
  stage.chunk_layers = {m.layers};
  const double logits = 1024.0 * 4000000;
  const auto peaks = replay_step_memory(m, composer("bf16", 2), p, 1, stage, byte_granular());
  std::map<std::string, double> ledger(peaks.ledger.begin(), peaks.ledger.end());
  CHECK(ledger["logits kept for metrics"] == logits * 2.0);
  CHECK(ledger["metric buffers"] == logits * 8.0);
  CHECK(ledger.count("saved activations") == 0);
  // Without metrics the logits live only through the loss: the fused loss's 2 × 2 B at its peak.
  const auto none = replay_step_memory(m, composer("bf16", 0), p, 1, stage, byte_granular());
  std::map<std::string, double> plain(none.ledger.begin(), none.ledger.end());
  CHECK(plain.count("logits kept for metrics") == 0);
  CHECK(plain["loss buffers"] == logits * 4.0);
}

TEST_CASE("logit metrics are refused where they are not simulated", "[config][loss]") {
  const std::string scenario = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  CHECK_NOTHROW(config::load_scenario(scenario, {"training.framework=eager", "training.logit_metrics=2"}));
  CHECK_THROWS_WITH(config::load_scenario(scenario, {"training.framework=fused", "training.logit_metrics=2"}),
                    Catch::Contains("training.logit_metrics"));
  CHECK_THROWS_WITH(config::load_scenario(scenario, {"training.framework=eager", "training.logit_metrics=2", "parallel.pp=2"}),
                    Catch::Contains("pp 2"));
  CHECK_THROWS_WITH(config::load_scenario(scenario, {"training.framework=eager", "training.logit_metrics=-1"}),
                    Catch::Contains("training.logit_metrics"));
}
