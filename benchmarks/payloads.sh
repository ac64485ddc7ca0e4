#!/usr/bin/env bash
# payloads.sh: issue 40's cold-ingest row. A first ingest of the same trace
# files by DuckDB's read_json (explicit columns), by orchstat built from
# BASE and by orchstat built from the working tree, round-robin, on two
# corpora: 5,000 runs whose provider requests carry prompts and outputs of
# PAYLOAD bytes each (gen -payload-bytes), and the same 5,000 runs without
# them. Prints every run (wall, user, sys seconds, peak RSS KB, the load
# average before each round) and the medians.
#
#   BASE=/tmp/orchstat-base bash benchmarks/payloads.sh        # a built binary
#   BASE=f4188b1 N=3 bash benchmarks/payloads.sh               # a revision
#
# The corpora are made once under $DIR (default /tmp/orchstat-payloads);
# each run's trace.jsonl is hard-linked into DIR/<corpus>/traces/<run>/,
# the layout readjson globs, and both read those same files.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BASE=${BASE:?set BASE to a binary or a revision}
N=${N:-3}
RUNS=${RUNS:-5000}
PAYLOAD=${PAYLOAD:-4000}
DIR=${DIR:-/tmp/orchstat-payloads}
mkdir -p "$DIR/bin"

go build -o "$DIR/bin/new" ./cmd/orchstat
go build -o "$DIR/bin/readjson" ./benchmarks/readjson
go build -o "$DIR/bin/gen" ./benchmarks/gen
if [[ -x $BASE ]]; then
	cp "$BASE" "$DIR/bin/base"
else
	W=$(mktemp -d "${TMPDIR:-/tmp}/orchstat-payloads.XXXXXX")
	trap 'git worktree remove --force "$W/src" >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
	git worktree add -q --detach "$W/src" "$BASE"
	(cd "$W/src" && go build -o "$DIR/bin/base" ./cmd/orchstat)
fi

for c in big small; do
	[[ -d $DIR/$c/traces ]] && continue
	flags=()
	[[ $c == big ]] && flags=(-payload-bytes "$PAYLOAD")
	"$DIR/bin/gen" -out "$DIR/$c/runs" -runs "$RUNS" "${flags[@]}"
	for d in "$DIR/$c/runs"/*/; do
		r=$(basename "$d")
		mkdir -p "$DIR/$c/traces/$r"
		ln "$d/trace.jsonl" "$DIR/$c/traces/$r/trace.jsonl"
	done
done

out=$DIR/runs.txt
: >"$out"
for round in $(seq "$N"); do
	for c in big small; do
		echo "load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out"
		/usr/bin/time -a -o "$out" -f "$c readjson $round %e %U %S %M" \
			"$DIR/bin/readjson" -dir "$DIR/$c/traces" -db "$DIR/rj.duckdb" -force -mode columns -quiet >/dev/null
		for b in base new; do
			rm -f "$DIR/s.duckdb" "$DIR/s.duckdb.wal"
			/usr/bin/time -a -o "$out" -f "$c $b $round %e %U %S %M" \
				"$DIR/bin/$b" ingest -q --db "$DIR/s.duckdb" "$DIR/$c/traces"
		done
	done
done
cat "$out"
echo
echo "| corpus | what | wall median | CPU (user+sys) median | peak RSS median | wall / read_json | CPU / read_json |"
echo "|---|---|---:|---:|---:|---:|---:|"
awk '$1 != "load" { w[$1" "$2] = w[$1" "$2] " " $4; u[$1" "$2] = u[$1" "$2] " " ($5 + $6); m[$1" "$2] = m[$1" "$2] " " $7 }
function med(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
	split("big small", cs, " "); split("readjson base new", ws, " ")
	for (i = 1; i <= 2; i++) for (k = 1; k <= 3; k++) {
		key = cs[i] " " ws[k]; rj = cs[i] " readjson"
		printf "| %s | %s | %.2f s | %.2f s | %d MB | %.2f | %.2f |\n", cs[i], ws[k], med(w[key]), med(u[key]), med(m[key]) / 1000, med(w[key]) / med(w[rj]), med(u[key]) / med(u[rj])
	}
}' "$out"
