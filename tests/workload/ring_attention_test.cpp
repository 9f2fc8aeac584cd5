// Context parallelism's per-step attention kernels and bookkeeping as torch's context_parallel
// runs them (torch/distributed/tensor/experimental/_attention.py: _templated_ring_attention,
// _SDPAMerger, _templated_ring_attention_backward), against hand arithmetic.
#include <catch2/catch.hpp>

#include "workload/model_cost.hpp"
#include "workload_test_models.hpp"

using namespace ironlaw;
using namespace ironlaw::workload;
using namespace ironlaw::workload::testing;

namespace {

// Llama 3 8B at 256K tokens over CP 8: each rank holds s = 32,768 tokens (two chunks of 16,384),
// 32 query heads and 8 KV heads of 128.
constexpr double kS = 32768;
RingTensors tensors() {
  RingTensors t;
  t.query_elements = kS * 32 * 128;
  t.out_elements = kS * 32 * 128;
  t.kv_elements = kS * 8 * 128;
  t.lse_elements = kS * 32;
  return t;
}

Op local_core(bool backward) {
  config::TrainingSpec training;
  training.sequence_length = static_cast<int>(kS);
  training.precision = "bf16";
  training.flash_attention = true;
  const auto ops = backward ? layer_backward_ops(llama3_8b(), training, 1, 1) : layer_forward_ops(llama3_8b(), training, 1, 1);
  return find(ops, backward ? "attn_core_bwd" : "attn_core");
}

double sum_bytes(const std::vector<Op>& ops, bool skip_core = true) {
  double b = 0;
  for (const Op& op : ops)
    if (!(skip_core && op.fused_attention)) b += op.bytes;
  return b;
}

}  // namespace

TEST_CASE("ring attention steps: a causal local block, then half blocks without mask", "[workload][cp]") {
  const RingAttentionOps r = ring_attention_ops(local_core(false), tensors());
  const Op& first = r.first.front();
  CHECK(first.causal);
  CHECK(first.m == kS);
  // Steps meeting an earlier chunk's K/V: all 32,768 queries × the first 16,384 keys; a later
  // one: the last 16,384 queries × all keys. Neither is masked.
  const Op& kv = r.kv_half.front();
  const Op& q = r.q_half.front();
  CHECK((kv.m == kS && kv.n == kS / 2 && !kv.causal));
  CHECK((q.m == kS / 2 && q.n == kS && !q.causal));
  // FLOPs: 2 · 32768 · 16384 · (128 + 128) · 32 heads = 8.796e12 per half step; over the
  // 8 steps a rank computes 32768²/2 · 8 cells per head, what a 262,144-token causal
  // sequence needs per rank (262144² / 2 / 8), up to the diagonal's s/2.
  CHECK(kv.flops == Approx(2.0 * kS * (kS / 2) * 256 * 32).epsilon(1e-12));
  CHECK(q.flops == Approx(kv.flops).epsilon(1e-12));
  const double cells_per_head = (first.flops + 7 * kv.flops) / (2 * 256 * 32);
  CHECK(cells_per_head == Approx(262144.0 * 262144.0 / 2 / 8).epsilon(1e-4));
}

TEST_CASE("the forward merges each block's output into fp32 by its log-sum-exp", "[workload][cp]") {
  const RingAttentionOps r = ring_attention_ops(local_core(false), tensors());
  const double o = kS * 32 * 128, lse = kS * 32, kv = kS * 8 * 128;
  // _SDPAMerger.step: out.to(fp32) (2 B read, 4 written), out − out_b (4 + 4, 4), sigmoid ·
  // (…) (4, 4), out − (…) (4 + 4, 4): 38 B per output element; the lse arithmetic (five
  // kernels) 52 B per row. Every step also concatenates K and V for the rotation: 8 B per
  // K/V element pair.
  const double merge = 38 * o + 52 * lse;
  const double kv_cat = 2 * kv * 4;
  CHECK(sum_bytes(r.kv_half) == Approx(merge + kv_cat).epsilon(1e-12));
  // A query-half step merges half the rows, then torch.cat rebuilds the whole fp32 output and
  // lse (8 B per element read + written).
  CHECK(sum_bytes(r.q_half) == Approx(merge / 2 + 8 * o + 8 * lse + kv_cat).epsilon(1e-12));
  // Step 0 converts its output to fp32; the end casts the merged output back to bf16.
  CHECK(sum_bytes(r.first) == Approx(6 * o + kv_cat).epsilon(1e-12));
  CHECK(sum_bytes(r.finish) == Approx(6 * o).epsilon(1e-12));
  // At cp 8 the merges move 5.2 GB per step: 2.4 ms at the 2.13 TB/s of the 500 W card, a
  // tenth of the 8.8 TFLOP block's ≈ 25 ms.
  CHECK(merge / 2.13e12 == Approx(2.42e-3).epsilon(0.01));
}

TEST_CASE("the backward accumulates dQ, dK, dV in fp32 and passes dK, dV on", "[workload][cp]") {
  const RingAttentionOps r = ring_attention_ops(local_core(true), tensors());
  const double q = kS * 32 * 128, kv = kS * 8 * 128;
  CHECK(r.first.front().name == "cp_grad_zero");
  CHECK(r.first.front().bytes == Approx(4 * (q + 2 * kv)).epsilon(1e-12));  // zero-filled fp32 dQ, dK, dV
  // A query-half step: dK, dV += the block's bf16 gradients (4 + 2 read, 4 written each), the
  // fp32 pair concatenated for the next rank (8 B each), dQ's second half += (5 B per dQ
  // element) and torch.cat back (8 B).
  CHECK(sum_bytes(r.q_half_accumulate) == Approx(2 * kv * 10 + 2 * kv * 8 + q * 5 + q * 8).epsilon(1e-12));
  // A kv-half step: half of dK and of dV += (5 B per element of the whole), torch.cat (8 B)
  // each; dQ += in full (10 B).
  CHECK(sum_bytes(r.kv_half_accumulate) == Approx(2 * (kv * 5 + kv * 8) + 2 * kv * 8 + q * 10).epsilon(1e-12));
  CHECK(sum_bytes(r.finish) == Approx(6 * (q + 2 * kv)).epsilon(1e-12));  // fp32 → bf16
  // The backward kernels keep the shapes of the forward's steps, at 2.5 × the FLOPs.
  CHECK(r.kv_half.front().flops == Approx(2.5 * 2.0 * kS * (kS / 2) * 256 * 32).epsilon(1e-12));
  CHECK(r.kv_half.front().role == OpRole::attention_core_grad);
}

TEST_CASE("K and V handed to SDPA as a transposed view are copied contiguous before the ring, once per pass",
          "[workload][cp]") {
  // torchtitan's Llama passes xk.transpose(1, 2) (a (b, h, s, d) view of a (b, s, h, d) tensor,
  // after repeat_kv: 32 heads); _templated_ring_attention and its backward call key.contiguous()
  // and value.contiguous(): per pass 2 x 32,768 x 32 x 128 elements read and written in bf16,
  // 2 x 134.2 M x 4 B = 1.07 GB. Contiguous inputs (transposed_kv false) copy nothing.
  RingTensors expanded = tensors();
  expanded.kv_elements = kS * 32 * 128;
  expanded.transposed_kv = true;
  RingTensors contiguous = expanded;
  contiguous.transposed_kv = false;
  for (bool backward : {false, true}) {
    const RingAttentionOps plain = ring_attention_ops(local_core(backward), contiguous);
    const RingAttentionOps copied = ring_attention_ops(local_core(backward), expanded);
    INFO("backward " << backward);
    CHECK(sum_bytes(copied.first) - sum_bytes(plain.first) == Approx(2.0 * kS * 32 * 128 * 4).epsilon(1e-12));
    CHECK(has(copied.first, "cp_kv_contiguous"));
    CHECK_FALSE(has(plain.first, "cp_kv_contiguous"));
    // Once per pass: the later steps copy nothing more.
    CHECK(sum_bytes(copied.kv_half) == Approx(sum_bytes(plain.kv_half)).epsilon(1e-12));
  }
}
