#!/usr/bin/env bash
# growth.sh: a store grown the way cron grows it, and what each cron pass
# costs at each size. Runs are moved (renamed, so their files keep their
# times) from a generated corpus into a live runs folder in steps; after
# each step one ingest reads the new runs, and then, interleaved N times:
#
#   find      find -printf '%s %T@' over the live folder: the floor of any
#             pass that looks at every file
#   ingest    a cron ingest with nothing new (sealed runs: one stat each)
#   full      the same with --full, which stats every file as every pass
#             did before sealing: the baseline, in the same run
#   check     a cron check with nothing new (ingest, then the rules)
#   report    report --no-ingest --format json
#
# and prints a Markdown table of medians with the ratios the targets are
# stated in (issue 29): check/find and ingest/full.
#
#   STEPS="1000 3000 10000 30000" N=5 bash benchmarks/growth.sh
#   CORPUS=/tmp/b30/runs bash benchmarks/growth.sh   # reuse a generated corpus (its runs are moved back at the end)
#   AGE='-2 days' bash benchmarks/growth.sh           # runs finished two days back (settled: docs/ingest.md)
#   BASE=/path/to/old/orchstat bash benchmarks/growth.sh
#
# AGE is how long ago the runs finished (touch -d; default an hour). BASE
# names another build, which keeps a store of its own and whose cron check
# is measured in the same rounds: two more columns, its check and the
# ratio of this build's to it.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
N=${N:-5}
AGE=${AGE:--1 hour}
BASE=${BASE:-}
STEPS=${STEPS:-"1000 3000 10000 30000"}
LAST=${STEPS##* }
W=$(mktemp -d "${TMPDIR:-/tmp}/orchstat-growth.XXXXXX")
CORPUS=${CORPUS:-}
GIVEN=$CORPUS
LIVE=$W/live/runs
mkdir -p "$LIVE"

go build -o "$W/orchstat" ./cmd/orchstat
if [[ -z $CORPUS ]]; then
	go build -o "$W/gen" ./benchmarks/gen
	CORPUS=$W/corpus/runs
	"$W/gen" -out "$CORPUS" -runs "$LAST" >&2
	# Sealing waits for a run to be left alone for 10 minutes: the
	# corpus is dated back, as runs that finished earlier are.
	find "$CORPUS" -exec touch -d "$AGE" {} +
fi
mapfile -t ALL < <(ls "$CORPUS" | sort | head -n "$LAST")
cleanup() { # a corpus given keeps its runs: they go back where they came from
	if [[ -n $GIVEN ]] && ! find "$LIVE" -mindepth 1 -maxdepth 1 -exec mv -t "$CORPUS/" {} +; then
		# Never delete a given corpus's runs: a move cut short leaves them here.
		echo "growth.sh: some runs are still in $LIVE; move them back to $CORPUS" >&2
		return
	fi
	rm -rf "$W"
}
trap cleanup EXIT

secs() {
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>&1 || { echo "growth.sh: failed: $*" >&2; exit 1; }
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
}
# secs_check is secs for check, whose exit status is its alerts' (0-2).
secs_check() {
	local t0 t1 rc=0
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>&1 || rc=$?
	t1=$(date +%s.%N)
	((rc <= 2)) || { echo "growth.sh: failed ($rc): $*" >&2; exit 1; }
	awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
}
median() { sort -g | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.3f", m}'; }

DB=$W/orchstat.duckdb
O=("$W/orchstat" --db "$DB")
B=("$BASE" --db "$W/base.duckdb")
head="| runs | files | find | cron ingest | ingest --full | ingest / full | cron check | check / find | report --no-ingest |"
rule="|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
if [[ -n $BASE ]]; then
	head+=" base check | base check / find | check / base check |"
	rule+="---:|---:|---:|"
fi
echo "$head"
echo "$rule"
have=0
for step in $STEPS; do
	for ((i = have; i < step; i++)); do
		mv "$CORPUS/${ALL[$i]}" "$LIVE/"
		# A rename touches the moved folder's mtime (its ".." entry): it is
		# dated back as a run that finished earlier is, or sealing would
		# wait 10 minutes for it.
		touch -d "$AGE" "$LIVE/${ALL[$i]}"
	done
	have=$step
	"${O[@]}" ingest -q "$LIVE" >/dev/null
	"${O[@]}" ingest -q "$LIVE" >/dev/null # seals what the first read
	if [[ -n $BASE ]]; then
		"${B[@]}" ingest -q "$LIVE" >/dev/null
		"${B[@]}" ingest -q "$LIVE" >/dev/null
	fi
	declare -A t=()
	for _ in $(seq "$N"); do
		t[find]+="$(secs find "$LIVE" -printf '%s %T@\n') "
		t[ingest]+="$(secs "${O[@]}" ingest -q "$LIVE") "
		t[full]+="$(secs "${O[@]}" ingest -q --full "$LIVE") "
		t[check]+="$(secs_check "${O[@]}" check -q "$LIVE") "
		t[report]+="$(secs "${O[@]}" report --no-ingest --format json) "
		if [[ -n $BASE ]]; then
			t[base]+="$(secs_check "${B[@]}" check -q "$LIVE") "
		fi
	done
	declare -A m=()
	for k in find ingest full check report; do m[$k]=$(tr ' ' '\n' <<<"${t[$k]}" | grep . | median); done
	files=$(find "$LIVE" -type f | wc -l)
	awk -v r="$step" -v f="$files" -v fi="${m[find]}" -v ing="${m[ingest]}" -v fu="${m[full]}" -v c="${m[check]}" -v re="${m[report]}" \
		'BEGIN { printf "| %d | %d | %.3f s | %.3f s | %.3f s | %.2f | %.3f s | %.2f | %.3f s |", r, f, fi, ing, fu, ing/fu, c, c/fi, re }'
	if [[ -n $BASE ]]; then
		b=$(tr ' ' '\n' <<<"${t[base]}" | grep . | median)
		awk -v b="$b" -v fi="${m[find]}" -v c="${m[check]}" 'BEGIN { printf " %.3f s | %.2f | %.2f |", b, b/fi, c/b }'
	fi
	echo
done
