#pragma once
/// \file PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp), replayed over a
/// sequence of tensor allocations and frees, so that the memory a training step *reserves* from
/// the device emerges next to the memory its tensors occupy. Frameworks report the reserved
/// figure (torchtitan logs torch.cuda.memory_stats()["reserved_bytes.all.peak"]); the gap is
/// block rounding, segment granularity and fragmentation, never a tuned reserve.
///
/// The rules, as PyTorch implements them (constants in AllocatorRules, read from the device
/// profile's `memory_allocator` section with their source):
/// - a request is rounded up to a multiple of min_block (512 B), at least min_block;
/// - requests up to small_size (1 MiB) use the small pool, larger ones the large pool; blocks
///   never move between pools, and a block freed by one stream is reused only by that stream;
/// - a request first takes the smallest cached free block of its pool and stream that is large
///   enough (best fit; ties: the lowest address), and splits it when the remainder is worth
///   keeping: small pool or expandable segments, remainder ≥ min_block; large pool, remainder
///   > small_size;
/// - classic segments: with no fitting block, a new segment is reserved (cudaMalloc) of
///   small_buffer (2 MiB) for a small request, large_buffer (20 MiB) below min_large_alloc
///   (10 MiB), else the request rounded up to round_large (2 MiB);
/// - expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True): one growable
///   virtual segment per stream and pool; with no fitting block, pages (small_buffer in the
///   small pool, large_buffer in the large one) are mapped at its end, merging with a free
///   block that ends the segment;
/// - a freed block merges with free neighbours of its segment and stays cached: nothing is
///   returned to the device between steps (no empty_cache), so reserved only grows.
/// - the device's capacity (AllocatorRules::capacity): a classic segment that would take the
///   reserved bytes past it is a cudaMalloc that fails, on which PyTorch frees every cached
///   segment with no live block (release_cached_blocks: cudaFree of each unsplit free block)
///   and tries again (the num_alloc_retries of torch.cuda.memory_stats); if it still does not
///   fit, the segment is reserved anyway and the caller, comparing the peak with the capacity,
///   reports the out-of-memory.
/// Not modelled: releasing the free pages of expandable segments on such a retry, CUDA graph
/// pools, max_split_size and roundup_power2_divisions (both off by default).
#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace ironlaw::workload {

/// PyTorch's allocator constants [B] and the segment mode.
struct AllocatorRules {
  std::uint64_t min_block = 512;            ///< kMinBlockSize
  std::uint64_t small_size = 1 << 20;       ///< kSmallSize: largest small-pool request
  std::uint64_t small_buffer = 2 << 20;     ///< kSmallBuffer: small-pool segment / page
  std::uint64_t large_buffer = 20 << 20;    ///< kLargeBuffer: segment for 1–10 MiB requests / large page
  std::uint64_t min_large_alloc = 10 << 20; ///< kMinLargeAlloc
  std::uint64_t round_large = 2 << 20;      ///< kRoundLarge
  bool expandable_segments = false;
  std::uint64_t capacity = 0;  ///< device bytes the allocator may reserve; 0 = unbounded
};

/// One device's caching allocator. Deterministic: addresses are (segment, offset) pairs in
/// creation order. Cost: O(log blocks) per allocate/free.
class CachingAllocator {
 public:
  explicit CachingAllocator(AllocatorRules rules);

  /// Allocates `bytes` (> 0) on `stream` (any small id; blocks are reused per stream) and
  /// returns a handle for free(). Throws std::invalid_argument for 0 bytes or rules with a zero
  /// constant.
  int allocate(std::uint64_t bytes, int stream);
  /// Returns the block of `handle` to its pool (merging with free neighbours). Throws
  /// std::invalid_argument for an unknown or already freed handle.
  void free(int handle);

  std::uint64_t allocated() const { return allocated_; }  ///< bytes of live blocks (rounded sizes)
  std::uint64_t reserved() const { return reserved_; }    ///< bytes of segments / mapped pages
  std::uint64_t peak_allocated() const { return peak_allocated_; }
  std::uint64_t peak_reserved() const { return peak_reserved_; }
  /// Failed cudaMallocs retried after freeing the cache (PyTorch's num_alloc_retries).
  int alloc_retries() const { return alloc_retries_; }

 private:
  struct Block {
    int segment = 0;
    std::uint64_t offset = 0, size = 0;
    int prev = -1, next = -1;  ///< neighbours within the segment
    bool live = false;         ///< handed out (not free)
  };
  struct Segment {
    int stream = 0;
    bool small = false;
    bool expandable = false;
    std::uint64_t size = 0;  ///< reserved (mapped) bytes
    int last = -1;           ///< block that ends the segment
  };
  /// Free-block key: pool, stream, size, then address (segment, offset).
  using Key = std::tuple<bool, int, std::uint64_t, int, std::uint64_t, int>;

  Key key(int b) const;
  void insert_free(int b);
  void erase_free(int b);
  /// Merges the block after `keep` (same segment, not live, not in the free set) into `keep`.
  void absorb_next(int keep);
  int new_block(int segment, std::uint64_t offset, std::uint64_t size);
  int grow(bool small, int stream, std::uint64_t size);  ///< reserve room; returns a free block ≥ size
  void add_reserved(std::uint64_t bytes);
  /// Frees every classic segment whose one block is free (release_cached_blocks).
  void release_cached_segments();

  AllocatorRules rules_;
  std::vector<Block> blocks_;
  std::vector<Segment> segments_;
  std::set<Key> free_;
  std::map<std::pair<int, bool>, int> expandable_;  ///< (stream, small) → segment
  std::uint64_t allocated_ = 0, reserved_ = 0, peak_allocated_ = 0, peak_reserved_ = 0;
  int alloc_retries_ = 0;
};

}  // namespace ironlaw::workload
