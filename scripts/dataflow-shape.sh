#!/usr/bin/env bash
# The SDK side's CPU per message in the shape Dataflow gives it (one element per message, a
# serialized PubsubMessage handed over by the runner), beside the local runner's shape (one element
# per Pull response, the demo as `make bench-sdk` runs it). prism runs as its own process, so that
# each measured process holds the SDK side alone. For each of RUNS rounds (default 3), with
# MESSAGES demo messages (default 100,000):
#
#   raw     integration_test/dataflowshape -until=raw: the runner's part played in this process
#           (emitting the serialized messages, made before the run) and the handover, nothing after
#   all     the same with every stage after the handover (pubsubio's unmarshal, FromPubsub, parse,
#           batch, write, dead letters)
#   local   the demo on the binary (its own source: Pulls, one element per response)
#
# and prints all - raw (the stages after the handover, what a Dataflow worker's SDK process runs
# for each message) beside local, per 100,000 messages, min and median.
#
# SHUFFLE_COMPRESSION=zstd runs both shapes with --shuffleCompression=zstd (default: minlz).
#
# Run it on a machine doing nothing else: under load the same binary reads twice as high.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/dataflow-shape.XXXXXX)
trap 'kill_prism; rm -rf "$work"' EXIT
source scripts/bench-lib.sh

runs=${RUNS:-3}
messages=${MESSAGES:-100000}
jobport=${PRISM_PORT:-8073}
$go build -o bin/prism github.com/apache/beam/sdks/v2/go/cmd/prism
$go build -o "$work/shape" ./integration_test/dataflowshape
$go build -o "$work/demo" ./integration_test/demo
beamflags="--runner=universal --endpoint=localhost:$jobport --environment_type=LOOPBACK"
shuffle=${SHUFFLE_COMPRESSION:-minlz}

# with_prism <command...>: runs the command with a fresh prism on $jobport, printing its output.
with_prism() {
  local prism out
  start_prism "$jobport"
  if ! out=$("$@" 2>&1); then
    echo "$out" | tail -20 >&2
    kill "$prism"
    exit 1
  fi
  kill "$prism"
  wait "$prism" 2>/dev/null || true
  rm -f "$work/prism.pid"
  echo "$out"
}

results=$work/results
for ((r = 1; r <= runs; r++)); do
  for until in raw all; do
    # shellcheck disable=SC2086
    out=$(with_prism "$work/shape" -messages "$messages" -until="$until" -shuffle-compression="$shuffle" $beamflags)
    v=$(echo "$out" | sed -n 's/^until=[a-z]*: \([0-9.]*\) CPU-seconds.*/\1/p')
    echo "$until $v" >>"$results"
    eval "cpu_$until=$v"
  done
  after=$(awk -v a="$cpu_all" -v b="$cpu_raw" 'BEGIN { printf "%.2f", a - b }')
  echo "after $after" >>"$results"
  out=$(with_prism "$work/demo" -messages "$messages" -pipeline-flags "--batchRowCount=5000 --windowSeconds=5 --shuffleCompression=$shuffle $beamflags")
  local_cpu=$(demo_cpu "$out")
  echo "local $local_cpu" >>"$results"
  echo "round $r: raw $cpu_raw, all $cpu_all, after the handover $after; local shape $local_cpu CPU-s per 100,000 messages"
done
echo
echo "CPU-seconds per 100,000 demo messages, min / median of $runs rounds:"
for n in raw all after local; do
  read -r vmin vmed < <(min_median "$results" "$n")
  case $n in
    raw) what="Dataflow shape, emitting the messages and the handover only" ;;
    all) what="Dataflow shape, the whole process" ;;
    after) what="Dataflow shape, the stages after the handover (all - raw)" ;;
    local) what="local shape, the binary's process (the demo)" ;;
  esac
  printf '  %-60s %s / %s\n' "$what" "$vmin" "$vmed"
done
