#include "tokenizer/added_vocabulary.h"

#include <algorithm>
#include <utility>

#include "tokenizer/unicode.h"

namespace orchid::tok {
namespace {

// The code point ending at text[end) (text[begin, end) is valid UTF-8, end > begin).
char32_t LastCodepoint(std::string_view text, size_t begin, size_t end) {
  size_t i = end - 1;
  while (i > begin && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) --i;
  char32_t cp = 0;
  size_t pos = i;
  return DecodeUtf8(text, &pos, &cp) ? cp : 0xFFFD;
}
char32_t FirstCodepoint(std::string_view text, size_t begin) {
  char32_t cp = 0;
  size_t pos = begin;
  return DecodeUtf8(text, &pos, &cp) ? cp : 0xFFFD;
}

}  // namespace

void AddedVocabulary::Matcher::Add(std::string pattern, uint32_t token_index) {
  if (pattern.empty()) return;
  patterns_.push_back({std::move(pattern), token_index});
}

void AddedVocabulary::Matcher::Finish() {
  std::stable_sort(patterns_.begin(), patterns_.end(), [](const Pattern& a, const Pattern& b) {
    const auto fa = static_cast<unsigned char>(a.text[0]);
    const auto fb = static_cast<unsigned char>(b.text[0]);
    if (fa != fb) return fa < fb;
    return a.text.size() > b.text.size();
  });
  size_t p = 0;
  for (uint32_t b = 0; b <= 256; ++b) {
    while (p < patterns_.size() && static_cast<unsigned char>(patterns_[p].text[0]) < b) ++p;
    first_byte_start_[b] = static_cast<uint32_t>(p);
  }
}

// Mirrors AddedVocabulary::find_matches: non-overlapping leftmost-longest matches; a
// single_word token next to a word character is skipped (its span still consumed); lstrip /
// rstrip widen the token's span over adjacent whitespace.
void AddedVocabulary::Matcher::Split(const std::vector<AddedToken>& tokens, std::string_view text,
                                     Span range, std::vector<TextPiece>* out) const {
  const size_t rb = range.begin;
  const size_t re = range.end;
  size_t start_offset = rb;
  if (!patterns_.empty()) {
    size_t p = rb;
    while (p < re) {
      const auto b = static_cast<unsigned char>(text[p]);
      const Pattern* hit = nullptr;
      for (uint32_t k = first_byte_start_[b]; k < first_byte_start_[b + 1]; ++k) {
        const std::string& pat = patterns_[k].text;
        if (pat.size() <= re - p && text.compare(p, pat.size(), pat) == 0) {
          hit = &patterns_[k];
          break;
        }
      }
      if (hit == nullptr) {
        ++p;
        continue;
      }
      const AddedToken& token = tokens[hit->token_index];
      size_t start = p;
      size_t stop = p + hit->text.size();
      p = stop;  // the match iterator resumes after the match, whatever happens to it
      if (token.single_word) {
        const bool space_before = start == rb || !IsWordChar(LastCodepoint(text, rb, start));
        const bool space_after = stop == re || !IsWordChar(FirstCodepoint(text, stop));
        if (!space_before || !space_after) continue;
      }
      if (token.lstrip) {
        size_t s = start;
        while (s > rb) {
          size_t prev = s - 1;
          while (prev > rb && (static_cast<unsigned char>(text[prev]) & 0xC0) == 0x80) --prev;
          if (!IsWhiteSpace(LastCodepoint(text, rb, s))) break;
          s = prev;
        }
        start = std::max(s, start_offset);
      }
      if (token.rstrip) {
        while (stop < re) {
          size_t next = stop;
          char32_t cp = 0;
          if (!DecodeUtf8(text, &next, &cp) || !IsWhiteSpace(cp)) break;
          stop = next;
        }
      }
      start = std::max(start, start_offset);
      if (start_offset < start) {
        out->push_back({static_cast<uint32_t>(start_offset), static_cast<uint32_t>(start), -1});
      }
      out->push_back({static_cast<uint32_t>(start), static_cast<uint32_t>(stop), token.id});
      start_offset = stop;
    }
  }
  if (start_offset < re || rb == re) {
    out->push_back({static_cast<uint32_t>(start_offset), static_cast<uint32_t>(re), -1});
  }
}

Status AddedVocabulary::Load(JsonElement added_tokens, const Model& model,
                             const Normalizer* normalizer, std::string_view where) {
  if (added_tokens.is_null()) return Status::Ok();
  simdjson::dom::array arr;
  if (added_tokens.get(arr) != simdjson::SUCCESS) return JsonError(where, "expected an array");
  for (JsonElement item : arr) {
    JsonObject o;
    if (item.get(o) != simdjson::SUCCESS) return JsonError(where, "entries must be objects");
    AddedToken t;
    std::string_view content;
    uint64_t id = 0;
    ORCHID_RETURN_IF_ERROR(ReadString(o, "content", where, &content, true));
    ORCHID_RETURN_IF_ERROR(ReadUint(o, "id", where, &id, true));
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "special", where, &t.special));
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "single_word", where, &t.single_word));
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "lstrip", where, &t.lstrip));
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "rstrip", where, &t.rstrip));
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "normalized", where, &t.normalized));
    if (id > 0x7FFFFFFF) return JsonError(where, "id out of range");
    if (content.empty()) continue;  // `tokenizers` ignores empty added tokens
    t.content = std::string(content);
    // Like `tokenizers`: a token already in the model's vocab keeps the vocab's id.
    t.id = model.TokenToId(content).value_or(static_cast<int32_t>(id));
    tokens_.push_back(std::move(t));
  }
  for (uint32_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& t = tokens_[i];
    if (!t.normalized) {
      raw_.Add(t.content, i);
    } else if (normalizer != nullptr) {
      NormalizedText n;
      normalizer->NormalizeRaw(t.content, 0, &n);
      normalized_.Add(n.text, i);
    } else {
      normalized_.Add(t.content, i);
    }
  }
  raw_.Finish();
  normalized_.Finish();
  return Status::Ok();
}

std::optional<int32_t> AddedVocabulary::TokenToId(std::string_view content) const {
  for (const AddedToken& t : tokens_) {
    if (t.content == content) return t.id;
  }
  return std::nullopt;
}

std::optional<std::string_view> AddedVocabulary::IdToToken(int32_t id) const {
  for (const AddedToken& t : tokens_) {
    if (t.id == id) return std::string_view(t.content);
  }
  return std::nullopt;
}

}  // namespace orchid::tok
