// Unigram, reproducing `tokenizers` (models/unigram/model.rs, encode_optimized + tokenize):
//  * Viterbi over the word's characters: from each character start, every vocab piece that
//    prefixes the rest (a byte trie) extends the best path ending there by its score; when no
//    piece covers exactly the one character, an unknown node of score min_score - 10 does.
//    Ties keep the earlier candidate (strictly-greater replaces).
//  * Backtracking fuses consecutive unknown nodes into one piece.
//  * Each piece is then looked up by its string (the last id of a duplicated piece); a piece
//    missing from the vocab becomes its <0xNN> byte tokens (byte_fallback, all bytes must
//    exist) or unk_id.
//  * Short words' tokens are memoised per thread (word_cache.h).
#include "tokenizer/unigram.h"

#include <array>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab_map.h"
#include "tokenizer/word_cache.h"

namespace orchid::tok {
namespace {

constexpr double kUnkPenalty = 10.0;

// A byte trie of the pieces: children in one open-addressing table keyed by (node, byte).
class PieceTrie {
 public:
  void Build(const std::vector<std::string>& pieces, const StringIdMap& ids) {
    node_id_.assign(1, -1);
    size_t edges = 0;
    for (const std::string& p : pieces) edges += p.size();
    size_t cap = 16;
    while (cap < edges * 2) cap *= 2;
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
    for (const std::string& p : pieces) {
      uint32_t node = 0;
      for (char c : p) node = Child(node, static_cast<unsigned char>(c), true);
      node_id_[node] = ids.Find(p);
    }
  }
  // Walks from the root; calls f(length, id) for every piece that prefixes text.
  template <typename F>
  void CommonPrefixes(std::string_view text, F&& f) const {
    uint32_t node = 0;
    for (size_t k = 0; k < text.size(); ++k) {
      const uint32_t child = Find(node, static_cast<unsigned char>(text[k]));
      if (child == 0) return;
      node = child;
      if (node_id_[node] >= 0) f(k + 1, node_id_[node]);
    }
  }

 private:
  struct Slot {
    uint64_t key = ~0ULL;
    uint32_t child = 0;
  };
  static uint64_t Hash(uint64_t k) {
    k ^= k >> 31;
    k *= 0x9E3779B97F4A7C15ULL;
    k ^= k >> 29;
    return k;
  }
  uint32_t Find(uint32_t node, unsigned char c) const {
    const uint64_t key = (static_cast<uint64_t>(node) << 8) | c;
    for (size_t i = Hash(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return s.child;
      if (s.key == ~0ULL) return 0;
    }
  }
  uint32_t Child(uint32_t node, unsigned char c, bool create) {
    const uint64_t key = (static_cast<uint64_t>(node) << 8) | c;
    for (size_t i = Hash(key) & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == key) return s.child;
      if (s.key == ~0ULL) {
        if (!create) return 0;
        s.key = key;
        s.child = static_cast<uint32_t>(node_id_.size());
        node_id_.push_back(-1);
        return s.child;
      }
    }
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  std::vector<int32_t> node_id_;  // piece id ending at each node, -1 if none
};

struct Node {
  double score;
  int32_t id;
  int32_t start;  // -1: not reached
};

struct UnigramScratch {
  std::vector<Node> best;
  std::vector<std::pair<uint32_t, uint32_t>> pieces;  // (begin, end), reversed
};

class Unigram final : public Model {
 public:
  Status Load(JsonObject o, std::string_view where) {
    simdjson::dom::array vocab;
    if (o["vocab"].get(vocab) != simdjson::SUCCESS) {
      return JsonError(where, "\"vocab\" must be an array of [piece, score]");
    }
    min_score_ = std::numeric_limits<double>::infinity();
    for (JsonElement item : vocab) {
      simdjson::dom::array pair;
      std::string_view piece;
      double score = 0;
      if (item.get(pair) != simdjson::SUCCESS || pair.size() != 2 ||
          pair.at(0).get(piece) != simdjson::SUCCESS) {
        return JsonError(where, "a vocab entry must be [piece, score]");
      }
      JsonElement s = pair.at(1).value_unsafe();
      if (s.get(score) != simdjson::SUCCESS) {
        int64_t i = 0;
        if (s.get(i) != simdjson::SUCCESS) return JsonError(where, StrCat({"bad score for \"", piece, "\""}));
        score = static_cast<double>(i);
      }
      const auto id = static_cast<int32_t>(pieces_.size());
      pieces_.emplace_back(piece);
      scores_.push_back(score);
      ids_.Insert(piece, id);  // a duplicated piece resolves to its last id
      if (score < min_score_) min_score_ = score;
    }
    ids_.Finish();
    JsonElement unk;
    if (o["unk_id"].get(unk) == simdjson::SUCCESS && !unk.is_null()) {
      uint64_t u = 0;
      if (unk.get(u) != simdjson::SUCCESS || u >= pieces_.size()) {
        return JsonError(where, "\"unk_id\" must index the vocab");
      }
      unk_id_ = static_cast<int32_t>(u);
    }
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "byte_fallback", where, &byte_fallback_));
    trie_.Build(pieces_, ids_);
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      byte_ids_[static_cast<size_t>(b)] = ids_.Find(name);
    }
    return Status::Ok();
  }

  Status Tokenize(std::string_view word, std::vector<ModelToken>* out) const override {
    if (word.empty()) return Status::Ok();
    WordCache& cache = WordCache::ForThisThread();
    if (cache.Lookup(cache_tag_, word, 0, out)) return Status::Ok();
    const size_t first = out->size();
    ORCHID_RETURN_IF_ERROR(Viterbi(word, out));
    cache.Insert(cache_tag_, word, out->data() + first, out->size() - first);
    return Status::Ok();
  }

 private:
  Status Viterbi(std::string_view word, std::vector<ModelToken>* out) const {
    thread_local UnigramScratch s;
    const size_t n = word.size();
    s.best.assign(n + 1, Node{0.0, 0, -1});
    const double unk_score = min_score_ - kUnkPenalty;
    size_t start = 0;
    while (start < n) {
      const double here = s.best[start].score;
      const auto mblen = std::min<size_t>(static_cast<size_t>(Utf8SeqLength(static_cast<unsigned char>(word[start]))), n - start);
      bool single = false;
      trie_.CommonPrefixes(word.substr(start), [&](size_t len, int32_t id) {
        Node& target = s.best[start + len];
        const double candidate = scores_[static_cast<size_t>(id)] + here;
        if (target.start < 0 || candidate > target.score) {
          target = {candidate, id, static_cast<int32_t>(start)};
        }
        if (len == mblen) single = true;
      });
      if (!single) {
        if (unk_id_ < 0) return Status::Corrupt("Unigram: a character is not in the vocab and there is no unk_id");
        Node& target = s.best[start + mblen];
        const double candidate = unk_score + here;
        if (target.start < 0 || candidate > target.score) {
          target = {candidate, unk_id_, static_cast<int32_t>(start)};
        }
      }
      start += mblen;
    }
    // Backtrack, fusing consecutive unknown nodes.
    s.pieces.clear();
    size_t end = n;
    size_t unk_end = 0;
    bool in_unk = false;
    while (end > 0) {
      const Node& node = s.best[end];
      const auto begin = static_cast<size_t>(node.start);
      if (unk_id_ >= 0 && node.id == unk_id_) {
        if (!in_unk) unk_end = end;
        in_unk = true;
      } else {
        if (in_unk) s.pieces.emplace_back(static_cast<uint32_t>(end), static_cast<uint32_t>(unk_end));
        in_unk = false;
        s.pieces.emplace_back(static_cast<uint32_t>(begin), static_cast<uint32_t>(end));
      }
      end = begin;
    }
    if (in_unk) s.pieces.emplace_back(0u, static_cast<uint32_t>(unk_end));
    for (size_t k = s.pieces.size(); k-- > 0;) {
      const auto [b, e] = s.pieces[k];
      const std::string_view piece = word.substr(b, e - b);
      const int32_t id = ids_.Find(piece);
      if (id >= 0) {
        out->push_back({id, b, e});
        continue;
      }
      if (byte_fallback_) {
        bool all = true;
        for (char c : piece) all = all && byte_ids_[static_cast<unsigned char>(c)] >= 0;
        if (all) {
          for (char c : piece) out->push_back({byte_ids_[static_cast<unsigned char>(c)], b, e});
          continue;
        }
      }
      if (unk_id_ < 0) return Status::Corrupt("Unigram: unknown piece and no unk_id");
      out->push_back({unk_id_, b, e});
    }
    return Status::Ok();
  }

 public:
  std::optional<int32_t> TokenToId(std::string_view token) const override {
    const int32_t id = ids_.Find(token);
    return id >= 0 ? std::optional<int32_t>(id) : std::nullopt;
  }
  std::optional<std::string_view> IdToToken(int32_t id) const override {
    if (id < 0 || static_cast<size_t>(id) >= pieces_.size()) return std::nullopt;
    return std::string_view(pieces_[static_cast<size_t>(id)]);
  }
  int32_t vocab_size() const override { return static_cast<int32_t>(pieces_.size()); }

 private:
  std::vector<std::string> pieces_;
  std::vector<double> scores_;
  StringIdMap ids_;
  PieceTrie trie_;
  std::array<int32_t, 256> byte_ids_{};
  double min_score_ = 0;
  int32_t unk_id_ = -1;
  bool byte_fallback_ = false;
  const uint64_t cache_tag_ = WordCache::NewOwnerTag();
};

}  // namespace

Result<std::unique_ptr<Model>> MakeUnigram(JsonObject json, std::string_view where) {
  auto model = std::make_unique<Unigram>();
  ORCHID_RETURN_IF_ERROR(model->Load(json, where));
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace orchid::tok
