#include "workload/caching_allocator.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace ironlaw::workload {

namespace {

std::uint64_t round_up(std::uint64_t x, std::uint64_t unit) { return (x + unit - 1) / unit * unit; }

}  // namespace

CachingAllocator::CachingAllocator(AllocatorRules rules) : rules_(rules) {
  if (rules_.min_block == 0 || rules_.small_size == 0 || rules_.small_buffer == 0 || rules_.large_buffer == 0 ||
      rules_.min_large_alloc == 0 || rules_.round_large == 0) {
    throw std::invalid_argument("CachingAllocator: every allocator constant must be positive");
  }
}

CachingAllocator::Key CachingAllocator::key(int b) const {
  const Block& k = blocks_[static_cast<std::size_t>(b)];
  const Segment& s = segments_[static_cast<std::size_t>(k.segment)];
  return {s.small, s.stream, k.size, k.segment, k.offset, b};
}

void CachingAllocator::insert_free(int b) { free_.insert(key(b)); }
void CachingAllocator::erase_free(int b) { free_.erase(key(b)); }

int CachingAllocator::new_block(int segment, std::uint64_t offset, std::uint64_t size) {
  Block b;
  b.segment = segment;
  b.offset = offset;
  b.size = size;
  blocks_.push_back(b);
  return static_cast<int>(blocks_.size()) - 1;
}

void CachingAllocator::add_reserved(std::uint64_t bytes) {
  reserved_ += bytes;
  peak_reserved_ = std::max(peak_reserved_, reserved_);
}

int CachingAllocator::grow(bool small, int stream, std::uint64_t size) {
  if (!rules_.expandable_segments) {
    std::uint64_t bytes = 0;
    if (small) {
      bytes = rules_.small_buffer;
    } else if (size < rules_.min_large_alloc) {
      bytes = rules_.large_buffer;
    } else {
      bytes = round_up(size, rules_.round_large);
    }
    if (rules_.capacity > 0 && reserved_ + bytes > rules_.capacity) {
      // cudaMalloc fails: free the cache's unsplit segments, then try again.
      ++alloc_retries_;
      release_cached_segments();
    }
    Segment s;
    s.stream = stream;
    s.small = small;
    s.size = bytes;
    segments_.push_back(s);
    const int seg = static_cast<int>(segments_.size()) - 1;
    const int b = new_block(seg, 0, bytes);
    segments_.back().last = b;
    add_reserved(bytes);
    return b;
  }
  const auto where = expandable_.find({stream, small});
  int seg = 0;
  if (where == expandable_.end()) {
    Segment s;
    s.stream = stream;
    s.small = small;
    s.expandable = true;
    segments_.push_back(s);
    seg = static_cast<int>(segments_.size()) - 1;
    expandable_[{stream, small}] = seg;
  } else {
    seg = where->second;
  }
  const std::uint64_t page = small ? rules_.small_buffer : rules_.large_buffer;
  Segment& s = segments_[static_cast<std::size_t>(seg)];
  const int last = s.last;
  const bool tail_free = last >= 0 && !blocks_[static_cast<std::size_t>(last)].live;
  const std::uint64_t tail = tail_free ? blocks_[static_cast<std::size_t>(last)].size : 0;
  const std::uint64_t mapped = round_up(size - tail, page);
  const std::uint64_t start = s.size;
  s.size += mapped;
  add_reserved(mapped);
  if (tail_free) {
    erase_free(last);
    blocks_[static_cast<std::size_t>(last)].size += mapped;
    return last;
  }
  const int b = new_block(seg, start, mapped);
  blocks_[static_cast<std::size_t>(b)].prev = last;
  if (last >= 0) blocks_[static_cast<std::size_t>(last)].next = b;
  segments_[static_cast<std::size_t>(seg)].last = b;
  return b;
}

int CachingAllocator::allocate(std::uint64_t bytes, int stream) {
  if (bytes == 0) throw std::invalid_argument("CachingAllocator::allocate: 0 bytes");
  const std::uint64_t size = std::max(rules_.min_block, round_up(bytes, rules_.min_block));
  const bool small = size <= rules_.small_size;
  int b = -1;
  const auto it = free_.lower_bound(Key{small, stream, size, std::numeric_limits<int>::min(), 0, 0});
  if (it != free_.end() && std::get<0>(*it) == small && std::get<1>(*it) == stream) {
    b = std::get<5>(*it);
    free_.erase(it);
  } else {
    b = grow(small, stream, size);  // not in free_
  }
  Block& blk = blocks_[static_cast<std::size_t>(b)];
  const Segment& seg = segments_[static_cast<std::size_t>(blk.segment)];
  const std::uint64_t remaining = blk.size - size;
  const bool split = small || seg.expandable ? remaining >= rules_.min_block : remaining > rules_.small_size;
  if (split) {
    const int rest = new_block(blk.segment, blocks_[static_cast<std::size_t>(b)].offset + size, remaining);
    Block& head = blocks_[static_cast<std::size_t>(b)];  // new_block may have moved the vector
    Block& tail = blocks_[static_cast<std::size_t>(rest)];
    head.size = size;
    tail.prev = b;
    tail.next = head.next;
    if (head.next >= 0) blocks_[static_cast<std::size_t>(head.next)].prev = rest;
    head.next = rest;
    Segment& s = segments_[static_cast<std::size_t>(head.segment)];
    if (s.last == b) s.last = rest;
    insert_free(rest);
  }
  Block& out = blocks_[static_cast<std::size_t>(b)];
  out.live = true;
  allocated_ += out.size;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  return b;
}

void CachingAllocator::free(int handle) {
  if (handle < 0 || handle >= static_cast<int>(blocks_.size()) || !blocks_[static_cast<std::size_t>(handle)].live) {
    throw std::invalid_argument("CachingAllocator::free: not a live block");
  }
  int b = handle;
  blocks_[static_cast<std::size_t>(b)].live = false;
  allocated_ -= blocks_[static_cast<std::size_t>(b)].size;
  // Merge with a free predecessor, then with a free successor.
  const int prev = blocks_[static_cast<std::size_t>(b)].prev;
  if (prev >= 0 && !blocks_[static_cast<std::size_t>(prev)].live) {
    erase_free(prev);
    absorb_next(prev);
    b = prev;
  }
  const int next = blocks_[static_cast<std::size_t>(b)].next;
  if (next >= 0 && !blocks_[static_cast<std::size_t>(next)].live) {
    erase_free(next);
    absorb_next(b);
  }
  insert_free(b);
}

void CachingAllocator::release_cached_segments() {
  for (Segment& s : segments_) {
    if (s.expandable || s.size == 0 || s.last < 0) continue;
    Block& only = blocks_[static_cast<std::size_t>(s.last)];
    if (only.live || only.prev >= 0 || only.next >= 0) continue;  // split, or in use
    erase_free(s.last);
    reserved_ -= s.size;
    only.size = 0;
    s.size = 0;
    s.last = -1;
  }
}

void CachingAllocator::absorb_next(int keep) {
  Block& k = blocks_[static_cast<std::size_t>(keep)];
  const int gone = k.next;
  Block& g = blocks_[static_cast<std::size_t>(gone)];
  k.size += g.size;
  k.next = g.next;
  if (g.next >= 0) blocks_[static_cast<std::size_t>(g.next)].prev = keep;
  Segment& s = segments_[static_cast<std::size_t>(k.segment)];
  if (s.last == gone) s.last = keep;
  g.size = 0;
}

}  // namespace ironlaw::workload
