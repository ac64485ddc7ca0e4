#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 60s), one
# after another, as a nightly job would; not part of CI. Crashers are saved
# by `go test` under the package's testdata/fuzz/<Target>/, where the normal
# `go test ./...` replays them from then on: commit them with the fix.
#
#   bash benchmarks/fuzz.sh                  # every target, 60 s each
#   FUZZTIME=10s bash benchmarks/fuzz.sh     # a quick pass
#   bash benchmarks/fuzz.sh ./ingest/...     # only these packages
#
# Exits 1 if any target failed, after running all of them, and prints a
# summary line per target.
set -uo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-60s}
pkgs=("$@")
[ ${#pkgs[@]} -eq 0 ] && pkgs=(./...)

failed=0
summary=()
# go list prints each package's directory and the test files that hold the
# fuzz targets are found with grep, so a target added anywhere is picked up.
while read -r pkg dir; do
	targets=$(grep -h -o '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u)
	for target in $targets; do
		echo "=== $pkg $target ($fuzztime)"
		go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" 2>&1 | tail -20
		status=${PIPESTATUS[0]}
		if [ "$status" -eq 0 ]; then
			summary+=("ok    $pkg $target")
		else
			summary+=("FAIL  $pkg $target")
			failed=1
		fi
	done
done < <(go list -f '{{.ImportPath}} {{.Dir}}' "${pkgs[@]}")

echo
printf '%s\n' "${summary[@]}"
exit $failed
