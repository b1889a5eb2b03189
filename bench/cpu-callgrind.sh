#!/usr/bin/env bash
# Instructions of the client per W1 cycle of one layer (see cpu-callgrind.ts), from a callgrind dump that holds the
# measured cycles alone. Usage: DATABASE_URL=... bench/cpu-callgrind.sh <layer> <cycles> <out-dir>
set -euo pipefail
layer=$1 cycles=$2 out=$3
mkdir -p "$out"
log="$out/$layer-$cycles.log"
valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out/$layer-$cycles.%p.out" \
  node build/bench/cpu-callgrind.js "$layer" "$cycles" >"$log" 2>&1 &
pid=$!
until grep -q "^ready" "$log"; do kill -0 "$pid" 2>/dev/null || { cat "$log"; exit 1; }; sleep 1; done
callgrind_control -z "$pid" >/dev/null
until grep -q '^done' "$log"; do sleep 1; done
callgrind_control -d "$pid" >/dev/null
wait "$pid"
# One file per thread (-01 is the main thread, the others V8's and libuv's helpers), of the dump at `done` (.1).
sum() { awk '/^(summary|totals):/ {print $2; exit}' "$@"; }
total=0
for f in "$out/$layer-$cycles".*.out.1-*; do total=$((total + $(sum "$f"))); done
main=$(sum "$out/$layer-$cycles".*.out.1-01)
echo "$layer: $((total / cycles)) instructions per cycle, $((main / cycles)) of them on the main thread ($cycles cycles)"
