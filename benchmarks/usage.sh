#!/usr/bin/env bash
# usage.sh: the agents' views (issue 40, row 1). Builds stores of
# generated Claude Code transcripts (benchmarks/cmd/callgen: 92,000 and
# 1,000,000 calls, each with the DST edges) and measures, interleaved in
# each round, `report --no-ingest --by VIEW --timezone Europe/Berlin` of an
# old orchstat (OLD, default the main head's build), of this tree's, and the
# bare `orchstat sql` query over priced_calls that makes the same sums
# (no copies left out, no scope, no order: the floor). Prints one
# Markdown table of medians (wall and CPU) and checks that old and new
# print the same JSON.
#
#   OLD=/tmp/orchstat-base ROUNDS=5 CALLS="92000 1000000" bash benchmarks/usage.sh
#
# Knobs: OLD, ROUNDS (5), CALLS, VIEWS ("day week month model"), WORK (a
# scratch folder, default /tmp/usage-bench; its corpora and stores are
# reused when present), TZNAME (Europe/Berlin).
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=${OLD:-/tmp/orchstat-base}
ROUNDS=${ROUNDS:-5}
CALLS=${CALLS:-"92000 1000000"}
VIEWS=${VIEWS:-"day week month model"}
WORK=${WORK:-/tmp/usage-bench}
TZNAME=${TZNAME:-Europe/Berlin}
mkdir -p "$WORK"
NEW=$WORK/orchstat
go build -o "$NEW" ./cmd/orchstat
go build -o "$WORK/callgen" ./benchmarks/cmd/callgen

# bare VIEW: the same sums over priced_calls in one query.
bare() {
  local key
  case $1 in
    day) key="strftime(timezone('$TZNAME', timezone('UTC', ts)), '%Y-%m-%d')" ;;
    week) key="strftime(date_trunc('week', timezone('$TZNAME', timezone('UTC', ts))), '%Y-%m-%d')" ;;
    month) key="strftime(timezone('$TZNAME', timezone('UTC', ts)), '%Y-%m')" ;;
    model) key="model" ;;
  esac
  cat <<EOF
SELECT $key AS key, provider, model,
  count(*), min(ts), max(ts), count(*) FILTER (WHERE success = false),
  count(attempts), sum(attempts), count(*) FILTER (WHERE attempts > 1),
  sum(input_tokens), sum(cache_read_tokens), sum(cache_write_tokens), sum(output_tokens), sum(reasoning_tokens),
  sum(cost_usd), count(*) FILTER (WHERE cost_source = 'record'), count(*) FILTER (WHERE cost_source = 'price'),
  count(*) FILTER (WHERE no_price), sum(failed_cost_usd)
FROM priced_calls GROUP BY ALL ORDER BY ALL
EOF
}

# timed FILE CMD...: appends "wall cpu" to FILE.
timed() {
  local out=$1
  shift
  /usr/bin/time -f "%e %U %S" -o "$WORK/t" "$@" >/dev/null
  awk '{printf "%s %.2f\n", $1, $2 + $3}' "$WORK/t" >>"$out"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

echo "| calls | view | old wall | new wall | bare wall | new / bare | new / old | old CPU | new CPU | bare CPU |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for n in $CALLS; do
  corpus=$WORK/c$n store=$WORK/s$n.duckdb
  [ -d "$corpus" ] || "$WORK/callgen" -out "$corpus" -calls "$n" >&2
  [ -f "$store" ] || "$NEW" --db "$store" ingest -q "$corpus" >&2
  for v in $VIEWS; do
    bare "$v" >"$WORK/bare-$v.sql"
    "$OLD" --db "$store" report --no-ingest --by "$v" --timezone "$TZNAME" --format json | grep -v generated_at >"$WORK/old.json"
    "$NEW" --db "$store" report --no-ingest --by "$v" --timezone "$TZNAME" --format json | grep -v generated_at >"$WORK/new.json"
    cmp -s "$WORK/old.json" "$WORK/new.json" || { echo "usage.sh: --by $v at $n calls: old and new JSON differ" >&2; exit 1; }
    rm -f "$WORK"/{old,new,bare}.times
    for _ in $(seq "$ROUNDS"); do
      timed "$WORK/old.times" "$OLD" --db "$store" report --no-ingest --by "$v" --timezone "$TZNAME"
      timed "$WORK/new.times" "$NEW" --db "$store" report --no-ingest --by "$v" --timezone "$TZNAME"
      timed "$WORK/bare.times" "$NEW" --db "$store" sql --file "$WORK/bare-$v.sql"
    done
    for w in old new bare; do
      eval "${w}_wall=$(cut -d' ' -f1 "$WORK/$w.times" | median)"
      eval "${w}_cpu=$(cut -d' ' -f2 "$WORK/$w.times" | median)"
    done
    # shellcheck disable=SC2154
    awk -v n="$n" -v v="$v" -v ow="$old_wall" -v nw="$new_wall" -v bw="$bare_wall" -v oc="$old_cpu" -v nc="$new_cpu" -v bc="$bare_cpu" \
      'BEGIN {printf "| %d | %s | %.2f s | %.2f s | %.2f s | %.2f | %.2f | %.2f s | %.2f s | %.2f s |\n", n, v, ow, nw, bw, nw / bw, nw / ow, oc, nc, bc}'
  done
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
