#include "tokenizer/pre_tokenizers.h"

#include <array>
#include <string>

#include "tokenizer/unicode.h"

namespace orchid::tok {
namespace {

enum CharClass : uint8_t { kWord = 0, kSpace = 1, kPunct = 2 };

constexpr std::array<uint8_t, 128> MakeAsciiClasses() {
  std::array<uint8_t, 128> t{};
  for (int c = 0; c < 128; ++c) {
    if ((c >= 9 && c <= 13) || c == ' ') {
      t[c] = kSpace;
    } else if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
               (c >= 123 && c <= 126)) {
      t[c] = kPunct;
    }
  }
  return t;
}
constexpr std::array<uint8_t, 128> kAsciiClasses = MakeAsciiClasses();

class BertPreTokenizer final : public PreTokenizer {
 public:
  void PreTokenize(const NormalizedText& normalized, Span range,
                   std::vector<Span>* words) const override {
    const std::string_view text = normalized.text;
    size_t i = range.begin;
    size_t word_start = i;
    auto close_word = [&](size_t at) {
      if (at > word_start) {
        words->push_back({static_cast<uint32_t>(word_start), static_cast<uint32_t>(at)});
      }
    };
    while (i < range.end) {
      const auto byte = static_cast<unsigned char>(text[i]);
      size_t next = i;
      uint8_t cls;
      if (byte < 0x80) {
        cls = kAsciiClasses[byte];
        next = i + 1;
      } else {
        char32_t cp = 0;
        if (!DecodeUtf8(text, &next, &cp)) {  // cannot happen: text is valid UTF-8
          next = i + 1;
          cp = 0xFFFD;
        }
        cls = IsWhiteSpace(cp) ? kSpace : IsBertPunctuation(cp) ? kPunct : kWord;
      }
      if (cls != kWord) {
        close_word(i);
        if (cls == kPunct) {
          words->push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(next)});
        }
        word_start = next;
      }
      i = next;
    }
    close_word(range.end);
  }
};

}  // namespace

std::unique_ptr<PreTokenizer> MakeBertPreTokenizer() {
  return std::make_unique<BertPreTokenizer>();
}

Result<std::unique_ptr<PreTokenizer>> MakePreTokenizer(JsonElement json, std::string_view where) {
  if (json.is_null()) return std::unique_ptr<PreTokenizer>();
  ORCHID_ASSIGN_OR_RETURN(std::string_view type, ComponentType(json, where));
  if (type == "BertPreTokenizer") return MakeBertPreTokenizer();
  return UnsupportedType(where, "pre-tokenizer", type);
}

}  // namespace orchid::tok
