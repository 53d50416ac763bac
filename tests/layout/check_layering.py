#!/usr/bin/env python3
"""The source tree's layering (issue 21), checked from the #include lines of src/:

- no include cycle between folders (a folder is the directory of a file, e.g. src/backends/cpu);
- the lower layers never include the upper ones: core < description < engine < checkpoint,
  ops < families, backends < runtime < worker, rpc, gateway, cli (see LAYERS);
- the gateway, worker and rpc folders include no backend or runtime (the gateway does not link
  kernels or BLAS);
- no backend or runtime file names a family's tensors or layers (tensor names, config types).

Exits 1 listing every violation. Run by ctest (LayeringAndOneDefinitionPerFamily).
"""
import re
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# Lower index = lower layer. A folder may include its own layer and those below it.
LAYERS = {
    "core": 0, "tokenizer": 1, "image": 1, "description": 1, "engine": 2, "checkpoint": 2, "ops": 3,
    "families": 4, "backends/cpu": 4, "backends/cuda": 4, "runtime": 5, "runtime/cuda": 5,
    "worker": 6, "rpc": 7, "gateway": 8, "cli": 9,
}
NO_KERNELS = ("gateway", "worker", "rpc")
# What only a family may know: checkpoint tensor names and family config types.
FAMILY_WORDS = re.compile(
    r'"[^"]*(attention\.self|encoder\.layer|embed_tokens|word_embeddings|q_proj|k_proj|'
    r'gate_proj|up_proj|down_proj|input_layernorm|lm_head|pooler\.dense|classifier\.|q_lin|'
    r'sa_layer_norm|attention\.attn\.|relative_attention_bias|pre_classifier|tok_embeddings|'
    r'Wqkv|mlp\.Wi)[^"]*"'
    r'|\b(BertConfig|DecoderConfig|ForwardBert|ForwardQwen3|LoadBert|LoadDecoder)\b')


def folder(path: Path) -> str:
    return str(path.parent.relative_to(SRC))


def main() -> int:
    files = [p for p in SRC.rglob("*") if p.suffix in (".h", ".cpp", ".cu")]
    edges = {}
    problems = []
    for f in files:
        src = folder(f)
        text = f.read_text(errors="replace")
        for inc in INCLUDE.findall(text):
            target = SRC / inc
            if not target.exists():
                continue  # generated or system-like headers
            dst = folder(target)
            if dst == src:
                continue
            edges.setdefault(src, set()).add(dst)
            if src in LAYERS and dst in LAYERS and LAYERS[dst] > LAYERS[src]:
                problems.append(f"{f.relative_to(SRC)} includes {inc}: {dst} is above {src}")
            if src in NO_KERNELS and dst.split("/")[0] in ("backends", "runtime", "families"):
                problems.append(f"{f.relative_to(SRC)} includes {inc}: the {src} must not "
                                "depend on kernels")
        if folder(f).split("/")[0] in ("backends", "runtime"):
            for m in FAMILY_WORDS.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"{f.relative_to(SRC)}:{line}: names a family's "
                                f"tensors or config ({m.group(0)})")
    for s in edges:
        if s not in LAYERS:
            problems.append(f"folder src/{s} is not placed in a layer (tests/layout/check_layering.py)")

    # Cycles between folders (depth-first search).
    state = {}
    stack = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(edges.get(n, ())):
            if state.get(m) == 1:
                problems.append("include cycle: " + " -> ".join(stack[stack.index(m):] + [m]))
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(edges):
        if n not in state:
            visit(n)
    for p in problems:
        print(p)
    print(f"{len(files)} files, {sum(len(v) for v in edges.values())} folder edges, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
