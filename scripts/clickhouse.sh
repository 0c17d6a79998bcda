#!/usr/bin/env bash
# Runs a ClickHouse server on loopback with a data directory of its own, for the
# tests and the demo. Usage:
#   scripts/clickhouse.sh install   # apt-get install clickhouse-server clickhouse-client if missing
#   scripts/clickhouse.sh start     # start (if not already answering) and wait until it answers
#   scripts/clickhouse.sh stop      # stop the server this script started
#   scripts/clickhouse.sh status    # exit 0 when a server answers on CLICKHOUSE_TCP_PORT
# Environment: CLICKHOUSE_DIR (default /tmp/pubsub-to-clickhouse-ch), CLICKHOUSE_TCP_PORT
# (default 9000), CLICKHOUSE_HTTP_PORT (default 8123), CLICKHOUSE_MAX_MEMORY_USAGE (bytes per query,
# default the package's 10 GB; the fault tests lower it).
set -euo pipefail
# shellcheck source=scripts/pidfile.sh
. "$(dirname "$0")/pidfile.sh"

dir=${CLICKHOUSE_DIR:-/tmp/pubsub-to-clickhouse-ch}
# A relative directory is the caller's: start changes into it, and the server reads its paths there.
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
tcp_port=${CLICKHOUSE_TCP_PORT:-9000}
http_port=${CLICKHOUSE_HTTP_PORT:-8123}

# answers asks the server for SELECT 1, for at most 5 s: a server that accepts the connection and
# then says nothing (stopped, hung) would hold clickhouse-client for its receive timeout, 300 s.
answers() {
  timeout 5 clickhouse-client --host 127.0.0.1 --port "$tcp_port" --query 'SELECT 1' >/dev/null 2>&1
}

install() {
  if { command -v clickhouse-server || [ -x /usr/sbin/clickhouse-server ]; } >/dev/null 2>&1 && command -v clickhouse-client >/dev/null 2>&1; then
    return 0
  fi
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq || true
  $sudo apt-get install -y -qq clickhouse-server clickhouse-client >/dev/null
}

# start_server writes the configuration of $dir and starts a server with it in the background.
start_server() {
  mkdir -p "$dir"/{data,tmp,user_files,format_schemas,log}
  # The packaged config, with this directory's paths and ports, on IPv4 loopback only.
  sed -e "s#/var/lib/clickhouse/#$dir/data/#g" \
      -e "s#$dir/data/tmp/#$dir/tmp/#" \
      -e "s#$dir/data/user_files/#$dir/user_files/#" \
      -e "s#$dir/data/format_schemas/#$dir/format_schemas/#" \
      -e "s#/var/log/clickhouse-server/#$dir/log/#g" \
      -e "s#<http_port>8123</http_port>#<http_port>$http_port</http_port>#" \
      -e "s#<tcp_port>9000</tcp_port>#<tcp_port>$tcp_port</tcp_port>#" \
      -e "s#<interserver_http_port>9009</interserver_http_port>##" \
      -e "s#<listen_host>::1</listen_host>##" \
      /etc/clickhouse-server/config.xml > "$dir/config.xml"
  sed -e "s#<max_memory_usage>[0-9]*</max_memory_usage>#<max_memory_usage>${CLICKHOUSE_MAX_MEMORY_USAGE:-10000000000}</max_memory_usage>#" \
      /etc/clickhouse-server/users.xml > "$dir/users.xml"
  local bin=clickhouse-server
  command -v clickhouse-server >/dev/null 2>&1 || bin=/usr/sbin/clickhouse-server
  cd "$dir"
  nohup setsid $bin --config-file="$dir/config.xml" >"$dir/log/stdout.log" 2>&1 </dev/null &
  echo $! >"$dir/server.pid"
  cd - >/dev/null
}

start() {
  # Without the client, no server would ever seem to answer: start would start one beside a running
  # one, and wait 60 s for it.
  if ! command -v clickhouse-client >/dev/null 2>&1; then
    echo "clickhouse: clickhouse-client is not installed (it tells whether a server answers): scripts/clickhouse.sh install" >&2
    return 1
  fi
  if answers; then
    echo "clickhouse: a server already answers on 127.0.0.1:$tcp_port"
    return 0
  fi
  local pid
  # The server of this directory, still starting or not answering: another one would fail to lock
  # its data, and its pid would take the place of the running server's in server.pid.
  if pid=$(pid_of "$dir/server.pid" "--config-file=$dir/config.xml "); then
    echo "clickhouse: the server of $dir runs already (pid $pid); waiting for it to answer on 127.0.0.1:$tcp_port" >&2
  else
    start_server
    pid=$(cat "$dir/server.pid")
  fi
  local deadline=$((SECONDS + 60))
  while ((SECONDS < deadline)); do
    if answers; then
      echo "clickhouse: server answers on 127.0.0.1:$tcp_port (data in $dir)"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "clickhouse: server did not answer within 60 s (it still runs: CLICKHOUSE_DIR=$(printf %q "$dir") scripts/clickhouse.sh stop); last log lines:" >&2
  else
    rm -f "$dir/server.pid"
    echo "clickhouse: server exited without answering (a port taken? CLICKHOUSE_TCP_PORT=$tcp_port, CLICKHOUSE_HTTP_PORT=$http_port); last log lines:" >&2
  fi
  tail -n 30 "$dir/log/clickhouse-server.err.log" "$dir/log/stdout.log" >&2 || true
  return 1
}

stop() { stop_pidfile "$dir/server.pid" 30 "--config-file=$dir/config.xml "; }

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  status) answers ;;
  *) echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac
