#!/usr/bin/env python3
"""lint-layers.py -- make lint's layering and banned-call checks.

The rules live in docs/architecture.md, in the table between the
<!-- lint-layers --> markers, so the page and the check cannot drift:
each row names the files it governs (a glob; the first row that matches a
file wins), the project headers they may include (globs; a leading ! denies
and is tried first), the I/O libraries they may include, and whether they
may do stdio I/O. Every C source and header under common/ policy/ queue/
operator/ simulator/ tools/ bench/ test/ fuzz/ is checked for the banned
calls; the layer rules apply to the files a row matches, and a file under
a governed directory that no row matches is an error.

Usage: scripts/lint-layers.py [ROOT]   (exit 1 with one line per problem)
"""
import fnmatch
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else "."
DOC = os.path.join(ROOT, "docs/architecture.md")
SCAN = ["common", "policy", "queue", "operator", "simulator", "tools", "bench", "test", "fuzz"]
GOVERNED = ["common", "policy", "queue", "simulator", "tools", "bench"]
PROJECT_DIRS = ("common/", "policy/", "queue/", "operator/", "simulator/", "tools/",
                "bench/", "test/", "fuzz/")
# The libraries that do I/O or threads; the C library is always allowed.
IO_LIBS = {"curl/*": "curl", "microhttpd.h": "libmicrohttpd", "sqlite3.h": "SQLite",
           "yaml.h": "libyaml", "pthread.h": "pthreads", "json-c/*": "json-c"}
# curl's list of unsafe calls, plus strncpy and atol (no error, no cap).
BANNED = ["sprintf", "vsprintf", "strcpy", "strcat", "strncpy", "gets", "strtok",
          "atoi", "atol", "sscanf"]
STDIO = ["fopen", "fdopen", "freopen", "popen", "fread", "fwrite", "fprintf", "vfprintf",
         "printf", "vprintf", "puts", "fputs", "fputc", "putchar", "getline", "fgets",
         "perror"]


def read_rules():
    text = open(DOC, encoding="utf-8").read()
    m = re.search(r"<!-- lint-layers -->(.*?)<!-- /lint-layers -->", text, re.S)
    if not m:
        sys.exit(f"{DOC}: no <!-- lint-layers --> table")
    rules = []
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        files = re.findall(r"`([^`]+)`", cells[0])
        heads = re.findall(r"`([^`]+)`", cells[1])
        libs = re.findall(r"`([^`]+)`", cells[2])
        for lib in libs:
            if lib not in IO_LIBS:
                sys.exit(f"{DOC}: unknown library pattern `{lib}` (known: {', '.join(IO_LIBS)})")
        stdio = cells[3].lower().startswith("yes")
        rules.append((files, heads, libs, stdio))
    if not rules:
        sys.exit(f"{DOC}: the lint-layers table has no rows")
    return rules


def strip_comments(src):
    """Blanks comments and string/char literals, keeping line breaks."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def allowed(name, patterns):
    for p in patterns:
        if p.startswith("!") and fnmatch.fnmatchcase(name, p[1:]):
            return False
    return any(fnmatch.fnmatchcase(name, p) for p in patterns if not p.startswith("!"))


def sources():
    for top in SCAN:
        for d, _, fs in os.walk(os.path.join(ROOT, top)):
            for f in sorted(fs):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), ROOT)


def check_file(path, rules, problems):
    src = open(os.path.join(ROOT, path), encoding="utf-8", errors="replace").read()
    code = strip_comments(src)
    for no, line in enumerate(code.splitlines(), 1):
        for call in BANNED:
            if re.search(r"(?<![\w.>])" + call + r"\s*\(", line):
                problems.append(f"{path}:{no}: banned call {call}() (use snprintf, strtol, memcpy with a cap)")
    top = path.split("/", 1)[0]
    if top not in GOVERNED:
        return
    rule = next((r for r in rules if any(fnmatch.fnmatchcase(path, g) for g in r[0])), None)
    if rule is None:
        problems.append(f"{path}: no row of the lint-layers table in docs/architecture.md governs it")
        return
    _, heads, libs, stdio = rule
    for no, line in enumerate(src.splitlines(), 1):
        m = re.match(r'\s*#\s*include\s*([<"])([^>"]+)[>"]', line)
        if not m:
            continue
        inc = m.group(2)
        if m.group(1) == '"' and inc.startswith(PROJECT_DIRS):
            if not allowed(inc, heads):
                problems.append(f'{path}:{no}: includes "{inc}": not allowed for {top}/ '
                                "(docs/architecture.md, lint-layers table)")
        elif m.group(1) == "<":
            for pat, lib in IO_LIBS.items():
                if fnmatch.fnmatchcase(inc, pat) and pat not in libs:
                    problems.append(f"{path}:{no}: includes <{inc}> ({lib}): not allowed for "
                                    f"{top}/ (docs/architecture.md, lint-layers table)")
    if not stdio:
        io = re.compile(r"(?<![\w.>])(" + "|".join(STDIO) + r")\s*\(|\b(stdin|stdout|stderr)\b")
        for no, line in enumerate(code.splitlines(), 1):
            m = io.search(line)
            if m:
                problems.append(f"{path}:{no}: stdio I/O ({m.group(1) or m.group(2)}) in {top}/, "
                                "which does none (docs/architecture.md, lint-layers table)")


def main():
    rules = read_rules()
    problems = []
    for path in sources():
        check_file(path, rules, problems)
    for p in problems:
        print(p)
    if problems:
        print(f"lint-layers: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
