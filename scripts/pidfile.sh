# Sourced by the scripts that start servers in the background (clickhouse.sh, chdb.sh, emulator.sh).

# pid_of FILE WHAT: prints the process id that FILE holds when that process runs and its command
# line, its arguments each followed by a space, holds WHAT; fails otherwise: no FILE, or its process has ended, and the system may since
# have given that id to another process, which is not to be stopped nor taken for the server.
pid_of() {
  local pid args
  [ -f "$1" ] || return 1
  pid=$(cat "$1")
  [[ $pid =~ ^[1-9][0-9]*$ ]] || return 1
  if [ -r "/proc/$pid/cmdline" ]; then
    args=$(tr '\0' ' ' <"/proc/$pid/cmdline")
  else
    args="$(ps -o args= -p "$pid" 2>/dev/null) " || return 1
  fi
  [[ $args == *"$2"* ]] || return 1
  echo "$pid"
}

# stop_pidfile FILE SECONDS WHAT: stops the process whose id FILE holds, as an operator would
# (SIGTERM, then waiting up to SECONDS for it to exit, then SIGKILL), and removes FILE. Nothing when
# FILE is missing; when its process is not running, or its command line lacks WHAT (the id is
# another process's now), it stops nothing, says so, and removes FILE.
stop_pidfile() {
  local file=$1 seconds=$2 what=$3 pid
  [ -f "$file" ] || return 0
  if ! pid=$(pid_of "$file" "$what"); then
    echo "$file names process $(head -c 20 "$file"), which has ended or is another program than $what: stopped nothing, removed $file" >&2
    rm -f "$file"
    return 0
  fi
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 $((seconds * 10))); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$file"
}
