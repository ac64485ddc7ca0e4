#!/usr/bin/env bash
# The lake benchmark (issue 15), written into benchmarks/RESULTS.md between
# the "lake" markers (run.sh keeps that section when it rewrites the file):
#
#   - export of the 20,000-run corpus's store to a new lake: time, and the
#     lake's size against the store's;
#   - an export with nothing new;
#   - report --lake over 10 runners x 2,000 runs (the same corpus, split),
#     against report on one store holding the same rows, whole and in a
#     window (--since): target at most 2x.
#
#   bash benchmarks/lake.sh              # N=7 repetitions of the fast commands
#   RUNS=2000 bash benchmarks/lake.sh    # a quick try on a smaller corpus
#
# It uses run.sh's corpus (benchmarks/corpus/runs), generating it the same
# way when it is missing. Needs go, jq, bash, coreutils, findutils.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
N=${N:-7}
N_SLOW=${N_SLOW:-3}
RUNS=${RUNS:-20000}
RUNNERS=${RUNNERS:-10}
SINCE=${SINCE:-2026-10-24}
RESULTS=${RESULTS:-benchmarks/RESULTS.md}
KEEP=${KEEP:-0}

W=$(mktemp -d "${TMPDIR:-/tmp}/orchstat-lake.XXXXXX")
cleanup() { if [[ $KEEP == 1 ]]; then echo "lake.sh: kept $W" >&2; else rm -rf "$W"; fi; }
trap cleanup EXIT
log() { echo "lake.sh: $*" >&2; }

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
go build -o "$W/orchstat" ./cmd/orchstat
go build -o "$W/bench" ./benchmarks/cmd/bench
go build -o "$W/gen" ./benchmarks/gen
O=$W/orchstat

CORPUS=$ROOT/benchmarks/corpus/runs
if [[ $RUNS != 20000 ]]; then
	CORPUS=$W/corpus
	"$W/gen" -out "$CORPUS" -runs "$RUNS" -seed 1 -chunks >/dev/null
elif [[ ! -d $CORPUS ]]; then
	log "generating $CORPUS"
	mkdir -p "$(dirname "$CORPUS")"
	"$W/gen" -out "$CORPUS" -runs 20000 -seed 1 -chunks >/dev/null
fi
n_runs=$(find "$CORPUS" -mindepth 1 -maxdepth 1 -type d | wc -l)
per=$(((n_runs + RUNNERS - 1) / RUNNERS))

log "one store of all $n_runs runs"
"$O" --db "$W/all.db" ingest --quiet "$CORPUS"

# The runners' folders hold hard links to the corpus's files: the same
# bytes, no copy.
log "$RUNNERS runners of $per runs each, exported to one lake"
find "$CORPUS" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort >"$W/runs.txt"
for ((i = 0; i < RUNNERS; i++)); do
	mkdir -p "$W/r$i"
	sed -n "$((i * per + 1)),$(((i + 1) * per))p" "$W/runs.txt" | while read -r d; do cp -al "$CORPUS/$d" "$W/r$i/"; done
	"$O" --db "$W/r$i.db" ingest --quiet "$W/r$i"
done
for ((i = 0; i < RUNNERS; i++)); do
	"$O" --db "$W/r$i.db" export --no-ingest --lake "$W/lake10" --runner "runner-$i" >/dev/null &
done
wait

# A first read starts the replica's build after it answers (docs/lake.md);
# the commands after it wait, untimed, for the build to end.
waitbuild="if [ -d $W/cold ]; then for i in \$(seq 1200); do ls $W/cold/orchstat/lake/replicas/*.duckdb >/dev/null 2>&1 && break; sleep 0.1; done; sleep 0.2; fi"
jq -n --arg O "$O" --arg W "$W" --arg S "$SINCE" --arg waitbuild "$waitbuild" --argjson slow "$N_SLOW" --argjson n "$N" '
{
  commands: [
    {name: "x-export", desc: "export the \($W)/all.db store to a new lake", n: $slow,
     before: "rm -rf \($W)/lake1 && cp \($W)/all.db \($W)/x.db",
     argv: [$O, "--db", "\($W)/x.db", "export", "--no-ingest", "--lake", "\($W)/lake1", "--runner", "all"]},
    {name: "x-again", desc: "export again, nothing new", n: $n,
     before: "test -d \($W)/lake1",
     argv: [$O, "--db", "\($W)/x.db", "export", "--no-ingest", "--lake", "\($W)/lake1", "--runner", "all"]},
    {name: "r-store", desc: "report --no-ingest --format json, one store", n: $n,
     stdout: "\($W)/store.json",
     argv: [$O, "--db", "\($W)/all.db", "report", "--no-ingest", "--format", "json"]},
    {name: "r-lake", desc: "report --lake --format json, the runners lake, its replica up to date", n: $n,
     stdout: "\($W)/lake.json",
     shell: "XDG_CACHE_HOME=\($W)/cache exec \($O) report --lake \($W)/lake10 --format json"},
    {name: "r-lake-cold", desc: "report --lake --format json, no replica yet (a first read, answered from the Parquet files)", n: $slow,
     before: "\($waitbuild); rm -rf \($W)/cold",
     shell: "XDG_CACHE_HOME=\($W)/cold exec \($O) report --lake \($W)/lake10 --format json"},
    {name: "r-store-since", desc: "report --since \($S), one store", n: $n,
     before: $waitbuild,
     stdout: "\($W)/store-since.json",
     argv: [$O, "--db", "\($W)/all.db", "report", "--no-ingest", "--since", $S, "--format", "json"]},
    {name: "r-lake-since", desc: "report --lake --since \($S), its replica up to date", n: $n,
     stdout: "\($W)/lake-since.json",
     shell: "XDG_CACHE_HOME=\($W)/cache exec \($O) report --lake \($W)/lake10 --since \($S) --format json"}
  ],
  targets: [
    {label: "report --lake ≤ 2 × report on one store", cmd: "r-lake", metric: "wall", ref: "r-store", factor: 2.0},
    {label: "report --lake, a first read, ≤ 2 × report on one store", cmd: "r-lake-cold", metric: "wall", ref: "r-store", factor: 2.0},
    {label: "report --lake --since ≤ 2 × the same on one store", cmd: "r-lake-since", metric: "wall", ref: "r-store-since", factor: 2.0}
  ]
}' >"$W/spec.json"

# The replica the warm reads use is made once, untimed.
XDG_CACHE_HOME=$W/cache "$O" lake-replica --lake "$W/lake10"
log "measuring"
"$W/bench" -interleave -spec "$W/spec.json" -md "$W/tables.md" -json "$W/results.json" >/dev/null

# The lake must say what the store says, or the timings mean nothing.
same() { diff <(jq -S 'del(.generated_at, .database)' "$1") <(jq -S 'del(.generated_at, .database)' "$2") >/dev/null; }
same "$W/store.json" "$W/lake.json" || { log "report --lake differs from the store's report"; exit 1; }
same "$W/store-since.json" "$W/lake-since.json" || { log "report --lake --since differs from the store's"; exit 1; }

du_b() { du -sb "$1" | cut -f1; }
store_bytes=$(du_b "$W/all.db")
lake1_bytes=$(du_b "$W/lake1")
lake1_files=$(find "$W/lake1" -name '*.parquet' | wc -l)
lake10_bytes=$(du_b "$W/lake10")
lake10_files=$(find "$W/lake10" -name '*.parquet' | wc -l)
med() { jq -r --arg n "$1" '.results[] | select(.name == $n) | .median_wall_s' "$W/results.json"; }
ratio() { awk -v a="$(med "$1")" -v b="$(med "$2")" 'BEGIN { printf "%.2f", a / b }'; }

section=$(
	echo "<!-- lake: written by benchmarks/lake.sh; run.sh keeps it -->"
	echo "## The lake (issue 15)"
	echo
	echo "Reproduce: \`bash benchmarks/lake.sh\` (from the repository root; about 10 minutes). Written on $(date -u +%Y-%m-%dT%H:%M:%SZ) from commit $commit, on the corpus above ($n_runs runs)."
	echo
	echo "- one store of every run: $store_bytes bytes; exported to a new lake: $lake1_bytes bytes in $lake1_files Parquet files ($(awk -v a="$lake1_bytes" -v b="$store_bytes" 'BEGIN { printf "%.2f", a / b }') × the store)"
	echo "- $RUNNERS runners of $per runs each, each with its own store, exported at once to one lake: $lake10_bytes bytes in $lake10_files files"
	echo "- report --lake over the $RUNNERS runners / report on the one store: **$(ratio r-lake r-store)×** whole and **$(ratio r-lake-since r-store-since)×** with --since $SINCE once the lake's replica is up to date (every read after the first, and reads after exports that changed a few partitions); **$(ratio r-lake-cold r-store)×** for a first read, which builds the replica. Their JSON is the same (checked)."
	echo
	sed -e "s|$W|\$W|g" "$W/tables.md"
	echo "<!-- /lake -->"
)
touch "$RESULTS"
awk -v section="$section" '
	/^<!-- lake:/ { skip = 1; print section; done = 1; next }
	/^<!-- \/lake -->/ { skip = 0; next }
	!skip { print }
	END { if (!done) { print ""; print section } }' "$RESULTS" >"$W/results.md"
cp "$W/results.md" "$RESULTS"
log "wrote the lake section of $RESULTS"
echo "$section"
