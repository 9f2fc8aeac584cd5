// The routing exchange before each forward dispatch: HybridEP all-gathers the routing maps over
// the EP group (Executor::allgather_routing_map), Megatron-core's alltoall dispatcher the
// per-expert token counts (MoEAlltoAllTokenDispatcher.preprocess); DeepEP's notify kernel is not
// simulated. Checked against hand counts of the exchanges, their bytes and their times.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/records.hpp"
#include "run/simulation.hpp"

using namespace ironlaw;

namespace {

const std::string kPipeline = IRONLAW_SOURCE_DIR "/tests/run/data/pipeline.yaml";

// tiny-moe (one dense layer, then three MoE layers of 8 experts, 2 per token) on one ideal node
// of 4 GPUs (every latency 0): EP 4 = DP 4, pp 1, 4 microbatches of one 2,048-token sequence per
// rank. NVLink at 1 GB/s, so that the exchanges take times of their own.
std::vector<std::string> moe(const std::string& dispatcher, const std::string& recompute = "none") {
  return {"model=tiny-moe.yaml",
          "parallel.pp=1",
          "parallel.dp=4",
          "parallel.ep=4",
          "parallel.moe_dispatcher=" + dispatcher,
          "training.global_batch_tokens=32 Ki",
          "training.activation_checkpointing=" + recompute,
          "cluster.topology.node.nvlink.bandwidth=1 GB/s"};
}

struct Exchanges {
  int count = 0;
  double bytes = 0;         // of the first
  double duration_ns = 0;   // of the first
  bool tokens_wait = true;  // every forward dispatch starts once its routing exchange has ended
};

/// Rank 0's routing exchanges, and whether each is followed by an all-to-all that starts when it ends.
Exchanges routing_of(const MemorySink& sink) {
  Exchanges x;
  for (std::size_t i = 0; i < sink.events.size(); ++i) {
    const auto& e = sink.events[i];
    if (e.kind != EventKind::collective || e.rank != 0 || sink.names.at(e.name) != "ep routing all_gather") continue;
    if (x.count++ == 0) {
      x.bytes = e.bytes;
      x.duration_ns = static_cast<double>(e.end_ns - e.start_ns);
    }
    // The dispatch all-to-all of the same pass: rank 0's next all-to-all record to start.
    const EventRecord* next = nullptr;
    for (const auto& a : sink.events) {
      if (a.kind != EventKind::collective || a.rank != 0 || sink.names.at(a.name) != "ep all_to_all") continue;
      if (a.start_ns >= e.start_ns && (next == nullptr || a.start_ns < next->start_ns)) next = &a;
    }
    if (next == nullptr || next->start_ns < e.end_ns) x.tokens_wait = false;
  }
  return x;
}

/// Rank 0's routing exchanges when `dispatcher` runs the fixture (see moe).
Exchanges exchanges_of(const std::string& dispatcher, const std::string& recompute = "none") {
  MemorySink sink;
  run::simulate(config::load_scenario(kPipeline, moe(dispatcher, recompute)), sink, run::TraceLevel::op);
  return routing_of(sink);
}

/// One exchange per MoE layer and microbatch in forward (the backward reuses the handle and the
/// splits): 3 · 4 = 12, each a ring all-gather of `gathered` bytes over NVLink at 1e9 B/s with
/// latencies 0 — each rank receives the 3/4 it lacks — that the dispatch waits for.
void check_exchanges(const Exchanges& x, double gathered) {
  CHECK(x.count == 12);
  CHECK(x.bytes == Approx(gathered));
  CHECK(x.duration_ns == Approx(0.75 * gathered / 1e9 * 1e9).epsilon(0.01));
  CHECK(x.tokens_wait);
}

}  // namespace

TEST_CASE("a hybridep dispatch waits for the all-gather of the routing maps, in forward and recompute only",
          "[run][ep]") {
  // Each rank's map: 2,048 tokens × 8 experts × 1 B (torch.bool); gathered from 4 ranks: 65,536 B.
  check_exchanges(exchanges_of("hybridep"), 2048.0 * 8 * 4);
  // Full recomputation runs each MoE layer's forward again, dispatch and exchange included.
  CHECK(exchanges_of("hybridep", "full").count == 24);
}

TEST_CASE("the alltoall dispatcher all-gathers the per-expert counts, deepep exchanges nothing simulated",
          "[run][ep]") {
  // 8 int64 counts per rank (routing_map.sum(dim=0).long()), from 4 ranks: 256 B.
  check_exchanges(exchanges_of("alltoall"), 8.0 * 8 * 4);
  CHECK(exchanges_of("deepep").count == 0);
}
