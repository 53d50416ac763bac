#!/usr/bin/env python3
"""Checks that splitting the README into docs/ lost nothing (issue 42, item 5).

Every unit of the README as it was at a base commit (default 0a0e446, the 964-line README) must
appear in today's README.md + docs/*.md: each paragraph, each list item, each table row, each
line of a code block (headings are not units: the pages have their own). Text is compared with
Markdown links reduced to their text and whitespace collapsed, so a paragraph may be re-wrapped
and a cross-reference may become a link. Prints what is missing; exits 1 if anything is.

  python3 scripts/check-readme-split.py [BASE]
"""
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Words the move made wrong, as they were -> as they are now.
EDITS = {
    "*Models* below)": "*Models*)",  # the charts moved to a page of their own
}


def normalize(text):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # [text](url) -> text
    return " ".join(text.split())


def units(markdown):
    lines = markdown.split("\n")
    out, block, fence = [], [], False

    def flush():
        if not block:
            return
        if block[0].startswith("|"):
            out.extend(block)  # table rows
        elif re.match(r"\s*([-*]|\d+\.) ", block[0]):
            item = []
            for s in block:  # list items, with their continuation lines
                if re.match(r"\s*([-*]|\d+\.) ", s) and item:
                    out.append(" ".join(item))
                    item = []
                item.append(s)
            out.append(" ".join(item))
        else:
            out.append(" ".join(block))
        block.clear()

    for s in lines:
        if s.startswith("```"):
            flush()
            fence = not fence
            continue
        if fence:
            if s.strip():
                out.append(s)
            continue
        if not s.strip() or s.startswith("#"):
            flush()
            continue
        block.append(s)
    flush()
    return [u for u in (normalize(u) for u in units_filter(out)) if u]


def units_filter(us):
    return [u for u in us if not re.fullmatch(r"\|[-| ]+\|", u.strip())]  # table rules


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else "0a0e446"
    old = subprocess.run(["git", "-C", str(REPO), "show", f"{base}:README.md"],
                         capture_output=True, text=True, check=True).stdout
    for was, now in EDITS.items():
        old = old.replace(was, now)
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    corpus = normalize(" ".join(p.read_text(encoding="utf-8") for p in pages))
    old_units = units(old)
    missing = [u for u in old_units if u not in corpus]
    for u in missing:
        print("missing:", u[:200] + ("..." if len(u) > 200 else ""))
    print(f"{len(old_units) - len(missing)} of {len(old_units)} units of {base}:README.md "
          f"found in README.md and docs/*.md ({len(pages)} files)")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
