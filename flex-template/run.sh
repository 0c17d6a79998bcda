#!/usr/bin/env bash
# Launches a Dataflow job from the staged Flex Template (see build.sh). See docs/deploy.md. Run
# with --help for the usage.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: flex-template/run.sh --project PROJECT --region REGION --bucket BUCKET [options] [--] NAME=VALUE...

Launches a streaming Dataflow job from the template staged by build.sh, with

  gcloud dataflow flex-template run JOB_NAME \
      --template-file-gcs-location gs://BUCKET/templates/pubsub-to-clickhouse.json \
      --region REGION --parameters NAME=VALUE,...

Each NAME=VALUE argument is a template parameter (docs/parameters.md lists them). The five required
ones are inputSubscription, clickHouseUrl, clickHouseDatabase, clickHouseTable and
clickHouseUsername, plus clickHouseDeadLetterTable or deadLetterTopic (or both);
clickHousePassword is optional (unset: no password). When no clickHousePassword=... argument is
given, the password is taken from the environment variable CLICKHOUSE_PASSWORD, if it is set. Values may hold commas (several hosts in
clickHouseUrl): the script picks a --parameters delimiter that no value holds.

Required:
  --project PROJECT              Google Cloud project of the job
  --region REGION                Dataflow region of the job, e.g. us-central1
  --bucket BUCKET                bucket of the template spec, as NAME or gs://NAME; also the default
                                 staging and temporary location (gs://BUCKET/staging, gs://BUCKET/tmp)

Options:
  --job-name NAME                job name (default pubsub-to-clickhouse-YYYYMMDD-HHMMSS, UTC); for
                                 --update, the name of the running job
  --template-path PATH           object path of the spec in the bucket
                                 (default templates/pubsub-to-clickhouse.json)
  --staging-location GCS_PATH    staging location (default gs://BUCKET/staging)
  --temp-location GCS_PATH       temporary location (default gs://BUCKET/tmp)
  --update                       replace the running job named by --job-name, keeping its state
  --transform-name-mappings MAP  with --update: OLD=NEW,... renamed transforms
  --gcloud-arg ARG               one more argument for gcloud dataflow flex-template run, repeatable,
                                 e.g. --gcloud-arg=--subnetwork=regions/us-central1/subnetworks/ch
                                      --gcloud-arg=--service-account-email=SA --gcloud-arg=--max-workers=5
  --dry-run                      print the command (password hidden) instead of running it
  -h, --help                     print this help and exit

Example:
  CLICKHOUSE_PASSWORD=... flex-template/run.sh --project my-project --region us-central1 \
      --bucket my-dataflow-bucket -- \
      inputSubscription=projects/my-project/subscriptions/events-sub \
      clickHouseUrl=https://abc123.us-central1.gcp.clickhouse.cloud:8443 \
      clickHouseDatabase=default clickHouseTable=events clickHouseUsername=default \
      clickHouseDeadLetterTable=events_dead_letter windowSeconds=10
EOF
}

die() {
  echo "run.sh: $*" >&2
  echo "Run flex-template/run.sh --help for the usage." >&2
  exit 2
}

project="" region="" bucket="" job_name="" template_path="templates/pubsub-to-clickhouse.json"
staging_location="" temp_location="" update=0 transform_name_mappings="" dry_run=0
gcloud_args=() params=()

need() { [[ -n "${2-}" && "${2-}" != --* ]] || die "$1 needs a value"; }

# The template parameters, checked against metadata.json: a name the template does not declare
# would make the launcher's flag parsing fail only once the launch has started.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
known=$(sed -n 's/^ *"name": "\([A-Za-z][A-Za-z0-9]*\)",\{0,1\}$/\1/p' "$root/metadata.json")
[[ -n $known ]] || die "no parameter names found in $root/metadata.json"

# A template parameter written as the binary's flag (--clickHouseUrl=..., or -name VALUE): say
# that this script takes NAME=VALUE, naming the parameter but not its value (a password).
dashed_param() {
  local name=${1#-}
  name=${name#-}
  name=${name%%=*}
  grep -Fqx -- "$name" <<<"$known" || return 0
  die "${1%%=*}: this script takes template parameters as NAME=VALUE, without dashes: $name=VALUE (the binary's --$name=VALUE form is for local runs)"
}

# shown is how an error names the argument $1 that follows the argument $2: as it is, unless $2
# is a parameter whose value can hold a password (clickHousePassword=, or a URL's user:password@
# in clickHouseUrl=, or a key's text in clickHouseClientKey=): then $1 may be the rest of that
# value, which the shell split at a space because it was not quoted, and is not shown.
shown() {
  if [[ ${2-} =~ ^(clickHousePassword|clickHouseUrl|clickHouseClientKey)= ]]; then
    echo "the argument after ${2%%=*}=... (not shown: it may be the rest of that value; quote a value with spaces as one argument, '${2%%=*}=a b')"
  else
    echo "$1"
  fi
}

prev=""
while (($#)); do
  arg=$1
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --project) need "$1" "${2-}"; project=$2; shift 2 ;;
    --project=*) project=${1#*=}; shift ;;
    --region) need "$1" "${2-}"; region=$2; shift 2 ;;
    --region=*) region=${1#*=}; shift ;;
    --bucket) need "$1" "${2-}"; bucket=$2; shift 2 ;;
    --bucket=*) bucket=${1#*=}; shift ;;
    --job-name) need "$1" "${2-}"; job_name=$2; shift 2 ;;
    --job-name=*) job_name=${1#*=}; shift ;;
    --template-path) need "$1" "${2-}"; template_path=$2; shift 2 ;;
    --template-path=*) template_path=${1#*=}; shift ;;
    --staging-location) need "$1" "${2-}"; staging_location=$2; shift 2 ;;
    --staging-location=*) staging_location=${1#*=}; shift ;;
    --temp-location) need "$1" "${2-}"; temp_location=$2; shift 2 ;;
    --temp-location=*) temp_location=${1#*=}; shift ;;
    --update) update=1; shift ;;
    --transform-name-mappings) need "$1" "${2-}"; transform_name_mappings=$2; shift 2 ;;
    --transform-name-mappings=*) transform_name_mappings=${1#*=}; shift ;;
    --gcloud-arg) [[ -n "${2-}" ]] || die "--gcloud-arg needs a value"; gcloud_args+=("$2"); shift 2 ;;
    --gcloud-arg=*) gcloud_args+=("${1#*=}"); shift ;;
    --dry-run) dry_run=1; shift ;;
    --) shift; params+=("$@"); break ;;
    -*) dashed_param "$1"; die "unknown option: $(shown "${1%%=*}" "$prev")" ;;
    *=*) params+=("$1"); shift ;;
    *) die "not an option nor a NAME=VALUE template parameter: $(shown "$1" "$prev")" ;;
  esac
  prev=$arg
done

[[ -n $project ]] || die "--project is required"
[[ -n $region ]] || die "--region is required"
[[ -n $bucket ]] || die "--bucket is required"
bucket=${bucket#gs://}
bucket=${bucket%/}
[[ $bucket != */* ]] || die "--bucket takes a bucket name, not a path: $bucket (use --template-path for the object path)"
template_path=${template_path#/}
staging_location=${staging_location:-gs://$bucket/staging}
temp_location=${temp_location:-gs://$bucket/tmp}
if ((update)) && [[ -z $job_name ]]; then
  die "--update needs --job-name, the name of the running job to replace"
fi
if [[ -n $transform_name_mappings ]] && ((!update)); then
  die "--transform-name-mappings is only for --update"
fi
job_name=${job_name:-pubsub-to-clickhouse-$(date -u +%Y%m%d-%H%M%S)}
[[ $job_name =~ ^[a-z]([-a-z0-9]*[a-z0-9])?$ ]] ||
  die "--job-name must be lowercase letters, digits and hyphens, start with a letter and not end with a hyphen: $job_name"

have_password=0
prev=""
for p in ${params[@]+"${params[@]}"}; do
  [[ $p != -* ]] || dashed_param "$p"
  [[ $p == *=* ]] || die "not a NAME=VALUE template parameter: $(shown "$p" "$prev")"
  name=${p%%=*}
  if ! grep -Fqx -- "$name" <<<"$known"; then
    # The binary's own parameter of local runs, and a name in another letter case: say which.
    [[ $name != stopAfterIdle ]] ||
      die "stopAfterIdle is for local runs only: a Dataflow job runs until it is drained (gcloud dataflow jobs drain JOB_ID); leave it out"
    near=$(grep -Fix -- "$name" <<<"$known" | head -n 1 || true) # none: grep's status 1 would end the script (set -e)
    [[ -z $near ]] || die "unknown template parameter: $(shown "$name" "$prev"): did you mean $near? (names are case-sensitive)"
    die "unknown template parameter: $(shown "$name" "$prev") (the parameters: $(tr "\n" " " <<<"$known"))"
  fi
  [[ $name != clickHousePassword ]] || have_password=1
  prev=$p
done
if ((!have_password)) && [[ -n ${CLICKHOUSE_PASSWORD+set} ]]; then
  params+=("clickHousePassword=$CLICKHOUSE_PASSWORD")
fi
((${#params[@]})) || die "no template parameters given (NAME=VALUE arguments)"

# gcloud splits --parameters at commas unless the value starts with ^DELIM^: pick a delimiter that
# no parameter holds.
delimiter=""
for d in "," "~" "|" ";" "#" "!" "@@"; do
  clash=0
  for p in "${params[@]}"; do
    [[ $p != *"$d"* ]] || { clash=1; break; }
  done
  if ((!clash)); then delimiter=$d; break; fi
done
[[ -n $delimiter ]] || die "every candidate delimiter appears in a parameter value; pass --parameters to gcloud yourself"
# The command as printed hides what the binary's own logs hide: the password, in its parameter
# and wherever else it appears (unless it is a Secret Manager version's name), the password of a
# URL's user:password@, the value of a URL option whose name says it holds a secret, the
# userinfo of an http_proxy option's proxy, and a certificate's or key's text given in place of
# its name (PEM, or 64 or more characters of base64 starting with M).
# key_text tells whether a value holds a certificate's or a key's text rather than its name, as
# the binary's secret.KeyText does: PEM, or 64 or more characters of base64 starting with M once
# white space, written-out \n and \r, and quotes are left out.
key_text() {
  local v=$1
  [[ $v != *-----BEGIN* ]] || return 0
  v=${v//\\n/}
  v=${v//\\r/}
  v=${v//[[:space:]\"\']/}
  [[ $v =~ ^M[A-Za-z0-9+/=]{63,}$ ]]
}
# is_version tells whether a value is a Secret Manager secret version's name, which is no password
# and shows as it is (as in the binary's logs); any other value of clickHousePassword is hidden.
is_version() { [[ $1 =~ ^projects/[^/[:space:]]+/secrets/[^/[:space:]]+/versions/[^/[:space:]]+$ ]]; }
password=""
for p in "${params[@]}"; do
  [[ $p != clickHousePassword=* ]] || password=${p#clickHousePassword=}
done
! is_version "$password" || password=""
joined=""
shown=""
for p in "${params[@]}"; do
  show=$p
  if [[ $p == clickHousePassword=?* ]]; then
    is_version "${p#clickHousePassword=}" || show="clickHousePassword=xxxxx"
  elif [[ $p =~ ^(clickHouseClientKey|clickHouseClientCertificate|clickHouseCaCertificate)= ]] && key_text "${p#*=}"; then
    show="${p%%=*}=xxxxx"
  else
    [[ -z $password ]] || show=${show//"$password"/xxxxx}
    show=$(sed -E -e 's#^([^=]*=[A-Za-z][A-Za-z0-9+.-]*://[^:/?@]*:).*@#\1xxxxx@#' \
      -e 's#([?&][Hh][Tt][Tt][Pp]_[Pp][Rr][Oo][Xx][Yy]=)[^&]*(@|%40)#\1xxxxx\2#g' \
      -e 's#([?&][^=&]*([Pp][Aa][Ss][Ss]|[Pp][Ww][Dd]|[Ss][Ee][Cc][Rr][Ee][Tt]|[Tt][Oo][Kk][Ee][Nn]|[Aa][Uu][Tt][Hh]|[Cc][Rr][Ee][Dd][Ee][Nn][Tt][Ii][Aa][Ll])[^=&]*=)[^&]*#\1xxxxx#g' <<<"$show")
  fi
  joined+=${joined:+$delimiter}$p
  shown+=${shown:+$delimiter}$show
done
if [[ $delimiter != "," ]]; then
  joined="^$delimiter^$joined"
  shown="^$delimiter^$shown"
fi

cmd=(gcloud dataflow flex-template run "$job_name"
  --project "$project"
  --region "$region"
  --template-file-gcs-location "gs://$bucket/$template_path"
  --staging-location "$staging_location"
  --temp-location "$temp_location")
if ((update)); then
  cmd+=(--update)
  [[ -z $transform_name_mappings ]] || cmd+=(--transform-name-mappings "$transform_name_mappings")
fi
cmd+=(${gcloud_args[@]+"${gcloud_args[@]}"})

printf '+'
printf ' %q' "${cmd[@]}" --parameters "$shown"
printf '\n'
if ((!dry_run)); then
  "${cmd[@]}" --parameters "$joined"
fi
