#!/bin/sh
# sim_report.sh -- aiq-sim's HTML report (issue 17): `compare --html` and
# `inflate --html` write one self-contained page (inline SVG, nothing
# external), trace names in it are escaped, and headless Chromium renders
# it: the charts and legends are in the rendered DOM, a screenshot is not
# blank (against a blank page's), and Chromium reports nothing about the
# page (no console message, no blocked load, no script error; a page that
# has them is caught, so the check can fail). Chromium comes from
# scripts/install-deps.sh; without it this suite fails. No cluster needed.
# servers: none (needs no cluster)
set -u
ROOT=${AIQ_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${AIQ_BUILD:-$ROOT/build/san}
SIM=$BUILD/aiq-sim
CHROMIUM=${AIQ_CHROMIUM:-/usr/bin/chromium}
T=$(mktemp -d /tmp/aiq-simreport.XXXXXX)
trap 'rm -rf "$T"' EXIT
PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok   $1"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL $1"; }
check() {
    what=$1; shift
    if "$@" >"$T/out" 2>&1; then ok "$what"; else bad "$what"; sed 's/^/     /' "$T/out" | tail -8; fi
}
P=$ROOT/examples/policies

# Headless Chromium on file $1: --dump-dom to $2.dom (or, with $3 =
# shot, --screenshot to $2.png), its stderr in $2.err. A fresh profile
# each time, nothing that reaches the network.
chrome() {
    prof=$(mktemp -d "$T/prof.XXXXXX")
    if [ "${3:-}" = shot ]; then
        out="--screenshot=$2.png --window-size=1000,3000 --hide-scrollbars"
    else
        out=--dump-dom
    fi
    # shellcheck disable=SC2086 # $out is one or three options
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic \
        --no-first-run --disable-background-networking --disable-component-update \
        --disable-sync --user-data-dir="$prof" --enable-logging=stderr --v=0 $out \
        "file://$1" >"$2.dom" 2>"$2.err"
    rc=$?
    rm -rf "$prof"
    return $rc
}

# What Chromium says about the page itself in $1.err: console messages
# (CSP-blocked loads and script errors are logged as console messages),
# failed loads. Its complaints about the machine (no D-Bus, no GPU
# device) are not about the page.
page_errors() {
    grep -E 'CONSOLE|Uncaught|net::ERR|Failed to load|Not allowed to load' "$1.err"
}

# ---- the reports ------------------------------------------------------------
check "compare --html: report written, table still on stdout" sh -c '
  "$0" gen --seed 5 --jobs 300 --out "$1/t.csv" 2>/dev/null &&
  "$0" compare --trace "$1/t.csv" --nodes-spec 4x8xA100-80GB --policy "$2/fifo.yaml" \
    --policy "$2/srjf.yaml" --policy "$2/fairshare.yaml" --html "$1/r.html" >"$1/c.out" 2>/dev/null &&
  grep -q "^metric  *fifo  *srjf  *fairshare$" "$1/c.out" && [ -s "$1/r.html" ]' "$SIM" "$T" "$P"
check "the report is self-contained: five charts, no script, no link, no external reference" sh -c '
  f=$0; [ "$(grep -c "<svg " "$f")" = 5 ] &&
  for id in jct-cdf gpu-util queue-len wait-groups wait-users; do grep -q "id=\"$id\"" "$f" || exit 1; done &&
  ! grep -qi "<script\|<link\|<iframe\|<img\|src=\|href=\|url(\|@import" "$f" &&
  [ "$(grep -o "https\?://[^\"]*" "$f" | sort -u | tr "\n" " ")" = "http://www.w3.org/1999/xhtml http://www.w3.org/2000/svg " ]' "$T/r.html"
check "--html to an unwritable path: an error naming it before any run, exit 1" sh -c '
  "$0" compare --trace "$1/t.csv" --nodes-spec 4x8xA100-80GB --policy "$2/fifo.yaml" --progress \
    --html "$1/no/such/dir/r.html" >"$1/e.out" 2>"$1/e.err"; rc=$?
  [ $rc = 1 ] && grep -q "no/such/dir/r.html: No such file or directory" "$1/e.err" &&
  ! grep -q "fifo: " "$1/e.err" && [ ! -s "$1/e.out" ] &&
  "$0" inflate --trace "$1/t.csv" --nodes-spec 4x8xA100-80GB --progress \
    --html "$1/no/such/dir/i.html" >"$1/e.out" 2>"$1/e.err"; rc=$?
  [ $rc = 1 ] && grep -q "no/such/dir/i.html: No such file or directory" "$1/e.err" &&
  ! grep -q "binpack seed" "$1/e.err" && [ ! -s "$1/e.out" ]' "$SIM" "$T" "$P"
check "inflate --html: the unallocated-GPU curve per placement, 50..130% arrived" sh -c '
  "$0" inflate --trace "$1/t.csv" --nodes-spec 4x8xA100-80GB --placement binpack,spread \
    --html "$1/i.html" >"$1/i.out" 2>/dev/null &&
  grep -q "^arrived  *binpack  *spread" "$1/i.out" && [ "$(grep -c "<svg " "$1/i.html")" = 1 ] &&
  grep -q "id=\"unalloc\"" "$1/i.html" && grep -q "<title>binpack: x 50, y " "$1/i.html" &&
  grep -q ">spread</text>" "$1/i.html" && grep -q "<tr><td>100</td><td>[0-9.]*</td><td>[0-9.]*</td></tr>" "$1/i.html"' "$SIM" "$T"
# Names from a trace are markup-free in the page: a group named like a
# script element, a user with quotes and an ampersand.
cat >"$T/h.csv" <<'EOF'
id,submit_s,user,group,replicas,gpus,gpu_mem_mib,cpu_milli,mem_mib,duration_s,estimate_s,priority,model,task,gpu_model,min_replicas,max_replicas,checkpoint_s
j1,0,<b>bold</b>&amp,<script>alert(1)</script>,1,8,40960,4000,32768,3600,3600,0,m,cv,,0,0,0
j2,10,u'2",<script>alert(1)</script>,1,8,40960,4000,32768,3600,3600,0,m,cv,,0,0,0
j3,20,u3,g3,1,4,40960,4000,32768,600,600,0,m,cv,,0,0,0
EOF
check "trace names are escaped in the report" sh -c '
  "$0" compare --trace "$1/h.csv" --nodes-spec 1x8xA100-80GB --policy "$2/fifo.yaml" \
    --html "$1/h.html" >/dev/null 2>&1 && ! grep -q "<script\|<b>" "$1/h.html" &&
  grep -q "&lt;script&gt;alert(1)&lt;/script&gt; / fifo: " "$1/h.html" &&
  grep -q "&lt;script&gt;alert(1)&lt;/script&gt;/u&#39;2&quot; / fifo: " "$1/h.html" &&
  grep -q "&lt;b&gt;bold&lt;/b&gt;&amp;amp / fifo" "$1/h.html"' "$SIM" "$T" "$P"

# ---- headless Chromium ------------------------------------------------------
if [ ! -x "$CHROMIUM" ]; then
    bad "headless Chromium: $CHROMIUM is not installed; run scripts/install-deps.sh (it installs Debian's chromium)"
    echo "$PASS passed, $FAIL failed"
    exit 1
fi

# Each check below is a function: chrome and page_errors live in this shell.
t_dom() {
    chrome "$T/r.html" "$T/r" || return 1
    d=$T/r.dom
    [ "$(grep -c "<svg " "$d")" = 5 ] && [ "$(grep -c "<polyline" "$d")" = 9 ] &&
        [ "$(grep -c 'class="legend-item"' "$d")" = 17 ] && grep -q 'class="bar"' "$d" &&
        ! grep -q ">no data</text>" "$d" || return 1
    for p in fifo srjf fairshare; do
        [ "$(grep -c "font-size=\"12\">$p</text>" "$d")" = 5 ] || { echo "legend $p"; return 1; }
    done
}
check "Chromium renders the compare report: charts, series and legends in the DOM" t_dom
t_quiet() { ! page_errors "$T/r"; }
check "Chromium says nothing about the compare report (no console message, failed or blocked load)" t_quiet
t_inflate_names() {
    chrome "$T/i.html" "$T/i" && chrome "$T/h.html" "$T/h" || return 1
    grep -q 'id="unalloc"' "$T/i.dom" && [ "$(grep -c "<circle" "$T/i.dom")" -ge 10 ] &&
        ! page_errors "$T/i" && ! page_errors "$T/h" && ! grep -q "<script" "$T/h.dom" &&
        grep -q "&lt;script&gt;alert(1)&lt;/script&gt;" "$T/h.dom"
}
check "Chromium renders the inflate report and the escaped names without running anything" t_inflate_names
# The same pages parsed as XML (XHTML) by Chromium: every report is
# well-formed XML, and a page that is not shows a parsererror.
printf '<?xml version="1.0"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><body><p>a<b></p></body></html>\n' >"$T/notxml.xhtml"
t_xml() {
    for f in r i h; do
        cp "$T/$f.html" "$T/$f.xhtml" && chrome "$T/$f.xhtml" "$T/x$f" || return 1
        if grep -q parsererror "$T/x$f.dom"; then
            echo "$f.html is not well-formed XML:"; grep -o "<parsererror.*" "$T/x$f.dom" | head -c 400
            return 1
        fi
    done
    [ "$(grep -c "<svg " "$T/xr.dom")" = 5 ] && chrome "$T/notxml.xhtml" "$T/notxml" &&
        grep -q parsererror "$T/notxml.dom"
}
check "Chromium's XML parser reads every report as well-formed XHTML (and flags a page that is not)" t_xml
# A page that loads something or runs a broken script is caught: the
# error check can fail.
cat >"$T/bad.html" <<'EOF'
<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>bad</title></head><body><svg><image href="http://192.0.2.1/x.png"/></svg></body></html>
EOF
printf '<!DOCTYPE html><html><head><meta charset="utf-8"><title>e</title></head><body><script>undefinedFn();</script></body></html>\n' >"$T/bad2.html"
t_negative() {
    chrome "$T/bad.html" "$T/bad" && chrome "$T/bad2.html" "$T/bad2" || return 1
    page_errors "$T/bad" | grep -q "192.0.2.1" && page_errors "$T/bad2" | grep -q "Uncaught"
}
check "the page-error check catches a blocked load and a script error" t_negative
printf '<!DOCTYPE html><html><head><meta charset="utf-8"><title>blank</title></head><body></body></html>\n' >"$T/blank.html"
t_shot() {
    chrome "$T/r.html" "$T/r" shot && chrome "$T/blank.html" "$T/blank" shot || return 1
    [ "$(head -c 8 "$T/r.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || return 1
    s=$(wc -c <"$T/r.png")
    b=$(wc -c <"$T/blank.png")
    echo "report $s bytes, blank page $b bytes"
    [ "$b" -gt 0 ] && [ "$s" -gt $((b * 10)) ] && ! page_errors "$T/r"
}
check "a screenshot of the report is a PNG and not blank (over 10x a blank page's size)" t_shot

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
