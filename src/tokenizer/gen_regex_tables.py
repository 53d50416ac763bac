#!/usr/bin/env python3
"""Generates src/tokenizer/regex_tables.inc: the character classes \\p{L}, \\p{N}, \\s, \\w and \\d
as the reference `tokenizers` regex engine (Oniguruma, with its own Unicode version) sees them,
for the hand-written GPT-2 / Qwen / Llama-3 split scanner (split_scanner.cpp) and for the other
Split regexes, which PCRE2 runs with these classes spelled out (split_patterns.cpp); and three
character sets the reference takes from Rust crates rather than from Oniguruma: `\\w` of Rust's
regex crate (added tokens' single_word, and the Whitespace pre-tokenizer's \\w+|[^\\w\\s]+,
which uses that crate too), char::is_numeric (Digits) and is_combining_mark (StripAccents).

Probed from the reference, code point by code point (a Split(..., "removed") over one string of
every scalar value), so the scanner matches the reference even where Unicode versions differ.

Run:  .venv/bin/python src/tokenizer/gen_regex_tables.py   (needs `tokenizers`; ~5 s).
"""
import os
import sys

import tokenizers
from tokenizers import Regex, pre_tokenizers

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "regex_tables.inc")
CPS = [c for c in range(1, 0x110000) if not 0xD800 <= c <= 0xDFFF]  # NUL: in no class (checked)
TEXT = "".join(map(chr, CPS))


def matched(pattern):
    split = pre_tokenizers.Split(Regex(pattern), "removed")
    keep = bytearray(len(CPS))
    for piece, (a, b) in split.pre_tokenize_str(TEXT):
        assert piece == TEXT[a:b]
        keep[a:b] = b"\1" * (b - a)
    return {CPS[i] for i in range(len(CPS)) if not keep[i]}


def perl_word():
    """Rust regex `\\w`, as the added-token matcher applies it to single_word tokens: in
    " " + c + "x" the single_word token "x" matches exactly when c is not a word character."""
    from tokenizers import AddedToken, Tokenizer
    from tokenizers.models import WordLevel
    tok = Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.add_special_tokens([AddedToken("x", single_word=True, normalized=False)])
    x = tok.token_to_id("x")
    enc = tok.encode("".join(" " + chr(c) + "x" for c in CPS), add_special_tokens=False)
    probes = {a for i, (a, b) in zip(enc.ids, enc.offsets) if i == x}
    assert all(p % 3 == 2 for p in probes), "x matched outside a probe position"
    non_word = {CPS[p // 3] for p in probes}
    return {c for c in CPS if c not in non_word}


def numeric():
    """Rust char::is_numeric, through Digits: in "a" + c + "a" + ..., each numeric c is a piece."""
    text = "".join("a" + chr(c) for c in CPS)
    pieces = pre_tokenizers.Digits(individual_digits=False).pre_tokenize_str(text)
    return {ord(p) for p, _ in pieces if len(p) == 1 and p != "a"}


def combining_mark():
    """is_combining_mark (General_Category M), through StripAccents, which removes exactly those."""
    from tokenizers import normalizers
    out = normalizers.StripAccents().normalize_str("".join("a" + chr(c) for c in CPS))
    marks, pos = set(), 0
    for c in CPS:
        assert out[pos] == "a"
        pos += 1
        if pos < len(out) and out[pos] == chr(c):  # kept ("a" itself is no mark)
            pos += 1
        else:
            marks.add(c)
    assert pos == len(out)
    return marks


def ranges(s):
    out = []
    for cp in sorted(s):
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return out


def main():
    for pattern in (r"\p{L}", r"\p{N}", r"\s"):
        assert pre_tokenizers.Split(Regex(pattern), "removed").pre_tokenize_str("\0") != [], pattern
    # (?i) in the contraction alternatives: which characters match 's 't 'm 'd, and the second
    # letter of 're 've 'll. U+017F (long s) folds to s; nothing else outside ASCII does.
    contraction = pre_tokenizers.Split(Regex(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"), "removed")
    single = [c for c in CPS if contraction.pre_tokenize_str("'" + chr(c)) == []]
    assert single == [ord(c) for c in "DMSTdmst"] + [0x17F], single
    for first, second in (("r", "Ee"), ("V", "Ee"), ("l", "Ll")):
        got = [chr(c) for c in CPS if contraction.pre_tokenize_str("'" + first + chr(c)) == []]
        assert got == list(second), (first, got)
    classes = [("kRegexLetterRanges", r"\p{L}", matched(r"\p{L}")),
               ("kRegexNumberRanges", r"\p{N}", matched(r"\p{N}")),
               ("kRegexSpaceRanges", r"\s", matched(r"\s")),
               ("kRegexWordRanges", r"\w", matched(r"\w")),
               # Inside [...] Oniguruma's \w leaves out ² ³ ¹ ¼ ½ ¾ (its Latin-1 ctype table
               # counts them as word characters only outside a class).
               ("kRegexWordInClassRanges", r"[\w]", matched(r"[\w]")),
               ("kRegexDigitRanges", r"\d", matched(r"\d")),
               ("kPerlWordRanges", "Rust regex \\w (single_word, Whitespace)", perl_word()),
               ("kNumericRanges", "Rust char::is_numeric (Digits)", numeric()),
               ("kCombiningMarkRanges", "is_combining_mark (StripAccents)", combining_mark())]
    with open(OUT, "w") as f:
        f.write("// GENERATED by src/tokenizer/gen_regex_tables.py from the reference `tokenizers`\n"
                f"// {tokenizers.__version__} (its Oniguruma regex classes, and character sets of Rust crates it\n"
                "// uses). Do not edit.\n"
                "// Included by unicode.cpp only.\n\n")
        for name, pattern, members in classes:
            rs = ranges(members)
            what = f"{pattern} as the reference regex engine matches it" if pattern.startswith("\\") \
                else f"{pattern}, as the reference classifies code points"
            f.write(f"// {what}.\n"
                    f"inline constexpr CodepointRange {name}[] = {{\n")
            for i in range(0, len(rs), 4):
                f.write("    " + " ".join(f"{{0x{a:X}, 0x{b:X}}}," for a, b in rs[i:i + 4]) + "\n")
            f.write("};\n\n")
            print(f"{pattern}: {len(rs)} ranges", file=sys.stderr)


if __name__ == "__main__":
    main()
