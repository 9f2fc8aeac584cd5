// Placement of ranks and the split of layers over pipeline chunks.
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "config/load.hpp"
#include "core/records.hpp"
#include "run/layout.hpp"
#include "run/simulation.hpp"

using namespace ironlaw;
using run::Dim;

namespace {
// GPT-2 XL sequences with a Llama 3 8B model: 32 heads divide every TP degree used here.
const std::string kScenario = IRONLAW_SOURCE_DIR "/scenarios/gpt2-1.5b-ddp-multinode.yaml";
const std::string kLlama = "model=../models/llama3-8b.yaml";
// Input loading draws random decode times per GPU and reads over each node's storage link:
// these tests look at the training step alone.
const std::string kNoLoader = "data.storage_bandwidth_per_node=0";
}

TEST_CASE("layers split evenly, the first and last chunks taking the shortfall", "[layout]") {
  CHECK(run::split_layers(32, 4) == std::vector<int>{8, 8, 8, 8});
  // Llama 3 405B: 126 layers on 16 stages, one layer fewer on the first and the last (§3.3.2).
  const auto llama = run::split_layers(126, 16);
  CHECK(llama.front() == 7);
  CHECK(llama.back() == 7);
  CHECK(std::set<int>(llama.begin() + 1, llama.end() - 1) == std::set<int>{8});
  CHECK(run::split_layers(5, 5) == std::vector<int>{1, 1, 1, 1, 1});
  CHECK(run::split_layers(10, 4) == std::vector<int>{2, 3, 3, 2});
  // Up to two chunks more than layers: the ends hold none, the first the embedding alone, the last
  // the LM head alone (Llama 3 405B, 126 layers on 16 stages of 8 one-layer chunks, §3.3.2).
  CHECK(run::split_layers(6, 7) == std::vector<int>{0, 1, 1, 1, 1, 1, 1});
  CHECK(run::split_layers(6, 8) == std::vector<int>{0, 1, 1, 1, 1, 1, 1, 0});
  const auto paper = run::split_layers(126, 128);
  CHECK(paper.front() == 0);
  CHECK(paper.back() == 0);
  CHECK(std::set<int>(paper.begin() + 1, paper.end() - 1) == std::set<int>{1});
  CHECK_THROWS(run::split_layers(6, 9));
  CHECK_THROWS(run::split_layers(0, 1));
}

TEST_CASE("the allocator gets the device's capacity less the CUDA context and one NCCL buffer set per group",
          "[layout][memory]") {
  run::Layout lay;
  config::DeviceSpec device;
  device.hbm_bytes = 80e9;
  device.cuda_context_bytes = 0.3e9;
  device.nccl_communicator_bytes = 0.7e9;
  // One GPU: no communicator, the context only.
  CHECK(run::nccl_communicators(lay) == 0);
  CHECK(run::allocator_capacity(device, lay) == Approx(79.7e9));
  // TP 8 x PP 4 x DP 16 (CP 1, EP 1): three groups, 80 − 0.3 − 3 × 0.7 = 77.6 GB.
  lay.tp = 8;
  lay.pp = 4;
  lay.dp = 16;
  CHECK(run::nccl_communicators(lay) == 3);
  CHECK(run::allocator_capacity(device, lay) == Approx(77.6e9));
  // Every dimension parallel: five groups, 80 − 0.3 − 3.5 = 76.2 GB.
  lay.cp = 2;
  lay.ep = 2;
  CHECK(run::nccl_communicators(lay) == 5);
  CHECK(run::allocator_capacity(device, lay) == Approx(76.2e9));
  // A device profile without the two figures leaves the whole capacity to the allocator.
  config::DeviceSpec bare;
  bare.hbm_bytes = 80e9;
  CHECK(run::allocator_capacity(bare, lay) == 80e9);
}

TEST_CASE("placement puts TP innermost, then CP, PP and DP by default", "[layout]") {
  const auto s = config::load_scenario(kScenario, {kLlama, "cluster.nodes=4", "parallel.tp=8", "parallel.pp=2",
                                                   "parallel.dp=2", "parallel.microbatch_size=1"});
  const auto l = run::resolve_layout(s);
  CHECK(l.group(0, Dim::tp) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});  // one node
  CHECK(l.group(3, Dim::pp) == std::vector<int>{3, 11});
  CHECK(l.group(3, Dim::dp) == std::vector<int>{3, 19});
  for (int r = 0; r < l.gpus; ++r) CHECK(l.rank_of(l.coord_of(r)) == r);
}

TEST_CASE("parallel.order changes the placement", "[layout]") {
  const auto s = config::load_scenario(kScenario, {kLlama, "cluster.nodes=1", "parallel.tp=2", "parallel.dp=4",
                                                   "parallel.order=[dp, tp, cp, pp]", "parallel.microbatch_size=1"});
  const auto l = run::resolve_layout(s);
  CHECK(l.group(0, Dim::dp) == std::vector<int>{0, 1, 2, 3});
  CHECK(l.group(0, Dim::tp) == std::vector<int>{0, 4});
}

TEST_CASE("tensor parallelism inside one node moves bytes only over NVLink", "[layout][tp][slow]") {
  // TP = 8 fills a DGX H100; its all-reduces go GPU -> NVSwitch -> GPU. No PCIe, NIC or switch
  // link may carry a byte.
  const auto s = config::load_scenario(kScenario, {kLlama, kNoLoader, "cluster.nodes=1", "parallel.tp=8", "parallel.dp=1",
                                                   "parallel.microbatch_size=1", "run.steps=1"});
  NullSink sink;
  const auto r = run::simulate(s, sink, run::TraceLevel::none);
  REQUIRE_FALSE(r.links.empty());
  for (const auto& link : r.links) {
    INFO(link.name);
    CHECK(link.name.find("nvswitch") != std::string::npos);
  }
}

TEST_CASE("one simulated replica gives the same step as simulating every rank", "[layout][symmetry]") {
  // The symmetric mode simulates DP replica 0 op by op and every DP collective with all its
  // flows; on a case small enough to run both, the step times agree to the nanosecond when
  // every GPU runs at the same speed (with per-GPU speed variation they agree within a
  // tolerance: tests/run/straggler_test.cpp).
  for (const std::vector<std::string>& layout :
       {std::vector<std::string>{kLlama, kNoLoader, "training.global_batch_tokens=32 Ki", "cluster.nodes=2", "parallel.tp=2", "parallel.pp=2", "parallel.dp=4",
                                 "parallel.microbatch_size=1"},
        std::vector<std::string>{kLlama, kNoLoader, "training.global_batch_tokens=32 Ki", "cluster.nodes=2", "parallel.dp=16", "parallel.zero=1", "parallel.microbatch_size=1"}}) {
    auto sym = layout, full = layout;
    sym.push_back("run.detail=symmetric");
    full.push_back("run.detail=full");
    for (auto* args : {&sym, &full}) {
      args->push_back("run.steps=1");
      args->push_back("cluster.topology.device.speed_variation_cv=0");
    }
    NullSink a, b;
    const auto rs = run::simulate(config::load_scenario(kScenario, sym), a, run::TraceLevel::none);
    const auto rf = run::simulate(config::load_scenario(kScenario, full), b, run::TraceLevel::none);
    CHECK(rs.ranks_simulated < rf.ranks_simulated);
    CHECK(rs.steps.at(0).end_ns - rs.steps.at(0).start_ns == rf.steps.at(0).end_ns - rf.steps.at(0).start_ns);
  }
}
