#include "tokenizer/split_patterns.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <optional>
#include <string>

#include "tokenizer/json_util.h"
#include "tokenizer/unicode.h"

namespace orchid::tok {
namespace {

class LiteralPattern final : public SplitPattern {
 public:
  explicit LiteralPattern(std::string_view literal) : literal_(literal) {}
  void FindMatches(std::string_view text, Span range, std::vector<Span>* matches) const override {
    if (literal_.empty()) return;
    const std::string_view hay = text.substr(0, range.end);
    size_t pos = range.begin;
    while ((pos = hay.find(literal_, pos)) != std::string_view::npos) {
      matches->push_back({static_cast<uint32_t>(pos), static_cast<uint32_t>(pos + literal_.size())});
      pos += literal_.size();
    }
  }

 private:
  std::string literal_;
};

// Which of the known regexes a scanner reproduces.
enum class ScannerKind {
  kGpt2,    // 's|'t|... | ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  kQwen2,   // (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|...
  kLlama3,  // as kQwen2 with \p{N}{1,3}
};

constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

using C = RegexClass;

// A leftmost-first backtracking match of the regexes above, written out by hand. Every code
// point falls in one of the alternatives, so the matches tile the text.
class ScannerPattern final : public SplitPattern {
 public:
  explicit ScannerPattern(ScannerKind kind) : kind_(kind) {}

  void FindMatches(std::string_view text, Span range, std::vector<Span>* matches) const override {
    Cursor cur{text, range.end};
    size_t i = range.begin;
    while (i < range.end) {
      const size_t end = MatchAt(cur, i);
      matches->push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(end)});
      i = end;
    }
  }

 private:
  struct Cursor {
    std::string_view text;
    size_t end;
    // Class of the code point at pos; *next gets the position after it.
    C At(size_t pos, size_t* next, char32_t* cp) const {
      const auto b = static_cast<unsigned char>(text[pos]);
      if (b < 0x80) {
        *next = pos + 1;
        *cp = b;
        if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')) return C::kLetter;
        if (b >= '0' && b <= '9') return C::kNumber;
        if (b == ' ' || (b >= 9 && b <= 13)) return C::kSpace;
        return C::kOther;
      }
      size_t n = pos;
      if (!DecodeUtf8(text.substr(0, end), &n, cp)) {  // cannot happen: validated input
        *next = pos + 1;
        *cp = 0xFFFD;
        return C::kOther;
      }
      *next = n;
      return ClassifyForRegex(*cp);
    }
    C ClassAt(size_t pos) const {
      size_t next;
      char32_t cp;
      return At(pos, &next, &cp);
    }
    // End of the run of class `c` starting at pos.
    size_t RunOf(size_t pos, C c) const {
      size_t next;
      char32_t cp;
      while (pos < end && At(pos, &next, &cp) == c) pos = next;
      return pos;
    }
    size_t RunOfCrLf(size_t pos) const {
      while (pos < end && (text[pos] == '\r' || text[pos] == '\n')) ++pos;
      return pos;
    }
  };

  static char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

  // Length of the contraction at text[i] == '\'' (0 if none).
  size_t Contraction(const Cursor& cur, size_t i, bool ignore_case) const {
    const std::string_view t = cur.text;
    if (i + 1 >= cur.end) return 0;
    const char a = ignore_case ? Lower(t[i + 1]) : t[i + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    // (?i) folds U+017F LATIN SMALL LETTER LONG S to s.
    if (ignore_case && a == '\xC5' && i + 2 < cur.end && t[i + 2] == '\xBF') return 3;
    if (i + 2 >= cur.end) return 0;
    const char b = ignore_case ? Lower(t[i + 2]) : t[i + 2];
    if ((a == 'r' || a == 'v') && b == 'e') return 3;
    if (a == 'l' && b == 'l') return 3;
    return 0;
  }

  // End of the whitespace alternatives (\s*[\r\n]+ when crlf_rule, then \s+(?!\S), \s+) at i,
  // where text[i] is whitespace.
  static size_t Whitespace(const Cursor& cur, size_t i, bool crlf_rule) {
    size_t j = i;
    size_t last_start = i;  // start of the last whitespace character of the run
    size_t after_crlf = 0;  // end of the last \r or \n in the run
    size_t next;
    char32_t cp;
    while (j < cur.end && cur.At(j, &next, &cp) == C::kSpace) {
      last_start = j;
      if (cp == '\r' || cp == '\n') after_crlf = next;
      j = next;
    }
    if (crlf_rule && after_crlf != 0) return after_crlf;
    if (j == cur.end) return j;
    if (last_start > i) return last_start;  // \s+(?!\S): leave the last one to the next word
    return j;
  }

  size_t MatchAt(const Cursor& cur, size_t i) const {
    size_t n0;
    char32_t cp0;
    const C c0 = cur.At(i, &n0, &cp0);
    const bool gpt2 = kind_ == ScannerKind::kGpt2;
    if (cp0 == '\'') {
      if (const size_t len = Contraction(cur, i, !gpt2)) return i + len;
    }
    if (gpt2) {
      if (c0 == C::kSpace && cp0 == ' ' && n0 < cur.end) {
        const C c1 = cur.ClassAt(n0);
        if (c1 != C::kSpace) return cur.RunOf(n0, c1);  // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s…]+'
      }
      if (c0 != C::kSpace) return cur.RunOf(i, c0);
      return Whitespace(cur, i, false);
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (c0 == C::kLetter) return cur.RunOf(n0, C::kLetter);
    if (c0 != C::kNumber && cp0 != '\r' && cp0 != '\n' && n0 < cur.end &&
        cur.ClassAt(n0) == C::kLetter) {
      return cur.RunOf(n0, C::kLetter);
    }
    // \p{N} or \p{N}{1,3}
    if (c0 == C::kNumber) {
      size_t j = n0;
      if (kind_ == ScannerKind::kLlama3) {
        for (int k = 1; k < 3 && j < cur.end; ++k) {
          size_t next;
          char32_t cp;
          if (cur.At(j, &next, &cp) != C::kNumber) break;
          j = next;
        }
      }
      return j;
    }
    // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
    if (cp0 == ' ' && n0 < cur.end && cur.ClassAt(n0) == C::kOther) {
      return cur.RunOfCrLf(cur.RunOf(n0, C::kOther));
    }
    if (c0 == C::kOther) return cur.RunOfCrLf(cur.RunOf(i, C::kOther));
    return Whitespace(cur, i, true);
  }

  ScannerKind kind_;
};

// Rewrites the class escapes whose members Oniguruma and PCRE2 disagree on (\p{L} \p{N} \s \w
// \d, their negations \P{…} \S \W \D, also inside [...]) into explicit PCRE2 classes holding
// the reference's members (regex_tables.inc): PCRE2's Unicode tables are of another version,
// and its \w leaves out the marks (Mn, Mc) that Oniguruma's includes. Other escapes, and the
// rest of the syntax, are the same in both engines and pass through.
std::string SpellOutClasses(std::string_view regex) {
  std::string out;
  out.reserve(regex.size());
  bool in_class = false;
  for (size_t i = 0; i < regex.size(); ++i) {
    const char c = regex[i];
    if (c == '\\' && i + 1 < regex.size()) {
      const char e = regex[i + 1];
      std::optional<RegexClassSet> set;
      bool negated = false;
      size_t consumed = 2;
      switch (e) {
        case 'w': case 'W': set = RegexClassSet::kWord; negated = e == 'W'; break;
        case 's': case 'S': set = RegexClassSet::kSpace; negated = e == 'S'; break;
        case 'd': case 'D': set = RegexClassSet::kDigit; negated = e == 'D'; break;
        case 'p': case 'P': {
          const std::string_view rest = regex.substr(i + 2);
          negated = e == 'P';
          if (rest.substr(0, 3) == "{L}") {
            set = RegexClassSet::kLetter;
          } else if (rest.substr(0, 3) == "{N}") {
            set = RegexClassSet::kNumber;
          }
          consumed = 5;
          break;
        }
        default: break;
      }
      if (!set) {  // any other escape: copied with its escaped character
        out.append(regex.substr(i, 2));
        ++i;
        continue;
      }
      if (in_class) {
        AppendPcre2ClassItems(*set, negated, true, &out);
      } else {
        out += negated ? "[^" : "[";
        AppendPcre2ClassItems(*set, false, false, &out);
        out += ']';
      }
      i += consumed - 1;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member, not the end of the class.
      if (i + 1 < regex.size() && regex[i + 1] == '^') out += regex[++i];
      if (i + 1 < regex.size() && regex[i + 1] == ']') out += regex[++i];
      continue;
    }
    if (in_class && c == '[' && i + 1 < regex.size() && regex[i + 1] == ':') {  // [:alpha:]
      const size_t close = regex.find(":]", i + 2);
      if (close != std::string_view::npos) {
        out.append(regex.substr(i, close + 2 - i));
        i = close + 1;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

class Pcre2Pattern final : public SplitPattern {
 public:
  ~Pcre2Pattern() override {
    if (code_ != nullptr) pcre2_code_free(code_);
  }

  Status Compile(std::string_view regex) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    const std::string spelled = SpellOutClasses(regex);
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(spelled.data()), spelled.size(),
                          PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &error, &offset, nullptr);
    if (code_ == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof(message));
      return Status::Corrupt(StrCat({"regex \"", regex, "\" does not compile at offset ",
                                     std::to_string(offset), ": ",
                                     reinterpret_cast<const char*>(message)}));
    }
    jit_ = pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE) == 0;
    return Status::Ok();
  }

  void FindMatches(std::string_view text, Span range, std::vector<Span>* matches) const override {
    // One match block per thread, sized for the whole-match pair only (enough for any regex).
    struct MatchData {
      pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
      ~MatchData() { pcre2_match_data_free(data); }
    };
    thread_local MatchData md;
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    PCRE2_SIZE pos = range.begin;
    while (pos <= range.end) {
      int rc = jit_ ? pcre2_jit_match(code_, subject, range.end, pos, 0, md.data, nullptr)
                    : PCRE2_ERROR_JIT_STACKLIMIT;
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {  // no JIT, or its stack is too small: interpret
        rc = pcre2_match(code_, subject, range.end, pos, PCRE2_NO_UTF_CHECK, md.data, nullptr);
      }
      if (rc < 0) break;  // no match (or a resource limit: the rest stays unmatched)
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.data);
      if (ov[1] > ov[0]) {
        matches->push_back({static_cast<uint32_t>(ov[0]), static_cast<uint32_t>(ov[1])});
        pos = ov[1];
      } else {  // empty match: step over one character
        pos = ov[1] + 1;
        while (pos < range.end && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
      }
    }
  }

 private:
  pcre2_code* code_ = nullptr;
  bool jit_ = false;
};

}  // namespace

std::unique_ptr<SplitPattern> MakeLiteralPattern(std::string_view literal) {
  return std::make_unique<LiteralPattern>(literal);
}

Result<std::unique_ptr<SplitPattern>> MakeRegexPattern(std::string_view regex) {
  if (regex == kGpt2SplitRegex) return std::unique_ptr<SplitPattern>(std::make_unique<ScannerPattern>(ScannerKind::kGpt2));
  if (regex == kQwen2Regex) return std::unique_ptr<SplitPattern>(std::make_unique<ScannerPattern>(ScannerKind::kQwen2));
  if (regex == kLlama3Regex) return std::unique_ptr<SplitPattern>(std::make_unique<ScannerPattern>(ScannerKind::kLlama3));
  auto pattern = std::make_unique<Pcre2Pattern>();
  ORCHID_RETURN_IF_ERROR(pattern->Compile(regex));
  return std::unique_ptr<SplitPattern>(std::move(pattern));
}

}  // namespace orchid::tok
