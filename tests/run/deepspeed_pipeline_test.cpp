// DeepSpeed's pipeline engine (parallel.pp_runtime deepspeed; run/pipeline_wiring.cpp): under
// TP it partitions what passes between stages and PartitionedTensor.full() all-gathers it over
// the TP group with its copies, and each send blocks the sender's compute stream. Timelines of
// tests/run/data/timeline.yaml (tiny-dense, 3 layers, on the launch-bound node, see
// timeline_test.cpp) with TP 2 inside a node, PP 2 across two nodes, two microbatches.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/records.hpp"
#include "timeline_fixture.hpp"

using namespace ironlaw;

namespace {

// One microbatch's hidden states on a rank: 512 tokens × hidden 64 × 2 B (bf16).
constexpr double kS = 512.0 * 64 * 2;

std::unique_ptr<run_test::Trace> pipe_trace(const std::string& runtime) {
  return run_test::simulate_timeline({"parallel.tp=2", "parallel.pp=2", "parallel.dp=1", "cluster.nodes=2",
                                      "training.global_batch_tokens=1024", "parallel.pp_runtime=" + runtime,
                                      // 0.1 GB/s between the nodes: a 1/tp send (32 KiB) takes 328 us,
                                      // longer than a stage's forward and backward of one
                                      // microbatch (tens of 1 us kernels).
                                      "cluster.topology.node.nic.bandwidth=0.1 GB/s"});
}

std::size_t count(const run_test::Trace& t, const std::string& name, int rank) { return t.named(name, rank).size(); }

}  // namespace

TEST_CASE("DeepSpeed's PartitionedTensor gathers each tensor passed between stages, and the stage's own output",
          "[run][pipeline][deepspeed]") {
  const auto t = pipe_trace("deepspeed");
  // Rank 0 is stage 0 (TP ranks 0, 1 in node 0), rank 2 stage 1. Two microbatches:
  // stage 0 gathers its own output and the received gradient before each backward (2 × 2) and
  // clones each output's 1/tp before sending it (2); stage 1 clones and gathers each received
  // activation before its forward (2 + 2) and clones each input gradient's 1/tp (2).
  CHECK(count(*t, "pipe_full_in", 0) == 4);
  CHECK(count(*t, "pipe_full_out", 0) == 4);
  CHECK(count(*t, "pipe_partition", 0) == 2);
  CHECK(count(*t, "pipe_full_in", 2) == 2);
  CHECK(count(*t, "pipe_full_out", 2) == 2);
  CHECK(count(*t, "pipe_partition", 2) == 4);
  // Bytes (deepspeed/runtime/utils.py PartitionedTensor.full): zero-fill S and copy the rank's
  // S/tp in (read and write); copy the gathered parts out of NCCL's flat buffer and clone (4S);
  // a partition's clone reads and writes S/tp.
  CHECK(t->named("pipe_full_in", 0).at(0).bytes == kS + 2 * kS / 2);
  CHECK(t->named("pipe_full_out", 0).at(0).bytes == 4 * kS);
  CHECK(t->named("pipe_partition", 0).at(0).bytes == 2 * kS / 2);
  // Megatron's runtime has none of it.
  const auto megatron = pipe_trace("megatron");
  CHECK(count(*megatron, "pipe_full_in", 0) == 0);
  CHECK(count(*megatron, "pipe_partition", 2) == 0);
}

TEST_CASE("DeepSpeed's sends block the sender: stage 0's next forward waits for the first activation's send",
          "[run][pipeline][deepspeed]") {
  auto second_forward_start = [](const run_test::Trace& t) {
    const auto embeddings = t.named("embedding", 0);  // stage 0's forward slots begin with it
    REQUIRE(embeddings.size() == 2);
    return embeddings[1].start_ns;
  };
  auto first_send_end = [](const run_test::Trace& t) {
    auto sends = t.named("pp send");
    REQUIRE(!sends.empty());
    return sends.front().end_ns;
  };
  const auto ds = pipe_trace("deepspeed");
  const auto megatron = pipe_trace("megatron");
  // 1F1B on stage 0: F0, F1, B0, B1. Megatron's send runs beside F1; DeepSpeed's F1 waits for it.
  CHECK(second_forward_start(*megatron) < first_send_end(*megatron));
  CHECK(second_forward_start(*ds) >= first_send_end(*ds));
  CHECK(ds->result.step_time_s > megatron->result.step_time_s);
}

TEST_CASE("DeepSpeed's pipeline engine runs a 1F1B schedule only", "[run][pipeline][deepspeed]") {
  CHECK_THROWS_WITH(run_test::simulate_timeline({"parallel.pp=2", "parallel.dp=1", "parallel.pp_runtime=deepspeed",
                                                 "parallel.pp_schedule=gpipe"}),
                    Catch::Contains("parallel.pp_runtime") && Catch::Contains("1f1b"));
}

TEST_CASE("DeepSpeed's two transfers with one neighbour run one after the other", "[run][pipeline][deepspeed]") {
  // In the step after stage 0's forward of microbatch 1 it runs the backward of microbatch 0:
  // SendActivation(1), then RecvGrad(0); stage 1, in its forward step, RecvActivation(1), then
  // SendGrad(0). Every transfer between the stages waits for the one before (the two TP ranks'
  // sends of one tensor run side by side).
  auto overlapping_transfers = [](const run_test::Trace& t) {
    const auto sends = t.named("pp send");
    // Activations and gradients of 2 microbatches, from 2 TP ranks each, recorded on the sender
    // and on the receiver.
    REQUIRE(sends.size() == 16);
    int n = 0;
    for (const auto& a : sends)
      for (const auto& b : sends)
        if (a.start_ns < b.start_ns && b.start_ns < a.end_ns) ++n;
    return n;
  };
  CHECK(overlapping_transfers(*pipe_trace("deepspeed")) == 0);
  // Megatron's runtime sends the second activation while the first is still in flight.
  CHECK(overlapping_transfers(*pipe_trace("megatron")) > 0);
}

TEST_CASE("DeepSpeed's transfers wait for both ranks: each rank runs its sends and receives one at a time, in order",
          "[run][pipeline][deepspeed]") {
  // PP 4 over four nodes (TP 2 in each), four microbatches, sends of 328 us against passes of
  // tens of us. A transfer is a rendezvous on both ranks' streams, so a stage that still sends
  // its previous output onward cannot yet receive the next input: in the warm-up stage 1's
  // SendActivation(0) to stage 2 comes before its RecvActivation(1) from stage 0, although
  // stage 0's forward of microbatch 1 ends as early as stage 1's forward of microbatch 0.
  // Megatron's asynchronous sends overlap there.
  auto overlaps_on_a_rank = [](const run_test::Trace& t) {
    int n = 0;
    for (int stage = 0; stage < 4; ++stage) {
      const int rank = 2 * stage;  // TP rank 0 of the stage (ranks in [tp, cp, pp, dp] order)
      std::vector<EventRecord> mine;
      for (const auto& e : t.named("pp send"))
        if (e.rank == rank) mine.push_back(e);
      // Stages 1 and 2 receive and send four activations and four gradients, stages 0 and 3 half.
      CHECK(mine.size() == (stage == 0 || stage == 3 ? 8U : 16U));
      for (const auto& a : mine)
        for (const auto& b : mine)
          if (a.start_ns < b.start_ns && b.start_ns < a.end_ns) ++n;
    }
    return n;
  };
  auto trace = [](const std::string& runtime) {
    return run_test::simulate_timeline({"parallel.tp=2", "parallel.pp=4", "parallel.dp=1", "cluster.nodes=4",
                                        "training.global_batch_tokens=2048", "parallel.pp_runtime=" + runtime,
                                        "cluster.topology.node.nic.bandwidth=0.1 GB/s"});
  };
  CHECK(overlaps_on_a_rank(*trace("deepspeed")) == 0);
  CHECK(overlaps_on_a_rank(*trace("megatron")) > 0);
}

TEST_CASE("DeepSpeed's chains of passes and transfers never wait on each other in a circle, so any layout runs",
          "[run][pipeline][deepspeed]") {
  // Each rank's chain takes the transfers between two passes in the TrainSchedule's order; in the
  // warm-up (and with fewer microbatches than stages) the step after a forward runs no backward,
  // and in the cool-down the step after a backward no forward. An order that differed between
  // two neighbours' chains (a gradient before an activation on one side, after it on the other)
  // would leave the step unfinished; every layout must end, and never faster than Megatron's
  // asynchronous sends.
  const std::string pipeline = IRONLAW_SOURCE_DIR "/tests/run/data/pipeline.yaml";
  for (int pp : {2, 4}) {
    for (int m : {1, 2, 3, 5}) {
      INFO("pp " << pp << ", " << m << " microbatches");
      const std::vector<std::string> base = {"parallel.pp=" + std::to_string(pp), "parallel.tp=2", "parallel.dp=1",
                                             "cluster.nodes=" + std::to_string(pp * 2 / 4 > 0 ? pp * 2 / 4 : 1),
                                             "training.global_batch_tokens=" + std::to_string(2048 * m)};
      auto with = [&](const std::string& runtime) {
        auto o = base;
        o.push_back("parallel.pp_runtime=" + runtime);
        NullSink sink;
        return run::simulate(config::load_scenario(pipeline, o), sink, run::TraceLevel::step).step_time_s;
      };
      const double ds = with("deepspeed");
      CHECK(ds >= with("megatron"));
    }
  }
}
