// Unicode helpers for the tokenizer: UTF-8 decoding/encoding and the character properties the
// `tokenizers` components use, reproduced exactly (see gen_unicode_tables.py for why the
// category sets come from generated tables and NFD / lowercase from utf8proc plus exceptions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace orchid::tok {

// Decodes one code point at text[*pos], advancing *pos. Returns false (pos unchanged) on
// invalid UTF-8: truncated or stray continuation bytes, overlong forms, surrogates, > U+10FFFF.
bool DecodeUtf8(std::string_view text, size_t* pos, char32_t* cp);
// Byte offset of the first invalid sequence, or npos when `text` is valid UTF-8.
size_t FindInvalidUtf8(std::string_view text);
// Appends the UTF-8 encoding of cp (a valid scalar value).
void AppendUtf8(char32_t cp, std::string* out);
inline int Utf8Length(char32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }
// Length of the UTF-8 sequence starting with lead byte b (1 for continuation bytes).
inline int Utf8SeqLength(unsigned char b) {
  return b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

// Properties, as the reference library classifies them.
bool IsOther(char32_t cp);             // general category Cc | Cf | Co
bool IsBertPunctuation(char32_t cp);   // ASCII punctuation | P*
bool IsMarkNonspacing(char32_t cp);    // Mn
bool IsWhiteSpace(char32_t cp);        // Rust char::is_whitespace (White_Space)
bool IsChineseChar(char32_t cp);       // BertNormalizer's CJK ideograph ranges
int CombiningClass(char32_t cp);       // canonical combining class (0 = starter)
// Regex `\w` as Rust's regex crate has it (Alphabetic, M, Nd, Pc, Join_Control in its Unicode
// version; table probed from the reference by gen_regex_tables.py). The reference uses that
// crate for added tokens' single_word and for the Whitespace pre-tokenizer's \w+|[^\w\s]+
// (its \s is White_Space, IsWhiteSpace). Oniguruma's \w, in Split regexes, differs (² ³ ½).
bool IsWordChar(char32_t cp);
// Rust char::is_numeric (Nd | Nl | No in Rust's Unicode version): the Digits pre-tokenizer.
bool IsNumeric(char32_t cp);
// General category M (Mn | Mc | Me) as the reference's unicode-normalization crate has it: the
// StripAccents normalizer removes exactly these.
bool IsCombiningMark(char32_t cp);

// \p{L}, \p{N}, \s and everything else, as the reference's regex engine (Oniguruma) classifies
// code points (tables probed by gen_regex_tables.py).
enum class RegexClass : uint8_t { kLetter, kNumber, kSpace, kOther };
RegexClass ClassifyForRegex(char32_t cp);

// The classes a Split regex run by PCRE2 gets from the reference's tables instead of PCRE2's
// own (Oniguruma's \p{L}, \p{N}, \s, \w, \d): appends the members (or, negated, every other
// scalar value) as PCRE2 character-class items, "\x{41}-\x{5A}\x{61}-\x{7A}…", without the
// brackets. in_class: the escape stands inside [...], where Oniguruma's \w differs (² ³ ½ …).
enum class RegexClassSet : uint8_t { kLetter, kNumber, kSpace, kWord, kDigit };
void AppendPcre2ClassItems(RegexClassSet set, bool negated, bool in_class, std::string* out);

// Whether cp might combine with what precedes it under NFC (a non-starter, a mark, a Hangul
// vowel or trailing consonant): text can be cut into independently normalized segments
// before every code point for which this is false.
bool MayComposeWithPrevious(char32_t cp);
// Full compatibility decomposition (NFKD of one code point, utf8proc's Unicode version);
// returns n <= capacity.
int DecomposeCompatibility(char32_t cp, char32_t* out, int capacity);
// The primary composite of starter + c (canonical composition of an unblocked pair), or 0 when
// they do not compose (composition exclusions and composites the reference does not know
// included).
char32_t ComposePair(char32_t starter, char32_t c);

// Writes the full canonical decomposition (NFD of the single code point) to out[0..n);
// returns n (1 when cp does not decompose). out must hold kMaxDecomposition code points.
inline constexpr int kMaxDecomposition = 4;
int DecomposeCanonical(char32_t cp, char32_t* out);
// Rust char::to_lowercase: writes 1..3 code points, returns the count.
int ToLowercase(char32_t cp, char32_t* out);

// The utf8proc version the exception tables were generated against, and the one linked.
const char* TablesUtf8procVersion();
const char* LinkedUtf8procVersion();

}  // namespace orchid::tok
