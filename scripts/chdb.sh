#!/usr/bin/env bash
# Installs the ClickHouse 26 engine as a library (chDB's libchdb.so, from the npm package
# @chdb/lib-linux-x64-gnu) into a cache directory that survives between runs, for the tests that
# check the pipeline against a current ClickHouse (the HTTP stand-in, internal/chdbhttp). Usage:
#   scripts/chdb.sh install   # fetch and unpack it unless it is there (178 MB download, 569 MB
#                             # unpacked, ~20 s); check that it loads; print the path of libchdb.so
#   scripts/chdb.sh path      # print the path of libchdb.so, or fail saying how to install it
#   scripts/chdb.sh start     # build bin/chmodern (ClickHouse's HTTP interface over the engine,
#                             # integration_test/chmodern) and start it in the background on
#                             # 127.0.0.1:$CHMODERN_PORT; print its URL when it answers
#   scripts/chdb.sh stop      # stop the stand-in that `start` started
#   scripts/chdb.sh status    # exit 0 when something answers /ping on 127.0.0.1:$CHMODERN_PORT
# Environment: CHDB_DIR, the cache directory (default /var/cache/pubsub-to-clickhouse/chdb-<version>
# when /var/cache is writable, else ${XDG_CACHE_HOME:-~/.cache}/pubsub-to-clickhouse/chdb-<version>);
# CHMODERN_DIR, the stand-in's tables, log and pid (default /tmp/pubsub-to-clickhouse-chmodern);
# CHMODERN_PORT (default 18123). The Go module github.com/chdb-io/chdb-go loads the library from
# CHDB_LIB_PATH: `start`, the Makefile and the tests set it to what `path` prints.
set -euo pipefail
# shellcheck source=scripts/pidfile.sh
. "$(dirname "$0")/pidfile.sh"

package=@chdb/lib-linux-x64-gnu
version=26.7.3-stable.1
# The registry's sha1 of the package's tarball (npm view $package@$version dist.shasum).
shasum=d2905fafd0e0ac0e231cccadd1f0f6d010977297

cache_dir() {
  if [ -n "${CHDB_DIR:-}" ]; then
    echo "$CHDB_DIR"
  elif mkdir -p /var/cache/pubsub-to-clickhouse 2>/dev/null && [ -w /var/cache/pubsub-to-clickhouse ]; then
    echo "/var/cache/pubsub-to-clickhouse/chdb-$version"
  else
    echo "${XDG_CACHE_HOME:-$HOME/.cache}/pubsub-to-clickhouse/chdb-$version"
  fi
}

dir=$(cache_dir)
lib=$dir/libchdb.so
tmp="" # the download in progress, removed when the script ends

# loads checks that the library loads into a process: its own dependencies resolve (ldd) and the
# dynamic loader maps it and runs its initialisers (LD_PRELOAD into /bin/true).
loads() {
  [ -s "$1" ] || return 1
  local out
  out=$(ldd "$1" 2>&1) || { echo "chdb: ldd $1: $out" >&2; return 1; }
  if grep -q 'not found' <<<"$out"; then
    echo "chdb: $1 needs libraries this machine lacks:" >&2
    grep 'not found' <<<"$out" >&2
    return 1
  fi
  out=$(LD_PRELOAD="$1" /bin/true 2>&1)
  if [ -n "$out" ]; then
    echo "chdb: $1 does not load: $out" >&2
    return 1
  fi
}

install() {
  if loads "$lib"; then
    echo "$lib"
    return 0
  fi
  command -v npm >/dev/null 2>&1 || {
    echo "chdb: npm is needed to fetch $package@$version (apt-get install npm)" >&2
    return 1
  }
  mkdir -p "$dir"
  tmp=$(mktemp -d "$dir/.install.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "chdb: fetching $package@$version into $dir (178 MB, about 20 s)" >&2
  local start=$SECONDS
  (cd "$tmp" && npm pack --silent --cache "$tmp/npm-cache" "$package@$version" >/dev/null)
  local tgz
  tgz=$(ls "$tmp"/*.tgz)
  local sum
  sum=$(sha1sum "$tgz" | cut -d' ' -f1)
  if [ "$sum" != "$shasum" ]; then
    echo "chdb: $tgz has sha1 $sum, want $shasum (the registry's for $package@$version)" >&2
    return 1
  fi
  tar xzf "$tgz" -C "$tmp"
  local found
  found=$(find "$tmp" -name libchdb.so -type f | head -n 1)
  if [ -z "$found" ]; then
    echo "chdb: $package@$version holds no libchdb.so" >&2
    return 1
  fi
  loads "$found"
  # A rename on one file system: another run never sees half a library.
  mv -f "$found" "$lib.new"
  mv -f "$lib.new" "$lib"
  echo "$version" >"$dir/VERSION"
  echo "chdb: installed in $((SECONDS - start)) s" >&2
  echo "$lib"
}

path() {
  if [ -s "$lib" ]; then
    echo "$lib"
    return 0
  fi
  echo "chdb: no libchdb.so in $dir: install it with scripts/chdb.sh install (npm, 178 MB)" >&2
  return 1
}

server_dir=${CHMODERN_DIR:-/tmp/pubsub-to-clickhouse-chmodern}
# A relative directory is the caller's (start changes to the repository's root): the stop run
# from the same place then finds the pid file.
case $server_dir in /*) ;; *) server_dir=$PWD/$server_dir ;; esac
port=${CHMODERN_PORT:-18123}

# stop_command is the command that stops this stand-in: make clickhouse-modern-stop, with the
# directory when it is not the default (the pid file is there; without it, the command would stop
# the stand-in of the default directory, or nothing).
stop_command() {
  local vars=
  [ "$server_dir" = /tmp/pubsub-to-clickhouse-chmodern ] || vars="CHMODERN_DIR=$(printf %q "$server_dir") "
  echo "${vars}make clickhouse-modern-stop"
}

# answers sends GET /ping to the port, with bash's own /dev/tcp (no curl needed).
answers() {
  local reply
  reply=$({ exec 3<>"/dev/tcp/127.0.0.1/$port" && printf 'GET /ping HTTP/1.0\r\n\r\n' >&3 && timeout 2 cat <&3; } 2>/dev/null) || return 1
  [[ $reply == *"Ok."* ]]
}

start() {
  if answers; then
    echo "chmodern: something already answers on http://127.0.0.1:$port"
    return 0
  fi
  local library
  library=$(path)
  cd "$(dirname "$0")/.."
  echo "chmodern: building bin/chmodern" >&2
  CGO_ENABLED=0 go build -tags chdb -o bin/chmodern ./integration_test/chmodern
  mkdir -p "$server_dir/data"
  : >"$server_dir/log"
  CHDB_LIB_PATH=$library nohup setsid bin/chmodern -listen "127.0.0.1:$port" -path "$server_dir/data" \
    >>"$server_dir/log" 2>&1 </dev/null &
  echo $! >"$server_dir/server.pid"
  for _ in $(seq 1 100); do
    if answers; then
      echo "chmodern: ClickHouse $(sed -n 's/^chmodern: serving ClickHouse \([^ ]*\).*/\1/p' "$server_dir/log") answers on http://127.0.0.1:$port (tables in $server_dir/data; stop it with $(stop_command))"
      return 0
    fi
    if ! kill -0 "$(cat "$server_dir/server.pid")" 2>/dev/null; then
      break
    fi
    sleep 0.2
  done
  echo "chmodern: the stand-in did not answer on 127.0.0.1:$port; its log ($server_dir/log):" >&2
  tail -n 20 "$server_dir/log" >&2
  return 1
}

stop() { stop_pidfile "$server_dir/server.pid" 5 "-path $server_dir/data "; }

case "${1:-}" in
  install) install ;;
  path) path ;;
  start) start ;;
  stop) stop ;;
  status) answers ;;
  *) echo "usage: $0 install|path|start|stop|status" >&2; exit 2 ;;
esac
