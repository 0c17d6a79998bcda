# Shared by the side-by-side scripts (parse-vs-clickhouse.sh, pipeline-vs-clickhouse.sh,
# sdk-vs-runner.sh, e2e-vs-before.sh); sourced, not run. Expects $work (a scratch directory) to be
# set by the script.
host=${CLICKHOUSE_HOST:-127.0.0.1}
port=${CLICKHOUSE_TCP_PORT:-9000}
go=${GO:-go}

# kill_prism: stops the prism whose pid $work/prism.pid holds, for the scripts' EXIT traps: started in
# the background, prism ignores SIGINT, so Ctrl-C left it running and holding the job port.
kill_prism() {
  if [ -f "$work/prism.pid" ]; then kill "$(cat "$work/prism.pid")" 2>/dev/null || true; fi
}

# start_prism <job port>: starts bin/prism in the background on the port, its pid in $prism and in
# $work/prism.pid, its log in $work/prism.log, and returns once it accepts connections there. It
# stops the script when something else holds the port (the runs would go to that runner, and its
# CPU would be measured as none of prism's) or when prism exits or does not listen within 10 s.
start_prism() {
  local p=$1 i
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    echo "something already listens on 127.0.0.1:$p (a prism left running?): stop it, or set PRISM_PORT to a free port" >&2
    exit 1
  fi
  bin/prism -job_port "$p" -serve_http=false >"$work/prism.log" 2>&1 &
  prism=$!
  echo "$prism" >"$work/prism.pid"
  for ((i = 0; i < 100; i++)); do
    if ! kill -0 "$prism" 2>/dev/null; then
      echo "prism exited at start; its log:" >&2
      cat "$work/prism.log" >&2
      exit 1
    fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "prism does not listen on 127.0.0.1:$p after 10 s; its log:" >&2
  cat "$work/prism.log" >&2
  exit 1
}

client() { clickhouse-client --host "$host" --port "$port" "$@"; }

# cpu_of <stdin file> <command...>: prints the command's user + system CPU seconds.
cpu_of() {
  local in=$1 t
  shift
  local TIMEFORMAT='%3U %3S'
  if ! t=$( { time "$@" <"$in" >/dev/null 2>"$work/stderr"; } 2>&1 ); then
    echo "failed: $* <$in" >&2
    cat "$work/stderr" >&2
    exit 1
  fi
  awk -v t="$t" 'BEGIN { split(t, a, " "); printf "%.3f\n", a[1] + a[2] }'
}

# min_median <results file> <field 1 value...>: "min median" of the last field of the lines whose
# first fields are the given values.
min_median() {
  local file=$1
  shift
  awk -v want="$*" '{ key = $1; for (i = 2; i < NF; i++) key = key " " $i } key == want { print $NF }' "$file" | sort -g |
    awk '{ v[NR] = $1 } END { med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print v[1], med }'
}

# min_slash_median <results file> <field 1 value...>: min_median's two figures as "min / median".
min_slash_median() {
  local lo mid
  read -r lo mid < <(min_median "$@")
  echo "$lo / $mid"
}

# demo_cpu <output of integration_test/demo>: the pipeline process's CPU-seconds per 100,000
# messages that the demo harness printed.
demo_cpu() { echo "$1" | sed -n 's/.*, \([0-9.]*\) CPU-seconds per 100,000 messages.*/\1/p'; }

# round_order <round> <builds>: the order in which a round runs the builds, by their index: with
# two builds, this build first in odd rounds and the before build first in even ones. Measured on
# 2026-12-06 (sdk-vs-runner.sh, two builds, five rounds in one order and four in the other) the
# second run of a round read about 2% more CPU than the first, whichever build it was, so a fixed
# order moved every ratio by that much; alternating cancels it over an even number of rounds.
round_order() {
  if [ "$2" = 2 ] && (($1 % 2 == 0)); then echo 1 0; else seq 0 $(($2 - 1)); fi
}

# ratio_in_round <results file> <round> <what> <this> <before>: prints and records this / before,
# the ratio of two builds measured in the same round (the figure that compares when the machine's
# speed drifts); ratio_summary <results file> <what> prints their min and median.
ratio_in_round() {
  local ratio
  ratio=$(awk -v a="$4" -v b="$5" 'BEGIN { printf "%.3f", a / b }')
  echo "round $2: $3, this build / the before build: $ratio"
  echo "ratio $ratio" >>"$1"
}
ratio_summary() {
  local rmin rmed
  read -r rmin rmed < <(min_median "$1" ratio)
  echo "  $2, this build / the before build in the same round: min $rmin, median $rmed"
}
