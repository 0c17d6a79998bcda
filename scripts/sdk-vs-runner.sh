#!/usr/bin/env bash
# The SDK side of the cost per message, apart from the runner's: Beam's prism runs as its own
# process and the pipeline's binary submits to it (--runner=universal, LOOPBACK), so the binary's
# process holds the SDK harness and the product's code, which is what a Dataflow worker runs.
# For each of RUNS rounds (default 3), for this build's binary and, with BEFORE=<binary>, that
# binary beside it in the same round: the demo of MESSAGES messages (default 100,000), the CPU
# seconds of the binary's process and of prism's, per 100,000 messages; then min and median, and
# with BEFORE the ratio of the two builds' binary processes in each round, min and median.
#
#   scripts/sdk-vs-runner.sh                         # bin/pubsub-to-clickhouse alone
#   BEFORE=/tmp/before/bin/pubsub-to-clickhouse scripts/sdk-vs-runner.sh
#
# FLAGS adds pipeline flags to this build's runs, BEFORE_FLAGS to the before build's; so one
# binary with two settings side by side:
#
#   BEFORE=bin/pubsub-to-clickhouse BEFORE_FLAGS=--shuffleCompression=zstd scripts/sdk-vs-runner.sh
#
# BASELINE=<messages> (e.g. 5000) also runs the demo with that many messages in each round, and
# splits the figure into what a run costs once (starting, submitting the job, the idle wait of
# stopAfterIdle) and what each message costs beyond it: per message, (CPU(MESSAGES) -
# CPU(BASELINE)) / (MESSAGES - BASELINE), given per 100,000. A Dataflow worker starts once and
# runs for days, so the per-message figure is the one its bill grows with.
#
# Run it on a machine doing nothing else: under load the same binary reads twice as high.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/sdk-vs-runner.XXXXXX)
trap 'kill_prism; rm -rf "$work"' EXIT
source scripts/bench-lib.sh

runs=${RUNS:-3}
messages=${MESSAGES:-100000}
port=${PRISM_PORT:-8073}
binaries=(bin/pubsub-to-clickhouse)
names=(this)
extra=("${FLAGS:-}")
if [ -n "${BEFORE:-}" ]; then
  binaries+=("$BEFORE")
  names+=(before)
  extra+=("${BEFORE_FLAGS:-}")
fi
$go build -o bin/prism github.com/apache/beam/sdks/v2/go/cmd/prism
$go build -o "$work/demo" ./integration_test/demo

# ticks <pid>: the process's user + system CPU, in clock ticks.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
baseline=${BASELINE:-}
if [ -n "$baseline" ] && [ "$baseline" -ge "$messages" ]; then
  echo "BASELINE ($baseline) must be fewer messages than MESSAGES ($messages)" >&2
  exit 1
fi

# demo_run <binary> <messages> <extra flags>: runs the demo against prism at $port, prints its output.
demo_run() {
  "$work/demo" -binary "$1" -messages "$2" \
    -pipeline-flags "--batchRowCount=5000 --windowSeconds=5 --runner=universal --endpoint=localhost:$port --environment_type=LOOPBACK $3" 2>&1
}
# process_cpu <output of the demo>: the pipeline process's CPU-seconds, as the demo printed them.
process_cpu() { echo "$1" | sed -n 's/^pipeline process CPU: \([0-9.]*\) s.*/\1/p'; }

results=$work/results
for ((r = 1; r <= runs; r++)); do
  of=()
  for i in $(round_order "$r" "${#binaries[@]}"); do
    start_prism "$port"
    before=$(ticks "$prism")
    out=$(demo_run "${binaries[$i]}" "$messages" "${extra[$i]}") || {
      echo "$out" | tail -20 >&2
      kill "$prism"
      exit 1
    }
    after=$(ticks "$prism")
    if [ -n "$baseline" ]; then
      small=$(demo_run "${binaries[$i]}" "$baseline" "${extra[$i]}") || {
        echo "$small" | tail -20 >&2
        kill "$prism"
        exit 1
      }
      read -r fixed per < <(awk -v a="$(process_cpu "$small")" -v b="$(process_cpu "$out")" -v m="$baseline" -v n="$messages" \
        'BEGIN { per = (b - a) / (n - m); printf "%.2f %.2f\n", a - per * m, per * 100000 }')
      echo "round $r ${names[$i]}: per message beyond the first $baseline $per CPU-s per 100,000, once per run $fixed CPU-s"
      echo "${names[$i]} per $per" >>"$results"
      echo "${names[$i]} fixed $fixed" >>"$results"
    fi
    kill "$prism"
    wait "$prism" 2>/dev/null || true
    rm -f "$work/prism.pid"
    sdk=$(demo_cpu "$out")
    runner=$(awk -v t=$((after - before)) -v hz="$hz" -v n="$messages" 'BEGIN { printf "%.2f", t / hz * 100000 / n }')
    echo "round $r ${names[$i]}: binary $sdk, prism $runner CPU-s per 100,000 messages"
    echo "${names[$i]} binary $sdk" >>"$results"
    echo "${names[$i]} prism $runner" >>"$results"
    of[$i]=$sdk
  done
  if [ "${#binaries[@]}" = 2 ]; then ratio_in_round "$results" "$r" "the binary's process" "${of[0]}" "${of[1]}"; fi
done
echo
echo "CPU-seconds per 100,000 demo messages, min / median of $runs rounds:"
for n in "${names[@]}"; do
  printf '  %-7s the binary (SDK harness and pipeline) %s   prism %s\n' "$n" \
    "$(min_slash_median "$results" "$n" binary)" "$(min_slash_median "$results" "$n" prism)"
done
if [ -n "$baseline" ]; then
  echo "The binary's process, split (from the runs of $messages and of $baseline messages), min / median:"
  for n in "${names[@]}"; do
    printf '  %-7s per message %s CPU-s per 100,000   once per run %s CPU-s\n' "$n" \
      "$(min_slash_median "$results" "$n" per)" "$(min_slash_median "$results" "$n" fixed)"
  done
fi
if [ -n "${BEFORE:-}" ]; then
  # The machine's speed drifts between rounds and within a run; the ratio of the two builds in
  # the same round is the figure that compares.
  ratio_summary "$results" "the binary's process"
fi
