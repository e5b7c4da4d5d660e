#!/bin/sh
# sim_cli.sh -- aiq-sim from the command line: gen is deterministic per
# seed, run prints the metrics table and writes CSV, compare puts policies
# side by side, each reader runs on its checked-in sample, a bad trace line
# is reported as FILE:LINE:COLUMN with the column and value, and a run
# recorded with --journal replays exactly, and every binary answers
# --version. No cluster needed.
# servers: none (needs no cluster)
set -u
ROOT=${AIQ_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${AIQ_BUILD:-$ROOT/build/san}
SIM=$BUILD/aiq-sim
T=$(mktemp -d /tmp/aiq-simcli.XXXXXX)
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
F=$ROOT/test/fixtures/traces

check "gen: same seed, same trace; another seed, another" sh -c '
  "$0" gen --seed 9 --jobs 300 --out "$1/a.csv" && "$0" gen --seed 9 --jobs 300 --out "$1/b.csv" &&
  "$0" gen --seed 10 --jobs 300 --out "$1/c.csv" && cmp -s "$1/a.csv" "$1/b.csv" &&
  ! cmp -s "$1/a.csv" "$1/c.csv" && [ "$(wc -l <"$1/a.csv")" = 301 ]' "$SIM" "$T"
check "run: table on stdout, --progress on stderr, CSV written" sh -c '
  "$0" run --trace "$1/a.csv" --nodes-spec 4x8xA100-80GB --policy "$2/srjf.yaml" --progress \
    --csv "$1/m.csv" --util-csv "$1/u.csv" >"$1/run.out" 2>"$1/run.err" &&
  grep -q "^jobs  *300$" "$1/run.out" && grep -q "^finished  *300$" "$1/run.out" &&
  grep -q "srjf: 100% in [0-9]* s" "$1/run.err" && head -1 "$1/m.csv" | grep -q "^policy,jobs," &&
  grep -q "^srjf,300,300,0,0," "$1/m.csv" && head -1 "$1/u.csv" | grep -q "^policy,hour,gpu_utilisation$" &&
  sed -n 2p "$1/u.csv" | grep -q "^srjf,0,"' \
    "$SIM" "$T" "$P"
check "compare: policies side by side" sh -c '
  "$0" compare --trace "$1/a.csv" --nodes-spec 4x8xA100-80GB --policy "$2/fifo.yaml" \
    --policy "$2/fairshare.yaml" --util-csv "$1/uc.csv" 2>/dev/null | head -1 |
    grep -q "^metric  *fifo  *fairshare$"' "$SIM" "$T" "$P"
check "compare --util-csv: one series per policy, one header" sh -c '
  [ "$(grep -c "^policy,hour,gpu_utilisation$" "$1/uc.csv")" = 1 ] &&
  n1=$(grep -c "^fifo,[0-9]*,[0-9.]*$" "$1/uc.csv") && n2=$(grep -c "^fairshare,[0-9]*,[0-9.]*$" "$1/uc.csv") &&
  [ "$n1" -gt 0 ] && [ "$n2" -gt 0 ] && [ $((n1 + n2 + 1)) = "$(wc -l <"$1/uc.csv")" ] &&
  grep -q "^fifo,0," "$1/uc.csv" && grep -q "^fairshare,0," "$1/uc.csv"' "$SIM" "$T"
check "readers: Tiresias and Alibaba samples run (the CPU-only pod too)" sh -c '
  "$0" run --format tiresias --trace "$1/tiresias.csv" --nodes-spec 2x8xV100M32 \
    --policy "$2/tiresias-las.yaml" 2>/dev/null | grep -q "^finished  *4$" &&
  "$0" run --format alibaba --trace "$1/alibaba_pods.csv" --nodes "$1/alibaba_nodes.csv" \
    --policy "$2/fifo.yaml" 2>/dev/null | grep -q "^finished  *5$"' "$SIM" "$F" "$P"
check "Tiresias: 16- and 12-GPU jobs run as gangs on 4-GPU machines" sh -c '
  "$0" run --format tiresias --trace "$1/tiresias.csv" --nodes-spec 4x4xV100M32 \
    --policy "$2/fifo.yaml" 2>/dev/null | grep -q "^finished  *4$"' "$SIM" "$F" "$P"
check "a bad line names file:line:column, column and value (exit 1)" sh -c '
  "$0" run --trace "$1/bad.csv" --policy "$2/fifo.yaml" >/dev/null 2>"$3/e"; rc=$?
  [ $rc = 1 ] && grep -q "bad.csv:3:16: column .gpus.: expected an integer 0..16, got .eight." "$3/e"' \
    "$SIM" "$F" "$P" "$T"
check "--plan-actual: compare plans with the real durations; refused where it cannot act" sh -c '
  "$0" compare --plan-actual --trace "$1/a.csv" --nodes-spec 4x8xA100-80GB \
    --policy "$2/fifo.yaml" 2>/dev/null | grep -q "^fifo  *[0-9.]*%" || exit 1
  "$0" run --plan-actual --journal "$1/pa.db" --trace "$1/a.csv" --policy "$2/fifo.yaml" \
    >/dev/null 2>"$1/pa.err"
  [ $? = 1 ] && grep -q "cannot be journaled" "$1/pa.err" || exit 1
  "$0" tune --plan-actual --policy "$2/fifo.yaml" --trace "$1/a.csv" --objective mean_jct \
    >/dev/null 2>"$1/pa.err"
  [ $? = 2 ] && grep -q "is for run and compare, not tune" "$1/pa.err"' \
    "$SIM" "$T" "$P"
check "usage errors exit 2" sh -c '
  "$0" run --trace x.csv 2>/dev/null; [ $? = 2 ] && "$0" frobnicate 2>/dev/null; [ $? = 2 ]' "$SIM"
check "run --journal, then replay: exact" sh -c '
  "$0" run --trace "$1/a.csv" --nodes-spec 4x8xA100-80GB --policy "$2/priority.yaml" \
    --journal "$1/j.db" >/dev/null 2>&1 &&
  "$0" replay --db "$1/j.db" --policies-dir "$2" 2>/dev/null | grep -q "^replay: exact:"' \
    "$SIM" "$T" "$P"

check "no progress on stderr without --progress when it is no terminal" sh -c '
  "$0" run --trace "$1/a.csv" --nodes-spec 4x8xA100-80GB --policy "$2/fifo.yaml" \
    >/dev/null 2>"$1/np.err" && ! grep -q "%" "$1/np.err"' "$SIM" "$T" "$P"

# The inflation protocol (FGD): arrivals only, nothing departs.
check "inflate: table per placement (binpack, spread, fgd), 50%..130%, binpack leaves fewer GPUs unallocated than spread" sh -c '
  "$0" inflate --trace "$1/a.csv" --nodes-spec 4x8xA100-80GB --sample --seed 5 --runs 2 \
    --csv "$1/inf.csv" --placements-csv "$1/pl.csv" >"$1/inf.out" 2>/dev/null &&
  grep -q "seeds 5..6 (mean)" "$1/inf.out" &&
  grep -q "^arrived  *binpack  *spread  *fgd$" "$1/inf.out" &&
  [ "$(grep -c "^ *[0-9]*% *[0-9.]*% *[0-9.]*% *[0-9.]*%$" "$1/inf.out")" = 9 ] &&
  b=$(grep "^ *130%" "$1/inf.out" | awk "{print \$2}" | tr -d %) &&
  s=$(grep "^ *130%" "$1/inf.out" | awk "{print \$3}" | tr -d %) &&
  awk -v b="$b" -v s="$s" "BEGIN{exit !(b < s)}" &&
  head -1 "$1/inf.csv" | grep -q "^placement,seed,arrived_target_pct,arrived_pct,unallocated_gpu_pct," &&
  [ "$(grep -c "^binpack,5," "$1/inf.csv")" = 9 ] && [ "$(grep -c "^spread,6," "$1/inf.csv")" = 9 ] &&
  [ "$(grep -c "^fgd,6," "$1/inf.csv")" = 9 ] && grep -q "^fgd,5,1,job-[0-9]*,0,placed," "$1/pl.csv" &&
  head -1 "$1/pl.csv" | grep -q "^placement,seed,seq,job,replica,outcome,node,gpus,gpu_share,gpu_mem_mib$" &&
  grep -q "^binpack,5,1,job-[0-9]*,0,placed,node-[0-9]*,[0-9|]*,1.0000,40960$" "$1/pl.csv" &&
  grep -q "^spread,6,[0-9]*,job-[0-9]*,,dropped:capacity,,,,$" "$1/pl.csv"' "$SIM" "$T"
check "inflate: same seed, same placements; usage errors exit 2" sh -c '
  "$0" inflate --trace "$1/a.csv" --nodes-spec 4x8xA100-80GB --sample --seed 5 --runs 2 \
    --placements-csv "$1/pl2.csv" >/dev/null 2>&1 && cmp -s "$1/pl.csv" "$1/pl2.csv" &&
  { "$0" inflate --trace "$1/a.csv" --placement firstfit 2>"$1/e1"; [ $? = 2 ]; } &&
  grep -q "placement: expected binpack, spread and/or fgd (at most three) separated by .,., got .firstfit." "$1/e1" &&
  { "$0" inflate --trace "$1/a.csv" --seed 3 2>/dev/null; [ $? = 2 ]; }' "$SIM" "$T"

check "gen --fgd-mix share/default: the openb pod lists' shapes (shares 0.81 most, 13% CPU-only; default with whole GPUs); inflate reads it on a /CORES/MEM cluster" sh -c '
  "$0" gen --seed 3 --jobs 300 --fgd-mix share --out "$1/fs.csv" 2>/dev/null &&
  awk -F, "NR==1 && \$19 != \"gpu_milli\" {bad=1}
           NR>1 && (\$6 != 0 || \$7 != 0 || \$5 != 1) {bad=1} NR>1 && \$19 == 0 {cpu++}
           NR>1 && \$19 > 0 {sh++} NR>1 && \$19 == 810 {s81++}
           END {exit !(!bad && cpu >= 20 && cpu <= 65 && sh >= 235 && s81 >= 60 && s81 <= 130)}" \
    "$1/fs.csv" &&
  "$0" gen --seed 3 --jobs 300 --fgd-mix default --out "$1/fd.csv" 2>/dev/null &&
  awk -F, "NR>1 && \$6 == 0 && \$19 == 0 {cpu++} NR>1 && \$19 > 0 {sh++} NR>1 && \$6 > 0 {w++}
           END {exit !(cpu >= 20 && cpu <= 65 && sh >= 85 && sh <= 145 && w >= 120 && w <= 175)}" \
    "$1/fd.csv" &&
  "$0" inflate --trace "$1/fs.csv" --nodes-spec 4x8xV100M32/96/384,2x2xT4/104/512 --placement fgd \
    >"$1/fs.out" 2>/dev/null && grep -q "^arrived  *fgd$" "$1/fs.out" &&
  { "$0" gen --seed 3 --jobs 3 --fgd-mix most --out "$1/x.csv" 2>"$1/e2"; [ $? = 2 ]; } &&
  grep -q "fgd-mix: expected whole, multi, share or default" "$1/e2"' "$SIM" "$T"
check "inflate --policy: the fgd preset's placement score places exactly as placement: fgd" sh -c '
  "$0" inflate --trace "$1/fs.csv" --nodes-spec 4x8xV100M32/96 --sample --seed 2 --placement fgd \
    --placements-csv "$1/f1.csv" >/dev/null 2>&1 &&
  "$0" inflate --trace "$1/fs.csv" --nodes-spec 4x8xV100M32/96 --sample --seed 2 \
    --policy "$2/fgd.yaml" --placements-csv "$1/f2.csv" >"$1/f2.out" 2>&1 &&
  grep -q "^arrived  *fgd$" "$1/f2.out" && [ "$(wc -l <"$1/f1.csv")" -gt 50 ] &&
  cmp -s "$1/f1.csv" "$1/f2.csv"' "$SIM" "$T" "$P"
check "inflate on the Alibaba sample: the CPU-only pod is placed on the CPU node, share 0" sh -c '
  "$0" inflate --format alibaba --trace "$1/alibaba_pods.csv" --nodes "$1/alibaba_nodes.csv" \
    --placement binpack --placements-csv - 2>/dev/null |
    grep -q "^binpack,0,5,openb-pod-0004,0,placed,openb-node-0001,,0.0000,0$"' "$SIM" "$F"

check "gen --estimate-share 1 --estimate-noise 0: every job has an estimate, out of range named" sh -c '
  "$0" gen --seed 4 --jobs 200 --estimate-share 1 --estimate-noise 0 --out "$1/est.csv" 2>/dev/null &&
  awk -F, "NR > 1 && \$11 <= 0 { bad++ } END { exit !(NR == 201 && !bad) }" "$1/est.csv" &&
  { "$0" gen --seed 4 --jobs 5 --estimate-noise 2.5 --out "$1/x.csv" 2>"$1/e3"; [ $? = 2 ]; } &&
  grep -q "^aiq-sim: --estimate-noise: expected a number 0..2, got .2.5.$" "$1/e3"' "$SIM" "$T"

# Which presets rescore once a minute (docs/queue.md "Rescore interval"),
# by name: a preset that gains or loses the line, or a new preset in
# neither list, fails here naming it. The ones with the interval order as
# rescoring every cycle does: the same schedule, line for line, with and
# without it, on a busy trace with a quota. The control shows the
# interval reaches the simulator: newest-first, whose order a clock held
# at the interval's start does change.
RS_WITH="fifo priority tiresias-las elastic-fifo elastic-tiresias binpack spread fgd utilization-aware"
RS_WITHOUT="srjf elastic-srjf fairshare slurm-multifactor"
check "every preset is in one list: with or without rescoreInterval" sh -c '
  for f in "$0"/*.yaml; do
    b=$(basename "$f" .yaml)
    case " $1 $2 " in *" $b "*) ;; *) echo "preset $b: in neither list"; bad=1 ;; esac
  done
  [ -z "${bad:-}" ]' "$P" "$RS_WITH" "$RS_WITHOUT"
for b in $RS_WITHOUT; do
    check "preset $b: no rescoreInterval, rescores every cycle" sh -c '
      [ -f "$0" ] && ! grep -n "^ *rescoreInterval:" "$0"' "$P/$b.yaml"
done
"$SIM" gen --seed 5 --jobs 300 --interarrival 120 --out "$T/rs.csv" 2>/dev/null
for b in $RS_WITH; do
    f=$P/$b.yaml
    check "preset $b: rescoreInterval: 1m" grep -q '^  rescoreInterval: 1m$' "$f"
    check "preset $b: the same schedule with its rescoreInterval as without" sh -c '
      grep -v "^  rescoreInterval:" "$2" >"$1/rs-$3.yaml" &&
      "$0" run --trace "$1/rs.csv" --nodes-spec 2x8xA100-80GB --group-quota 8 --policy "$2" \
        --csv "$1/rs-a.csv" >"$1/rs-a.out" 2>&1 &&
      "$0" run --trace "$1/rs.csv" --nodes-spec 2x8xA100-80GB --group-quota 8 \
        --policy "$1/rs-$3.yaml" --csv "$1/rs-b.csv" >"$1/rs-b.out" 2>&1 &&
      grep -q "^finished  *[1-9][0-9]" "$1/rs-a.out" &&
      cmp "$1/rs-a.out" "$1/rs-b.out" && cmp "$1/rs-a.csv" "$1/rs-b.csv"' "$SIM" "$T" "$f" "$b"
done
check "control: newest first, the interval changes the schedule" sh -c '
  for i in 0s 1h; do
    printf "%s\n" "apiVersion: aiq.dev/v1alpha1" "kind: QueuePolicy" "metadata:" "  name: newest" \
      "spec:" "  formula: \"-job.age_hours\"" "  levels:" "    - name: all" "  backfill: None" \
      "  rescoreInterval: $i" >"$1/newest-$i.yaml"
    "$0" run --trace "$1/rs.csv" --nodes-spec 2x8xA100-80GB --group-quota 8 \
      --policy "$1/newest-$i.yaml" --csv "$1/newest-$i.csv" >/dev/null 2>&1 || exit 1
  done
  ! cmp -s "$1/newest-0s.csv" "$1/newest-1h.csv"' "$SIM" "$T"

# Every binary says which release and commit it is (issue 18).
for b in aiq-operator aiq-apiserver aiq-sim kubectl-aiq aiq-journal; do
    check "$b --version names the release and the commit" sh -c '
      "$0" --version | grep -Eq "^$1 [0-9]+\.[0-9]+\.[0-9]+ \(git [^)]+\)$"' "$BUILD/$b" "$b"
done

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
