// NVLink SHARP for reduce-scatter and all-gather on one DGX H100 (NCCL admits NVLS for both,
// src/graph/tuning.cc): reduce-scatter streams every chunk into the switch and gets its reduced
// 1/n back (multimem load-reduce); all-gather sends its 1/n up and gets every share back
// (multimem store, multicast). Per GPU the long leg carries S, as the ring's (n−1)/n · S, at the
// reducer port's 306 GB/s instead of NVLink's 360: no bandwidth gain, one latency instead of n−1.
#include <catch2/catch.hpp>

#include <vector>

#include "comm_world.hpp"

using namespace ironlaw;
using comm::Algorithm;
using comm::CollectiveOp;

using test::GiB;
using test::iota;

using test::dgx_h100_nvls;
using World = test::CommWorld;

TEST_CASE("NVLS reduce-scatter and all-gather take the closed form: the long leg of every chunk back to back") {
  // S = 1 GiB, 8 channels × 512 KiB → k = 256 chunks of 4 MiB. Reduce-scatter: 4,194,304 B up
  // (13,706.9 → 13,707 ns at 306 GB/s), 524,288 B down (1,713.4 → 1,714 ns). The ups follow one
  // another; chunk j comes down once every GPU's chunk j is up: the last one 256 × 13,707 after
  // the start, then 1,714 ns down, plus 2 × 500 ns NVLink latency, Λ = 8,400 and σ = 3,400.
  // All-gather mirrors it (short leg up, long leg down): the same total.
  const std::int64_t expected = 8400 + 3400 + 256 * 13'707 + 1'714 + 1000;
  for (auto op : {CollectiveOp::reduce_scatter, CollectiveOp::all_gather}) {
    World w(dgx_h100_nvls(), 1);
    CHECK(w.time(op, iota(0, 8), GiB, Algorithm::nvls) == expected);
    CHECK(w.comm.predict(op, iota(0, 8), GiB, Algorithm::nvls).count_ns() == Approx(expected).epsilon(1e-4));
  }
}

TEST_CASE("automatic takes NVLS for a small reduce-scatter in the node and the ring for a large one") {
  // 1 MB: ring 8.4 + 7 × (3.4 + 1 + 0.35) = 41.6 us; NVLS 8.4 + 3.4 + 1 + 3.3 = 16.1 us.
  // 1 GiB: ring 8.4 + 7 × (4.4 + 372.8) = 2,649 us; NVLS 3,524 us (306 against 360 GB/s).
  World w(dgx_h100_nvls(), 1);
  for (auto op : {CollectiveOp::reduce_scatter, CollectiveOp::all_gather}) {
    CHECK(w.comm.choose(op, iota(0, 8), 1e6) == Algorithm::nvls);
    CHECK(w.comm.choose(op, iota(0, 8), GiB) == Algorithm::ring);
  }
}
