// Hand-computed timelines of tiny worlds (tests/run/data/timeline.yaml): on the launch-bound
// node the host issues a kernel every 1 us and each does a vanishing amount of work (1 ns once
// rounded up), so a compute task of K kernels takes K us + 1 ns (its host thread starts when
// the task may start; the GPU ends 1 ns after the last launch), and a rank's timeline is a
// count of kernels and tasks; the TP
// all-reduce of one microbatch (64 KiB over two GPUs at 16.384 GB/s) takes 4 us; while any
// collective runs, compute gets 80 of the 100 SMs and a 1 us kernel takes 1.25 us. The data-
// parallel tests make NVLink ideal (1e18 B/s), so their collectives take a few ns at most.
// Tolerances of a few ns cover the rounding of each duration up to whole ns.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "timeline_fixture.hpp"

using namespace ironlaw;
using namespace ironlaw::run_test;

namespace {

std::unique_ptr<Trace> trace(std::vector<std::string> overrides) { return simulate_timeline(overrides); }

}  // namespace

TEST_CASE("on the launch-bound node every kernel waits for its launch", "[run][timeline]") {
  const auto s = config::load_scenario(kTimeline);
  for (const auto& ops : {workload::layer_forward_ops(s.model, s.training, 1, 1),
                          workload::layer_backward_ops(s.model, s.training, 1, 1),
                          workload::head_forward_ops(s.model, s.training, 1, 1),
                          workload::head_backward_ops(s.model, s.training, 1, 1)}) {
    // The GPU's own work is a vanishing amount, rounded up to 1 ns; the host issues a kernel
    // every 1 us, so the GPU idles between them and a list of K kernels ends 1 ns after the
    // last launch: K us + 1 ns.
    workload::HostQueue queue(workload::host_dispatch_cost(s.topology.device, s.training.framework));
    std::int64_t launched = 0;
    for (const auto& op : ops) {
      INFO(op.name << " launches " << op.kernels << " kernel(s)");
      CHECK(workload::op_time(op, s.topology.device, "bf16") == Time::ns(1));
      queue.push(workload::op_time(op, s.topology.device, "bf16"), op.kernels);
      launched += op.kernels;
    }
    CHECK(queue.gpu_end() == Time::ns(1000 * launched + 1));
  }
}

TEST_CASE("a forward TP all-reduce blocks the next op — a backward one runs beside the weight gradient",
          "[run][timeline][tp][sm]") {
  const auto t = trace({"parallel.tp=2", "parallel.dp=1", "training.global_batch_tokens=512"});
  // Forward, Megatron's row-parallel attn_out: its all-reduce starts when it ends and the next
  // op waits the whole 4 us, then runs at full speed (no collective beside it).
  const EventRecord out = t->first("attn_out", EventKind::forward);
  const EventRecord residual = t->next_compute(out.end_ns);
  CHECK(t->sink.names.at(residual.name) == "residual_attn");
  CHECK(ns(residual.start_ns - out.end_ns) == Approx(4 * kUs).margin(3));
  CHECK(ns(residual.end_ns - residual.start_ns) == Approx(kKernel).margin(1));
  int forward_reduces = 0;
  for (const auto& c : t->named("tp all_reduce")) {
    if (c.start_ns != out.end_ns) continue;
    ++forward_reduces;
    CHECK(ns(c.end_ns - c.start_ns) == Approx(4 * kUs).margin(3));
  }
  CHECK(forward_reduces == 2);  // one record per rank of the TP group

  // Backward, the column-parallel mlp_up: the all-reduce of its input gradient starts when
  // mlp_up_dgrad ends; mlp_up_wgrad starts at once beside it on 80 % of the SMs: its 1 ns of
  // work takes 1.25 ns, the 1 us its GPU waits for the launch does not slow (gpu_sms.hpp), so
  // 1,001.25 ns, 1,002 in whole ns; norm_mlp_bwd needs the reduced gradient and starts when the
  // all-reduce ends, 4 us later.
  const EventRecord dgrad = t->first("mlp_up_dgrad", EventKind::backward);
  const EventRecord wgrad = t->first("mlp_up_wgrad", EventKind::backward);
  const EventRecord norm = t->first("norm_mlp_bwd", EventKind::backward);
  int backward_reduces = 0;
  for (const auto& c : t->named("tp all_reduce")) {
    if (c.start_ns != dgrad.end_ns) continue;
    ++backward_reduces;
    CHECK(ns(c.end_ns - c.start_ns) == Approx(4 * kUs).margin(3));
  }
  CHECK(backward_reduces == 2);
  CHECK(wgrad.start_ns == dgrad.end_ns);
  CHECK(ns(wgrad.end_ns - wgrad.start_ns) == Approx(kUs + 1.25).margin(1));
  CHECK(ns(norm.start_ns - dgrad.end_ns) == Approx(4 * kUs).margin(3));
}

TEST_CASE("DDP launches each gradient bucket when backward has filled it", "[run][timeline][ddp]") {
  // Units in backward order: head (1 KiB of bf16 weights), layers 2, 1, 0 (98 KB each), the
  // embedding (1 KiB). With 50 KB buckets: [head, layer 2], [layer 1], [layer 0], [embedding].
  const auto t = trace({"cluster.topology.node.nvlink.bandwidth=1e18 B/s", "parallel.bucket_size=50 KB"});
  const auto& s = t->scenario;
  // One task per unit and pass [ns]; the embedding's lookup (1 kernel) is the first forward
  // task, its backward (the last op of the head's backward list) the last backward one.
  const double f = task_ns(kernel_count(workload::layer_forward_ops(s.model, s.training, 1, 1)));
  const double b = task_ns(kernel_count(workload::layer_backward_ops(s.model, s.training, 1, 1)));
  const double head_f = task_ns(kernel_count(workload::head_forward_ops(s.model, s.training, 1, 1)) - 1);
  const auto head_backward = workload::head_backward_ops(s.model, s.training, 1, 1);
  const double emb_b = task_ns(head_backward.back().kernels);
  const double head_b = task_ns(kernel_count(head_backward) - head_backward.back().kernels);
  const double forward = task_ns(1) + 3 * f + head_f;  // embedding, layers, head [ns]
  const double expected[] = {forward + head_b + b, forward + head_b + 2 * b, forward + head_b + 3 * b,
                             forward + head_b + 3 * b + emb_b};
  for (int k = 0; k < 4; ++k) {
    const auto c = t->named("dp all_reduce bucket" + std::to_string(k));
    INFO("bucket " << k);
    REQUIRE(c.size() == 1);  // recorded on the simulated rank (symmetric detail: replica 0)
    CHECK(ns(c[0].start_ns) == Approx(expected[k]).margin(5));
  }
  CHECK(t->named("dp all_reduce bucket4").empty());
  // The optimizer (1 kernel) follows the last bucket.
  CHECK(t->result.step_time_s * 1e9 == Approx(expected[3] + task_ns(1)).margin(10));
}

TEST_CASE("ZeRO-3 gathers a unit's parameters once the gather two before it has been copied out",
          "[run][timeline][zero3]") {
  // Forward units: embedding, layers 0–2, head; at most two gather buffers in flight. Each
  // forward starts with FSDP's copy-out of its gather (1 kernel; run/model_parallel.hpp), which
  // frees that buffer. The gathers of the embedding and layer 0 are issued at once (on one
  // communicator, one after the other; at ideal NVLink each takes a few ns); layer 1's waits for
  // the embedding's copy-out (one 1-kernel task), layer 2's for layer 0's (after the embedding's
  // copy-out and forward: three 1-kernel tasks), the head's for layer 1's (after layer 0's
  // forward, a task of f kernels: four 1-kernel tasks and f). Tasks are launch-bound (task_ns).
  const auto t = trace({"cluster.topology.node.nvlink.bandwidth=1e18 B/s", "parallel.zero=3", "training.framework=eager"});
  const auto& s = t->scenario;
  const double f = task_ns(kernel_count(workload::layer_forward_ops(s.model, s.training, 1, 1)));
  const double emb = task_ns(1);
  const std::vector<std::pair<std::string, double>> expected{
      {"embedding", 0}, {"layer0", 0}, {"layer1", emb}, {"layer2", 3 * emb}, {"head", 4 * emb + f}};
  for (const auto& [unit, start_ns] : expected) {
    INFO(unit);
    const auto c = t->named("dp all_gather " + unit);
    REQUIRE(c.size() == 2);  // forward and backward, recorded on the simulated rank
    CHECK(ns(c[0].start_ns) == Approx(start_ns).margin(10));
  }
}

TEST_CASE("FSDP1's rate limiter gathers a unit once the unit two before it has run its forward",
          "[run][timeline][zero3][fsdp1]") {
  // FullyShardedDataParallel with limit_all_gathers: a unit's gather waits for the free event of
  // the reshard two units before it, recorded after that unit's forward — its last kernel, not
  // its first (FSDP2 frees the gather's buffer after the copy-out that starts the unit). TP 2
  // over the node, DP 2 over two nodes: torch TP's blocking all-reduces cut each layer's forward
  // into several tasks. A layer's forward ends with its last op; layer k's is the k-th record of
  // that name on rank 0.
  auto gathers_after_forward = [](const char* version) {
    const auto t = trace({"parallel.zero=3", "parallel.fsdp_version=" + std::string(version), "training.framework=eager",
                          "cluster.nodes=2", "parallel.tp=2", "parallel.dp=2", "training.global_batch_tokens=1024"});
    const auto& s = t->scenario;
    const std::string last_op = workload::layer_forward_ops(s.model, s.training, 2, 1).back().name;
    std::vector<EventRecord> ends;
    for (const auto& e : t->named(last_op))
      if (e.kind == EventKind::forward) ends.push_back(e);
    REQUIRE(ends.size() >= 2);
    const auto layer2 = t->named("dp all_gather layer2");
    const auto head = t->named("dp all_gather head");
    REQUIRE(layer2.size() == 4);  // two DP groups (one per TP rank), forward and backward
    REQUIRE(head.size() == 4);
    return layer2[0].start_ns >= ends[0].end_ns && head[0].start_ns >= ends[1].end_ns;
  };
  CHECK(gathers_after_forward("1"));
  CHECK_FALSE(gathers_after_forward("2"));  // FSDP2 gathers as soon as the unit's copy-out is done
}

TEST_CASE("ZeRO-3's gathers and reduce-scatters take turns on the group's one communicator",
          "[run][timeline][zero3]") {
  // At the node's own NVLink (16.384 GB/s) a unit's collective lasts microseconds, as long as a
  // layer's kernels. One NCCL communicator runs one collective at a time (pytorch/pytorch#65299,
  // #186335), so no two of the group's collectives overlap, and backward issues them as FSDP
  // does: the first unit's gather, the second's (prefetch), then per unit its reduce-scatter
  // and the gather of the unit two later, which therefore starts no earlier than that
  // reduce-scatter ends. Before this rule the reduce-scatter of one unit and the gather of the
  // next ran side by side.
  const auto t = trace({"parallel.zero=3"});
  std::vector<EventRecord> dp;
  for (const auto& e : t->sink.events)
    if (e.kind == EventKind::collective && t->sink.names.at(e.name).rfind("dp ", 0) == 0) dp.push_back(e);
  std::sort(dp.begin(), dp.end(), [](const EventRecord& a, const EventRecord& b) { return a.start_ns < b.start_ns; });
  REQUIRE(dp.size() == 5 * 2 + 5);  // 5 units: forward and backward gathers, reduce-scatters
  for (std::size_t i = 1; i < dp.size(); ++i) {
    INFO(t->sink.names.at(dp[i - 1].name) << " then " << t->sink.names.at(dp[i].name));
    CHECK(dp[i].start_ns >= dp[i - 1].end_ns);
    CHECK(dp[i - 1].end_ns > dp[i - 1].start_ns);  // each takes time: the check above can fail
  }
  // Backward order: head, layer2, layer1, layer0, embedding.
  const std::vector<std::string> units{"head", "layer2", "layer1", "layer0", "embedding"};
  std::vector<std::string> expected{"dp all_gather head", "dp all_gather layer2"};
  for (std::size_t i = 0; i < units.size(); ++i) {
    expected.push_back("dp reduce_scatter " + units[i]);
    if (i + 2 < units.size()) expected.push_back("dp all_gather " + units[i + 2]);
  }
  std::vector<std::string> got;
  for (std::size_t i = 5; i < dp.size(); ++i) got.push_back(t->sink.names.at(dp[i].name));
  CHECK(got == expected);
}

TEST_CASE("no two collectives of one data-parallel group overlap — ZeRO-1 and ZeRO-3 with a pipeline",
          "[run][timeline][zero3][zero1][pipeline]") {
  // The group's one communicator (run/data_parallel.hpp), under ZeRO-1's buckets and
  // post-optimizer gather, and under ZeRO-3 with a pipeline (each unit gathered once, reduced
  // after its chunk's last backward). A group's collectives are recorded on its simulated
  // member; the two pipeline stages' groups may overlap each other.
  const std::vector<std::vector<std::string>> layouts{
      {"parallel.zero=1", "parallel.bucket_size=50 KB"},
      {"parallel.zero=3", "cluster.nodes=2", "parallel.pp=2", "parallel.dp=2", "training.global_batch_tokens=2048"}};
  for (const auto& layout : layouts) {
    INFO(layout.front() << " " << layout.back());
    const auto t = trace(layout);
    std::map<int, std::vector<EventRecord>> by_rank;
    for (const auto& e : t->sink.events)
      if (e.kind == EventKind::collective && t->sink.names.at(e.name).rfind("dp ", 0) == 0) by_rank[e.rank].push_back(e);
    REQUIRE(!by_rank.empty());
    for (auto& [rank, dp] : by_rank) {
      INFO("rank " << rank);
      REQUIRE(dp.size() >= 2);
      std::sort(dp.begin(), dp.end(), [](const EventRecord& a, const EventRecord& b) { return a.start_ns < b.start_ns; });
      for (std::size_t i = 1; i < dp.size(); ++i) CHECK(dp[i].start_ns >= dp[i - 1].end_ns);
    }
  }
}

TEST_CASE("ZeRO-1 reduce-scatters the same buckets and all-gathers the parameters after the optimizer",
          "[run][timeline][zero1]") {
  // As DDP above, with reduce-scatters in place of the all-reduces; the optimizer (1 kernel)
  // updates the shard once the last bucket is reduced, and the updated parameters are gathered
  // right after it.
  const auto t = trace({"cluster.topology.node.nvlink.bandwidth=1e18 B/s", "parallel.bucket_size=50 KB", "parallel.zero=1"});
  const auto& s = t->scenario;
  const double f = task_ns(kernel_count(workload::layer_forward_ops(s.model, s.training, 1, 1)));
  const double b = task_ns(kernel_count(workload::layer_backward_ops(s.model, s.training, 1, 1)));
  const double head_f = task_ns(kernel_count(workload::head_forward_ops(s.model, s.training, 1, 1)) - 1);
  const auto head_backward = workload::head_backward_ops(s.model, s.training, 1, 1);
  const double emb_b = task_ns(head_backward.back().kernels);
  const double head_b = task_ns(kernel_count(head_backward) - head_backward.back().kernels);
  const double last_bucket = task_ns(1) + 3 * f + head_f + head_b + 3 * b + emb_b;  // after the embedding's backward [ns]
  CHECK(t->named("dp all_reduce bucket0").empty());
  const auto rs = t->named("dp reduce_scatter bucket3");
  REQUIRE(rs.size() == 1);
  CHECK(ns(rs[0].start_ns) == Approx(last_bucket).margin(5));
  const auto ag = t->named("dp all_gather params");
  REQUIRE(ag.size() == 1);
  CHECK(ns(ag[0].start_ns) == Approx(last_bucket + task_ns(1)).margin(10));
}

TEST_CASE("SHARD_GRAD_OP gathers each unit once per microbatch, in forward, and reduce-scatters after each backward",
          "[run][timeline][zero3][fsdp1]") {
  // parallel.reshard_after_forward false (FSDP1's ShardingStrategy.SHARD_GRAD_OP): a unit stays
  // gathered from its forward to its post-backward. The 3-layer model of these tests has 5
  // units (embedding, 3 layers, head): per microbatch 5 gathers and 5 reduce-scatters, where
  // FULL_SHARD gathers each unit again for its backward (10 + 5). FSDP1's rate limiter waits
  // only on free events, which a reshard records: in forward none, so every forward gather is
  // issued at once and they run back to back on the group's communicator, the head's ending
  // before the embedding's forward has ended.
  auto dp_collectives = [](const char* reshard) {
    const auto t = trace({"parallel.zero=3", "parallel.fsdp_version=1", "training.framework=eager",
                          std::string("parallel.reshard_after_forward=") + reshard});
    std::map<std::string, int> count;
    for (const auto& e : t->sink.events)
      if (e.kind == EventKind::collective) ++count[t->sink.names.at(e.name)];
    return count;
  };
  const auto full = dp_collectives("true"), kept = dp_collectives("false");
  for (const char* unit : {"embedding", "layer0", "layer1", "layer2", "head"}) {
    INFO(unit);
    CHECK(full.at(std::string("dp all_gather ") + unit) == 2);
    CHECK(kept.at(std::string("dp all_gather ") + unit) == 1);
    CHECK(full.at(std::string("dp reduce_scatter ") + unit) == 1);
    CHECK(kept.at(std::string("dp reduce_scatter ") + unit) == 1);
  }
  const auto t = trace({"parallel.zero=3", "parallel.fsdp_version=1", "training.framework=eager",
                        "parallel.reshard_after_forward=false"});
  const auto head = t->named("dp all_gather head");
  REQUIRE(head.size() == 1);
  const auto& s = t->scenario;
  const std::string last_op = workload::layer_forward_ops(s.model, s.training, 1, 1).back().name;
  std::vector<EventRecord> ends;
  for (const auto& e : t->named(last_op))
    if (e.kind == EventKind::forward) ends.push_back(e);
  REQUIRE_FALSE(ends.empty());
  CHECK(head[0].end_ns <= ends[0].end_ns);  // before layer 0's forward ends
}
