// PyTorch's caching allocator replayed over hand-worked sequences: every expected figure follows
// from the rules of c10/cuda/CUDACachingAllocator.cpp (512 B blocks, 1 MiB small limit, 2 MiB
// small segments, 20 MiB segments below 10 MiB, 2 MiB rounding above, best fit, split rules).
#include <catch2/catch.hpp>

#include <stdexcept>

#include "workload/caching_allocator.hpp"

using namespace ironlaw::workload;

namespace {

constexpr std::uint64_t MiB = 1 << 20;

AllocatorRules classic() { return AllocatorRules{}; }

AllocatorRules expandable() {
  AllocatorRules r;
  r.expandable_segments = true;
  return r;
}

}  // namespace

TEST_CASE("small requests round to 512 B and share one 2 MiB segment", "[workload][allocator]") {
  CachingAllocator a(classic());
  a.allocate(100, 0);   // → 512 B, new 2 MiB small segment, split
  a.allocate(1000, 0);  // → 1,024 B, from the remainder
  CHECK(a.allocated() == 1536);
  CHECK(a.reserved() == 2 * MiB);
}

TEST_CASE("requests of 1 to 10 MiB are carved out of 20 MiB segments", "[workload][allocator]") {
  CachingAllocator a(classic());
  for (int i = 0; i < 4; ++i) a.allocate(5 * MiB, 0);  // 20 MiB = 4 × 5 MiB, the last one exact
  CHECK(a.reserved() == 20 * MiB);
  a.allocate(5 * MiB, 0);
  CHECK(a.reserved() == 40 * MiB);
  CHECK(a.allocated() == 25 * MiB);
}

TEST_CASE("a large request gets a 2 MiB-rounded segment and keeps a remainder of at most 1 MiB", "[workload][allocator]") {
  CachingAllocator a(classic());
  // 11 MiB + 1 B → 11 MiB + 512 B → a 12 MiB segment; the remainder, 1 MiB − 512 B, is not
  // above 1 MiB, so the block is not split and the whole 12 MiB count as allocated.
  a.allocate(11 * MiB + 1, 0);
  CHECK(a.reserved() == 12 * MiB);
  CHECK(a.allocated() == 12 * MiB);
}

TEST_CASE("a split cached block leaves a hole that a larger request cannot use", "[workload][allocator]") {
  CachingAllocator a(classic());
  const int big = a.allocate(100 * MiB, 0);
  a.free(big);                       // cached, still reserved
  CHECK(a.reserved() == 100 * MiB);
  CHECK(a.allocated() == 0);
  a.allocate(60 * MiB, 0);           // best fit: the cached 100 MiB, split 60 + 40
  a.allocate(50 * MiB, 0);           // 40 MiB free is too small: a new 50 MiB segment
  CHECK(a.reserved() == 150 * MiB);
  CHECK(a.allocated() == 110 * MiB);
  CHECK(a.peak_reserved() == 150 * MiB);
  CHECK(a.peak_allocated() == 110 * MiB);
}

TEST_CASE("freed neighbours merge back into one block", "[workload][allocator]") {
  CachingAllocator a(classic());
  const int x = a.allocate(40 * MiB, 0);
  a.free(x);
  const int p = a.allocate(20 * MiB, 0);  // split 20 + 20
  const int q = a.allocate(20 * MiB, 0);  // the other 20
  a.free(p);
  a.free(q);                              // 20 + 20 merge into 40
  a.allocate(40 * MiB, 0);
  CHECK(a.reserved() == 40 * MiB);
}

TEST_CASE("a block freed by one stream is not reused by another", "[workload][allocator]") {
  CachingAllocator a(classic());
  a.free(a.allocate(100 * MiB, 0));
  a.allocate(100 * MiB, 1);
  CHECK(a.reserved() == 200 * MiB);
  a.allocate(100 * MiB, 0);  // stream 0 finds its cached block
  CHECK(a.reserved() == 200 * MiB);
}

TEST_CASE("expandable segments map 20 MiB pages at the end, merging with a free tail", "[workload][allocator]") {
  CachingAllocator a(expandable());
  const int first = a.allocate(100 * MiB, 0);  // 5 pages
  CHECK(a.reserved() == 100 * MiB);
  a.allocate(30 * MiB, 0);  // 2 more pages, split 30 + 10 (expandable: remainder ≥ 512 B splits)
  CHECK(a.reserved() == 140 * MiB);
  a.free(first);            // a 100 MiB hole at the start, not adjacent to the 10 MiB tail
  a.allocate(105 * MiB, 0); // no free block fits: tail 10 + 5 new pages (100) = 110, split 105 + 5
  CHECK(a.reserved() == 240 * MiB);
  CHECK(a.allocated() == 135 * MiB);
}

TEST_CASE("expandable segments waste less than classic ones on the same sequence", "[workload][allocator]") {
  CachingAllocator a(expandable());
  a.free(a.allocate(100 * MiB, 0));
  a.allocate(60 * MiB, 0);  // 60 + 40 free (the segment's tail)
  a.allocate(50 * MiB, 0);  // tail 40 + one 20 MiB page = 60, split 50 + 10
  CHECK(a.reserved() == 120 * MiB);  // classic: 150 MiB (see above)
}

TEST_CASE("the allocator refuses empty requests and double frees", "[workload][allocator]") {
  CachingAllocator a(classic());
  CHECK_THROWS_AS(a.allocate(0, 0), std::invalid_argument);
  const int h = a.allocate(1, 0);
  a.free(h);
  CHECK_THROWS_AS(a.free(h), std::invalid_argument);
  AllocatorRules bad;
  bad.round_large = 0;
  CHECK_THROWS_AS(CachingAllocator(bad), std::invalid_argument);
}

TEST_CASE("a cudaMalloc past the capacity frees the cache's unsplit segments and retries",
          "[workload][allocator]") {
  // PyTorch (CUDACachingAllocator.cpp, malloc: release_cached_blocks, then alloc_block again;
  // torch.cuda.memory_stats()["num_alloc_retries"]): 100 MiB capacity; a cached free 60 MiB
  // segment and a live 30 MiB one; a 70 MiB request fits no cached block and not beside both
  // segments (160 MiB), so the free segment goes back to the device and the request gets its
  // own: 100 MiB reserved.
  AllocatorRules r = classic();
  r.capacity = 100 * MiB;
  CachingAllocator a(r);
  const int cached = a.allocate(60 * MiB, 0);
  a.allocate(30 * MiB, 0);
  a.free(cached);
  CHECK(a.reserved() == 90 * MiB);
  a.allocate(70 * MiB, 0);
  CHECK(a.alloc_retries() == 1);
  CHECK(a.reserved() == 100 * MiB);
  CHECK(a.peak_reserved() == 100 * MiB);
  // Segments with live blocks stay: a request that cannot fit beside them is still reserved,
  // past the capacity, and the caller's comparison reports the out-of-memory.
  a.allocate(50 * MiB, 0);
  CHECK(a.alloc_retries() == 2);
  CHECK(a.reserved() == 150 * MiB);
  // Without a capacity the cache only grows.
  CachingAllocator unbounded(classic());
  const int c = unbounded.allocate(60 * MiB, 0);
  unbounded.allocate(30 * MiB, 0);
  unbounded.free(c);
  unbounded.allocate(70 * MiB, 0);
  CHECK(unbounded.alloc_retries() == 0);
  CHECK(unbounded.reserved() == 160 * MiB);
}
