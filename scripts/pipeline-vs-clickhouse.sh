#!/usr/bin/env bash
# The whole pipeline's cost beside ClickHouse's own JSON parse, on the same corpus:
# ../shared/data/wikipedia_edits.jsonl written CORPUS_REPEAT times over (default 5: 91,010
# messages), into its own table (wikipedia_edits.sql).
#
# The pipeline: the demo harness (integration_test/demo) starts a Pub/Sub emulator in its own
# process, publishes the file's lines while the product's binary (bin/pubsub-to-clickhouse, on
# the local runner, with --batchRowCount=5000 --windowSeconds=5 and the 5 s stopAfterIdle) reads,
# converts and inserts them, and reports the pipeline process's CPU time (user + system), which
# includes the runner, the Pub/Sub client and the INSERTs, and the idle wait before it stops.
# ClickHouse: clickhouse-client --max_threads=1 inserting the same file as JSONEachRow into a
# Null-engine table of the same columns (the client parses the data itself, in one thread), minus
# the same command on the file's first line, as in scripts/parse-vs-clickhouse.sh.
#
# RUNS rounds (default 3) alternate the two; the script prints CPU-seconds per 100,000 messages of
# each and their ratio, per round and as the minimum and median over the rounds. CPU time rather
# than wall time, so that other work on the machine matters less; compare the figures of one run.
#
# With OWN_RUNNER=1 (make bench-sdk), prism runs as its own process each round and the binary
# submits to it (--runner=universal, LOOPBACK), so the pipeline's figure is the binary's process
# alone: the SDK harness and the product's code, what a Dataflow worker runs. BEFORE=<binary>
# puts another build beside it in the same rounds.
#
# ClickHouse's figure leaves out what its command costs once (the same command on one line is
# subtracted); the pipeline's includes what a run of it costs once (starting, submitting the job,
# the idle wait of stopAfterIdle). BASELINE=<lines> (e.g. 5000) also runs the pipeline on the
# corpus's first BASELINE lines in each round and prints, beside the whole figure, the pipeline's
# cost per message beyond them, (CPU(all) - CPU(BASELINE lines)) / (messages - BASELINE), and its
# ratio to ClickHouse's: the two figures then leave out the same thing.
#
# Usage: scripts/pipeline-vs-clickhouse.sh   (or make bench-e2e-clickhouse)
# Environment: RUNS (3), CORPUS_REPEAT (5), OWN_RUNNER, PRISM_PORT (8073), BEFORE, BASELINE, CLICKHOUSE_HOST (127.0.0.1), CLICKHOUSE_TCP_PORT
# (9000), CLICKHOUSE_HTTP_PORT (8123), SHARED_DIR (../shared), BINARY (bin/pubsub-to-clickhouse,
# built by make build), GO (go). Needs a ClickHouse server (scripts/clickhouse.sh start) and
# clickhouse-client; it creates and drops databases of its own.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RUNS:-3}
repeat=${CORPUS_REPEAT:-5}
http_port=${CLICKHOUSE_HTTP_PORT:-8123}
shared=${SHARED_DIR:-../shared}
binary=${BINARY:-bin/pubsub-to-clickhouse}
db=pipeline_vs_clickhouse_$$
work=$(mktemp -d)
. scripts/bench-lib.sh
cleanup() {
  client --query "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
  client --query "DROP DATABASE IF EXISTS ${db}_pipeline" >/dev/null 2>&1 || true
  kill_prism
  rm -rf "$work"
}
trap cleanup EXIT

[ -x "$binary" ] || { echo "no $binary: run make build" >&2; exit 1; }
binaries=("$binary")
names=(pipeline)
if [ -n "${BEFORE:-}" ]; then
  binaries+=("$BEFORE")
  names+=(before)
fi
prism_port=${PRISM_PORT:-8073}
runner_flags=
echo "building the demo harness and writing the corpus ..." >&2
"$go" build -o "$work/demo" ./integration_test/demo
if [ -n "${OWN_RUNNER:-}" ]; then
  "$go" build -o bin/prism github.com/apache/beam/sdks/v2/go/cmd/prism
  runner_flags="--runner=universal --endpoint=localhost:$prism_port --environment_type=LOOPBACK"
fi
for _ in $(seq 1 "$repeat"); do cat "$shared/data/wikipedia_edits.jsonl"; done >"$work/corpus.jsonl"
head -n 1 "$work/corpus.jsonl" >"$work/first.jsonl"
n=$(wc -l <"$work/corpus.jsonl" | tr -d ' ')
baseline=${BASELINE:-}
if [ -n "$baseline" ]; then
  if [ "$baseline" -ge "$n" ]; then
    echo "BASELINE ($baseline) must be fewer lines than the corpus ($n)" >&2
    exit 1
  fi
  head -n "$baseline" "$work/corpus.jsonl" >"$work/baseline.jsonl"
fi

client --query "CREATE DATABASE $db"
sed -e "s/{table}/$db.wikipedia_edits/" "$shared/data/wikipedia_edits.sql" | grep -v '^--' | client --multiquery
client --query "CREATE TABLE $db.wikipedia_edits_null AS $db.wikipedia_edits ENGINE = Null"

# clickhouse_cpu <file>: CPU seconds of clickhouse-client inserting the file.
clickhouse_cpu() {
  cpu_of "$1" client --max_threads=1 --date_time_input_format=best_effort \
    --query "INSERT INTO $db.wikipedia_edits_null FORMAT JSONEachRow"
}

# pipeline_cpu <binary> [corpus]: CPU seconds of the pipeline process over the corpus (the demo
# harness checks that every message became a row or a dead letter); with OWN_RUNNER, prism runs
# beside it.
pipeline_cpu() {
  local out prism=
  if [ -n "$runner_flags" ]; then
    start_prism "$prism_port"
  fi
  if ! out=$("$work/demo" -binary "$1" -corpus "${2:-$work/corpus.jsonl}" -ddl "$shared/data/wikipedia_edits.sql" \
    -database "${db}_pipeline" -clickhouse "clickhouse://$host:$port" -clickhouse-http "http://$host:$http_port" \
    -pipeline-flags "--batchRowCount=5000 --windowSeconds=5 $runner_flags" 2>&1); then
    echo "$out" | tail -30 >&2
    [ -z "$prism" ] || kill "$prism"
    exit 1
  fi
  if [ -n "$prism" ]; then
    kill "$prism"
    wait "$prism" 2>/dev/null || true
    rm -f "$work/prism.pid"
  fi
  sed -n 's/^pipeline process CPU: \([0-9.]*\) s.*/\1/p' <<<"$out"
}

results=$work/results
for r in $(seq 1 "$runs"); do
  full=$(clickhouse_cpu "$work/corpus.jsonl")
  base=$(clickhouse_cpu "$work/first.jsonl")
  for i in $(round_order "$r" "${#binaries[@]}"); do
    mine=$(pipeline_cpu "${binaries[$i]}")
    awk -v n="$n" -v full="$full" -v base="$base" -v mine="$mine" -v r="$r/$runs" -v name="${names[$i]}" 'BEGIN {
      if (full <= base || mine <= 0) { printf "round %s: no CPU time to compare (%s - %s s, %s s)\n", r, full, base, mine > "/dev/stderr"; exit 1 }
      ch = (full - base) * 100000 / (n - 1); p = mine * 100000 / n
      if (name == "pipeline") printf "clickhouse %.3f\n", ch
      printf "%s %.3f\n%s ratio %.2f\n", name, p, name, p / ch
      printf "round %s: ClickHouse %.3f - %.3f CPU-s (%.3f per 100k); %s %.1f CPU-s (%.2f per 100k); ratio %.1f\n", r, full, base, ch, name, mine, p, p / ch > "/dev/stderr"
    }' >>"$results"
    if [ -n "$baseline" ]; then
      small=$(pipeline_cpu "${binaries[$i]}" "$work/baseline.jsonl")
      awk -v n="$n" -v m="$baseline" -v full="$full" -v base="$base" -v mine="$mine" -v small="$small" -v r="$r/$runs" -v name="${names[$i]}" 'BEGIN {
        ch = (full - base) * 100000 / (n - 1); per = (mine - small) * 100000 / (n - m)
        printf "%s per %.3f\n%s per-ratio %.2f\n", name, per, name, per / ch
        printf "round %s: %s per message beyond the first %d: %.2f per 100k (%.1f CPU-s for them); ratio %.1f\n", r, name, m, per, small, per / ch > "/dev/stderr"
      }' >>"$results"
    fi
  done
done

stat() { min_median "$results" "$@"; }
printf '\nwikipedia_edits x%d (%d messages), CPU-seconds per 100,000 messages, min / median of %d rounds (ClickHouse %s)\n' \
  "$repeat" "$n" "$runs" "$(client --query 'SELECT version()')"
read -r a b <<<"$(stat clickhouse)"; printf '%-58s %7.3f / %.3f\n' "ClickHouse JSONEachRow parse (clickhouse-client, 1 thread)" "$a" "$b"
what="the pipeline process (local runner, emulator, INSERTs)"
[ -z "$runner_flags" ] || what="the binary's process (SDK harness and pipeline; prism apart)"
for name in "${names[@]}"; do
  label=$what
  [ "$name" = pipeline ] || label="  the same, $BEFORE"
  read -r a b <<<"$(stat "$name")"; printf '%-58s %7.2f / %.2f\n' "$label" "$a" "$b"
  read -r a b <<<"$(stat "$name" ratio)"; printf '%-58s %7.1f / %.1f\n' "  ratio to ClickHouse" "$a" "$b"
  if [ -n "$baseline" ]; then
    read -r a b <<<"$(stat "$name" per)"; printf '%-58s %7.2f / %.2f\n' "  per message beyond the first $baseline" "$a" "$b"
    read -r a b <<<"$(stat "$name" per-ratio)"; printf '%-58s %7.1f / %.1f\n' "  its ratio to ClickHouse" "$a" "$b"
  fi
done
