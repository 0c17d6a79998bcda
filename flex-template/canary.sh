#!/usr/bin/env bash
# Checks a running job end to end on a real project: publishes numbered messages to the topic the
# job reads and counts them in ClickHouse. See docs/deploy.md ("The canary"). Run with --help for
# the usage.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: flex-template/canary.sh --project PROJECT --region REGION --job-id JOB_ID --topic TOPIC \
           --clickhouse-url URL --database DATABASE --table TABLE [options]

A first-launch check of a running pubsub-to-clickhouse job (launched with run.sh or
gcloud dataflow flex-template run). It

  1. checks that the job is not finished (gcloud dataflow jobs describe) and that ClickHouse
     answers and holds none of this run's ids yet;
  2. publishes N numbered JSON messages {"ID_COLUMN":<id>,...} to TOPIC, one
     gcloud pubsub topics publish call per message, several at a time;
  3. every few seconds counts them in ClickHouse's HTTP interface, with curl:
       SELECT count(), uniqExact(ID_COLUMN) FROM DATABASE.TABLE WHERE ID_COLUMN BETWEEN FIRST AND LAST
     and, with --dead-letter-table, the distinct canary ids among the dead letters (raw_message)
     written since the run started (less 5 minutes, for clocks that differ), until every message
     is a row or a dead letter, or the timeout;
  4. with --drain, drains the job (gcloud dataflow jobs drain JOB_ID --region=REGION --project=PROJECT);
  5. prints: published, rows, distinct rows, duplicates (rows - distinct rows), dead letters and
     missing (published - distinct rows - dead letters).

It exits 0 when no message is missing, 1 when some are (or when a step fails), 2 on a usage error.

The ids. Each run has a tag, canary-YYYYMMDDTHHMMSSZ-RRRRR (the UTC start time and a random number
0..99999), and its ids are FIRST = UNIX_SECONDS * 10^9 + RRRRR * 10^4, then FIRST+1 ... FIRST+N-1:
19 digits, about 1.8 * 10^18, which fit Int64 and UInt64 (until the year 2262), so two runs do not
share ids. The id column must be an integer column (Int64, UInt64, Int128, ...); for a narrower one
(UInt32, Int32, ...) choose the ids with --id-base. Each message holds the id and the fields of
--extra-json, so the table must accept a row with only those columns given (the others with a
DEFAULT or Nullable). A dead letter counts when its raw_message has the id field (the first field
of the message) in this run's range (and, with --tag-field, this run's tag). Dead letters that go
only to a dead-letter topic are not counted here: they show as missing.

Required:
  --project PROJECT            Google Cloud project of the job and the topic
  --region REGION              Dataflow region of the job, e.g. us-central1
  --job-id JOB_ID              id of the running job, e.g. 2026-12-01_01_02_03-1234567890
  --topic TOPIC                the topic the job's input subscription reads, as
                               projects/PROJECT/topics/NAME or NAME (in --project)
  --clickhouse-url URL         ClickHouse's HTTP interface, http(s)://HOST:PORT, e.g.
                               https://abc123.us-central1.gcp.clickhouse.cloud:8443 (not the
                               native clickhouse:// address; no user or password in it)
  --database DATABASE          database of the table and the dead-letter table
  --table TABLE                the job's target table (clickHouseTable)

Options:
  --dead-letter-table TABLE    the job's dead-letter table (clickHouseDeadLetterTable); without it
                               dead letters are not counted
  --clickhouse-user USER       ClickHouse user for the queries (default default); the password is
                               read from the environment variable CLICKHOUSE_PASSWORD (empty when
                               unset) and given to curl in a temporary config file (-K), never on
                               a command line nor in the output
  --id-column NAME             column of the table that takes the canary number (default id)
  --id-base NUMBER             first id (default: from the run tag, see above); 0 to 10^18
  --messages N                 number of messages, 1 to 10000 (default 100)
  --extra-json OBJECT          fields added to every message, e.g. '{"name":"canary","ts":0}',
                               for other columns of the table that need a value
  --tag-field NAME             also put the run tag in every message as the string field NAME
                               (a column of the table, or a field it ignores), and count only the
                               dead letters that hold it
  --parallel N                 publish calls run at a time (default 8)
  --timeout SECONDS            how long to wait for the messages after publishing (default 600)
  --poll-seconds SECONDS       pause between two counts (default 5)
  --fail-on-dead-letters       exit 1 also when a message became a dead letter
  --drain                      drain the job at the end (also when messages are missing)
  --dry-run                    print the commands and queries instead of running them
  -h, --help                   print this help and exit

Example:
  CLICKHOUSE_PASSWORD=... flex-template/canary.sh --project my-project --region us-central1 \
      --job-id 2026-12-01_01_02_03-1234567890 --topic events \
      --clickhouse-url https://abc123.us-central1.gcp.clickhouse.cloud:8443 --clickhouse-user ingest \
      --database analytics --table events --dead-letter-table events_dead_letter \
      --id-column id --messages 100
EOF
}

die() {
  echo "canary.sh: $*" >&2
  echo "Run flex-template/canary.sh --help for the usage." >&2
  exit 2
}

# fail MESSAGE: a step failed (not a usage error).
fail() {
  echo "canary.sh: $*" >&2
  exit 1
}

project="" region="" job_id="" topic="" ch_url="" ch_user="default" database="" table=""
dl_table="" id_column="id" id_base="" messages=100 extra_json="" tag_field="" parallel=8
timeout=600 poll_seconds=5 fail_on_dead_letters=0 drain=0 dry_run=0

# need NAME VALUE: fails when an option has no value.
need() { [[ -n "${2-}" && "${2-}" != --* ]] || die "$1 needs a value"; }

while (($#)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --project) need "$1" "${2-}"; project=$2; shift 2 ;;
    --project=*) project=${1#*=}; shift ;;
    --region) need "$1" "${2-}"; region=$2; shift 2 ;;
    --region=*) region=${1#*=}; shift ;;
    --job-id) need "$1" "${2-}"; job_id=$2; shift 2 ;;
    --job-id=*) job_id=${1#*=}; shift ;;
    --topic) need "$1" "${2-}"; topic=$2; shift 2 ;;
    --topic=*) topic=${1#*=}; shift ;;
    --clickhouse-url) need "$1" "${2-}"; ch_url=$2; shift 2 ;;
    --clickhouse-url=*) ch_url=${1#*=}; shift ;;
    --clickhouse-user) need "$1" "${2-}"; ch_user=$2; shift 2 ;;
    --clickhouse-user=*) ch_user=${1#*=}; shift ;;
    --database) need "$1" "${2-}"; database=$2; shift 2 ;;
    --database=*) database=${1#*=}; shift ;;
    --table) need "$1" "${2-}"; table=$2; shift 2 ;;
    --table=*) table=${1#*=}; shift ;;
    --dead-letter-table) need "$1" "${2-}"; dl_table=$2; shift 2 ;;
    --dead-letter-table=*) dl_table=${1#*=}; shift ;;
    --id-column) need "$1" "${2-}"; id_column=$2; shift 2 ;;
    --id-column=*) id_column=${1#*=}; shift ;;
    --id-base) need "$1" "${2-}"; id_base=$2; shift 2 ;;
    --id-base=*) id_base=${1#*=}; shift ;;
    --messages) need "$1" "${2-}"; messages=$2; shift 2 ;;
    --messages=*) messages=${1#*=}; shift ;;
    --extra-json) need "$1" "${2-}"; extra_json=$2; shift 2 ;;
    --extra-json=*) extra_json=${1#*=}; shift ;;
    --tag-field) need "$1" "${2-}"; tag_field=$2; shift 2 ;;
    --tag-field=*) tag_field=${1#*=}; shift ;;
    --parallel) need "$1" "${2-}"; parallel=$2; shift 2 ;;
    --parallel=*) parallel=${1#*=}; shift ;;
    --timeout) need "$1" "${2-}"; timeout=$2; shift 2 ;;
    --timeout=*) timeout=${1#*=}; shift ;;
    --poll-seconds) need "$1" "${2-}"; poll_seconds=$2; shift 2 ;;
    --poll-seconds=*) poll_seconds=${1#*=}; shift ;;
    --fail-on-dead-letters) fail_on_dead_letters=1; shift ;;
    --drain) drain=1; shift ;;
    --dry-run) dry_run=1; shift ;;
    *) die "unknown argument: $1" ;;
  esac
done

[[ -n $project ]] || die "--project is required"
[[ -n $region ]] || die "--region is required"
[[ -n $job_id ]] || die "--job-id is required (gcloud dataflow jobs list --project $project --region $region --status active)"
[[ -n $topic ]] || die "--topic is required"
[[ -n $ch_url ]] || die "--clickhouse-url is required"
[[ -n $database ]] || die "--database is required"
[[ -n $table ]] || die "--table is required"

# The topic, in full.
if [[ $topic != */* ]]; then
  topic="projects/$project/topics/$topic"
fi
[[ $topic =~ ^projects/[^/]+/topics/[^/]+$ ]] || die "--topic must be projects/PROJECT/topics/NAME or NAME: $topic"

# The HTTP interface: one host, no credentials in the URL (they would be printed), no path.
ch_url=${ch_url%/}
# The URL as errors show it: a userinfo and a query, which may hold a password, hidden.
shown_url=$(sed -E -e 's#^([A-Za-z][A-Za-z0-9+.-]*://)?.*@#\1xxxxx@#' -e 's#[?].*$#?xxxxx#' <<<"$ch_url")
case "$ch_url" in
  clickhouse://* | tcp://*) die "--clickhouse-url takes ClickHouse's HTTP interface, http(s)://HOST:PORT (8443 or 8123), not the native protocol: $shown_url" ;;
esac
[[ $ch_url =~ ^[hH][tT][tT][pP][sS]?:// ]] || die "--clickhouse-url must start with http:// or https://: $shown_url"
hostport=${ch_url#*://}
[[ $hostport != *@* ]] || die "--clickhouse-url must not hold a user or password: use --clickhouse-user and CLICKHOUSE_PASSWORD"
[[ $hostport != *,* ]] || die "--clickhouse-url takes one host (the job's clickHouseUrl may list several): $shown_url"
[[ -n $hostport && $hostport != */* && $hostport != *[?#\ ]* ]] || die "--clickhouse-url must be http(s)://HOST[:PORT], without a path: $shown_url"

# A database or table name is quoted with backticks; like the pipeline, refuse dots and backticks.
check_name() { # OPTION VALUE
  [[ $2 != *[.\`\\]* && $2 =~ ^[^[:space:][:cntrl:]][^[:cntrl:]]*$ ]] ||
    die "$1 must be a bare name without a dot, a backtick, a backslash or a leading space: $2"
}
check_name --database "$database"
check_name --table "$table"
[[ -z $dl_table ]] || check_name --dead-letter-table "$dl_table"
# The id column and the tag field are JSON field names and SQL string literals: keep them plain.
[[ $id_column =~ ^[A-Za-z_][A-Za-z0-9_.]*$ ]] || die "--id-column must be letters, digits, _ and . (starting with a letter or _): $id_column"
if [[ -n $tag_field ]]; then
  [[ $tag_field =~ ^[A-Za-z_][A-Za-z0-9_.]*$ ]] || die "--tag-field must be letters, digits, _ and . (starting with a letter or _): $tag_field"
  [[ $tag_field != "$id_column" ]] || die "--tag-field must differ from --id-column"
fi

is_count() { [[ $1 =~ ^[1-9][0-9]{0,8}$ ]]; }
{ is_count "$messages" && ((messages <= 10000)); } || die "--messages must be a number from 1 to 10000: $messages"
{ is_count "$parallel" && ((parallel <= 64)); } || die "--parallel must be a number from 1 to 64: $parallel"
is_count "$timeout" || die "--timeout must be a positive number of seconds: $timeout"
is_count "$poll_seconds" || die "--poll-seconds must be a positive number of seconds: $poll_seconds"

# The extra fields: a JSON object, merged by text (so that its numbers keep their spelling), after
# the id field and the tag field.
extra_fields=""
if [[ -n $extra_json ]]; then
  x=${extra_json//[$'\n\r\t']/ }
  x=${x#"${x%%[! ]*}"}
  x=${x%"${x##*[! ]}"}
  [[ $x == \{*\} ]] || die "--extra-json must be a JSON object, {...}: $extra_json"
  if command -v jq >/dev/null 2>&1; then
    jq -en --argjson x "$x" --arg id "$id_column" --arg tag "$tag_field" \
      '$x | type == "object" and (has($id) | not) and ($tag == "" or (has($tag) | not))' >/dev/null 2>&1 ||
      die "--extra-json must be a JSON object without the fields $id_column${tag_field:+ and $tag_field}: $extra_json"
  elif command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json, sys
x = json.loads(sys.argv[1])
sys.exit(0 if isinstance(x, dict) and not set(sys.argv[2:]) & set(x) else 1)' "$x" "$id_column" ${tag_field:+"$tag_field"} 2>/dev/null ||
      die "--extra-json must be a JSON object without the fields $id_column${tag_field:+ and $tag_field}: $extra_json"
  fi
  x=${x#\{}
  x=${x%\}}
  if [[ $x == *[![:space:]]* ]]; then
    extra_fields=",$x"
  fi
fi

# The run tag and the ids.
read -r now stamp < <(date -u '+%s %Y%m%dT%H%M%SZ')
rand=$(((RANDOM * 32768 + RANDOM) % 100000))
tag=$(printf 'canary-%s-%05d' "$stamp" "$rand")
if [[ -n $id_base ]]; then
  [[ $id_base =~ ^(0|[1-9][0-9]{0,17}|1000000000000000000)$ ]] || die "--id-base must be a whole number from 0 to 10^18: $id_base"
  first=$id_base
else
  first=$((now * 1000000000 + rand * 10000))
fi
last=$((first + messages - 1))
# Dead letters written from 5 minutes before the start on (clocks differ a little).
since=$((now - 300))
job_url="https://console.cloud.google.com/dataflow/jobs/$region/$job_id?project=$project"

q_name() { printf '%s%s%s' '`' "$1" '`'; }
idq=$(q_name "$id_column")
rows_table="$(q_name "$database").$(q_name "$table")"
rows_query="SELECT count(), uniqExact($idq) FROM $rows_table WHERE $idq BETWEEN $first AND $last FORMAT TabSeparated"
dl_query=""
if [[ -n $dl_table ]]; then
  dl_full="$(q_name "$database").$(q_name "$dl_table")"
  dl_id="visitParamExtractUInt(raw_message, '$id_column')"
  dl_query="SELECT uniqExact($dl_id) FROM $dl_full WHERE failed_at >= toDateTime($since) AND $dl_id BETWEEN $first AND $last"
  [[ -z $tag_field ]] || dl_query+=" AND position(raw_message, '$tag') > 0"
  dl_query+=" FORMAT TabSeparated"
fi

# show prints a command, quoted for a shell (in single quotes, which keep a query readable).
show() {
  local a q="'" line="+"
  for a in "$@"; do
    if [[ $a =~ ^[-A-Za-z0-9_./:=@%+,]+$ ]]; then
      line+=" $a"
    else
      line+=" $q${a//$q/$q\\$q$q}$q"
    fi
  done
  printf '%s\n' "$line"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The credentials, for curl -K: in a file only the user can read, never in an argument.
curl_config="$tmp/curl.config"
(
  umask 077
  conf_escape() { local s=${1//\\/\\\\}; s=${s//\"/\\\"}; s=${s//$'\n'/\\n}; s=${s//$'\r'/\\r}; printf '%s' "${s//$'\t'/\\t}"; }
  printf 'user = "%s:%s"\n' "$(conf_escape "$ch_user")" "$(conf_escape "${CLICKHOUSE_PASSWORD-}")" >"$curl_config"
)
curl_cmd=(curl -sS --max-time 30 -K "$curl_config")

# ch_query QUERY: prints the server's answer; fails when curl does.
ch_query() {
  "${curl_cmd[@]}" --data-binary "$1" "$ch_url/"
}

# ch_counts QUERY FIELDS: the answer when it is FIELDS tab-separated numbers, else fails and prints
# what the server said (ClickHouse answers errors as text).
ch_counts() {
  local out
  if ! out=$(ch_query "$1" 2>&1); then
    printf '%s\n' "$out"
    return 1
  fi
  out=${out%$'\n'}
  local re='^[0-9]+' i
  for ((i = 1; i < $2; i++)); do re+=$'\t[0-9]+'; done
  re+='$'
  if [[ $out =~ $re ]]; then
    printf '%s\n' "$out"
  else
    printf '%s\n' "$out"
    return 1
  fi
}

echo "Run tag:  $tag"
echo "Ids:      $first to $last ($messages messages to $topic)"
echo "Counted:  $database.$table${dl_table:+ and the dead letters in $database.$dl_table}"
echo "Job:      $job_url"
if ((dry_run)); then
  echo "Dry run: the commands and queries follow; nothing is run. curl's -K file holds --clickhouse-user and CLICKHOUSE_PASSWORD."
fi

# The tools the steps call, before anything is asked or published (a dry run only prints them).
if ((!dry_run)); then
  command -v gcloud >/dev/null 2>&1 ||
    fail "gcloud is not on PATH: canary.sh reads the job's state and publishes with the Google Cloud CLI (https://cloud.google.com/sdk/docs/install); --dry-run prints the commands without it"
  command -v curl >/dev/null 2>&1 ||
    fail "curl is not on PATH: canary.sh counts the rows through ClickHouse's HTTP interface with it; --dry-run prints the queries without it"
fi

# 1. The job, and ClickHouse.
describe=(gcloud dataflow jobs describe "$job_id" --region="$region" --project="$project" "--format=value(currentState)")
show "${describe[@]}"
if ((!dry_run)); then
  state=$("${describe[@]}") || fail "could not read the state of job $job_id (is --job-id right, in --region and --project?)"
  echo "Job state: $state"
  case "$state" in
    JOB_STATE_RUNNING) ;;
    JOB_STATE_PENDING | JOB_STATE_QUEUED | JOB_STATE_STOPPED | JOB_STATE_UNKNOWN | "")
      echo "The job is not running yet: the messages wait in the subscription until its workers start (allow a few minutes in --timeout)." ;;
    JOB_STATE_UPDATED) fail "job $job_id was replaced by an update: give the id of the new job (gcloud dataflow jobs list --project $project --region $region --status active)" ;;
    *) fail "job $job_id is $state: it will not read the messages; launch a job first (flex-template/run.sh)" ;;
  esac
fi

show "${curl_cmd[@]}" --data-binary "$rows_query" "$ch_url/"
[[ -z $dl_query ]] || show "${curl_cmd[@]}" --data-binary "$dl_query" "$ch_url/"
if ((!dry_run)); then
  out=$(ch_counts "$rows_query" 2) || fail "ClickHouse at $ch_url did not answer the count of $database.$table: $out"
  read -r before _ <<<"$out"
  ((before == 0)) || fail "$database.$table already holds $before rows with $id_column from $first to $last: choose other ids with --id-base"
  if [[ -n $dl_query ]]; then
    out=$(ch_counts "$dl_query" 1) || fail "ClickHouse at $ch_url did not answer the count of $database.$dl_table: $out"
    ((out == 0)) || fail "$database.$dl_table already holds $out dead letters with $id_column from $first to $last: choose other ids with --id-base"
  fi
fi

# 2. The messages.
msgs=()
for ((i = 0; i < messages; i++)); do
  m="{\"$id_column\":$((first + i))"
  [[ -z $tag_field ]] || m+=",\"$tag_field\":\"$tag\""
  msgs+=("$m$extra_fields}")
done
start_publish=$SECONDS
if ((dry_run)); then
  for m in "${msgs[@]}"; do
    show gcloud pubsub topics publish "$topic" --project "$project" --message "$m"
  done
  echo "+ (the $messages publish calls run $parallel at a time)"
else
  show gcloud pubsub topics publish "$topic" --project "$project" --message "${msgs[0]}"
  echo "Publishing $messages messages like this one, $parallel at a time..."
  # Each call prints "ok" when gcloud succeeds; gcloud's own errors go to stderr.
  # shellcheck disable=SC2016 # the single-quoted script expands its own arguments
  printf '%s\0' "${msgs[@]}" | xargs -0 -n 1 -P "$parallel" bash -c \
    'if gcloud pubsub topics publish "$0" --project "$1" --message "$2" >/dev/null; then echo ok; else echo "canary.sh: publishing $2 failed" >&2; fi' \
    "$topic" "$project" >"$tmp/published" || true
  published=$(grep -c '^ok$' "$tmp/published" || true)
  if ((published < messages)); then
    not_drained=""
    ((!drain)) || not_drained="; the job was not drained"
    fail "$((messages - published)) of $messages messages could not be published (gcloud's errors are above; publishing needs roles/pubsub.publisher on $topic); $published were published with ids from $first to $last$not_drained"
  fi
  echo "Published $published messages in $((SECONDS - start_publish)) s."
fi

# 3. The counts.
rows=0 distinct=0 dead=0
if ((dry_run)); then
  echo "+ (the counts above run again every $poll_seconds s until $messages ids are rows or dead letters, at most $timeout s)"
else
  echo "Waiting for the messages (every $poll_seconds s, at most $timeout s)..."
  start_wait=$SECONDS
  while :; do
    if out=$(ch_counts "$rows_query" 2); then
      read -r rows distinct <<<"$out"
    else
      echo "canary.sh: counting the rows failed (trying again): $out" >&2
    fi
    if [[ -n $dl_query ]]; then
      if out=$(ch_counts "$dl_query" 1); then
        dead=$out
      else
        echo "canary.sh: counting the dead letters failed (trying again): $out" >&2
      fi
    fi
    waited=$((SECONDS - start_wait))
    echo "  ${waited}s: $rows rows ($distinct distinct)${dl_query:+, $dead dead letters}, of $messages"
    ((distinct + dead < messages)) || break
    ((waited + poll_seconds <= timeout)) || break
    sleep "$poll_seconds"
  done
fi

# 4. The drain.
if ((drain)); then
  drain_cmd=(gcloud dataflow jobs drain "$job_id" --region="$region" --project="$project")
  show "${drain_cmd[@]}"
  if ((!dry_run)); then
    "${drain_cmd[@]}" || echo "canary.sh: draining job $job_id failed; drain it on $job_url" >&2
  fi
fi

if ((dry_run)); then
  exit 0
fi

# 5. The summary.
duplicates=$((rows - distinct))
missing=$((published - distinct - dead))
((missing >= 0)) || missing=0
dl_shown=$dead
[[ -n $dl_query ]] || dl_shown="n/a (no --dead-letter-table)"
echo "Summary: published $published, rows $rows, distinct rows $distinct, duplicates $duplicates, dead letters $dl_shown, missing $missing"

dl_hint=""
if [[ -n $dl_table ]]; then
  dl_hint="SELECT failed_at, error_message, raw_message FROM $dl_full WHERE failed_at >= toDateTime($since) AND $dl_id BETWEEN $first AND $last ORDER BY failed_at DESC LIMIT 20"
fi
if ((duplicates > 0)); then
  echo "Note: $duplicates rows were stored more than once (see docs/delivery.md on duplicates and deduplicating tables)."
fi
if ((dead > 0)); then
  echo "Note: $dead messages became dead letters; error_message says why: $dl_hint"
fi
if ((missing > 0)); then
  echo "FAIL: $missing of $published messages are missing after $timeout s (ids $first to $last, run $tag)."
  echo "Look at the job's logs: $job_url"
  if [[ -n $dl_table ]]; then
    echo "and at the dead-letter table $database.$dl_table: $dl_hint"
  else
    echo "Without --dead-letter-table, dead letters are not counted: if the job writes them to a dead-letter topic only, read them there."
  fi
  echo "Also check that the job's input subscription reads $topic, and, if the job was still starting, run again with a longer --timeout."
  exit 1
fi
if ((dead > 0 && fail_on_dead_letters)); then
  echo "FAIL: $dead of $published messages are dead letters (--fail-on-dead-letters)."
  exit 1
fi
echo "OK: every message is a row${dl_query:+ or a dead letter} (run $tag)."
