#!/usr/bin/env bash
# The Pub/Sub emulator (integration_test/emulator, an in-memory pstest server) in the background:
# start builds bin/emulator and starts it on 127.0.0.1:$PUBSUB_EMULATOR_PORT (default 8085), its
# pid in $EMULATOR_DIR/emulator-<port>.pid and its log beside it (default directory
# /tmp/pubsub-to-clickhouse-emulator), and prints the export line for PUBSUB_EMULATOR_HOST;
# stop stops it (SIGTERM, then SIGKILL after 5 s) and removes the pid file; status exits 0 when
# the emulator of this pid file runs. Everything it holds is lost when it stops.
set -euo pipefail
source "$(dirname "$0")/pidfile.sh"

port=${PUBSUB_EMULATOR_PORT:-8085}
dir=${EMULATOR_DIR:-/tmp/pubsub-to-clickhouse-emulator}
# A relative directory is the caller's (start changes to the repository's root): the stop run
# from the same place then finds the pid file.
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
pidfile=$dir/emulator-$port.pid
log=$dir/emulator-$port.log

# running tells whether the emulator of the pid file runs: a process of that id whose command line
# is the emulator's on this port (after a reboot or a kill -9, the id may be another process's).
running() { pid_of "$pidfile" "bin/emulator -port $port " >/dev/null; }

# stop_command is the command that stops this emulator: make emulator-stop, with the port and the
# directory when they are not the defaults (without them it would look for another pid file).
stop_command() {
  local vars=
  [ "$port" = 8085 ] || vars+="PUBSUB_EMULATOR_PORT=$port "
  [ "$dir" = /tmp/pubsub-to-clickhouse-emulator ] || vars+="EMULATOR_DIR=$(printf %q "$dir") "
  echo "${vars}make emulator-stop"
}

# listening tells whether something accepts connections on the port, with bash's own /dev/tcp.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }

start() {
  if running; then
    echo "emulator: already running on 127.0.0.1:$port (pid $(cat "$pidfile")); stop it with $(stop_command)"
    echo "export PUBSUB_EMULATOR_HOST=127.0.0.1:$port"
    return 0
  fi
  if listening; then
    echo "emulator: something else listens on 127.0.0.1:$port: stop it, or give another port, PUBSUB_EMULATOR_PORT=8086 make emulator" >&2
    return 1
  fi
  cd "$(dirname "$0")/.."
  mkdir -p bin "$dir"
  go build -o bin/emulator ./integration_test/emulator
  : >"$log"
  nohup setsid bin/emulator -port "$port" >>"$log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  for _ in $(seq 1 100); do
    if grep -q '^PUBSUB_EMULATOR_HOST=' "$log"; then
      echo "emulator: running on 127.0.0.1:$port (pid $(cat "$pidfile"), log $log); stop it with $(stop_command)"
      echo "export PUBSUB_EMULATOR_HOST=127.0.0.1:$port"
      return 0
    fi
    kill -0 "$(cat "$pidfile")" 2>/dev/null || break
    sleep 0.1
  done
  echo "emulator: it did not start; its log ($log):" >&2
  cat "$log" >&2
  rm -f "$pidfile"
  return 1
}

stop() {
  if ! [ -f "$pidfile" ]; then
    echo "emulator: none started on port $port (no $pidfile; for an emulator started with PUBSUB_EMULATOR_PORT or EMULATOR_DIR, give the same here)"
    return 0
  fi
  if ! running; then
    echo "emulator: none running on port $port ($pidfile names process $(head -c 20 "$pidfile"), which has ended or is another program); removed the pid file"
    rm -f "$pidfile"
    return 0
  fi
  stop_pidfile "$pidfile" 5 "bin/emulator -port $port "
  echo "emulator: stopped on port $port"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) running ;;
  *) echo "usage: $0 start|stop|status (PUBSUB_EMULATOR_PORT, default 8085)" >&2; exit 2 ;;
esac
