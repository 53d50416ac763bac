#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <vector>

namespace orchid::tok {
namespace {

struct CodepointRange {
  char32_t first;
  char32_t last;
};
struct CodepointMapping {
  char32_t cp;
  int n;
  char32_t to[3];
};

#include "tokenizer/unicode_tables.inc"
#include "tokenizer/regex_tables.inc"

constexpr CodepointRange kChineseRanges[] = {
    {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},   {0xF900, 0xFAFF},   {0x20000, 0x2A6DF},
    {0x2A700, 0x2B73F}, {0x2B740, 0x2B81F}, {0x2B920, 0x2CEAF}, {0x2F800, 0x2FA1F},
};

template <size_t N>
bool InRanges(const CodepointRange (&ranges)[N], char32_t cp) {
  auto it = std::upper_bound(std::begin(ranges), std::end(ranges), cp,
                             [](char32_t c, const CodepointRange& r) { return c < r.first; });
  return it != std::begin(ranges) && cp <= std::prev(it)->last;
}

template <size_t N>
const CodepointMapping* FindMapping(const CodepointMapping (&map)[N], char32_t cp) {
  auto it = std::lower_bound(std::begin(map), std::end(map), cp,
                             [](const CodepointMapping& m, char32_t c) { return m.cp < c; });
  return it != std::end(map) && it->cp == cp ? it : nullptr;
}

enum : uint16_t {
  kOther = 1,
  kPunct = 2,
  kMn = 4,
  kSpace = 8,
  kChinese = 16,
  kCccZero = 32,
  kRegexLetter = 64,
  kRegexNumber = 128,
  kRegexSpace = 256,
  kPerlWord = 512,
  kNumeric = 1024,
  kCombiningMark = 2048,
};

// One flag byte per BMP code point, built once from the range tables.
struct BmpFlags {
  std::array<uint16_t, 0x10000> flags{};
  BmpFlags() {
    auto mark = [this](const auto& ranges, uint16_t bit) {
      for (const CodepointRange& r : ranges) {
        for (char32_t c = r.first; c <= r.last && c < 0x10000; ++c) flags[c] |= bit;
      }
    };
    mark(kOtherRanges, kOther);
    mark(kPunctuationRanges, kPunct);
    mark(kMarkNonspacingRanges, kMn);
    mark(kWhiteSpaceRanges, kSpace);
    mark(kChineseRanges, kChinese);
    mark(kCccZeroRanges, kCccZero);
    mark(kRegexLetterRanges, kRegexLetter);
    mark(kRegexNumberRanges, kRegexNumber);
    mark(kRegexSpaceRanges, kRegexSpace);
    mark(kPerlWordRanges, kPerlWord);
    mark(kNumericRanges, kNumeric);
    mark(kCombiningMarkRanges, kCombiningMark);
  }
};

const BmpFlags& Bmp() {
  static const BmpFlags table;
  return table;
}

}  // namespace

bool DecodeUtf8(std::string_view text, size_t* pos, char32_t* cp) {
  const size_t i = *pos;
  const size_t n = text.size();
  if (i >= n) return false;
  const auto b0 = static_cast<unsigned char>(text[i]);
  if (b0 < 0x80) {
    *cp = b0;
    *pos = i + 1;
    return true;
  }
  auto cont = [&](size_t k) -> int {
    if (i + k >= n) return -1;
    const auto b = static_cast<unsigned char>(text[i + k]);
    return (b & 0xC0) == 0x80 ? (b & 0x3F) : -1;
  };
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    const int c1 = cont(1);
    if (c1 < 0) return false;
    *cp = (char32_t(b0 & 0x1F) << 6) | char32_t(c1);
    *pos = i + 2;
    return true;
  }
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    const int c1 = cont(1), c2 = cont(2);
    if (c1 < 0 || c2 < 0) return false;
    const char32_t c = (char32_t(b0 & 0x0F) << 12) | (char32_t(c1) << 6) | char32_t(c2);
    if (c < 0x800 || (c >= 0xD800 && c <= 0xDFFF)) return false;
    *cp = c;
    *pos = i + 3;
    return true;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    const int c1 = cont(1), c2 = cont(2), c3 = cont(3);
    if (c1 < 0 || c2 < 0 || c3 < 0) return false;
    const char32_t c = (char32_t(b0 & 0x07) << 18) | (char32_t(c1) << 12) |
                       (char32_t(c2) << 6) | char32_t(c3);
    if (c < 0x10000 || c > 0x10FFFF) return false;
    *cp = c;
    *pos = i + 4;
    return true;
  }
  return false;
}

size_t FindInvalidUtf8(std::string_view text) {
  size_t pos = 0;
  const size_t n = text.size();
  char32_t cp;
  while (pos < n) {
    // ASCII fast path, 8 bytes at a time.
    while (pos + 8 <= n) {
      uint64_t word;
      std::memcpy(&word, text.data() + pos, 8);
      if (word & 0x8080808080808080ULL) break;
      pos += 8;
    }
    if (pos >= n) break;
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    if (!DecodeUtf8(text, &pos, &cp)) return pos;
  }
  return std::string_view::npos;
}

void AppendUtf8(char32_t cp, std::string* out) {
  char buf[4];
  int n;
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
    return;
  } else if (cp < 0x800) {
    buf[0] = static_cast<char>(0xC0 | (cp >> 6));
    buf[1] = static_cast<char>(0x80 | (cp & 0x3F));
    n = 2;
  } else if (cp < 0x10000) {
    buf[0] = static_cast<char>(0xE0 | (cp >> 12));
    buf[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    buf[2] = static_cast<char>(0x80 | (cp & 0x3F));
    n = 3;
  } else {
    buf[0] = static_cast<char>(0xF0 | (cp >> 18));
    buf[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    buf[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    buf[3] = static_cast<char>(0x80 | (cp & 0x3F));
    n = 4;
  }
  out->append(buf, static_cast<size_t>(n));
}

bool IsOther(char32_t cp) {
  return cp < 0x10000 ? (Bmp().flags[cp] & kOther) != 0 : InRanges(kOtherRanges, cp);
}
bool IsBertPunctuation(char32_t cp) {
  return cp < 0x10000 ? (Bmp().flags[cp] & kPunct) != 0 : InRanges(kPunctuationRanges, cp);
}
bool IsMarkNonspacing(char32_t cp) {
  return cp < 0x10000 ? (Bmp().flags[cp] & kMn) != 0 : InRanges(kMarkNonspacingRanges, cp);
}
bool IsWhiteSpace(char32_t cp) { return cp < 0x10000 && (Bmp().flags[cp] & kSpace) != 0; }
bool IsChineseChar(char32_t cp) {
  return cp < 0x10000 ? (Bmp().flags[cp] & kChinese) != 0 : InRanges(kChineseRanges, cp);
}

RegexClass ClassifyForRegex(char32_t cp) {
  if (cp < 0x10000) {
    const uint16_t f = Bmp().flags[cp];
    if (f & kRegexLetter) return RegexClass::kLetter;
    if (f & kRegexNumber) return RegexClass::kNumber;
    if (f & kRegexSpace) return RegexClass::kSpace;
    return RegexClass::kOther;
  }
  if (InRanges(kRegexLetterRanges, cp)) return RegexClass::kLetter;
  if (InRanges(kRegexNumberRanges, cp)) return RegexClass::kNumber;
  if (InRanges(kRegexSpaceRanges, cp)) return RegexClass::kSpace;
  return RegexClass::kOther;
}

void AppendPcre2ClassItems(RegexClassSet set, bool negated, bool in_class, std::string* out) {
  const CodepointRange* first = nullptr;
  size_t n = 0;
  auto use = [&](const auto& table) {
    first = std::begin(table);
    n = std::size(table);
  };
  switch (set) {
    case RegexClassSet::kLetter: use(kRegexLetterRanges); break;
    case RegexClassSet::kNumber: use(kRegexNumberRanges); break;
    case RegexClassSet::kSpace: use(kRegexSpaceRanges); break;
    case RegexClassSet::kWord:
      if (in_class) {
        use(kRegexWordInClassRanges);
      } else {
        use(kRegexWordRanges);
      }
      break;
    case RegexClassSet::kDigit: use(kRegexDigitRanges); break;
  }
  char buf[48];
  auto item = [&](char32_t a, char32_t b) {
    if (a > b) return;
    const int len = a == b ? std::snprintf(buf, sizeof(buf), "\\x{%X}", static_cast<unsigned>(a))
                           : std::snprintf(buf, sizeof(buf), "\\x{%X}-\\x{%X}",
                                           static_cast<unsigned>(a), static_cast<unsigned>(b));
    out->append(buf, static_cast<size_t>(len));
  };
  // PCRE2 in UTF mode refuses surrogate code points in a class: leave them out.
  auto item_without_surrogates = [&](char32_t a, char32_t b) {
    if (b < 0xD800 || a > 0xDFFF) return item(a, b);
    item(a, 0xD7FF);
    item(0xE000, b);
  };
  if (!negated) {
    for (size_t i = 0; i < n; ++i) item_without_surrogates(first[i].first, first[i].last);
    return;
  }
  char32_t next = 0;
  for (size_t i = 0; i < n; ++i) {
    if (first[i].first > next) item_without_surrogates(next, first[i].first - 1);
    next = first[i].last + 1;
  }
  if (next <= 0x10FFFF) item_without_surrogates(next, 0x10FFFF);
}

bool MayComposeWithPrevious(char32_t cp) {
  if (cp < 0x300) return false;
  if ((cp >= 0x1161 && cp <= 0x1175) || (cp >= 0x11A8 && cp <= 0x11C2)) return true;  // Hangul V, T
  if (utf8proc_get_property(static_cast<utf8proc_int32_t>(cp))->combining_class != 0) return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
      return true;
    default:
      return false;
  }
}

int DecomposeCompatibility(char32_t cp, char32_t* out, int capacity) {
  if (cp < 0xA0) {
    out[0] = cp;
    return 1;
  }
  // Characters whose compatibility or canonical decomposition the reference has differently
  // (newer Unicode).
  if (const CodepointMapping* m = FindMapping(kNfkdExceptions, cp); m != nullptr && m->n <= capacity) {
    for (int i = 0; i < m->n; ++i) out[i] = m->to[i];
    return m->n;
  }
  if (const CodepointMapping* m = FindMapping(kNfdExceptions, cp); m != nullptr && m->n <= capacity) {
    for (int i = 0; i < m->n; ++i) out[i] = m->to[i];
    return m->n;
  }
  utf8proc_int32_t buf[32];
  int last = 0;
  const utf8proc_ssize_t n = utf8proc_decompose_char(
      static_cast<utf8proc_int32_t>(cp), buf, 32,
      static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT), &last);
  if (n <= 0 || n > capacity) {
    out[0] = cp;
    return 1;
  }
  for (utf8proc_ssize_t i = 0; i < n; ++i) out[i] = static_cast<char32_t>(buf[i]);
  return static_cast<int>(n);
}

char32_t ComposePair(char32_t starter, char32_t c) {
  if (c < 0x300) return 0;  // nothing below U+0300 composes with a preceding character
  utf8proc_int32_t buf[2] = {static_cast<utf8proc_int32_t>(starter), static_cast<utf8proc_int32_t>(c)};
  const utf8proc_ssize_t r =
      utf8proc_normalize_utf32(buf, 2, static_cast<utf8proc_option_t>(UTF8PROC_COMPOSE | UTF8PROC_STABLE));
  if (r != 1) return 0;
  const auto composite = static_cast<char32_t>(buf[0]);
  // A composite newer than the reference's Unicode (it does not decompose it, see
  // kNfdExceptions) is not composed by the reference either.
  const CodepointMapping* m = FindMapping(kNfdExceptions, composite);
  if (m != nullptr && m->n == 1 && m->to[0] == composite) return 0;
  return composite;
}

int CombiningClass(char32_t cp) {
  if (cp < 0x300) return 0;
  const bool zero =
      cp < 0x10000 ? (Bmp().flags[cp] & kCccZero) != 0 : InRanges(kCccZeroRanges, cp);
  if (zero) return 0;
  return utf8proc_get_property(static_cast<utf8proc_int32_t>(cp))->combining_class;
}

int DecomposeCanonical(char32_t cp, char32_t* out) {
  if (cp < 0xC0) {
    out[0] = cp;
    return 1;
  }
  if (const CodepointMapping* m = FindMapping(kNfdExceptions, cp)) {
    std::copy(m->to, m->to + m->n, out);
    return m->n;
  }
  utf8proc_int32_t buf[kMaxDecomposition];
  int last_boundclass = 0;
  const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buf,
                                                     kMaxDecomposition, UTF8PROC_DECOMPOSE,
                                                     &last_boundclass);
  if (n <= 0 || n > kMaxDecomposition) {  // cannot happen for valid scalar values
    out[0] = cp;
    return 1;
  }
  for (utf8proc_ssize_t i = 0; i < n; ++i) out[i] = static_cast<char32_t>(buf[i]);
  return static_cast<int>(n);
}

int ToLowercase(char32_t cp, char32_t* out) {
  if (cp < 0x80) {
    out[0] = (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    return 1;
  }
  if (const CodepointMapping* m = FindMapping(kLowercaseExceptions, cp)) {
    std::copy(m->to, m->to + m->n, out);
    return m->n;
  }
  out[0] = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
  return 1;
}

bool IsWordChar(char32_t cp) {
  return cp < 0x10000 ? (Bmp().flags[cp] & kPerlWord) != 0 : InRanges(kPerlWordRanges, cp);
}
bool IsNumeric(char32_t cp) {
  return cp < 0x10000 ? (Bmp().flags[cp] & kNumeric) != 0 : InRanges(kNumericRanges, cp);
}
bool IsCombiningMark(char32_t cp) {
  return cp < 0x10000 ? (Bmp().flags[cp] & kCombiningMark) != 0
                      : InRanges(kCombiningMarkRanges, cp);
}

const char* TablesUtf8procVersion() { return kTablesUtf8procVersion; }
const char* LinkedUtf8procVersion() { return utf8proc_version(); }

}  // namespace orchid::tok
