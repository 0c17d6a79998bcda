#!/usr/bin/env bash
# The whole local run of `make bench-e2e` (the binary on prism in its own process, a Pub/Sub
# emulator, ClickHouse on loopback, MESSAGES demo messages, default 200,000), for this build's
# binary and BEFORE=<binary> one after the other in each of RUNS rounds (default 3): the CPU
# seconds of the binary's process per 100,000 messages and its peak memory, then min and median
# of each, and the ratio of the two builds in each round, min and median. A run whose peak
# memory passes 512 MiB fails, as in `make bench-e2e`.
#
#   BEFORE=/tmp/before/bin/pubsub-to-clickhouse scripts/e2e-vs-before.sh
#
# Run it on a machine doing nothing else: under load the same binary reads twice as high.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/e2e-vs-before.XXXXXX)
trap 'rm -rf "$work"' EXIT
source scripts/bench-lib.sh

: "${BEFORE:?set BEFORE to the binary of the build to compare with}"
runs=${RUNS:-3}
messages=${MESSAGES:-200000}
binaries=(bin/pubsub-to-clickhouse "$BEFORE")
names=(this before)
$go build -o "$work/demo" ./integration_test/demo

results=$work/results
for ((r = 1; r <= runs; r++)); do
  of=()
  for i in $(round_order "$r" "${#binaries[@]}"); do
    out=$("$work/demo" -binary "${binaries[$i]}" -messages "$messages" -max-rss-mib 512 2>&1) || {
      echo "$out" | tail -20 >&2
      exit 1
    }
    cpu=$(demo_cpu "$out")
    rss=$(echo "$out" | sed -n 's/.*(max RSS): \([0-9]*\) MiB.*/\1/p')
    echo "round $r ${names[$i]}: $cpu CPU-s per 100,000 messages, peak memory $rss MiB"
    echo "${names[$i]} cpu $cpu" >>"$results"
    echo "${names[$i]} rss $rss" >>"$results"
    of[$i]=$cpu
  done
  ratio_in_round "$results" "$r" "CPU" "${of[0]}" "${of[1]}"
done
echo
echo "The whole local run, $messages demo messages, min / median of $runs rounds:"
for n in "${names[@]}"; do
  printf '  %-7s %s CPU-s per 100,000 messages   peak memory %s MiB\n' "$n" \
    "$(min_slash_median "$results" "$n" cpu)" "$(min_slash_median "$results" "$n" rss)"
done
ratio_summary "$results" "CPU"
