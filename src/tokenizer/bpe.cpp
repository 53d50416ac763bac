// BPE, reproducing `tokenizers` (models/bpe/model.rs merge_word + word.rs merge_all):
//  * a word starts as one symbol per character (continuing_subword_prefix on all but the first,
//    end_of_word_suffix on the last); a character missing from the vocab becomes its
//    <0xNN> byte tokens (byte_fallback) or the unk token (consecutive ones fused with fuse_unk;
//    dropped when there is no unk token). Quirk kept: byte-fallback tokens are emitted before a
//    pending (fused) unk.
//  * then the pair with the lowest merge rank is merged, leftmost first, until none is left,
//    through a binary heap of candidate merges whose stale entries are skipped (O(n log n)).
//  * ignore_merges: a word that is itself in the vocab is one token.
// Speed, same output: a word is merged in independent segments where no token can span the cut
// (Gemma3's whole-text "words", see ComputeSplitAtMetaspace), and short words' tokens are
// memoised per thread (word_cache.h).
#include "tokenizer/bpe.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab_map.h"
#include "tokenizer/word_cache.h"

namespace orchid::tok {
namespace {

// The GPT-2 byte → printable character table (bytes_to_unicode()).
std::array<char32_t, 256> ByteLevelAlphabet() {
  std::array<char32_t, 256> table{};
  std::array<bool, 256> direct{};
  for (int b = '!'; b <= '~'; ++b) direct[b] = true;
  for (int b = 0xA1; b <= 0xAC; ++b) direct[b] = true;
  for (int b = 0xAE; b <= 0xFF; ++b) direct[b] = true;
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) table[b] = direct[b] ? static_cast<char32_t>(b) : next++;
  return table;
}

// (left id, right id) → (rank, merged id); open addressing, immutable after Finish().
class MergeMap {
 public:
  struct Value {
    uint32_t rank;
    int32_t id;
  };
  void Reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap *= 2;
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
  }
  // Later entries overwrite earlier ones with the same pair (like a Rust HashMap collect).
  void Insert(int32_t a, int32_t b, Value v) {
    const uint64_t key = Key(a, b);
    for (size_t i = Hash(key) & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.value.id < 0 || s.key == key) {
        s.key = key;
        s.value = v;
        return;
      }
    }
  }
  const Value* Find(int32_t a, int32_t b) const {
    const uint64_t key = Key(a, b);
    for (size_t i = Hash(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value.id < 0) return nullptr;
      if (s.key == key) return &s.value;
    }
  }

 private:
  struct Slot {
    uint64_t key = 0;
    Value value{0, -1};
  };
  static uint64_t Key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  static uint64_t Hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

struct Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
  uint32_t begin;  // where its first character starts (offsets come from the lengths, below)
  uint32_t len;    // bytes of the word; 0 = merged away
};

struct Candidate {
  uint32_t rank;
  uint32_t pos;
  int32_t new_id;
};
// Max-heap comparator giving the lowest rank, then the lowest position, first.
inline bool Later(const Candidate& a, const Candidate& b) {
  return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
}

struct BpeScratch {
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
  std::string key;
};

class Bpe final : public BpeModel {
 public:
  Status Load(JsonObject o, std::string_view where) {
    JsonElement dropout;
    if (o["dropout"].get(dropout) == simdjson::SUCCESS && !dropout.is_null()) {
      double d = 0;
      if (dropout.get(d) != simdjson::SUCCESS || d != 0.0) {
        return JsonError(where, "dropout is not supported (it makes tokenization random)");
      }
    }
    std::string_view unk, prefix, suffix;
    has_unk_ = false;
    JsonElement unk_json;
    if (o["unk_token"].get(unk_json) == simdjson::SUCCESS && !unk_json.is_null()) {
      ORCHID_RETURN_IF_ERROR(ReadString(o, "unk_token", where, &unk, true));
      has_unk_ = true;
    }
    ORCHID_RETURN_IF_ERROR(ReadString(o, "continuing_subword_prefix", where, &prefix, false));
    ORCHID_RETURN_IF_ERROR(ReadString(o, "end_of_word_suffix", where, &suffix, false));
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "fuse_unk", where, &fuse_unk_));
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "byte_fallback", where, &byte_fallback_));
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "ignore_merges", where, &ignore_merges_));
    unk_token_ = std::string(unk);
    prefix_ = std::string(prefix);
    suffix_ = std::string(suffix);

    JsonObject vocab;
    if (o["vocab"].get(vocab) != simdjson::SUCCESS) {
      return JsonError(where, "\"vocab\" must be an object of token → id");
    }
    for (auto field : vocab) {
      uint64_t id = 0;
      if (field.value.get(id) != simdjson::SUCCESS || id > kMaxVocabId) {
        return JsonError(
            where, StrCat({"vocab id of \"", field.key, "\" must be an integer in [0, 2^22)"}));
      }
      const auto id32 = static_cast<int32_t>(id);
      vocab_.Insert(field.key, id32);
      if (static_cast<size_t>(id32) >= id_to_token_.size()) {
        id_to_token_.resize(static_cast<size_t>(id32) + 1);
        has_id_.resize(static_cast<size_t>(id32) + 1, false);
      }
      id_to_token_[static_cast<size_t>(id32)] = std::string(field.key);
      has_id_[static_cast<size_t>(id32)] = true;
    }
    vocab_.Finish();
    if (has_unk_) unk_id_ = vocab_.Find(unk_token_);  // checked when first needed, as upstream

    simdjson::dom::array merges;
    if (o["merges"].get(merges) != simdjson::SUCCESS) {
      return JsonError(where, "\"merges\" must be an array");
    }
    merges_.Reserve(merges.size());
    uint32_t rank = 0;
    std::string merged;
    for (JsonElement m : merges) {
      std::string_view a, b, line;
      simdjson::dom::array pair;
      if (m.get(line) == simdjson::SUCCESS) {
        const size_t sp = line.find(' ');
        if (sp == std::string_view::npos || line.find(' ', sp + 1) != std::string_view::npos) {
          return JsonError(where, StrCat({"merge \"", line, "\" is not two tokens separated by one space"}));
        }
        a = line.substr(0, sp);
        b = line.substr(sp + 1);
      } else if (m.get(pair) != simdjson::SUCCESS || pair.size() != 2 ||
                 pair.at(0).get(a) != simdjson::SUCCESS || pair.at(1).get(b) != simdjson::SUCCESS) {
        return JsonError(where, "a merge must be \"a b\" or [\"a\", \"b\"]");
      }
      const int32_t ia = vocab_.Find(a);
      const int32_t ib = vocab_.Find(b);
      if (ia < 0 || ib < 0) {
        return JsonError(where, StrCat({"merge token \"", ia < 0 ? a : b, "\" is not in the vocab"}));
      }
      merged.assign(a);
      std::string_view tail = b;
      if (!prefix_.empty() && tail.substr(0, prefix_.size()) == prefix_) tail.remove_prefix(prefix_.size());
      merged.append(tail);
      const int32_t id = vocab_.Find(merged);
      if (id < 0) return JsonError(where, StrCat({"merged token \"", merged, "\" is not in the vocab"}));
      merges_.Insert(ia, ib, {rank++, id});
    }
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      byte_fallback_ids_[static_cast<size_t>(b)] = vocab_.Find(name);
    }
    split_at_metaspace_ = ComputeSplitAtMetaspace();
    return Status::Ok();
  }

  void EnableByteLevel() override {
    byte_level_ = true;
    const std::array<char32_t, 256> alphabet = ByteLevelAlphabet();
    std::string s;
    for (size_t b = 0; b < 256; ++b) {
      s.clear();
      AppendUtf8(alphabet[b], &s);
      byte_chars_[b] = s;
    }
  }

  Status Tokenize(std::string_view word, std::vector<ModelToken>* out) const override {
    if (word.empty()) return Status::Ok();
    thread_local BpeScratch s;
    if (ignore_merges_) {
      const int32_t id = vocab_.Find(VocabKey(word, &s.key));
      if (id >= 0) {
        out->push_back({id, 0, static_cast<uint32_t>(word.size())});
        return Status::Ok();
      }
    }
    if (!split_at_metaspace_ || byte_level_) return TokenizeSegment(word, 0, &s, out);
    // Gemma-style words (the whole text, spaces replaced by ▁) merge as independent segments
    // that start where a ▁ follows another character (see ComputeSplitAtMetaspace), which keeps
    // the merge heap small.
    size_t seg = 0;
    for (size_t i = 1; i + kMetaspace.size() <= word.size(); ++i) {
      i = word.find(kMetaspace[0], i);
      if (i == std::string_view::npos || i + kMetaspace.size() > word.size()) break;
      if (word.compare(i, kMetaspace.size(), kMetaspace) != 0) continue;
      const bool after_metaspace =
          i >= kMetaspace.size() &&
          word.compare(i - kMetaspace.size(), kMetaspace.size(), kMetaspace) == 0;
      if (!after_metaspace && !no_cut_after_[static_cast<unsigned char>(word[i - 1])]) {
        ORCHID_RETURN_IF_ERROR(TokenizeSegment(word.substr(seg, i - seg), seg, &s, out));
        seg = i;
      }
      i += kMetaspace.size() - 1;
    }
    return TokenizeSegment(word.substr(seg), seg, &s, out);
  }

  std::optional<int32_t> TokenToId(std::string_view token) const override {
    const int32_t id = vocab_.Find(token);
    return id >= 0 ? std::optional<int32_t>(id) : std::nullopt;
  }
  std::optional<std::string_view> IdToToken(int32_t id) const override {
    if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() || !has_id_[static_cast<size_t>(id)]) {
      return std::nullopt;
    }
    return std::string_view(id_to_token_[static_cast<size_t>(id)]);
  }
  int32_t vocab_size() const override { return static_cast<int32_t>(id_to_token_.size()); }

 private:
  static constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // ▁

  Status TokenizeSegment(std::string_view word, size_t base, BpeScratch* s,
                         std::vector<ModelToken>* out) const {
    const auto b = static_cast<uint32_t>(base);
    WordCache& cache = WordCache::ForThisThread();
    if (cache.Lookup(cache_tag_, word, b, out)) return Status::Ok();
    ORCHID_RETURN_IF_ERROR(InitialSymbols(word, s));
    MergeAll(s);
    // Offsets as `tokenizers` gives them (Word::into_offsets): each token's bytes follow the
    // previous token's. That is each symbol's own range, except after the quirk above (byte
    // tokens pushed before a pending unk: out of order in the word), where a merge across the
    // two would otherwise reach past the word's end.
    const size_t first = out->size();
    uint32_t pos = 0;
    for (const Symbol& sym : s->symbols) {
      if (sym.len == 0) continue;
      out->push_back({sym.id, pos, pos + sym.len});
      pos += sym.len;
    }
    cache.Insert(cache_tag_, word, out->data() + first, out->size() - first);
    for (size_t k = first; k < out->size(); ++k) {
      (*out)[k].begin += b;
      (*out)[k].end += b;
    }
    return Status::Ok();
  }

  // Whether a word may be cut before a ▁ that follows a byte B: BPE over a word equals BPE over
  // its pieces when no vocab token spans a cut, since every symbol is a vocab token and a merge
  // only looks at its pair. A cut is allowed before each ▁ whose preceding character is not ▁
  // and does not end in a byte that some token has right before a ▁ (Gemma3: only ">▁</").
  // Needs "▁" itself in the vocab (so no unk run or byte fallback crosses a cut), no affixes
  // and no ignore_merges (which looks at the whole word).
  bool ComputeSplitAtMetaspace() {
    if (!prefix_.empty() || !suffix_.empty() || ignore_merges_ || vocab_.Find(kMetaspace) < 0) {
      return false;
    }
    no_cut_after_.fill(false);
    for (const std::string& token : id_to_token_) {
      const std::string_view t = token;
      for (size_t i = t.find(kMetaspace, 1); i != std::string_view::npos;
           i = t.find(kMetaspace, i + 1)) {
        if (i < kMetaspace.size() ||
            t.compare(i - kMetaspace.size(), kMetaspace.size(), kMetaspace) != 0) {
          no_cut_after_[static_cast<unsigned char>(t[i - 1])] = true;
        }
      }
    }
    return true;
  }

  // The word as the vocab spells it (byte-level characters in byte-level mode).
  std::string_view VocabKey(std::string_view word, std::string* buf) const {
    if (!byte_level_) return word;
    buf->clear();
    for (char c : word) buf->append(byte_chars_[static_cast<unsigned char>(c)]);
    return *buf;
  }

  void Push(BpeScratch* s, int32_t id, uint32_t begin, uint32_t len) const {
    const auto n = static_cast<int32_t>(s->symbols.size());
    s->symbols.push_back({id, n - 1, n + 1, begin, len});
  }

  Status InitialSymbols(std::string_view word, BpeScratch* s) const {
    s->symbols.clear();
    const bool affixes = !prefix_.empty() || !suffix_.empty();
    int32_t unk_id = -1;  // pending (fused) unk
    uint32_t unk_begin = 0, unk_len = 0;
    size_t i = 0;
    while (i < word.size()) {
      const size_t start = i;
      std::string_view ch;
      if (byte_level_) {
        i += 1;
        ch = byte_chars_[static_cast<unsigned char>(word[start])];
      } else {
        i += static_cast<size_t>(Utf8SeqLength(static_cast<unsigned char>(word[start])));
        if (i > word.size()) i = word.size();
        ch = word.substr(start, i - start);
      }
      const auto begin = static_cast<uint32_t>(start);
      const auto len = static_cast<uint32_t>(i - start);
      std::string_view key = ch;
      if (affixes) {
        s->key.clear();
        if (start != 0) s->key += prefix_;
        s->key.append(ch);
        if (i == word.size()) s->key += suffix_;
        key = s->key;
      }
      const int32_t id = vocab_.Find(key);
      if (id >= 0) {
        if (unk_id >= 0) {
          Push(s, unk_id, unk_begin, unk_len);
          unk_id = -1;
        }
        Push(s, id, begin, len);
        continue;
      }
      if (byte_fallback_) {
        bool all = true;
        for (char c : key) all = all && byte_fallback_ids_[static_cast<unsigned char>(c)] >= 0;
        if (all) {
          // Byte tokens cover one byte of the word each (the affixes have no source bytes).
          for (size_t k = 0; k < key.size(); ++k) {
            const uint32_t b = std::min<uint32_t>(begin + static_cast<uint32_t>(k), begin + len - 1);
            Push(s, byte_fallback_ids_[static_cast<unsigned char>(key[k])], b, 1);
          }
          continue;
        }
      }
      if (!has_unk_) continue;
      if (unk_id_ < 0) {
        return Status::Corrupt(StrCat({"BPE: unk_token \"", unk_token_, "\" is not in the vocab"}));
      }
      if (unk_id >= 0 && fuse_unk_) {
        // `tokenizers` adds the character's bytes (not the span from the first unknown one: a
        // byte-fallback character in between is not the unk's).
        unk_len += len;
      } else {
        if (unk_id >= 0) Push(s, unk_id, unk_begin, unk_len);
        unk_id = unk_id_;
        unk_begin = begin;
        unk_len = len;
      }
    }
    if (unk_id >= 0) Push(s, unk_id, unk_begin, unk_len);
    if (!s->symbols.empty()) s->symbols.back().next = -1;
    return Status::Ok();
  }

  void MergeAll(BpeScratch* s) const {
    std::vector<Symbol>& sym = s->symbols;
    std::vector<Candidate>& heap = s->heap;
    heap.clear();
    auto consider = [&](size_t pos) {
      const Symbol& a = sym[pos];
      if (a.next < 0) return;
      if (const MergeMap::Value* m = merges_.Find(a.id, sym[static_cast<size_t>(a.next)].id)) {
        heap.push_back({m->rank, static_cast<uint32_t>(pos), m->id});
        std::push_heap(heap.begin(), heap.end(), Later);
      }
    };
    for (size_t i = 0; i + 1 < sym.size(); ++i) {
      if (const MergeMap::Value* m = merges_.Find(sym[i].id, sym[i + 1].id)) {
        heap.push_back({m->rank, static_cast<uint32_t>(i), m->id});
      }
    }
    std::make_heap(heap.begin(), heap.end(), Later);
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), Later);
      const Candidate top = heap.back();
      heap.pop_back();
      Symbol& left = sym[top.pos];
      if (left.len == 0 || left.next < 0) continue;
      const auto next_pos = static_cast<size_t>(left.next);
      const Symbol right = sym[next_pos];
      const MergeMap::Value* m = merges_.Find(left.id, right.id);
      if (m == nullptr || m->id != top.new_id) continue;  // stale entry
      left.id = top.new_id;
      left.len += right.len;
      left.next = right.next;
      sym[next_pos].len = 0;
      if (right.next >= 0) sym[static_cast<size_t>(right.next)].prev = static_cast<int32_t>(top.pos);
      if (left.prev >= 0) consider(static_cast<size_t>(left.prev));
      consider(top.pos);
    }
  }

  StringIdMap vocab_;
  MergeMap merges_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_id_;
  std::array<int32_t, 256> byte_fallback_ids_{};
  std::array<std::string, 256> byte_chars_;
  std::string unk_token_, prefix_, suffix_;
  int32_t unk_id_ = -1;
  bool has_unk_ = false;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  bool byte_level_ = false;
  bool split_at_metaspace_ = false;
  std::array<bool, 256> no_cut_after_{};
  const uint64_t cache_tag_ = WordCache::NewOwnerTag();
};

}  // namespace

Result<std::unique_ptr<BpeModel>> MakeBpe(JsonObject json, std::string_view where) {
  auto model = std::make_unique<Bpe>();
  ORCHID_RETURN_IF_ERROR(model->Load(json, where));
  return std::unique_ptr<BpeModel>(std::move(model));
}

}  // namespace orchid::tok
