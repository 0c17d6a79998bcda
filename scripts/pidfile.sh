# Sourced by the scripts that start servers in the background (clickhouse.sh, chdb.sh).

# stop_pidfile FILE SECONDS: stops the process whose id FILE holds, as an operator would (SIGTERM,
# then waiting up to SECONDS for it to exit, then SIGKILL), and removes FILE. Nothing when FILE is
# missing.
stop_pidfile() {
  local file=$1 seconds=$2 pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 $((seconds * 10))); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$file"
}
