// llm-foundry's attn_impl: flash (training.attention_unpad): flash_attn.bert_padding's
// unpad_input on Q, K and V around the varlen kernel and pad_input on its output, their
// backward scatters and gather, the host's reads of device values, and the unpadded output the
// kernel keeps. Against hand counts from flash-attn 2.4.2's bert_padding.py.
#include <catch2/catch.hpp>

#include <string>

#include "config/load.hpp"
#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

config::TrainingSpec unpadded(bool unpad) {
  config::TrainingSpec t = bf16_adam_1k("eager");
  t.attention_unpad = unpad;
  return t;
}

std::size_t index_of(const std::vector<Op>& ops, const std::string& name) {
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name == name) return i;
  }
  FAIL("no op named " << name);
  return 0;
}

}  // namespace

TEST_CASE("unpadding gathers Q, K, V before the varlen kernel and scatters its output after it",
          "[workload][ops][attention]") {
  // GPT-2 small, 2 sequences of 1,024 tokens: T = 2,048 rows; Q, K, V of 768 features each.
  const double rows = 2048, features = 768;
  const auto fwd = layer_forward_ops(gpt2_124m(), unpadded(true), 2, 1);
  const Op& unpad = find(fwd, "attn_unpad");
  // torch.gather of the kept rows: read and write 2 B per element of the three tensors.
  CHECK(unpad.bytes == Approx(rows * 3 * features * 2 * 2.0));
  // Per tensor: sum, nonzero (count, size copy, fill), max, .item() copy, cumsum, pad, gather.
  CHECK(unpad.kernels == 27);
  CHECK(unpad.host_syncs == 6);  // nonzero's size and max(seqlens).item(), three times
  const Op& pad = find(fwd, "attn_pad");
  CHECK(pad.bytes == Approx(rows * features * 3 * 2.0));  // zeros written; index_put reads and writes
  CHECK(pad.kernels == 2);
  CHECK(pad.host_syncs == 0);
  CHECK(index_of(fwd, "attn_unpad") + 1 == index_of(fwd, "attn_core"));
  CHECK(index_of(fwd, "attn_core") + 1 == index_of(fwd, "attn_pad"));

  const auto bwd = layer_backward_ops(gpt2_124m(), unpadded(true), 2, 1);
  const Op& pad_bwd = find(bwd, "attn_pad_bwd");
  CHECK(pad_bwd.bytes == Approx(rows * features * 2 * 2.0));  // grad_output[indices]: one gather
  CHECK(pad_bwd.kernels == 1);
  const Op& unpad_bwd = find(bwd, "attn_unpad_bwd");
  CHECK(unpad_bwd.bytes == Approx(rows * 3 * features * 3 * 2.0));  // zeros, then scatter_: 3 × 2 B
  CHECK(unpad_bwd.kernels == 6);
  CHECK(unpad_bwd.host_syncs == 0);
  CHECK(index_of(bwd, "attn_pad_bwd") < index_of(bwd, "attn_core_bwd"));
  CHECK(index_of(bwd, "attn_core_bwd") < index_of(bwd, "attn_unpad_bwd"));

  // The padded path has none of them; a full recompute reruns the forward's, host reads included.
  const auto plain = layer_forward_ops(gpt2_124m(), unpadded(false), 2, 1);
  CHECK_FALSE(has(plain, "attn_unpad"));
  CHECK_FALSE(has(plain, "attn_pad"));
  config::TrainingSpec full = unpadded(true);
  full.activation_checkpointing = "full";
  const auto recompute = layer_recompute_ops(gpt2_124m(), full, 2, 1);
  CHECK(find(recompute, "recompute_attn_unpad").host_syncs == 6);
  CHECK(has(recompute, "recompute_attn_pad"));
}

TEST_CASE("the varlen kernel keeps its unpadded output beside the padded one", "[workload][memory][attention]") {
  config::ParallelSpec p;
  const double per_layer_padded = activation_bytes_per_layer(gpt2_124m(), unpadded(false), p, 2);
  const double per_layer_unpadded = activation_bytes_per_layer(gpt2_124m(), unpadded(true), p, 2);
  CHECK(per_layer_unpadded - per_layer_padded == Approx(2048.0 * 768 * 2));  // T × heads·d_v × 2 B
}

TEST_CASE("a host read of a device value drains the queue the host built up ahead", "[workload][host]") {
  // c = 10 µs per launch. A 1 ms kernel issued at 10 µs runs 10 … 1,010 µs; the host is free at 10 µs.
  HostQueue q(Time::us(10));
  CHECK(q.push(Time::us(1000), 1) == Time::us(1010));
  // Three 10 µs kernels, the op reading two device values: kernel 0 issued at 20 µs runs
  // 1,010 … 1,020; kernel 1 waits for it (1,020) and is issued at 1,030, runs 1,030 … 1,040;
  // kernel 2 waits (1,040), issued at 1,050, runs 1,050 … 1,060: 30 µs of work, 20 µs idle.
  CHECK(q.push(Time::us(30), 3, 2) == Time::us(50));
  CHECK(q.gpu_end() == Time::us(1060));
  // Without the reads the three kernels queue behind the long one and run back to back.
  HostQueue ahead(Time::us(10));
  ahead.push(Time::us(1000), 1);
  CHECK(ahead.push(Time::us(30), 3) == Time::us(30));
  // More reads than kernels after the first are as many as there are.
  HostQueue clamped(Time::us(10));
  clamped.push(Time::us(1000), 1);
  CHECK(clamped.push(Time::us(30), 3, 5) == Time::us(50));
}

TEST_CASE("unpadding is refused where it is not simulated", "[config][attention]") {
  const std::string mha = IRONLAW_SOURCE_DIR "/scenarios/gpt2-ddp-1node.yaml";
  CHECK_NOTHROW(config::load_scenario(mha, {"training.framework=eager", "training.attention_unpad=true"}));
  CHECK_THROWS_WITH(config::load_scenario(mha, {"training.framework=eager", "training.attention_unpad=true",
                                                "training.attention_kernel=flash_triton"}),
                    Catch::Contains("training.attention_unpad"));
  CHECK_THROWS_WITH(config::load_scenario(mha, {"training.framework=eager", "training.attention_unpad=true",
                                                "training.flash_attention=false"}),
                    Catch::Contains("training.attention_unpad"));
  CHECK_THROWS_WITH(config::load_scenario(mha, {"training.framework=eager", "training.attention_unpad=true",
                                                "training.activation_checkpointing=selective"}),
                    Catch::Contains("training.attention_unpad"));
  // Grouped K/V (Llama 3 8B: 8 K/V heads for 32): llm-foundry would repeat them first.
  const std::string gqa = IRONLAW_SOURCE_DIR "/scenarios/llama3-8b-fsdp-128.yaml";
  CHECK_THROWS_WITH(config::load_scenario(gqa, {"training.attention_unpad=true"}),
                    Catch::Contains("K/V heads"));
}
