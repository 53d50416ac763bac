// WordCache: a per-thread memo of a model's tokens for short words, as `tokenizers` keeps for
// BPE and Unigram. Natural text repeats its words, so most words skip the merge loop / Viterbi.
//
// Set-associative and fixed-size: a slot holds one word of up to kMaxWordBytes bytes and up to
// kMaxTokens tokens, tagged with the model that produced them (several models may share a
// thread): a model's tag comes from NewOwnerTag(), never reused, so a model freed and another
// allocated at its address cannot see its entries. A colliding word replaces the slot's word.
// Results are a pure function of (model, word), so the cache never changes output. Each thread
// allocates its table once, on first use; after that a lookup or insert never allocates. Not shared
// between threads: no locking.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "tokenizer/components.h"

namespace orchid::tok {

class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 24;
  static constexpr size_t kMaxTokens = 5;

  // A tag no other model has had in this process.
  static uint64_t NewOwnerTag() {
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
  }

  // The calling thread's cache.
  static WordCache& ForThisThread() {
    thread_local WordCache cache;
    return cache;
  }

  // On a hit, appends OWNER's tokens for WORD to *out, offsets shifted by BASE, and returns true.
  bool Lookup(uint64_t owner, std::string_view word, uint32_t base,
              std::vector<ModelToken>* out) const {
    if (word.size() > kMaxWordBytes || slots_ == nullptr) return false;
    const uint64_t h = Hash(owner, word);
    const size_t set = h & (kSets - 1);
    const uint32_t tag = Tag(h);
    const uint32_t* tags = tags_.get() + set * kWays;
    for (size_t w = 0; w < kWays; ++w) {
      if (tags[w] != tag) continue;
      const Slot& s = slots_[set * kWays + w];
      if (s.owner != Owner32(owner) || s.word_len != word.size() ||
          std::memcmp(s.word, word.data(), word.size()) != 0) {
        continue;
      }
      for (uint8_t k = 0; k < s.num_tokens; ++k) {
        out->push_back({s.ids[k], base + s.begins[k], base + s.ends[k]});
      }
      return true;
    }
    return false;
  }

  // Remembers TOKENS (offsets relative to WORD, i.e. BASE already subtracted) when they fit,
  // in the set's first way, pushing the others down (the last is evicted).
  void Insert(uint64_t owner, std::string_view word, const ModelToken* tokens, size_t n) {
    if (word.size() > kMaxWordBytes || n > kMaxTokens) return;
    if (slots_ == nullptr) {
      tags_ = std::make_unique<uint32_t[]>(kSets * kWays);  // zeroed: every way empty
      slots_ = std::make_unique<Slot[]>(kSets * kWays);
    }
    const uint64_t h = Hash(owner, word);
    const size_t set = h & (kSets - 1);
    uint32_t* tags = tags_.get() + set * kWays;
    Slot* slots = slots_.get() + set * kWays;
    for (size_t w = kWays - 1; w > 0; --w) {
      tags[w] = tags[w - 1];
      slots[w] = slots[w - 1];
    }
    tags[0] = Tag(h);
    Slot& s = slots[0];
    s.owner = Owner32(owner);
    s.word_len = static_cast<uint8_t>(word.size());
    s.num_tokens = static_cast<uint8_t>(n);
    std::memcpy(s.word, word.data(), word.size());
    for (size_t k = 0; k < n; ++k) {
      s.ids[k] = tokens[k].id;
      s.begins[k] = static_cast<uint8_t>(tokens[k].begin);
      s.ends[k] = static_cast<uint8_t>(tokens[k].end);
    }
  }

 private:
  // 4-way set-associative, 32,768 words. The tags (128 KB) live apart from the slots so that a
  // lookup's probe stays in L2; a slot is one 64-byte cache line (2 MB in all per thread), so a
  // hit costs at most one miss.
  static constexpr size_t kWays = 4;
  static constexpr size_t kSets = 8192;
  struct alignas(64) Slot {
    uint32_t owner = 0;
    uint8_t word_len = 0;
    uint8_t num_tokens = 0;
    char word[kMaxWordBytes];
    int32_t ids[kMaxTokens];
    uint8_t begins[kMaxTokens];
    uint8_t ends[kMaxTokens];
  };
  static_assert(sizeof(Slot) == 64, "a slot is one cache line");

  // Owner tags are a process-wide counter; its low 32 bits stay unique for 4 billion models.
  static uint32_t Owner32(uint64_t owner) { return static_cast<uint32_t>(owner); }
  static uint64_t Hash(uint64_t owner, std::string_view word) {
    uint64_t h = 0xcbf29ce484222325ULL ^ (owner * 0x9E3779B97F4A7C15ULL);
    for (char c : word) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
    return h ^ (h >> 29);
  }
  static uint32_t Tag(uint64_t h) { return static_cast<uint32_t>(h >> 32) | 1u; }  // never 0

  std::unique_ptr<uint32_t[]> tags_;
  std::unique_ptr<Slot[]> slots_;
};

}  // namespace orchid::tok
