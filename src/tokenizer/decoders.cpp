#include "tokenizer/decoders.h"

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace orchid::tok {
namespace {

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Code points of valid UTF-8 (token strings come from the vocabulary).
std::vector<char32_t> CodePoints(std::string_view s) {
  std::vector<char32_t> out;
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<uint8_t>(s[i]);
    size_t n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    if (i + n > s.size()) n = s.size() - i;
    char32_t cp = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += n;
  }
  return out;
}

// String::from_utf8_lossy: each maximal invalid subpart becomes U+FFFD.
std::string Utf8Lossy(std::string_view s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<uint8_t>(s[i]);
    if (b < 0x80) {
      out.push_back(static_cast<char>(b));
      ++i;
      continue;
    }
    size_t need = 0;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
      need = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
      need = 2;
      if (b == 0xE0) lo = 0xA0;
      if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      need = 3;
      if (b == 0xF0) lo = 0x90;
      if (b == 0xF4) hi = 0x8F;
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
      continue;
    }
    size_t k = 1;
    for (; k <= need && i + k < s.size(); ++k) {
      const auto c = static_cast<uint8_t>(s[i + k]);
      const uint8_t l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
      if (c < l || c > h) break;
    }
    if (k == need + 1) {
      out.append(s.substr(i, k));
    } else {
      out.append("\xEF\xBF\xBD");
    }
    i += k;
  }
  return out;
}

bool IsValidUtf8(std::string_view s) { return Utf8Lossy(s) == s; }

class WordPieceDecoder final : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void DecodeChain(std::vector<std::string>* tokens) const override {
    for (size_t i = 0; i < tokens->size(); ++i) {
      std::string& t = (*tokens)[i];
      if (i != 0) {
        if (t.starts_with(prefix_)) {
          t.erase(0, prefix_.size());
        } else {
          t.insert(t.begin(), ' ');
        }
      }
      if (cleanup_) Cleanup(&t);
    }
  }
  static void ReplaceAll(std::string* s, std::string_view from, std::string_view to) {
    std::string out;
    size_t pos = 0;
    while (true) {
      const size_t f = s->find(from, pos);
      if (f == std::string::npos) break;
      out.append(*s, pos, f - pos);
      out.append(to);
      pos = f + from.size();
    }
    if (pos == 0) return;
    out.append(*s, pos, std::string::npos);
    *s = std::move(out);
  }
  static void Cleanup(std::string* s) {
    ReplaceAll(s, " .", ".");
    ReplaceAll(s, " ?", "?");
    ReplaceAll(s, " !", "!");
    ReplaceAll(s, " ,", ",");
    ReplaceAll(s, " ' ", "'");
    ReplaceAll(s, " n't", "n't");
    ReplaceAll(s, " 'm", "'m");
    ReplaceAll(s, " do not", " don't");
    ReplaceAll(s, " 's", "'s");
    ReplaceAll(s, " 've", "'ve");
    ReplaceAll(s, " 're", "'re");
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(char32_t replacement, bool prepend) : replacement_(replacement), prepend_(prepend) {}
  void DecodeChain(std::vector<std::string>* tokens) const override {
    for (size_t i = 0; i < tokens->size(); ++i) {
      std::string out;
      for (char32_t c : CodePoints((*tokens)[i])) {
        if (c == replacement_) {
          if (i == 0 && prepend_) continue;
          out.push_back(' ');
        } else {
          AppendUtf8(c, &out);
        }
      }
      (*tokens)[i] = std::move(out);
    }
  }

 private:
  char32_t replacement_;
  bool prepend_;
};

class ByteLevelDecoder final : public Decoder {
 public:
  ByteLevelDecoder() {
    std::array<bool, 256> direct{};
    for (int b = '!'; b <= '~'; ++b) direct[b] = true;
    for (int b = 0xA1; b <= 0xAC; ++b) direct[b] = true;
    for (int b = 0xAE; b <= 0xFF; ++b) direct[b] = true;
    char32_t next = 256;
    char_to_byte_.fill(-1);
    for (int b = 0; b < 256; ++b) {
      const char32_t c = direct[b] ? static_cast<char32_t>(b) : next++;
      char_to_byte_[c] = static_cast<int16_t>(b);
    }
  }
  void DecodeChain(std::vector<std::string>* tokens) const override {
    std::string bytes;
    for (const std::string& t : *tokens) {
      std::string tb;
      bool ok = true;
      for (char32_t c : CodePoints(t)) {
        if (c >= char_to_byte_.size() || char_to_byte_[c] < 0) {
          ok = false;
          break;
        }
        tb.push_back(static_cast<char>(char_to_byte_[c]));
      }
      bytes.append(ok ? tb : t);
    }
    tokens->assign(1, Utf8Lossy(bytes));
  }

 private:
  std::array<int16_t, 512> char_to_byte_{};
};

class ByteFallbackDecoder final : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>* tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    size_t nbytes = 0;
    auto flush = [&] {
      if (nbytes == 0) return;
      if (IsValidUtf8(bytes)) {
        out.push_back(bytes);
      } else {
        for (size_t k = 0; k < nbytes; ++k) out.emplace_back("\xEF\xBF\xBD");
      }
      bytes.clear();
      nbytes = 0;
    };
    for (std::string& t : *tokens) {
      int value = -1;
      if (t.size() == 6 && t.starts_with("<0x") && t.back() == '>') value = Hex2(t[3], t[4]);
      if (value >= 0) {
        bytes.push_back(static_cast<char>(value));
        ++nbytes;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    *tokens = std::move(out);
  }

 private:
  static int Hex1(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  static int Hex2(char a, char b) {
    const int h = Hex1(a), l = Hex1(b);
    return h < 0 || l < 0 ? -1 : h * 16 + l;
  }
};

class FuseDecoder final : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>* tokens) const override {
    std::string all;
    for (const std::string& t : *tokens) all.append(t);
    tokens->assign(1, std::move(all));
  }
};

class StripDecoder final : public Decoder {
 public:
  StripDecoder(char32_t content, size_t start, size_t stop) : content_(content), start_(start), stop_(stop) {}
  void DecodeChain(std::vector<std::string>* tokens) const override {
    for (std::string& t : *tokens) {
      const std::vector<char32_t> cps = CodePoints(t);
      size_t b = 0;
      for (size_t i = 0; i < cps.size() && i < start_ && cps[i] == content_; ++i) b = i + 1;
      size_t e = cps.size();
      for (size_t i = 0; i < cps.size() && i < stop_ && cps[cps.size() - 1 - i] == content_; ++i) {
        e = cps.size() - i - 1;
      }
      std::string out;
      for (size_t i = b; i < e; ++i) AppendUtf8(cps[i], &out);
      t = std::move(out);
    }
  }

 private:
  char32_t content_;
  size_t start_, stop_;
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(std::string pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void DecodeChain(std::vector<std::string>* tokens) const override {
    if (pattern_.empty()) return;
    for (std::string& t : *tokens) WordPieceDecoder::ReplaceAll(&t, pattern_, content_);
  }

 private:
  std::string pattern_, content_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> d) : decoders_(std::move(d)) {}
  void DecodeChain(std::vector<std::string>* tokens) const override {
    for (const auto& d : decoders_) d->DecodeChain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> decoders_;
};

Result<char32_t> OneChar(JsonObject o, std::string_view key, const std::string& where) {
  std::string_view s;
  ORCHID_RETURN_IF_ERROR(ReadString(o, key, where, &s, true));
  const std::vector<char32_t> cps = CodePoints(s);
  if (cps.size() != 1) return JsonError(where, StrCat({"\"", key, "\" must be one character"}));
  return cps[0];
}

}  // namespace

Result<std::unique_ptr<Decoder>> MakeDecoder(JsonElement json, std::string_view where) {
  if (json.is_null()) return std::unique_ptr<Decoder>();
  ORCHID_ASSIGN_OR_RETURN(std::string_view type, ComponentType(json, where));
  const std::string ctx = StrCat({where, " (", type, ")"});
  JsonObject o = json.get_object().value_unsafe();
  if (type == "WordPiece") {
    std::string_view prefix = "##";
    bool cleanup = true;
    ORCHID_RETURN_IF_ERROR(ReadString(o, "prefix", ctx, &prefix, false));
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "cleanup", ctx, &cleanup));
    return std::unique_ptr<Decoder>(std::make_unique<WordPieceDecoder>(std::string(prefix), cleanup));
  }
  if (type == "Metaspace") {
    ORCHID_ASSIGN_OR_RETURN(char32_t replacement, OneChar(o, "replacement", ctx));
    std::string_view scheme = "always";
    ORCHID_RETURN_IF_ERROR(ReadString(o, "prepend_scheme", ctx, &scheme, false));
    bool add_prefix_space = true;  // legacy field
    ORCHID_RETURN_IF_ERROR(ReadBool(o, "add_prefix_space", ctx, &add_prefix_space));
    JsonElement e;
    const bool has_scheme = o["prepend_scheme"].get(e) == simdjson::SUCCESS;
    const bool prepend = has_scheme ? scheme != "never" : add_prefix_space;
    return std::unique_ptr<Decoder>(std::make_unique<MetaspaceDecoder>(replacement, prepend));
  }
  if (type == "ByteLevel") return std::unique_ptr<Decoder>(std::make_unique<ByteLevelDecoder>());
  if (type == "ByteFallback") return std::unique_ptr<Decoder>(std::make_unique<ByteFallbackDecoder>());
  if (type == "Fuse") return std::unique_ptr<Decoder>(std::make_unique<FuseDecoder>());
  if (type == "Strip") {
    ORCHID_ASSIGN_OR_RETURN(char32_t content, OneChar(o, "content", ctx));
    uint64_t start = 0, stop = 0;
    ORCHID_RETURN_IF_ERROR(ReadUint(o, "start", ctx, &start, false));
    ORCHID_RETURN_IF_ERROR(ReadUint(o, "stop", ctx, &stop, false));
    return std::unique_ptr<Decoder>(std::make_unique<StripDecoder>(content, start, stop));
  }
  if (type == "Replace") {
    JsonObject pattern;
    std::string_view str, content;
    if (o["pattern"].get(pattern) != simdjson::SUCCESS ||
        pattern["String"].get(str) != simdjson::SUCCESS) {
      return JsonError(ctx, "only a {\"String\": ...} pattern is supported");
    }
    ORCHID_RETURN_IF_ERROR(ReadString(o, "content", ctx, &content, true));
    return std::unique_ptr<Decoder>(std::make_unique<ReplaceDecoder>(std::string(str), std::string(content)));
  }
  if (type == "Sequence") {
    simdjson::dom::array items;
    if (o["decoders"].get(items) != simdjson::SUCCESS) return JsonError(ctx, "\"decoders\" must be an array");
    std::vector<std::unique_ptr<Decoder>> decoders;
    size_t k = 0;
    for (JsonElement item : items) {
      ORCHID_ASSIGN_OR_RETURN(auto d, MakeDecoder(item, StrCat({ctx, "[", std::to_string(k++), "]"})));
      if (d) decoders.push_back(std::move(d));
    }
    return std::unique_ptr<Decoder>(std::make_unique<SequenceDecoder>(std::move(decoders)));
  }
  return UnsupportedType(where, "decoder", type);
}

}  // namespace orchid::tok
