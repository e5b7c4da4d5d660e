#!/usr/bin/env python3
"""rename-static-dunder.py -- `__` only for cross-file internals.

style.md: module-internal cross-file symbols carry a double underscore
(libuv's uv__); file-local symbols are `static` and need no mark. This
renames every static function named prefix__rest to prefix_rest, in the
file that defines it, when it is safe:
  - the old name appears in no other file (headers, .def, other .c files:
    fuzz targets #include some .c files; docs, README, Makefile);
  - the new name appears nowhere in the tree (no clash with a function,
    variable or macro);
  - the name has text on both sides of the `__` (a trailing `key__` would
    become `key`, which locals of that name shadow: left alone).
Everything else is listed as skipped with the reason. Idempotent: run it
again after a merge and it renames what the merge brought.

Usage: scripts/rename-static-dunder.py [--dry-run] [ROOT]
"""
import os
import re
import sys

DIRS = ["common", "policy", "queue", "operator", "simulator", "tools", "bench", "test", "fuzz"]
EXTS = (".c", ".h", ".def", ".inc", ".sh")
DEF = re.compile(r"^static\s+(?:inline\s+)?(?:const\s+)?[\w\s\*]*?\b(\w+__\w+)\s*\(", re.M)


def files(root):
    for f in ["README.md", "Makefile"]:
        if os.path.exists(os.path.join(root, f)):
            yield os.path.join(root, f)
    for d, _, fs in os.walk(os.path.join(root, "docs")):
        for f in sorted(fs):
            if f.endswith(".md"):
                yield os.path.join(d, f)
    for top in DIRS:
        for d, _, fs in os.walk(os.path.join(root, top)):
            for f in sorted(fs):
                if f.endswith(EXTS):
                    yield os.path.join(d, f)


def rename_aligned(t, old, new):
    """Renames old to new (one character shorter) and moves the
    continuation lines of a call or definition that were aligned after
    its '(' one column left, so the arguments stay aligned."""
    lines = t.split("\n")
    pat = re.compile(r"\b" + re.escape(old) + r"\(")
    i = 0
    while i < len(lines):
        line = lines[i]
        cols = [m.start() for m in pat.finditer(line)]
        if not cols:
            i += 1
            continue
        lines[i] = re.sub(r"\b" + re.escape(old) + r"\b", new, line)
        # only the last call on the line can leave its '(' open
        paren = cols[-1] + len(old)
        depth = 0
        for ch in line[paren:]:
            depth += (ch == "(") - (ch == ")")
        j = i + 1
        while depth > 0 and j < len(lines):
            nxt = lines[j]
            if len(nxt) - len(nxt.lstrip(" ")) == paren + 1:
                lines[j] = nxt[1:]
            for ch in nxt:
                depth += (ch == "(") - (ch == ")")
            j += 1
        i += 1
    t = "\n".join(lines)
    return re.sub(r"\b" + re.escape(old) + r"\b", new, t)  # comments, pointers


def main():
    args = [a for a in sys.argv[1:] if a != "--dry-run"]
    dry = "--dry-run" in sys.argv
    root = args[0] if args else "."
    text = {p: open(p, encoding="utf-8", errors="replace").read() for p in files(root)}
    words = {}
    for p, t in text.items():
        for w in set(re.findall(r"\b\w*__\w*\b", t)):
            words.setdefault(w, set()).add(p)
    every = set()
    for t in text.values():
        every.update(re.findall(r"\b\w+\b", t))
    plan, skipped = {}, []
    for p, t in text.items():
        if not p.endswith(".c"):
            continue
        for name in sorted(set(DEF.findall(t))):
            m = re.fullmatch(r"([A-Za-z]\w*?)__([A-Za-z0-9]\w*)", name)
            if not m:
                skipped.append((p, name, "no text after the __"))
                continue
            new = m.group(1) + "_" + m.group(2)
            if words.get(name, {p}) != {p}:
                skipped.append((p, name, "used in " + ", ".join(sorted(words[name] - {p}))))
            elif new in every:
                skipped.append((p, name, f"{new} already exists"))
            else:
                plan.setdefault(p, []).append((name, new))
    n = 0
    for p, pairs in sorted(plan.items()):
        t = text[p]
        for old, new in pairs:
            t = rename_aligned(t, old, new)
            n += 1
        if not dry:
            open(p, "w", encoding="utf-8").write(t)
    for p, name, why in skipped:
        print(f"skipped {os.path.relpath(p, root)}: {name}: {why}")
    print(f"{'would rename' if dry else 'renamed'} {n} static functions in {len(plan)} files")


if __name__ == "__main__":
    main()
