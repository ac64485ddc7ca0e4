#!/usr/bin/env bash
# ab.sh REV: the everyday commands of run.sh, timed for the orchstat of
# REV and of the working tree in alternation on the same corpus, so a
# change's cost is a ratio measured under the same load. Prints a
# Markdown table of medians and new/old ratios.
#
#   bash benchmarks/ab.sh bbe0d07          # corpus: benchmarks/corpus/runs (run.sh makes it)
#   N=5 CORPUS=/some/runs bash benchmarks/ab.sh HEAD~3
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
REV=${1:?usage: ab.sh REV}
N=${N:-5}
CORPUS=${CORPUS:-$ROOT/benchmarks/corpus/runs}
[[ -d $CORPUS ]] || { echo "ab.sh: no corpus at $CORPUS (bash benchmarks/run.sh makes it)" >&2; exit 1; }

W=$(mktemp -d "${TMPDIR:-/tmp}/orchstat-ab.XXXXXX")
cleanup() {
	git worktree remove --force "$W/old-src" >/dev/null 2>&1 || true
	rm -rf "$W"
}
trap cleanup EXIT

git worktree add -q --detach "$W/old-src" "$REV"
(cd "$W/old-src" && go build -o "$W/old" ./cmd/orchstat)
go build -o "$W/new" ./cmd/orchstat

# secs CMD...: the wall time of one run, in seconds.
secs() {
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>&1 || { echo "ab.sh: failed: $*" >&2; exit 1; }
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
}
median() { sort -g | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.3f", m}'; }

declare -A times
run_case() { # name, then the arguments after the binary; {db} is the side's store
	local name=$1
	shift
	for _ in $(seq "$N"); do
		for side in old new; do
			local args=("${@//\{db\}/$W/$side.duckdb}")
			times[$name.$side]+="$(secs "$W/$side" "${args[@]}") "
		done
	done
}

# (a) a first ingest, into a store removed before each run.
for _ in $(seq "$N"); do
	for side in old new; do
		rm -f "$W/$side.duckdb"*
		times[a.$side]+="$(secs "$W/$side" --db "$W/$side.duckdb" ingest --quiet "$CORPUS") "
	done
done
run_case b --db {db} ingest --quiet "$CORPUS"
run_case c-json --db {db} report --no-ingest --format json
run_case c2-check --db {db} check --no-ingest
run_case c3-check --db {db} check --quiet "$CORPUS"

echo "A/B: orchstat $(git rev-parse --short "$REV") (old) against the working tree at $(git rev-parse --short HEAD) (new), $N alternating runs each, corpus $CORPUS."
echo
echo "| | what | old median | new median | new / old |"
echo "|---|---|---:|---:|---:|"
for c in "a|first ingest into a new store" "b|ingest again, nothing new" "c-json|report --no-ingest --format json" \
	"c2-check|check --no-ingest" "c3-check|check --quiet CORPUS, ingesting first, nothing new"; do
	name=${c%%|*}
	what=${c#*|}
	o=$(tr ' ' '\n' <<<"${times[$name.old]}" | grep . | median)
	n=$(tr ' ' '\n' <<<"${times[$name.new]}" | grep . | median)
	printf '| %s | %s | %s s | %s s | %s |\n' "$name" "$what" "$o" "$n" "$(awk -v n="$n" -v o="$o" 'BEGIN { printf "%.2f", n / o }')"
done
