// The step's allocations replayed through the caching allocator: with byte-granular rules the
// replayed peak is memory_per_gpu's sum of terms (the same tensors, placed in time); with
// PyTorch's rules the reserved peak exceeds it by rounding and fragmentation only.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "workload/model_cost.hpp"
#include "workload/step_memory.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

/// SGD without momentum: no torch.optim state, so the optimizer step allocates nothing and the
/// step's peak is in its forward or backward (AdamW's step is tested on its own).
config::TrainingSpec bf16_sgd(const std::string& recompute) {
  config::TrainingSpec t;
  t.precision = "bf16";
  t.optimizer = "sgd";
  t.sequence_length = 8192;
  t.activation_checkpointing = recompute;
  t.framework = "compile";
  return t;
}

config::TrainingSpec bf16_adam(const std::string& recompute) {
  config::TrainingSpec t;
  t.precision = "bf16";
  t.optimizer = "adam";
  t.sequence_length = 8192;
  t.activation_checkpointing = recompute;
  t.framework = "compile";
  return t;
}

/// GPipe order of the whole model on one rank (no pipeline): every forward, then every
/// backward (last in, first out).
StageMemory gpipe(const config::ModelSpec& model, int microbatches) {
  StageMemory out;
  for (int m = 0; m < microbatches; ++m) out.passes.push_back({true, m, 0});
  for (int m = microbatches - 1; m >= 0; --m) out.passes.push_back({false, m, 0});
  out.chunk_layers = {model.layers};
  out.microbatches = microbatches;
  return out;
}

/// torchtitan's 405B run of table 5 (benchmarks/llama3_h100_202412_torchtitan.md): sequence
/// 8,192, compile + Float8 with fp8 all-gather, AdamW, full recompute, fp32 reduce, expandable
/// segments; FSDP (ZeRO 3) × TP 8 with sequence parallelism × PP 8, microbatches of 4.
config::TrainingSpec torchtitan_405b_training() {
  config::TrainingSpec t;
  t.sequence_length = 8192;
  t.precision = "fp8";
  t.framework = "compile";
  t.optimizer = "adam";
  t.activation_checkpointing = "full";
  t.reduce_dtype = "fp32";
  t.fp8_all_gather = true;
  t.expandable_segments = true;
  return t;
}
/// One rank's ZeRO-3 (PyTorch FSDP at pp 1) with one sequence per microbatch: the FSDP replay tests.
config::ParallelSpec zero3_one_sequence() {
  config::ParallelSpec par;
  par.microbatch_size = 1;
  par.zero = 3;
  return par;
}

/// The bytes of `kind` alive at the replay's allocated peak (0 if none).
double ledger_bytes(const StepMemoryPeaks& peaks, const std::string& kind) {
  for (const auto& [k, bytes] : peaks.ledger)
    if (k == kind) return bytes;
  return 0.0;
}

config::ParallelSpec torchtitan_405b_parallel() {
  config::ParallelSpec par;
  par.tp = 8;
  par.pp = 8;
  par.zero = 3;
  par.sequence_parallel = true;
  par.microbatch_size = 4;
  return par;
}

}  // namespace

TEST_CASE("the replayed peak of live tensors is memory_per_gpu's sum of terms", "[workload][memory][allocator]") {
  const auto model = llama3_8b();
  config::ParallelSpec par;
  par.tp = 2;
  par.microbatch_size = 1;
  for (const char* policy : {"none", "full"}) {
    const auto t = bf16_sgd(policy);
    const int microbatches = 2;
    const double expected = memory_per_gpu(model, t, par, 1, microbatches).total();
    const StepMemoryPeaks peaks = replay_step_memory(model, t, par, 1, gpipe(model, microbatches), byte_granular());
    // Each of the ~10^2 tensors is rounded up to a whole byte: < 1e-9 of ~10^11 B.
    CHECK(peaks.allocated == Approx(expected).epsilon(1e-9));
    CHECK(peaks.reserved >= peaks.allocated);
  }
}

TEST_CASE("with equal tensors every step, the second step reuses the first one's cache", "[workload][memory][allocator]") {
  // Byte-granular classic segments: a freed block of exactly the size asked for is found again,
  // so nothing is reserved beyond the live peak.
  const auto model = llama3_8b();
  config::ParallelSpec par;
  par.microbatch_size = 1;
  const auto t = bf16_sgd("none");
  const StepMemoryPeaks peaks = replay_step_memory(model, t, par, 1, gpipe(model, 1), byte_granular());
  CHECK(peaks.reserved == peaks.allocated);
}

TEST_CASE("PyTorch's rules reserve more than the live tensors, by rounding and fragmentation", "[workload][memory][allocator]") {
  const auto model = llama3_8b();
  config::ParallelSpec par;
  par.microbatch_size = 2;
  par.zero = 3;
  auto t = bf16_adam("op");
  t.reduce_dtype = "fp32";
  const StepMemoryPeaks exact = replay_step_memory(model, t, par, 8, gpipe(model, 1), byte_granular());
  for (bool expandable : {false, true}) {
    AllocatorRules rules;
    rules.expandable_segments = expandable;
    const StepMemoryPeaks real = replay_step_memory(model, t, par, 8, gpipe(model, 1), rules);
    CHECK(real.allocated >= exact.allocated);
    CHECK(real.reserved > real.allocated);
  }
}

TEST_CASE("the replay refuses an empty schedule, a chunk out of range and a chunk of no layers", "[workload][memory][allocator]") {
  const auto model = llama3_8b();
  config::ParallelSpec par;
  const auto t = bf16_adam("none");
  StageMemory stage = gpipe(model, 1);
  stage.passes.clear();
  CHECK_THROWS_AS(replay_step_memory(model, t, par, 1, stage, AllocatorRules{}), std::invalid_argument);
  stage.passes = {{true, 0, 1}};
  CHECK_THROWS_AS(replay_step_memory(model, t, par, 1, stage, AllocatorRules{}), std::invalid_argument);
  stage = gpipe(model, 1);
  stage.chunk_layers = {0};
  CHECK_THROWS_AS(replay_step_memory(model, t, par, 1, stage, AllocatorRules{}), std::invalid_argument);
}

TEST_CASE("the replay reproduces torchtitan's 405B memory gap between 1F1B and interleaved 1F1B", "[workload][memory][allocator]") {
  // Published (torchtitan benchmarks/llama3_h100_202412_torchtitan.md, table 5; shared/reference
  // calibration.md): Llama 3.1 405B, FSDP 8 × TP 8 × PP 8, local batch 32 in 8 microbatches of
  // 4, full recompute, Float8, max reserved 82.5 GiB with 1F1B and 72.7 GiB interleaved (2
  // chunks per stage): 9.8 GiB less. The in-flight bound of memory_per_gpu gives both the same;
  // the replay must find the gap from the order alone. Stage 0's orders
  // (run::make_schedule(...)->order(0, 8, 8, v)): 1F1B F0…F7 then B0…B7; interleaved F of
  // chunk 0 for microbatches 0…7, then chunk 1, then B of chunk 1, then chunk 0.
  const auto model = llama3_405b();
  const config::TrainingSpec t = torchtitan_405b_training();
  const config::ParallelSpec par = torchtitan_405b_parallel();
  // Stage 0 holds the embedding and the first layers (15 for 1F1B, 7 + 8 interleaved: the
  // first and last of the 8 or 16 stages take the shortfall of 126 layers, run::split_layers).
  StageMemory one_f_one_b, interleaved;
  for (int m = 0; m < 8; ++m) one_f_one_b.passes.push_back({true, m, 0});
  for (int m = 0; m < 8; ++m) one_f_one_b.passes.push_back({false, m, 0});
  one_f_one_b.chunk_layers = {15};
  for (int c : {0, 1})
    for (int m = 0; m < 8; ++m) interleaved.passes.push_back({true, m, c});
  for (int c : {1, 0})
    for (int m = 0; m < 8; ++m) interleaved.passes.push_back({false, m, c});
  interleaved.chunk_layers = {7, 8};
  for (StageMemory* stage : {&one_f_one_b, &interleaved}) {
    stage->last = false;
    stage->microbatches = 8;
    stage->torch_pipelining = true;
  }
  AllocatorRules rules;
  rules.expandable_segments = true;
  const double gib = 1024.0 * 1024 * 1024;
  const double a = replay_step_memory(model, t, par, 8, one_f_one_b, rules).reserved / gib;
  const double b = replay_step_memory(model, t, par, 8, interleaved, rules).reserved / gib;
  INFO("1F1B " << a << " GiB, interleaved " << b << " GiB");
  CHECK(a - b == Approx(82.5 - 72.7).epsilon(0.25));
}

TEST_CASE("the ledger of torchtitan's 405B 1F1B stage 0 at its peak is the hand ledger", "[workload][memory][allocator]") {
  // torchtitan table 5 (FSDP 8 × TP 8 × PP 8, 8 microbatches of 4 × 8,192, full recompute,
  // compile + Float8 with fp8 all-gather, fp32 reduce, torch.distributed.pipelining), stage 0:
  // 15 layers and the embedding (torchtitan 9dec370 generate_split_points: 15 on the first
  // stage). Hand numbers per TP rank: a layer holds (2·16,384² + 2·16,384·1,024 + 3·16,384·
  // 53,248 + 2·16,384)/8 = 398,462,976 parameters (4,096 of them norm gains), the embedding
  // 128,256·16,384/8 = 262,668,288; 6,239,612,928 on the stage. The peak of live tensors is in
  // the first layer's backward of microbatch 0 (the first backward, after all 8 forwards), where:
  // - fp32 gradients accumulated unsharded, every unit (FSDP2 to_accumulated_grad_if_needed
  //   under set_requires_gradient_sync(False)): 6,239,612,928 · 4 B;
  // - optimizer state, the fp32 master shard and AdamW's two moments: 6,239,612,928 · 12 B / 8;
  // - the gathered weights, not resharded after forward: the linear weights in fp8 (1 B),
  //   the norm gains and the embedding in bf16: 15·(398,458,880 + 2·4,096) + 2·262,668,288;
  // - saved block inputs (full recompute, sequence-parallel: 4·8,192/8 tokens × 16,384 × 2 B =
  //   128 MiB): microbatches 1 … 7 through 15 layers and microbatch 0's first layer, 106;
  // - the recomputed layer (everything policy none keeps, per token: norm inputs 2·2h/8 = 8,192,
  //   the two gathered fp8 norm outputs 2·16,384 = 32,768, Q, the expanded K and V and O
  //   2·4·2,048 = 16,384, log-sum-exp 4·16 = 64, SwiGLU 3·2·6,656 = 39,936: 97,344 B, less the
  //   block input the recompute reuses, 2h/8 = 4,096: 93,248 B) for 32,768 tokens, and its fresh
  //   bf16 gradients 398,462,976 · 2 B;
  // - the gradients that layer's backward holds (backward_gradient_bytes): its output gradient,
  //   sequence-parallel, 16,384/8 = 2,048 per token, and the gate projection's input gradient
  //   written beside the up projection's, both every token (2·16,384), with the gate's
  //   pre-activation gradient (53,248/8 = 6,656): 2,048 + 39,424 elements of 2 B per token;
  // - torch pipelining's 8 gradient receive buffers and 8 kept outputs of 128 MiB each.
  const auto model = llama3_405b();
  const config::TrainingSpec t = torchtitan_405b_training();
  const config::ParallelSpec par = torchtitan_405b_parallel();
  StageMemory stage;
  for (int m = 0; m < 8; ++m) stage.passes.push_back({true, m, 0});
  for (int m = 0; m < 8; ++m) stage.passes.push_back({false, m, 0});
  stage.chunk_layers = {15};
  stage.last = false;
  stage.microbatches = 8;
  stage.torch_pipelining = true;
  AllocatorRules rules;
  rules.expandable_segments = true;
  const StepMemoryPeaks peaks = replay_step_memory(model, t, par, 8, stage, rules);
  const double params = 15 * 398'462'976.0 + 262'668'288.0;
  const double mib128 = 128.0 * 1024 * 1024;
  const std::vector<std::pair<std::string, double>> hand = {
      {"accumulated gradients", params * 4},
      {"backward gradients", 32768.0 * 2 * (2048 + 39'424)},
      {"fresh gradients", 398'462'976.0 * 2},
      {"optimizer state", params * 12 / 8},
      {"pp outputs kept", 8 * mib128},
      {"pp receive buffers", 8 * mib128},
      {"recomputed activations", 32768.0 * 93'248},
      {"saved activations", 106 * mib128},
      {"unsharded weights", 15 * (398'458'880.0 + 2 * 4096) + 2 * 262'668'288.0},
  };
  REQUIRE(peaks.ledger.size() == hand.size());
  double sum = 0;
  for (std::size_t i = 0; i < hand.size(); ++i) {
    INFO(peaks.ledger[i].first << ": " << peaks.ledger[i].second << " B");
    CHECK(peaks.ledger[i].first == hand[i].first);
    CHECK(peaks.ledger[i].second == Approx(hand[i].second).epsilon(1e-4));  // 512-B block rounding
    sum += peaks.ledger[i].second;
  }
  CHECK(sum == Approx(peaks.allocated));
}

namespace {

/// Llama 3 8B layers on one pipeline rank of tp 1, microbatches of one 8,192-token sequence,
/// full recompute, GPipe order: every forward, then every backward.
StageMemory pipeline_rank(int layers, bool first, bool last, int microbatches, bool torch) {
  StageMemory out;
  for (int m = 0; m < microbatches; ++m) out.passes.push_back({true, m, 0});
  for (int m = microbatches - 1; m >= 0; --m) out.passes.push_back({false, m, 0});
  out.chunk_layers = {layers};
  out.first = first;
  out.last = last;
  out.microbatches = microbatches;
  out.torch_pipelining = torch;
  return out;
}

config::ParallelSpec pipeline_of(int pp) {
  config::ParallelSpec par;
  par.pp = pp;
  par.microbatch_size = 1;
  return par;
}

// Hand numbers for Llama 3 8B at 8,192 tokens, bf16: the tensor passed between stages is
// 8,192 × 4,096 × 2 B = 67,108,864 B (A); the logits 8,192 × 128,256 = 1,050,673,152 (V·s); the
// embedding and the LM head 525,336,576 parameters each, the final norm 4,096.
constexpr double kBoundary = 8192.0 * 4096 * 2;
constexpr double kLogits = 8192.0 * 128256;
constexpr double kTable = 128256.0 * 4096;

}  // namespace

TEST_CASE("the first pipeline stage holds the embedding, the last the LM head, the final norm and the loss",
          "[workload][memory][allocator]") {
  const auto model = llama3_8b();
  const auto t = bf16_sgd("full");
  const auto par = pipeline_of(4);
  auto peak = [&](bool first, bool last) {
    return replay_step_memory(model, t, par, 1, pipeline_rank(2, first, last, 1, false), byte_granular()).allocated;
  };
  const double middle = peak(false, false);
  // ZeRO 0, mixed-precision SGD: bf16 weights and gradients and the fp32 master, 8 B per
  // parameter, held for the step.
  CHECK(peak(true, false) - middle == Approx(8 * kTable).epsilon(1e-9));
  // The last stage: the LM head's and final norm's state, and the loss buffers of one microbatch
  // (compile: 12 B per logit, loss_bytes_per_logit) around the backward of its first layer,
  // where the peak is, with the LM head's kept input (8,192 × 4,096 × 2 B = A, head_input_bytes).
  CHECK(peak(false, true) - middle == Approx(8 * (kTable + 4096) + 12 * kLogits + kBoundary).epsilon(1e-9));
}

TEST_CASE("torch pipelining holds a receive buffer per microbatch, every output and every input gradient",
          "[workload][memory][allocator]") {
  const auto model = llama3_8b();
  const auto t = bf16_sgd("full");
  const auto par = pipeline_of(4);
  auto peak = [&](bool first, bool last, bool torch) {
    return replay_step_memory(model, t, par, 1, pipeline_rank(2, first, last, 2, torch), byte_granular()).allocated;
  };
  // A middle stage, 2 layers, 2 microbatches, full recompute (each layer saves its input, A).
  // Megatron: both microbatches' 4 saved inputs are alive when backward starts, 4A. torch: 2
  // activation and 2 gradient receive buffers (4A), the first layer's input is its receive
  // buffer (2 saved inputs fewer), both outputs are kept (2A): 8A at the start of backward and
  // again in the last backward (one saved input fewer, one input gradient more). 4A more.
  CHECK(peak(false, false, true) - peak(false, false, false) == Approx(4 * kBoundary).epsilon(1e-9));
  // The last stage: 2 activation buffers (2A), 2 saved inputs fewer, and the bf16 logits of both
  // microbatches kept in output_chunks (2 · 2 B · V·s): the second microbatch's logits are alive
  // when its loss buffers are, at the peak of the first backward.
  CHECK(peak(false, true, true) - peak(false, true, false) == Approx(2 * 2 * kLogits).epsilon(1e-9));
}

TEST_CASE("torch pipelining's step() merges the last stage's outputs: one more copy of every microbatch's logits",
          "[workload][memory][allocator]") {
  // torch 2.5-2.6 PipelineScheduleSingle.step returns _merge_outputs(output_chunks) on the last
  // stage (a torch.cat of the kept outputs); torchtitan drops it. At that moment (every backward
  // done) the last stage holds its model state, a receive buffer (A) and a kept input gradient
  // (A) per microbatch, the kept bf16 logits (2 B · V·s) per microbatch and their merged copy
  // (2 B · V·s more): per microbatch 4·V·s + 2A bytes. With 8 or more microbatches that is the
  // peak (the first backward holds the kept logits, 12 B per logit of loss buffers for one
  // microbatch, a layer's backward gradients and a few A: 2·m·V·s + 12·V·s + O(m·A)), so one
  // microbatch more adds exactly 4·V·s + 2A; without the merge it would add 2·V·s + 2A.
  const auto model = llama3_8b();
  const auto t = bf16_sgd("full");
  const auto par = pipeline_of(4);
  auto peak = [&](int microbatches) {
    return replay_step_memory(model, t, par, 1, pipeline_rank(2, false, true, microbatches, true), byte_granular()).allocated;
  };
  CHECK(peak(9) - peak(8) == Approx(4 * kLogits + 2 * kBoundary).epsilon(1e-9));
  CHECK(peak(10) - peak(9) == Approx(4 * kLogits + 2 * kBoundary).epsilon(1e-9));
}

TEST_CASE("FSDP with pipeline parallelism keeps the root unit gathered and its gradients unsharded",
          "[workload][memory][allocator]") {
  // torchtitan wraps each stage's model in fully_shard with reshard_after_forward = not
  // pp_enabled: the first stage's embedding is gathered (bf16) from its first forward to the
  // end of the step and its gradients accumulate unsharded in the reduce dtype (fp32). FSDP2
  // over 8 keeps the fp32 sharded parameter (the optimizer's master: no bf16 shard) and Adam's
  // two moments, 12/8 B per parameter, for good; its sharded fp32 gradient (4/8 B) is the
  // reduce-scatter output after the last backward, past the peak. At the peak (backward) the
  // gathered bf16 table (2 B) and its fp32 accumulated gradient (4 B) more.
  const auto model = llama3_8b();
  auto t = bf16_adam("full");
  t.reduce_dtype = "fp32";
  auto par = pipeline_of(4);
  par.zero = 3;
  auto peak = [&](bool first) {
    return replay_step_memory(model, t, par, 8, pipeline_rank(2, first, false, 1, false), byte_granular()).allocated;
  };
  // Each tensor is rounded up to a whole byte: a few bytes over ~10 tensors.
  CHECK(peak(true) - peak(false) == Approx((12.0 / 8 + 2 + 4) * kTable).margin(64));
}

TEST_CASE("FSDP2's sharded gradients are the reduce-scatter outputs, held from the reduce-scatter to the next step's zero_grad",
          "[workload][memory][allocator]") {
  // torch _fsdp_collectives.py foreach_reduce: the reduce-scatter output (1/dp of the unit in
  // the reduce dtype) is allocated on the reduce-scatter stream and becomes the sharded
  // parameter's .grad; torchtitan's optimizers.zero_grad() (set_to_none) frees it at the next
  // step's start. So at a step's peak only the units already reduce-scattered hold one. One
  // rank, no pipeline (reshard after forward, a reduce-scatter after each layer's backward), one
  // microbatch, no recompute: the peak is at the first backward layer's copy-in (every
  // activation still alive, its bf16 gradients and its fp32 reduce-scatter input together),
  // before any sharded gradient exists. Between dp 8 and dp 16 the peak then differs by the
  // state held for good only, 12 B (fp32 sharded parameter + Adam's moments) per parameter ×
  // (1/8 − 1/16); a gradient shard held for good (ZeRO's sharded copy) would add 4 B per
  // parameter, a low-precision parameter shard 2 B more.
  const auto model = llama3_8b();
  auto t = bf16_adam("none");
  t.reduce_dtype = "fp32";
  const config::ParallelSpec par = zero3_one_sequence();
  auto peak = [&](int dp) { return replay_step_memory(model, t, par, dp, gpipe(model, 1), byte_granular()).allocated; };
  const ParamCount p = count_params(model);
  const double share = 1.0 / 8 - 1.0 / 16;
  // A few bytes of rounding per tensor over ~10^3 tensors.
  CHECK(peak(8) - peak(16) == Approx(12 * p.total() * share).margin(1e4));
}

TEST_CASE("FSDP's sharded gradients are held in the fp32 master's dtype whatever the reduce dtype",
          "[workload][memory][allocator]") {
  // FSDP2's foreach_reduce casts the reduce-scatter output back to the sharded parameter's dtype
  // before it becomes .grad (_to_dtype_if_needed(reduce_output, orig_dtype)); FSDP1 casts it to
  // the parameter's dtype into _saved_grad_shard. The sharded parameter is the fp32 master, so
  // a bf16 reduce-scatter leaves 4 B per parameter over dp, as an fp32 one does. Llama 3 8B over
  // 8 ranks at 512 tokens, one microbatch: the sharded gradients alive at the allocated peak
  // are the same bytes with either reduce dtype (a bf16 .grad would hold half); under FSDP2,
  // whose peak is the root unit's reduce-scatter input at the end of backward, after every
  // layer's, they are 4 B × the layers' parameters / 8.
  const auto model = llama3_8b();
  auto t = bf16_adam("none");
  t.sequence_length = 512;
  config::ParallelSpec par = zero3_one_sequence();
  auto held = [&](const char* reduce, int fsdp_version) {
    t.reduce_dtype = reduce;
    par.fsdp_version = fsdp_version;
    return ledger_bytes(replay_step_memory(model, t, par, 8, gpipe(model, 1), byte_granular()), "sharded gradients");
  };
  const ParamCount p = count_params(model);
  const double layers = p.attention + p.mlp + 2.0 * model.hidden * model.layers;  // + each layer's two norm gains
  for (const int version : {1, 2}) {
    INFO("FSDP" << version);
    CHECK(held("bf16", version) == Approx(held("fp32", version)).margin(1e3));
    CHECK(held("bf16", version) > 0);
  }
  CHECK(held("bf16", 2) == Approx(4 * layers / 8).margin(1e3));  // (FSDP1's peak comes two layers earlier)
}

TEST_CASE("torch's AdamW creates its moments in the first step and its foreach step takes the square root of every second moment at once",
          "[workload][memory][allocator]") {
  // torch/optim/adamw.py (torch 2.5-2.6): _init_group creates exp_avg and exp_avg_sq
  // (zeros_like, fp32 here) in the first step(); torchtitan builds AdamW with foreach = not
  // fused (fused off by default), and _multi_tensor_adamw computes exp_avg_sq_sqrt =
  // torch._foreach_sqrt(exp_avg_sqs), one new tensor per parameter, alive together until the
  // parameters' addcdiv. A middle pipeline rank of two Llama 3 8B layers, ZeRO 0, sequences of
  // 512 tokens (activations ≪ the weights): the step's peak is that optimizer step, with bf16
  // weights and gradients (2 + 2 B), the fp32 master (4 B), the two moments (4 + 4 B) and the
  // square roots (4 B) alive: 20 B per parameter.
  const auto model = llama3_8b();
  auto t = bf16_adam("full");
  t.sequence_length = 512;
  const auto par = pipeline_of(4);
  const double layer = (count_params(model).attention + count_params(model).mlp) / model.layers + 2 * 4096.0;
  const double peak =
      replay_step_memory(model, t, par, 1, pipeline_rank(2, false, false, 1, false), byte_granular()).allocated;
  CHECK(peak == Approx(20 * 2 * layer).epsilon(1e-9));
}

TEST_CASE("a last chunk of the LM head alone frees each microbatch's loss buffers after its backward",
          "[workload][memory][allocator][pipeline]") {
  // The last pipeline stage with one layer in its first local chunk and only the LM head and loss
  // in its second (run::split_layers with two chunks more than layers), run 1F1B-like: each
  // microbatch's forward through both chunks, then its backward. The loss buffers (logits ×
  // loss_bytes_per_logit) and the head's kept input live from the head's forward or backward to
  // the end of that backward, one microbatch at a time: the peak does not grow with the
  // microbatches (it did when they were freed only inside the layer loop, which an empty chunk
  // never enters).
  const auto model = llama3_8b();
  config::ParallelSpec par;
  par.microbatch_size = 1;
  const auto t = bf16_sgd("none");
  auto stage = [](int microbatches) {
    StageMemory s;
    s.chunk_layers = {1, 0};
    s.first = false;
    s.last = true;
    s.microbatches = microbatches;
    for (int m = 0; m < microbatches; ++m) {
      s.passes.push_back({true, m, 0});
      s.passes.push_back({true, m, 1});
      s.passes.push_back({false, m, 1});
      s.passes.push_back({false, m, 0});
    }
    return s;
  };
  const double one = replay_step_memory(model, t, par, 1, stage(1), byte_granular()).allocated;
  const double four = replay_step_memory(model, t, par, 1, stage(4), byte_granular()).allocated;
  CHECK(four == Approx(one).epsilon(1e-12));
  // One loss buffer of 8,192 × 128,256 logits is over 4 GB under any recipe: had three more been
  // kept, the peak would have grown by at least 12 GB.
  CHECK(loss_bytes_per_logit(t, par) * 8192.0 * 128256 > 4e9);
  // A chunk without layers is refused anywhere but at the ends of the pipeline.
  StageMemory middle = stage(1);
  middle.last = false;
  CHECK_THROWS(replay_step_memory(model, t, par, 1, middle, byte_granular()));
}

TEST_CASE("SHARD_GRAD_OP keeps every layer gathered from its forward to its backward", "[workload][memory][allocator]") {
  // FSDP's reshard after forward (parallel.reshard_after_forward). One rank of dp 8, no pipeline,
  // one microbatch, no recompute: the peak is at the first backward layer's reduce-scatter input
  // (every activation alive), allocated once its post-backward has resharded the layer. There
  // FULL_SHARD holds the root unit (gathered for the step: the embedding and LM head,
  // 2 × 128,256 × 4,096, and the final norm, 4,096) and the next layer, prefetched;
  // SHARD_GRAD_OP holds the root and the 31 layers whose backward is still to run. Llama 3 8B's layer:
  // attention 4,096 × (4,096 + 2 × 1,024 + 4,096) = 41,943,040, SwiGLU 3 × 4,096 × 14,336 =
  // 176,160,768, two norms 8,192: 218,112,000 parameters, gathered in bf16 (2 B).
  const auto model = llama3_8b();
  auto t = bf16_adam("none");
  t.reduce_dtype = "fp32";
  config::ParallelSpec par = zero3_one_sequence();
  auto unsharded_at_peak = [&](bool reshard_after_forward) {
    par.reshard_after_forward = reshard_after_forward;
    return ledger_bytes(replay_step_memory(model, t, par, 8, gpipe(model, 1), byte_granular()), "unsharded weights");
  };
  const double layer = 218'112'000.0 * 2, root = (2 * 128'256.0 * 4'096 + 4'096) * 2;
  CHECK(unsharded_at_peak(true) == Approx(root + layer).margin(64));
  CHECK(unsharded_at_peak(false) == Approx(root + 31 * layer).margin(64));
}
