#!/usr/bin/env bash
# The parse cost side by side: ClickHouse's own single-threaded JSONEachRow parse against the
# pipeline's converter (transforms/convert), on the same JSON-lines files, one message a line:
#   demo             the demo events of internal/events (seed 1), with the objects and arrays of
#                    String columns given as JSON strings, which ClickHouse 18.16 requires; the
#                    converter gives the same rows for both forms (TestCorpusFiles checks it);
#   wikipedia_edits  ../shared/data/wikipedia_edits.jsonl.
# Each corpus is written CORPUS_REPEAT times over (default 5: 50,000 and 91,010 messages).
#
# ClickHouse: clickhouse-client parses INSERT data itself (one thread) and sends the server
# Native blocks; the script inserts each file into a Null-engine table of the corpus' DDL and
# takes the client's CPU time (user + system) minus that of the same command on the file's first
# line (start-up, connection, the INSERT's round trips). The figure is therefore the client's
# reading and parse of the file plus its Native encoding and sending of the blocks. Settings:
# max_threads=1, date_time_input_format=best_effort (18.16's basic reading refuses the corpora's
# ISO-8601 times with fractions and zones), input_format_skip_unknown_fields=1 (a demo event may
# carry a field without a column). The server's columns must be those the converter is built
# from (TestCorpusFiles writes them; the script compares them with system.columns).
# The converter: TestConvertFileCPU converts each line of the same file once and reports the
# process's CPU time (getrusage: the conversions and the garbage collector) around the loop.
#
# RUNS rounds (default 7) alternate the two; the script prints rows per CPU-second of each and
# the ratio (per round), as the minimum and the median over the rounds. CPU time rather than wall
# time, so that other work on the machine matters less; a ratio from one run of this script is
# more trustworthy than two figures taken at different times.
#
# Usage: scripts/parse-vs-clickhouse.sh   (or make bench-parse)
# Environment: RUNS (7), CORPUS_REPEAT (5), CLICKHOUSE_HOST (127.0.0.1), CLICKHOUSE_TCP_PORT
# (9000), SHARED_DIR (where data/wikipedia_edits.* are; default ../shared), GO (go).
# Needs a ClickHouse server (scripts/clickhouse.sh start) and clickhouse-client; it creates and
# drops a database of its own.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RUNS:-7}
repeat=${CORPUS_REPEAT:-5}
db=parse_vs_clickhouse_$$
work=$(mktemp -d)
. scripts/bench-lib.sh
cleanup() {
  client --query "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "building the converter's test binary and writing the corpora ..." >&2
"$go" test -c -o "$work/convert.test" ./transforms/convert/
CORPUS_DIR=$work CORPUS_REPEAT=$repeat "$work/convert.test" -test.run '^TestCorpusFiles$' >/dev/null

client --query "CREATE DATABASE $db"
for c in demo wikipedia_edits; do
  # The corpus' own table (MergeTree: the DDL as it is), and a Null-engine table of its columns to
  # insert into, so that the server stores nothing.
  sed -e "s/{table}/$db.$c/" "$work/$c.sql" | grep -v '^--' | client --multiquery
  client --query "CREATE TABLE $db.${c}_null AS $db.$c ENGINE = Null"
  # The converter's table must be the server's.
  client --query "SELECT name, type, default_kind FROM system.columns WHERE database = '$db' AND table = '$c' FORMAT TabSeparatedRaw" >"$work/$c.server-columns"
  if ! diff "$work/$c.columns" "$work/$c.server-columns" >&2; then
    echo "the converter's columns of $c (<) are not the server's (>)" >&2
    exit 1
  fi
done
head -n 1 "$work/demo.clickhouse.jsonl" >"$work/demo.first.jsonl"
head -n 1 "$work/wikipedia_edits.jsonl" >"$work/wikipedia_edits.first.jsonl"

# clickhouse_cpu <corpus> <file>: CPU seconds of clickhouse-client inserting the file.
# date_time_input_format=best_effort: both corpora's times are ISO 8601 with fractions and zones.
clickhouse_cpu() {
  cpu_of "$2" client --max_threads=1 --date_time_input_format=best_effort \
    --input_format_skip_unknown_fields=1 --query "INSERT INTO $db.${1}_null FORMAT JSONEachRow"
}

# product_cpu <corpus> <file>: CPU seconds of the converter over the file.
product_cpu() {
  local out
  out=$(CONVERT_CORPUS=$1 CONVERT_FILE=$2 "$work/convert.test" -test.run '^TestConvertFileCPU$') || {
    echo "$out" >&2
    exit 1
  }
  sed -n 's/^rows=[0-9]* cpu_seconds=\([0-9.]*\)$/\1/p' <<<"$out"
}

rows() { wc -l <"$1" | tr -d ' '; }

results=$work/results # lines: corpus metric value
for r in $(seq 1 "$runs"); do
  for c in demo wikipedia_edits; do
    file=$work/$c.jsonl
    [ "$c" = demo ] && file=$work/demo.clickhouse.jsonl
    n=$(rows "$file")
    full=$(clickhouse_cpu "$c" "$file")
    base=$(clickhouse_cpu "$c" "$work/$c.first.jsonl")
    mine=$(product_cpu "$c" "$file")
    awk -v c="$c" -v n="$n" -v full="$full" -v base="$base" -v mine="$mine" -v r="$r/$runs" 'BEGIN {
      if (full <= base || mine <= 0) { printf "round %s, %s: no CPU time to compare (%s - %s s, %s s)\n", r, c, full, base, mine > "/dev/stderr"; exit 1 }
      ch = (n - 1) / (full - base); p = n / mine
      printf "%s clickhouse %.0f\n%s product %.0f\n%s ratio %.3f\n", c, ch, c, p, c, p / ch
      printf "round %s, %s: ClickHouse %.3f - %.3f CPU-s, %.0f rows/CPU-s; converter %.3f CPU-s, %.0f rows/CPU-s; ratio %.2f\n", r, c, full, base, ch, mine, p, p / ch > "/dev/stderr"
    }' >>"$results"
    if [ "$c" = demo ]; then # the events as the pipeline receives them, for information
      mine=$(product_cpu demo "$work/demo.jsonl")
      awk -v n="$n" -v mine="$mine" 'BEGIN { printf "demo product-objects %.0f\n", n / mine }' >>"$results"
    fi
  done
done

stat() { min_median "$results" "$@"; }

printf '\nrows per CPU-second, min / median of %d rounds (ClickHouse %s: clickhouse-client, max_threads=1)\n' \
  "$runs" "$(client --query 'SELECT version()')"
printf '%-16s %8s   %-21s %-21s %s\n' corpus messages ClickHouse converter ratio
for c in demo wikipedia_edits; do
  file=$work/$c.jsonl
  [ "$c" = demo ] && file=$work/demo.clickhouse.jsonl
  read -r chmin chmed <<<"$(stat "$c" clickhouse)"
  read -r pmin pmed <<<"$(stat "$c" product)"
  read -r rmin rmed <<<"$(stat "$c" ratio)"
  printf '%-16s %8d   %9.0f / %-9.0f %9.0f / %-9.0f %.2f / %.2f\n' "$c" "$(rows "$file")" \
    "$chmin" "$chmed" "$pmin" "$pmed" "$rmin" "$rmed"
done
read -r omin omed <<<"$(stat demo product-objects)"
printf 'the converter on the demo events with their objects and arrays as such (as the pipeline receives them; 18.16 refuses them): %.0f / %.0f\n' \
  "$omin" "$omed"
