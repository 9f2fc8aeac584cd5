// Memory per GPU: model state under ZeRO, activations after Korthikanti et al. 2022.
#include <catch2/catch.hpp>

#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

config::TrainingSpec mixed_adam() {
  config::TrainingSpec t;
  t.precision = "bf16";
  t.optimizer = "adam";
  return t;
}

}  // namespace

TEST_CASE("mixed-precision Adam holds 16 bytes per parameter: 112 GB at 7B", "[workload][memory]") {
  const MemoryBreakdown m = model_state_memory(7e9, mixed_adam(), 0, 1);
  CHECK(m.weights == 14e9);      // bf16 weights 2 B
  CHECK(m.gradients == 14e9);    // bf16 gradients 2 B
  CHECK(m.optimizer == 84e9);    // fp32 master 4 + m 4 + v 4
  CHECK(m.activations == 0);
  CHECK(m.total() == 112e9);
}

TEST_CASE("DeepSpeed's BF16_Optimizer adds an unsharded fp32 gradient buffer: 4 bytes per parameter", "[workload][memory]") {
  // BLOOM's tr11 README: "It doesn't shard the static fp32 buffer it reuses, which consumes
  // 4 bytes * params of additional memory". 1e9 parameters, its own stage 1 over 8 ranks.
  config::TrainingSpec t = mixed_adam();
  t.bf16_optimizer = true;
  t.reduce_dtype = "fp32";
  const MemoryBreakdown plain = model_state_memory(1e9, mixed_adam(), 1, 8);
  const MemoryBreakdown bf16opt = model_state_memory(1e9, t, 1, 8);
  CHECK(plain.gradients == 2e9);
  CHECK(bf16opt.gradients == 2e9 + 4e9);  // the bf16 .grad and the fp32 buffer, neither sharded
  CHECK(bf16opt.weights == plain.weights);
  CHECK(bf16opt.optimizer == plain.optimizer);  // master and moments sharded: 12 B / 8
  CHECK(model_state_memory(1e9, t, 2, 8).gradients == 2e9 / 8 + 4e9);
}

TEST_CASE("ZeRO stages shard optimizer state, then gradients, then weights", "[workload][memory]") {
  const double n = 7e9;
  // ZeRO-1 over 8: 2 + 2 + 12/8 = 5.5 B/param.
  CHECK(model_state_memory(n, mixed_adam(), 1, 8).total() == 5.5 * n);
  // ZeRO-2: 2 + (2 + 12)/8 = 3.75 B/param.
  CHECK(model_state_memory(n, mixed_adam(), 2, 8).total() == 3.75 * n);
  // ZeRO-3: 16/8 = 2 B/param; 16/dp in general.
  CHECK(model_state_memory(n, mixed_adam(), 3, 8).total() == 2.0 * n);
  CHECK(model_state_memory(n, mixed_adam(), 3, 64).total() == Approx(16.0 * n / 64).epsilon(1e-15));
  // dp = 1: sharding changes nothing.
  CHECK(model_state_memory(n, mixed_adam(), 3, 1).total() == 16.0 * n);
}

TEST_CASE("optimizer state bytes follow the optimizer and the precision", "[workload][memory]") {
  config::TrainingSpec t = mixed_adam();
  t.optimizer = "sgd";  // master copy only
  CHECK(model_state_memory(1, t, 0, 1).optimizer == 4);
  t.optimizer = "momentum";  // master + velocity
  CHECK(model_state_memory(1, t, 0, 1).optimizer == 8);
  t.optimizer = "rmsprop";  // master + mean square
  CHECK(model_state_memory(1, t, 0, 1).optimizer == 8);
  t.optimizer = "adam";
  t.precision = "fp32";  // no separate master: 4 + 4 + 8 = 16 B/param again
  const MemoryBreakdown fp32 = model_state_memory(1, t, 0, 1);
  CHECK((fp32.weights == 4 && fp32.gradients == 4 && fp32.optimizer == 8));
  CHECK_THROWS(model_state_memory(1, t, 4, 1));
}

TEST_CASE("activations per layer follow Korthikanti et al. 2022", "[workload][memory]") {
  // GPT-3 175B shape, s = 2048, b = 1: sbh = 2048·12288 = 25,165,824; 5·a·s/h = 5·96·2048/12288 = 80.
  // The per-op count reproduces the paper's 34·sbh + 5·a·s²·b for its architecture (LayerNorm,
  // GELU, multi-head attention, 0.1 dropout): norms' inputs 4, QKV input 2, Q K V 6, attention
  // output 2, MLP input 2, GELU input and output 16, dropout masks 2 = 34.
  config::ModelSpec m = gpt3_175b();
  m.attention_dropout = 0.1;
  m.hidden_dropout = 0.1;
  config::TrainingSpec t = mixed_adam();
  t.sequence_length = 2048;
  t.flash_attention = false;
  config::ParallelSpec p;
  const double sbh = 25'165'824.0;
  CHECK(activation_bytes_per_layer(m, t, p, 1) == sbh * (34 + 80));  // 2,868,903,936 B
  // Of the paper's 5·a·s²·b, the dropout keep mask (a·s²·b) and output (2·a·s²·b) exist only
  // under attention dropout (torch's dropout with p = 0 returns its input): the softmax output
  // alone, 2·a·s²·b = 2·96·2048/12288 = 32·sbh.
  m.attention_dropout = 0;
  CHECK(activation_bytes_per_layer(m, t, p, 1) == sbh * (34 + 32));
  m.attention_dropout = 0.1;
  // TP 8 without sequence parallelism: sbh·(10 + 24/8 + 80/8) = 23·sbh.
  p.tp = 8;
  CHECK(activation_bytes_per_layer(m, t, p, 1) == 23 * sbh);
  // ... with it: sbh·(34/8 + 80/8) = 14.25·sbh.
  p.sequence_parallel = true;
  CHECK(activation_bytes_per_layer(m, t, p, 1) == 14.25 * sbh);
  p = config::ParallelSpec{};
  // Flash attention never stores the s² scores but keeps fp32 row statistics (4 B per head
  // and token: 4·96/12288 = 1/32 of sbh): 34·sbh + sbh/32.
  t.flash_attention = true;
  CHECK(activation_bytes_per_layer(m, t, p, 1) == (34 + 1.0 / 32) * sbh);
  // Selective recompute drops the score term too; full keeps only the layer input 2·sbh.
  t.flash_attention = false;
  t.activation_checkpointing = "selective";
  CHECK(activation_bytes_per_layer(m, t, p, 1) == 34 * sbh);
  t.activation_checkpointing = "full";
  CHECK(activation_bytes_per_layer(m, t, p, 1) == 2 * sbh);
  // Linear in the microbatch.
  CHECK(activation_bytes_per_layer(m, t, p, 4) == 8 * sbh);
  // Without dropout (Llama-style training) there are no masks: 32·sbh.
  m.attention_dropout = m.hidden_dropout = 0;
  t.activation_checkpointing = "selective";
  CHECK(activation_bytes_per_layer(m, t, p, 1) == 32 * sbh);
}

TEST_CASE("Llama's grouped-query attention and SwiGLU change what a layer keeps", "[workload][memory]") {
  // Llama 3 8B, one 8,192-token sequence, nothing recomputed, fused kernels, per token (bf16):
  // norms 2·(2h + 2h) = 32,768; Q 4,096, K 1,024, V 1,024, O 4,096 → 20,480; log-sum-exp
  // 4·32 = 128; SwiGLU gate, up and product 3·14,336·2 = 86,016. Sum 139,392 B per token.
  config::TrainingSpec t = mixed_adam();
  t.sequence_length = 8192;
  t.activation_checkpointing = "none";
  config::ParallelSpec p;
  CHECK(activation_bytes_per_layer(llama3_8b(), t, p, 1) == 8192.0 * 139'392);
  // Eager PyTorch keeps more: each RMSNorm its fp32 copy (+4h), the SiLU output (+2·14,336)
  // and rotary's fp32 inputs (4·(4,096 + 1,024)), and SDPA the K and V that repeat_kv expanded
  // to the 32 query heads (2·(4,096 − 1,024)·2 B = +12,288): 139,392 + 32,768 + 28,672 + 20,480
  // + 12,288 = 233,600.
  t.framework = "eager";
  CHECK(activation_bytes_per_layer(llama3_8b(), t, p, 1) == 8192.0 * 233'600);
}

TEST_CASE("SDPA in PyTorch's model code keeps the expanded K/V, a fused kernel the grouped ones", "[workload][memory]") {
  // torchtitan's attention (models/llama/model.py, 9dec370) calls repeat_kv on K and V before
  // F.scaled_dot_product_attention, which saves its inputs: per token K and V of 32 heads × 128
  // (4,096 elements each) instead of 8 × 128 (1,024): 2 · 3,072 · 2 B = 12,288 B more than
  // the fused kernels' 139,392 (test above) under torch.compile. With tp 8 (4 query heads and
  // 1 K/V head per rank) 2 · (512 − 128) · 2 B = 1,536 B more than the fused kernels.
  config::TrainingSpec t = mixed_adam();
  t.sequence_length = 8192;
  t.activation_checkpointing = "none";
  config::ParallelSpec p;
  const double fused = activation_bytes_per_layer(llama3_8b(), t, p, 1);
  t.framework = "compile";
  CHECK(activation_bytes_per_layer(llama3_8b(), t, p, 1) == fused + 8192.0 * 12'288);
  p.tp = 8;
  t.framework = "fused";
  const double fused_tp = activation_bytes_per_layer(llama3_8b(), t, p, 1);
  t.framework = "compile";
  CHECK(activation_bytes_per_layer(llama3_8b(), t, p, 1) == fused_tp + 8192.0 * 1'536);
  // Recomputed layers keep neither: under full recompute only the layer input is kept.
  t.activation_checkpointing = "full";
  const double full_compile = activation_bytes_per_layer(llama3_8b(), t, p, 1);
  t.framework = "fused";
  CHECK(activation_bytes_per_layer(llama3_8b(), t, p, 1) == full_compile);
}

TEST_CASE("torchtitan's op policy keeps the input, attention and every second matmul output", "[workload][memory]") {
  // Per token (bf16): layer input 8,192; wq 8,192, wv 2,048, w1 28,672, w2 8,192 (the 1st, 3rd,
  // 5th and 7th of wq, wk, wv, wo, w1, w3, w2); attention output 8,192 and log-sum-exp 128:
  // 63,616 B per token per layer — 31.06 GiB for 32 layers of 2 × 8,192 tokens.
  config::TrainingSpec t = mixed_adam();
  t.sequence_length = 8192;
  t.activation_checkpointing = "op";
  config::ParallelSpec p;
  CHECK(activation_bytes_per_layer(llama3_8b(), t, p, 2) == 16384.0 * 63'616);
}

TEST_CASE("the loss keeps fp32 copies of the logits under eager PyTorch", "[workload][memory]") {
  config::TrainingSpec t = mixed_adam();
  config::ParallelSpec p;
  t.framework = "eager";
  CHECK(loss_bytes_per_logit(t, p) == 12);  // fp32 copy, log-softmax output, gradients: 3 × 4 B
  t.framework = "compile";  // compiled per block (torchtitan): the loss stays eager
  CHECK(loss_bytes_per_logit(t, p) == 12);
  t.framework = "fused";
  CHECK(loss_bytes_per_logit(t, p) == 4);
}

TEST_CASE("a compiled loss keeps the logits and their gradient, no fp32 copy", "[workload][memory]") {
  // AOTAutograd's partition of F.cross_entropy(logits.float()) saves the bf16 logits (the
  // backward kernel recomputes the softmax from them) and the backward writes a bf16 gradient:
  // 2 + 2 B per logit at the backward's peak, against the eager 3 × 4 B.
  config::TrainingSpec t = mixed_adam();
  config::ParallelSpec p;
  t.framework = "compile";
  t.compile_loss = true;
  CHECK(loss_bytes_per_logit(t, p) == 4);
  t.precision = "fp32";
  CHECK(loss_bytes_per_logit(t, p) == 8);
}

TEST_CASE("torch's loss parallel keeps four fp32 logit-sized tensors in backward", "[workload][memory]") {
  // torch/distributed/tensor/parallel/loss.py, _nll_loss_and_log_softmax_backward: the kept fp32
  // log-softmax output x, grad_input = zeros_like(x), torch.exp(x) and grad_input + exp(x) are
  // alive together before the product with grad_output: 4 × 4 B = 16 B per logit.
  config::TrainingSpec t = mixed_adam();
  config::ParallelSpec p;
  p.tp = 8;
  t.framework = "compile";
  CHECK(loss_bytes_per_logit(t, p) == 16);
  t.framework = "eager";
  CHECK(loss_bytes_per_logit(t, p) == 16);
  t.framework = "fused";  // Megatron-LM's fused vocabulary-parallel cross-entropy is unchanged
  CHECK(loss_bytes_per_logit(t, p) == 4);
}

TEST_CASE("the LM head keeps its input: every token under PyTorch TP, a shard under Megatron SP", "[workload][memory]") {
  // Llama 3 405B width, 4 sequences of 8,192 tokens in bf16: 32,768 · 16,384 · 2 B = 1 GiB.
  config::ModelSpec m = llama3_8b();
  m.hidden = 16384;
  config::TrainingSpec t = mixed_adam();
  t.sequence_length = 8192;
  t.framework = "compile";
  config::ParallelSpec p;
  p.tp = 8;
  p.sequence_parallel = true;
  const double gib = 1024.0 * 1024 * 1024;
  CHECK(head_input_bytes(m, t, p, 4) == gib);      // ColwiseParallel(Shard(1)) gathers first
  t.framework = "fused";
  CHECK(head_input_bytes(m, t, p, 4) == gib / 8);  // Megatron keeps its shard, re-gathers later
  t.sequence_length = 4096;  // a CP rank's share of the 8,192-token sequence (the caller divides)
  p.cp = 2;
  CHECK(head_input_bytes(m, t, p, 4) == gib / 16);
  CHECK_THROWS(head_input_bytes(m, t, p, 0));
}

TEST_CASE("PyTorch sequence parallelism keeps the all-gathered linear inputs", "[workload][memory]") {
  // Llama 3 8B, TP 8 with sequence parallelism, nothing recomputed, compile, bf16, per token:
  // norms' inputs 2·2h/8 = 2,048; the two gathered norm outputs the column-parallel linears
  // save, every token: 2·2h = 16,384; Q, the K and V repeat_kv expanded to the 4 local query
  // heads, O: 2·(512 + 512 + 512 + 512) = 4,096; log-sum-exp 4·32/8 = 16; SwiGLU 3·2·1,792 =
  // 10,752. Sum 33,296 B. Megatron-LM (fused) keeps the norm outputs as shards and the grouped
  // K/V (128 each): 2·(2h + 2h)/8 + 2·(512 + 128 + 128 + 512) + 16 + 10,752 = 17,424 B.
  config::TrainingSpec t = mixed_adam();
  t.sequence_length = 8192;
  t.activation_checkpointing = "none";
  t.framework = "compile";
  config::ParallelSpec p;
  p.tp = 8;
  p.sequence_parallel = true;
  CHECK(activation_bytes_per_layer(llama3_8b(), t, p, 1) == 8192.0 * 33'296);
  // Float8 TP casts before the all-gather: the saved inputs are fp8, 2·h = 8,192 B less.
  t.precision = "fp8";
  CHECK(activation_bytes_per_layer(llama3_8b(), t, p, 1) == 8192.0 * 25'104);
  t.precision = "bf16";
  t.framework = "fused";
  CHECK(activation_bytes_per_layer(llama3_8b(), t, p, 1) == 8192.0 * 17'424);
  // Full recompute keeps the layer input only, a shard either way: 2h/8 = 1,024 B.
  t.framework = "compile";
  t.activation_checkpointing = "full";
  CHECK(activation_bytes_per_layer(llama3_8b(), t, p, 1) == 8192.0 * 1'024);
}

TEST_CASE("under context parallelism a rank keeps the activations of its own share of the sequence",
          "[workload][memory]") {
  // The run layer passes sequence_length / cp (a CP rank's tokens, as the op costs take them);
  // the memory model must not divide again: 32,768 tokens over CP 2 keep what 16,384 tokens
  // keep without CP. Llama 3 8B, full recompute, bf16: 16,384 · 2 · 4,096 B = 128 MiB per layer.
  config::TrainingSpec t = mixed_adam();
  t.activation_checkpointing = "full";
  t.sequence_length = 16384;
  config::ParallelSpec p;
  p.cp = 2;
  CHECK(activation_bytes_per_layer(llama3_8b(), t, p, 1) == 16384.0 * 2 * 4096);
  p.cp = 1;
  CHECK(activation_bytes_per_layer(llama3_8b(), t, p, 1) == 16384.0 * 2 * 4096);
  // The loss of one microbatch (no layer in flight): the rank's 16,384 tokens · 128,256 logits
  // · 12 B (compile, no TP), whatever the CP degree.
  t.framework = "compile";
  p.cp = 2;
  p.microbatch_size = 1;
  CHECK(memory_per_gpu(llama3_8b(), t, p, 1, 0).activations == 16384.0 * 128'256 * 12);
}

TEST_CASE("memory per GPU divides parameters by tp·pp and adds activations and logits", "[workload][memory]") {
  const config::ModelSpec m = llama3_8b();
  config::TrainingSpec t = mixed_adam();
  t.sequence_length = 8192;
  t.activation_checkpointing = "selective";
  config::ParallelSpec p;
  p.tp = 2;
  p.pp = 2;
  p.zero = 1;
  p.microbatch_size = 1;
  const double n = 8'030'261'248.0 / 4;
  const MemoryBreakdown mem = memory_per_gpu(m, t, p, 16, 2);
  CHECK(mem.weights == 2 * n);
  CHECK(mem.gradients == 2 * n);
  CHECK(mem.optimizer == 12 * n / 16);
  // 16 layers on this stage, 2 microbatches in flight; fp32 logits 8192·128256/2·4 =
  // 2,101,346,304 B; the LM head's input of each microbatch in flight, 8192·4096·2 = 67,108,864 B.
  const double per_layer = activation_bytes_per_layer(m, t, p, 1);
  CHECK(mem.activations == per_layer * 16 * 2 + 2'101'346'304.0 + 2 * 67'108'864.0);
  // Under recompute, the backward of one layer holds what it rebuilt besides — under selective
  // recompute with flash attention nothing: the core's scores live inside the fused kernel — and
  // every backward its gradients: per token (tp 2, no sequence parallelism, h 4,096, f 7,168)
  // the layer's output gradient 4,096 and the SwiGLU product's peak 3f = 21,504 (above h + f,
  // 2f + h, f + 2h and the attention's q + K/V + 2h = 11,264): 25,600 × 2 B × 8,192 tokens.
  CHECK(recomputed_activation_bytes(m, t, p, 1) == 0);
  CHECK(backward_gradient_bytes(m, t, p, 1) == 419'430'400.0);
  CHECK(mem.transient == 419'430'400.0);
  CHECK(mem.total() == mem.weights + mem.gradients + mem.optimizer + mem.activations + mem.transient);
}

TEST_CASE("a checkpointed layer's backward rebuilds what its policy did not keep", "[workload][memory]") {
  // Llama 3 8B, one 8,192-token sequence, compile, bf16, no TP. What policy none keeps is
  // rebuilt, less what the policy kept and the recompute reuses, per token:
  // - full: the layer input, the first norm's input: 2 · 4,096 = 8,192 B;
  // - op (torchtitan's policy keeps wq, wv, w1 and w2 outputs, the attention output and its
  //   log-sum-exp): the input 8,192, w1's output 2 · 14,336 = 28,672 (SwiGLU's gate, which policy
  //   none keeps), the attention output 8,192 and the log-sum-exp 4 · 32 = 128: 45,184 B (wq's
  //   and wv's outputs are not what none keeps: it holds the rotated Q and the expanded V);
  // - none: nothing is rebuilt.
  const config::ModelSpec m = llama3_8b();
  config::TrainingSpec t = mixed_adam();
  t.sequence_length = 8192;
  t.framework = "compile";
  config::ParallelSpec p;
  config::TrainingSpec none = t;
  none.activation_checkpointing = "none";
  const double all = activation_bytes_per_layer(m, none, p, 1);
  t.activation_checkpointing = "full";
  CHECK(recomputed_activation_bytes(m, t, p, 1) == all - 8192.0 * 8'192);
  t.activation_checkpointing = "op";
  CHECK(recomputed_activation_bytes(m, t, p, 1) == all - 8192.0 * 45'184);
  t.activation_checkpointing = "none";
  CHECK(recomputed_activation_bytes(m, t, p, 1) == 0);
  // Eager RMSNorm keeps fp32 copies, not the input: full rebuilds all that none keeps.
  t.framework = "eager";
  none.framework = "eager";
  t.activation_checkpointing = "full";
  CHECK(recomputed_activation_bytes(m, t, p, 1) == activation_bytes_per_layer(m, none, p, 1));
}

TEST_CASE("a layer's backward holds its output gradient and the largest set of gradients autograd keeps together",
          "[workload][memory]") {
  // GPT-2 small (h 768, GELU MLP of 3,072, 12 heads of 64, no TP), 1,024 tokens at 2 B. Per token:
  // the output gradient 768, held through the layer; MLP (GELU) max(h + f, 2f, f + h) = 6,144,
  // the GELU's output and input gradients; attention max(h + o, o + q + K/V, q + K/V + 2h) =
  // max(1,536, 3,072, 3,840) = 3,840. So (768 + 6,144) × 2 B × 1,024 = 14,155,776 B.
  const config::ModelSpec m = gpt2_124m();
  config::TrainingSpec t = mixed_adam();
  t.sequence_length = 1024;
  config::ParallelSpec p;
  CHECK(backward_gradient_bytes(m, t, p, 1) == 14'155'776.0);
  CHECK(backward_gradient_bytes(m, t, p, 4) == 4 * 14'155'776.0);
  // TP 4 without sequence parallelism: the output gradient is replicated (768), the MLP's GELU
  // gradients split (2 × 768) but the fc1 input gradient whole: max(768 + 768, 1,536, 768 + 768)
  // = 1,536; attention q = o = 192, K/V 384: max(960, 768, 192 + 384 + 1,536 = 2,112) = 2,112.
  p.tp = 4;
  CHECK(backward_gradient_bytes(m, t, p, 1) == (768 + 2'112) * 2 * 1024.0);
  // Sequence parallelism splits only the held output gradient: 768 / 4.
  p.sequence_parallel = true;
  CHECK(backward_gradient_bytes(m, t, p, 1) == (192 + 2'112) * 2 * 1024.0);
  CHECK_THROWS_AS(backward_gradient_bytes(m, t, p, 0), std::invalid_argument);
}
