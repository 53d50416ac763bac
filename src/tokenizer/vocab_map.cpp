#include "tokenizer/vocab_map.h"

namespace orchid::tok {

void StringIdMap::Finish() {
  size_t capacity = 16;
  while (capacity < pending_.size() * 2) capacity *= 2;
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
  arena_.clear();
  size_ = 0;
  max_len_ = 0;
  for (const Entry& entry : pending_) {
    const uint64_t h = Hash(entry.key);
    const auto tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.id < 0) {
        s.offset = static_cast<uint32_t>(arena_.size());
        s.len = static_cast<uint32_t>(entry.key.size());
        s.tag = tag;
        s.id = entry.id;
        arena_ += entry.key;
        ++size_;
        if (entry.key.size() > max_len_) max_len_ = entry.key.size();
        break;
      }
      if (s.tag == tag && std::string_view(arena_.data() + s.offset, s.len) == entry.key) {
        s.id = entry.id;  // duplicate key: last one wins
        break;
      }
    }
  }
  pending_.clear();
  pending_.shrink_to_fit();
}

}  // namespace orchid::tok
