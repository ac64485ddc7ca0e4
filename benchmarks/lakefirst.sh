#!/usr/bin/env bash
# Issue 40, row 3: a lake's first `report --lake` against `report` on a
# store of the same rows (target ≤ 2×), this tree's orchstat (which answers
# a first read from the lake's Parquet files and builds the replica after)
# beside a baseline orchstat (which builds the replica first), interleaved
# round by round, with the load average of each round:
#
#   BASE=/tmp/orchstat-base CORPUS=/tmp/b30/runs bash benchmarks/lakefirst.sh
#
# The corpus (benchmarks/gen -runs 30000 -seed 1) is split among RUNNERS
# runners by hard links, each ingested into a store of its own and exported
# to one lake; one more store ingests the whole corpus. Each round times
#   store:  report --no-ingest --format json on the whole store
#   new:    report --lake, first read (a new cache folder), this tree's
#   old:    the same with BASE
#   later:  report --lake with the replica the new read's builder made
# and, untimed, waits for the new read's builder to put its replica in
# place before the next command (its time is printed as "build"). The four
# reports' JSON must be the same. W=DIR keeps the stores and lake between
# runs (they take minutes to make).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
N=${N:-5}
RUNNERS=${RUNNERS:-3}
CORPUS=${CORPUS:-/tmp/b30/runs}
BASE=${BASE:?BASE=the baseline orchstat binary}
W=${W:-$(mktemp -d "${TMPDIR:-/tmp}/orchstat-lakefirst.XXXXXX")}
log() { echo "lakefirst.sh: $*" >&2; }

mkdir -p "$W"
O=$W/orchstat
go build -o "$O" ./cmd/orchstat

if [[ ! -f $W/PREPPED ]]; then
	n=$(find "$CORPUS" -mindepth 1 -maxdepth 1 -type d | wc -l)
	per=$(((n + RUNNERS - 1) / RUNNERS))
	find "$CORPUS" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort >"$W/runs.txt"
	for ((i = 0; i < RUNNERS; i++)); do
		log "runner $i: $per runs, ingested and exported"
		mkdir -p "$W/r$i"
		sed -n "$((i * per + 1)),$(((i + 1) * per))p" "$W/runs.txt" | while read -r d; do cp -al "$CORPUS/$d" "$W/r$i/"; done
		"$O" --db "$W/r$i.db" ingest --quiet "$W/r$i"
		"$O" --db "$W/r$i.db" export --no-ingest --lake "$W/lake" --runner "runner-$i" >/dev/null
	done
	log "one store of all $n runs"
	"$O" --db "$W/all.db" ingest --quiet "$CORPUS"
	touch "$W/PREPPED"
fi

# t NAME CMD...: runs CMD, appends its wall-clock seconds to $W/NAME.t.
t() {
	local name=$1
	shift
	local s e
	s=$(date +%s.%N)
	"$@"
	e=$(date +%s.%N)
	awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f\n", e - s }' >>"$W/$name.t"
}
# waitReplica DIR: waits for the replica a first read's builder puts in DIR.
waitReplica() {
	local s
	s=$(date +%s.%N)
	for _ in $(seq 1200); do
		if compgen -G "$1/orchstat/lake/replicas/*.duckdb" >/dev/null; then
			# The rename is the builder's last act but for its exit.
			sleep 0.2
			awk -v s="$s" -v e="$(date +%s.%N)" 'BEGIN { printf "%.3f\n", e - s }' >>"$W/build.t"
			return
		fi
		sleep 0.1
	done
	log "no replica in $1 after 120 s"
	exit 1
}

rm -f "$W"/*.t "$W/load.txt"
for ((r = 1; r <= N; r++)); do
	cut -d' ' -f1-3 /proc/loadavg >>"$W/load.txt"
	t store "$O" --db "$W/all.db" report --no-ingest --format json >"$W/store.json"
	rm -rf "$W/c-new" "$W/c-old"
	t new env XDG_CACHE_HOME="$W/c-new" "$O" report --lake "$W/lake" --format json >"$W/new.json"
	waitReplica "$W/c-new"
	t old env XDG_CACHE_HOME="$W/c-old" "$BASE" report --lake "$W/lake" --format json >"$W/old.json"
	t later env XDG_CACHE_HOME="$W/c-new" "$O" report --lake "$W/lake" --format json >"$W/later.json"
done

# The reports must agree, but for the time they were made at.
norm() { jq -S 'del(.generated_at, .database) | del(.. | .at?, .until?)' "$1"; }
for f in new old later; do
	if ! diff <(norm "$W/store.json") <(norm "$W/$f.json") >/dev/null; then
		log "report --lake ($f) differs from the store's report"
		exit 1
	fi
done

med() { sort -n "$W/$1.t" | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f", m }'; }
all() { sort -n "$W/$1.t" | paste -sd' ' -; }
echo "commit $(git rev-parse --short HEAD), $(date -u +%Y-%m-%dT%H:%MZ), $N rounds, load average per round (1/5/15 min): $(paste -sd';' "$W/load.txt")"
for k in store new old later build; do
	printf '%-6s median %s s  (%s)\n' "$k" "$(med $k)" "$(all $k)"
done
s=$(med store)
for k in new old later; do
	awk -v a="$(med $k)" -v b="$s" -v k="$k" 'BEGIN { printf "%s / store: %.2f×\n", k, a / b }'
done
log "kept $W"
