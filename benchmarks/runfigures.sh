#!/usr/bin/env bash
# Issue 40, row 2: `report --no-ingest` reading the per-run figures kept at
# ingest, against a baseline binary that reads the event tables, on one
# corpus, interleaved: each binary's first ingest into a fresh store of its
# own (wall, CPU, peak RSS), ROUNDS times in turn, then `report --no-ingest`
# as JSON and as a table, REPORTS times in turn. Medians are printed with
# the load average, since other work shares the machine.
#
#   bash benchmarks/runfigures.sh BASE_BIN NEW_BIN RUNS_DIR [OUT_DIR]
#   ROUNDS=1 REPORTS=7 (defaults); ROUNDS=0 reuses OUT_DIR's stores
set -euo pipefail
base=$1 new=$2 runs=$3 out=${4:-$(mktemp -d /tmp/runfigures-bench.XXXX)}
rounds=${ROUNDS:-1} reports=${REPORTS:-7}
export ORCHSTAT_NO_SUPERVISOR=1
mkdir -p "$out"
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
	for v in base new; do
		bin=$base; [ $v = new ] && bin=$new
		rm -f "$out/$v.duckdb" "$out/$v.duckdb.wal"
		/usr/bin/time -f "%e %U %S %M" -o "$out/ingest.$v.$r" "$bin" --db "$out/$v.duckdb" ingest -q "$runs"
		echo "ingest $v round $r: $(awk '{printf "%s s wall, %s s user, %s s sys, %.0f MB peak RSS", $1, $2, $3, $4/1024}' "$out/ingest.$v.$r") (load $(cut -d' ' -f1 /proc/loadavg))"
	done
done
rm -f "$out"/report.*.times
for r in $(seq "$reports"); do
	for v in base new; do
		bin=$base; [ $v = new ] && bin=$new
		for f in json table; do
			/usr/bin/time -f "%e %U" -o "$out/t" "$bin" --db "$out/$v.duckdb" report --no-ingest --format $f > "$out/report.$v.$f"
			cat "$out/t" >> "$out/report.$v.$f.times"
		done
	done
done
for f in json table; do
	for v in base new; do
		echo "report --no-ingest --format $f $v: median $(cut -d' ' -f1 "$out/report.$v.$f.times" | median) s wall, $(cut -d' ' -f2 "$out/report.$v.$f.times" | median) s user over $reports runs (all: $(cut -d' ' -f1 "$out/report.$v.$f.times" | tr '\n' ' '))"
	done
done
# The two reports must agree but for the store's path and the clock.
strip() { grep -v '"generated_at"\|"until"\|"at"\|"database"' "$1"; }
if diff <(strip "$out/report.base.json") <(strip "$out/report.new.json") > /dev/null; then
	echo "reports agree (JSON, but for the store's path and the clock)"
else
	echo "REPORTS DIFFER: diff $out/report.base.json $out/report.new.json"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
