#!/usr/bin/env python3
"""Generates src/tokenizer/unicode_tables.inc from the reference `tokenizers` library.

Why generated: `tokenizers` does not use one Unicode version. Its BertNormalizer /
BertPreTokenizer categories (Cc|Cf|Co "other", P* punctuation, Mn) come from the frozen
`unicode_categories` 0.1 crate (Unicode ~9), NFD from `unicode-normalization-alignments`
(also old), lowercase from Rust's `char::to_lowercase` (whatever Unicode the wheel's rustc
ships). utf8proc is newer, so using it directly differs on ~600 code points. We therefore:
  * take the category sets (other, punctuation, Mn, White_Space) as range tables probed from
    the reference, code point by code point (they are frozen, so these tables never go stale);
  * keep utf8proc for NFD, NFKD, canonical combining classes and lowercase, plus exception lists
    (code points where the reference disagrees with the installed utf8proc). The utf8proc
    version they were computed against is recorded; a unit test checks it.

Run:  .venv/bin/python src/tokenizer/gen_unicode_tables.py   (needs `tokenizers` and
libutf8proc.so.2). Takes ~15 s.
"""
import ctypes
import ctypes.util
import os
import sys

import tokenizers
from tokenizers import normalizers, pre_tokenizers

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "unicode_tables.inc")

lib = ctypes.CDLL(ctypes.util.find_library("utf8proc") or "libutf8proc.so.2")
lib.utf8proc_version.restype = ctypes.c_char_p
lib.utf8proc_unicode_version.restype = ctypes.c_char_p
lib.utf8proc_tolower.restype = ctypes.c_int32
lib.utf8proc_tolower.argtypes = [ctypes.c_int32]
lib.utf8proc_get_property.restype = ctypes.POINTER(ctypes.c_int16)
lib.utf8proc_get_property.argtypes = [ctypes.c_int32]
lib.utf8proc_decompose_char.restype = ctypes.c_ssize_t
lib.utf8proc_decompose_char.argtypes = [ctypes.c_int32, ctypes.POINTER(ctypes.c_int32),
                                        ctypes.c_ssize_t, ctypes.c_int,
                                        ctypes.POINTER(ctypes.c_int)]
UTF8PROC_COMPAT = 1 << 2
UTF8PROC_DECOMPOSE = 1 << 4
_buf = (ctypes.c_int32 * 32)()
_last = ctypes.c_int(0)


def u_nfd(cp):
    n = lib.utf8proc_decompose_char(cp, _buf, 32, UTF8PROC_DECOMPOSE, ctypes.byref(_last))
    assert 0 < n <= 32, (cp, n)
    return [_buf[i] for i in range(n)]


def u_nfkd(cp):
    """utf8proc's compatibility decomposition of cp, canonically ordered like the reference's."""
    n = lib.utf8proc_decompose_char(cp, _buf, 32, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, ctypes.byref(_last))
    assert 0 < n <= 32, (cp, n)
    out = []
    for x in (_buf[i] for i in range(n)):
        j = len(out)
        while j > 0 and u_ccc(x) != 0 and u_ccc(out[j - 1]) > u_ccc(x):
            j -= 1
        out.insert(j, x)
    return out


def u_ccc(cp):
    return lib.utf8proc_get_property(cp)[1]


def u_lower(cp):
    return [lib.utf8proc_tolower(cp)]


def bert(clean=False, chinese=False, strip=False, lower=False):
    return normalizers.BertNormalizer(clean_text=clean, handle_chinese_chars=chinese,
                                      strip_accents=strip, lowercase=lower)


CLEAN, CHINESE, STRIP, LOWER = bert(clean=True), bert(chinese=True), bert(strip=True), bert(lower=True)
NFD = normalizers.NFD()
NFKD = normalizers.NFKD()
PRETOK = pre_tokenizers.BertPreTokenizer()

CHINESE_RANGES = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
                  (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)]


def is_ascii_punct(cp):
    return 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126


def main():
    other, punct, mn, space = set(), set(), set(), set()
    nfd_exc, nfkd_exc, ccc_zero, lower_exc = {}, {}, set(), {}
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue  # not representable in a Rust str
        c = chr(cp)
        # clean_text: removes cp 0, U+FFFD and is_control (= is_other minus \t \n \r),
        # maps whitespace to ' '. Cc whitespace (\x0b \x0c \x85) is removed first.
        n = CLEAN.normalize_str(c)
        if n == "":
            if cp != 0xFFFD:
                other.add(cp)
        elif n == " ":
            if cp in (9, 10, 13):
                other.add(cp)  # Cc, exempted from is_control by BertNormalizer itself
        else:
            assert n == c, hex(cp)
        pieces = len(PRETOK.pre_tokenize_str("a" + c + "a"))
        if pieces == 2:
            space.add(cp)
        elif pieces == 3:
            punct.add(cp)
        in_chinese = any(a <= cp <= b for a, b in CHINESE_RANGES)
        assert (CHINESE.normalize_str(c) != c) == in_chinese, hex(cp)
        ref_nfd = [ord(x) for x in NFD.normalize_str(c)]
        if ref_nfd != u_nfd(cp):
            nfd_exc[cp] = ref_nfd
        if cp >= 0xA0:
            ref_nfkd = [ord(x) for x in NFKD.normalize_str(c)]
            if ref_nfkd != u_nfkd(cp):
                nfkd_exc[cp] = ref_nfkd
        if ref_nfd == [cp] and STRIP.normalize_str(c) == "":
            mn.add(cp)
        if ref_nfd == [cp] and u_ccc(cp) != 0:
            # Reference reorders c after U+0334 (ccc 1) or U+0345 (ccc 240) before c?
            swapped = (NFD.normalize_str(c + "\u0334") == "\u0334" + c or
                       NFD.normalize_str("\u0345" + c) == c + "\u0345")
            if not swapped:
                ccc_zero.add(cp)
        ref_lower = [ord(x) for x in LOWER.normalize_str(c)]
        if ref_lower != u_lower(cp):
            lower_exc[cp] = ref_lower
    assert space == {9, 10, 11, 12, 13, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028,
                     0x2029, 0x202F, 0x205F, 0x3000}, sorted(space)
    assert all(is_ascii_punct(cp) for cp in punct if cp < 128)
    assert all(cp in punct for cp in range(128) if is_ascii_punct(cp))
    # Surrogates are never decoded from valid UTF-8; give them no properties.

    def ranges(s):
        out, cps = [], sorted(s)
        for cp in cps:
            if out and out[-1][1] == cp - 1:
                out[-1][1] = cp
            else:
                out.append([cp, cp])
        return out

    def emit_ranges(f, name, s, doc):
        rs = ranges(s)
        f.write(f"// {doc}\ninline constexpr CodepointRange {name}[] = {{\n")
        for i in range(0, len(rs), 4):
            f.write("    " + " ".join(f"{{0x{a:X}, 0x{b:X}}}," for a, b in rs[i:i + 4]) + "\n")
        f.write("};\n\n")

    def emit_map(f, name, m, doc):
        f.write(f"// {doc}\ninline constexpr CodepointMapping {name}[] = {{\n")
        for cp in sorted(m):
            v = m[cp]
            assert len(v) <= 3, (hex(cp), v)
            vals = ", ".join(f"0x{x:X}" for x in v) or "0"
            f.write(f"    {{0x{cp:X}, {len(v)}, {{{vals}}}}},\n")
        f.write("};\n\n")

    with open(OUT, "w") as f:
        f.write("// GENERATED by src/tokenizer/gen_unicode_tables.py from the reference `tokenizers`\n"
                f"// {tokenizers.__version__} and utf8proc {lib.utf8proc_version().decode()} "
                f"(Unicode {lib.utf8proc_unicode_version().decode()}). Do not edit.\n"
                "// Included by unicode.cpp only.\n\n")
        f.write(f'inline constexpr char kTablesUtf8procVersion[] = "{lib.utf8proc_version().decode()}";\n')
        f.write(f'inline constexpr char kTablesTokenizersVersion[] = "{tokenizers.__version__}";\n\n')
        emit_ranges(f, "kOtherRanges", other,
                    "unicode_categories is_other(): Cc | Cf | Co, as the reference classifies them.")
        emit_ranges(f, "kPunctuationRanges", punct,
                    "BertPreTokenizer punctuation: ASCII punctuation | P* (reference tables).")
        emit_ranges(f, "kMarkNonspacingRanges", mn,
                    "Mn (reference tables), for code points the reference does not decompose.")
        emit_ranges(f, "kWhiteSpaceRanges", space, "Rust char::is_whitespace (White_Space).")
        emit_map(f, "kNfdExceptions", nfd_exc,
                 "Full NFD decomposition where the reference differs from utf8proc.")
        emit_map(f, "kNfkdExceptions", nfkd_exc,
                 "Full NFKD decomposition where the reference differs from utf8proc (newer Unicode).")
        emit_ranges(f, "kCccZeroRanges", ccc_zero,
                    "Combining class 0 in the reference but not in utf8proc (newer marks).")
        emit_map(f, "kLowercaseExceptions", lower_exc,
                 "Rust char::to_lowercase where it differs from utf8proc_tolower.")
    print(f"wrote {OUT}: other={len(ranges(other))} punct={len(ranges(punct))} mn={len(ranges(mn))} "
          f"ranges; nfd_exc={len(nfd_exc)} nfkd_exc={len(nfkd_exc)} ccc_zero={len(ccc_zero)} lower_exc={len(lower_exc)}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
