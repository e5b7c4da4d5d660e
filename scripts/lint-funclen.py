#!/usr/bin/env python3
"""lint-funclen.py -- make lint's function-length check.

Every function in the product's C code (common/ policy/ queue/ operator/
simulator/ tools/) is at most MAX lines, counted from the first line of
its header (at column 0) to its closing brace at column 0: a longer one
is split along its steps (build / decide / record / release), as
shared/style.md and docs/architecture.md ask. Test infrastructure,
benchmarks and fuzz targets are not checked.

A function that must stay whole says why in a comment line of its own
right above its header: `/* lint-funclen: REASON */` (the expression
VM's dispatch is one switch, as style.md asks).

Usage: scripts/lint-funclen.py [ROOT]   (exit 1 with one line per function)
"""
import os
import re
import sys

MAX = 80
DIRS = ["common", "policy", "queue", "operator", "simulator", "tools"]
ROOT = sys.argv[1] if len(sys.argv) > 1 else "."
HEAD = re.compile(r"^[A-Za-z_]")
ATTR = re.compile(r"__attribute__\s*\(\(.*?\)\)")
EXEMPT = re.compile(r"/\* lint-funclen: \S.*\*/")
NOT_FUNC = re.compile(r"^(typedef|struct|enum|union)\b[^(]*$")


def functions(path):
    """Yields (name, first line, length) for each function definition."""
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    start = None   # header's first line while reading a header
    body = None    # (name, first line) while inside a body
    for i, line in enumerate(lines):
        if body is not None:
            if line.startswith("}"):
                if body[0] is not None:
                    yield body[0], body[1] + 1, i - body[1] + 1
                body = None
            continue
        if start is None:
            if HEAD.match(line) and not NOT_FUNC.match(line) and "(" in line \
                    and "=" not in line.split("(")[0]:
                start = i
                # The header may begin a line or two above the name
                # (storage class, attributes, return type).
                while start > 0 and HEAD.match(lines[start - 1]) and \
                        not lines[start - 1].rstrip().endswith((";", "}", "*/")):
                    start -= 1
            else:
                continue
        code = line.split("//")[0].rstrip()
        if code.endswith(";") or (code.endswith("}") and "{" in code):
            start = None          # a declaration, a prototype or a one-line function
        elif code.endswith("{"):
            header = ATTR.sub("", " ".join(lines[start:i + 1]))
            m = re.search(r"(\w+)\s*\(", header)
            name = m.group(1) if m else "?"
            exempt = start > 0 and EXEMPT.search(lines[start - 1])
            body = (None if exempt else name, start)
            start = None


def main():
    bad = []
    for d in DIRS:
        for dirpath, _, files in os.walk(os.path.join(ROOT, d)):
            for f in sorted(files):
                if not f.endswith(".c"):
                    continue
                path = os.path.join(dirpath, f)
                for name, first, n in functions(path):
                    if n > MAX:
                        bad.append(f"{os.path.relpath(path, ROOT)}:{first}: {name} is {n} lines "
                                   f"(at most {MAX}: split it along its steps)")
    for b in bad:
        print(b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
