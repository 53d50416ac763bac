// StringIdMap: an immutable open-addressing hash map from token strings to ids, looked up by
// std::string_view without allocating. Strings live in one arena.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace orchid::tok {

class StringIdMap {
 public:
  // Inserts or overwrites. Call Finish() after the last Insert and before Find.
  void Insert(std::string_view key, int32_t id) { pending_.push_back({std::string(key), id}); }
  void Finish();
  // -1 when absent.
  int32_t Find(std::string_view key) const {
    if (slots_.empty()) return -1;
    const uint64_t h = Hash(key);
    const auto tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (s.tag == tag && s.len == key.size() &&
          std::string_view(arena_.data() + s.offset, s.len) == key) {
        return s.id;
      }
    }
  }
  size_t size() const { return size_; }
  // Length in bytes of the longest key.
  size_t max_key_length() const { return max_len_; }

 private:
  struct Slot {
    uint32_t offset = 0;
    uint32_t len = 0;
    uint32_t tag = 0;
    int32_t id = -1;
  };
  static uint64_t Hash(std::string_view s) { return std::hash<std::string_view>{}(s); }

  struct Entry {
    std::string key;
    int32_t id;
  };
  std::vector<Entry> pending_;
  std::string arena_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
  size_t max_len_ = 0;
};

}  // namespace orchid::tok
