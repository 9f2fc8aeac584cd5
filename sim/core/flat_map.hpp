#pragma once
/// \file An open-addressing hash table from keys to 32-bit indices, for the engine's and the
/// comm layer's hot look-ups (the drain instants of a time bucket, the routes of a connection):
/// one slot read per look-up where a node-based map reads a bucket and a node.
///
/// Linear probing in a power-of-two array of slots (at least 1,024 once anything is stored),
/// at most MaxLoadPercent % full, then doubled; deletion by backward shift, so no tombstones.
/// A slot is empty when its value is kAbsent, so any key value is storable and kAbsent is not
/// a storable value. Keys are placed by MurmurHash3's 64-bit finaliser of Hash{}(key), so that
/// the low bits the mask keeps depend on every bit of the key. Not thread-safe.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ironlaw {

/// MurmurHash3's 64-bit finaliser (fmix64): a bijection of 64-bit values in which every input
/// bit affects every output bit. O(1).
constexpr std::uint64_t fmix64(std::uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

/// See the file comment. `Hash` maps a Key to 64 bits (std::uint64_t operator()(const Key&));
/// Key needs operator==.
template <class Key, class Hash, unsigned MaxLoadPercent>
class FlatMap {
  static_assert(MaxLoadPercent > 0 && MaxLoadPercent < 100, "FlatMap: the load bound is a percentage below 100");

 public:
  static constexpr std::uint32_t kAbsent = 0xffffffffu;

  /// The value of `key`, or kAbsent. O(1) expected.
  std::uint32_t find(const Key& key) const {
    if (slots_.empty()) return kAbsent;
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      if (slots_[i].value == kAbsent) return kAbsent;
      if (slots_[i].key == key) return slots_[i].value;
    }
  }
  /// The value of `key`, which must be present. O(1) expected.
  std::uint32_t& at(const Key& key) {
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      if (slots_[i].value != kAbsent && slots_[i].key == key) return slots_[i].value;
    }
  }
  /// Adds `key`, which must be absent, with `value` (≠ kAbsent). Amortised O(1).
  void insert(const Key& key, std::uint32_t value) {
    if (100 * (size_ + 1) > MaxLoadPercent * slots_.size()) grow();
    std::size_t i = home(key);
    while (slots_[i].value != kAbsent) i = (i + 1) & mask_;
    slots_[i] = Slot{key, value};
    ++size_;
  }
  /// Removes `key`, which must be present. O(1) expected.
  void erase(const Key& key) {
    std::size_t i = home(key);
    while (slots_[i].value == kAbsent || !(slots_[i].key == key)) i = (i + 1) & mask_;
    // Backward shift: move up every later entry of the run whose home is at or before i.
    for (std::size_t j = (i + 1) & mask_; slots_[j].value != kAbsent; j = (j + 1) & mask_) {
      const std::size_t h = home(slots_[j].key);
      if (((j - h) & mask_) >= ((j - i) & mask_)) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i].value = kAbsent;
    --size_;
  }
  /// Removes every entry and gives the slots back. O(slots).
  void clear() {
    slots_.clear();
    mask_ = 0;
    size_ = 0;
  }
  std::size_t size() const { return size_; }

 private:
  struct Slot {
    Key key{};
    std::uint32_t value = kAbsent;
  };
  std::size_t home(const Key& key) const { return static_cast<std::size_t>(fmix64(Hash{}(key))) & mask_; }
  // Doubles the slots (at least 1,024) and puts every entry back.
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<std::size_t>(1024, 2 * old.size()), Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.value == kAbsent) continue;
      std::size_t i = home(s.key);
      while (slots_[i].value != kAbsent) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;  // size a power of two, or empty
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace ironlaw
