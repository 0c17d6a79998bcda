#!/usr/bin/env bash
# Builds the Flex Template image from the repository's Dockerfile, pushes it to Artifact Registry,
# and stages the template spec in Cloud Storage. See docs/deploy.md. Run with --help for the usage.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: flex-template/build.sh --project PROJECT --region REGION --bucket BUCKET --repository REPOSITORY [options]

Builds the Flex Template image of pubsub-to-clickhouse from the repository's Dockerfile (with Cloud
Build, or with the local Docker engine when --docker is given), pushes it to the Artifact Registry
repository, and stages the template spec with

  gcloud dataflow flex-template build gs://BUCKET/templates/pubsub-to-clickhouse.json \
      --image IMAGE --sdk-language GO --metadata-file metadata.json

then restores in the staged spec the streaming fields of metadata.json (streaming,
supportsAtLeastOnce, supportsExactlyOnce, defaultStreamingMode) when gcloud left them out.

The image is REGION-docker.pkg.dev/PROJECT/REPOSITORY/pubsub-to-clickhouse:TAG.

Required:
  --project PROJECT              Google Cloud project of the repository and the bucket
  --region REGION                region of the repository, e.g. us-central1
  --bucket BUCKET                bucket for the template spec, as NAME or gs://NAME
  --repository REPOSITORY        Artifact Registry Docker repository (created beforehand)

Options:
  --repository-location LOC      location of the repository when it is not REGION (e.g. us)
  --image-name NAME              image name in the repository (default pubsub-to-clickhouse)
  --tag TAG                      image tag (default: the git commit when clean, else a UTC time stamp)
  --template-path PATH           object path of the spec in the bucket
                                 (default templates/pubsub-to-clickhouse.json)
  --launcher-tag TAG             tag of the launcher base image
                                 gcr.io/dataflow-templates-base/go-template-launcher-base
                                 (default latest, which Google recommends); the script checks
                                 that the image exists before it builds
  --docker                       build and push with the local Docker engine (needs
                                 `gcloud auth configure-docker LOC-docker.pkg.dev` once)
  --dry-run                      print the commands instead of running them
  -h, --help                     print this help and exit

Example:
  flex-template/build.sh --project my-project --region us-central1 \
      --bucket my-dataflow-bucket --repository dataflow-templates
EOF
}

die() {
  echo "build.sh: $*" >&2
  echo "Run flex-template/build.sh --help for the usage." >&2
  exit 2
}

project="" region="" bucket="" repository="" repository_location=""
image_name="pubsub-to-clickhouse" tag="" template_path="templates/pubsub-to-clickhouse.json"
launcher_tag="latest" use_docker=0 dry_run=0

# need NAME VALUE: fails when an option has no value.
need() { [[ -n "${2-}" && "${2-}" != --* ]] || die "$1 needs a value"; }

while (($#)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --project) need "$1" "${2-}"; project=$2; shift 2 ;;
    --project=*) project=${1#*=}; shift ;;
    --region) need "$1" "${2-}"; region=$2; shift 2 ;;
    --region=*) region=${1#*=}; shift ;;
    --bucket) need "$1" "${2-}"; bucket=$2; shift 2 ;;
    --bucket=*) bucket=${1#*=}; shift ;;
    --repository) need "$1" "${2-}"; repository=$2; shift 2 ;;
    --repository=*) repository=${1#*=}; shift ;;
    --repository-location) need "$1" "${2-}"; repository_location=$2; shift 2 ;;
    --repository-location=*) repository_location=${1#*=}; shift ;;
    --image-name) need "$1" "${2-}"; image_name=$2; shift 2 ;;
    --image-name=*) image_name=${1#*=}; shift ;;
    --tag) need "$1" "${2-}"; tag=$2; shift 2 ;;
    --tag=*) tag=${1#*=}; shift ;;
    --template-path) need "$1" "${2-}"; template_path=$2; shift 2 ;;
    --template-path=*) template_path=${1#*=}; shift ;;
    --launcher-tag) need "$1" "${2-}"; launcher_tag=$2; shift 2 ;;
    --launcher-tag=*) launcher_tag=${1#*=}; shift ;;
    --docker) use_docker=1; shift ;;
    --dry-run) dry_run=1; shift ;;
    *) die "unknown argument: $1" ;;
  esac
done

[[ -n $project ]] || die "--project is required"
[[ -n $region ]] || die "--region is required"
[[ -n $bucket ]] || die "--bucket is required"
[[ -n $repository ]] || die "--repository is required"
bucket=${bucket#gs://}
bucket=${bucket%/}
[[ $bucket != */* ]] || die "--bucket takes a bucket name, not a path: $bucket (use --template-path for the object path)"
template_path=${template_path#/}
repository_location=${repository_location:-$region}

# The repository root: the Docker build context, where Dockerfile and metadata.json are.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
[[ -f Dockerfile && -f metadata.json ]] || die "Dockerfile or metadata.json missing in $root"

if [[ -z $tag ]]; then
  if git -C "$root" rev-parse --short=12 HEAD >/dev/null 2>&1 && [[ -z $(git -C "$root" status --porcelain 2>/dev/null) ]]; then
    tag=$(git -C "$root" rev-parse --short=12 HEAD)
  else
    tag=$(date -u +%Y%m%d-%H%M%S)
  fi
fi

image="${repository_location}-docker.pkg.dev/${project}/${repository}/${image_name}:${tag}"
spec="gs://${bucket}/${template_path}"

# run prints the command (quoted for a shell) and runs it, unless --dry-run.
run() {
  printf '+'
  printf ' %q' "$@"
  printf '\n'
  if ((!dry_run)); then
    "$@"
  fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "Image:    $image"
echo "Template: $spec"

# 0. The launcher base image: it must exist before the build starts (a wrong tag otherwise fails
# only inside Cloud Build, after the upload).
launcher_repo=gcr.io/dataflow-templates-base/go-template-launcher-base
launcher_image="$launcher_repo:$launcher_tag"
[[ $launcher_tag =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || die "--launcher-tag $launcher_tag is not a Docker tag"
echo "Launcher: $launcher_image"
# check_launcher asks, with the first of gcloud, docker and crane found, whether the image exists.
check_launcher() {
  local how out
  if command -v gcloud >/dev/null; then
    how=(gcloud container images describe "$launcher_image" "--format=value(image_summary.digest)")
  elif command -v docker >/dev/null; then
    how=(docker manifest inspect "$launcher_image")
  elif command -v crane >/dev/null; then
    how=(crane digest "$launcher_image")
  else
    echo "build.sh: cannot check that $launcher_image exists: none of gcloud, docker and crane is installed" >&2
    exit 1
  fi
  printf '+'
  printf ' %q' "${how[@]}"
  printf '\n'
  if ((dry_run)); then return 0; fi
  if ! out=$("${how[@]}" 2>&1 >/dev/null); then
    if [[ ${how[0]} == gcloud && $out == *"gcloud auth login"* ]]; then
      # No account, or its tokens expired: the image is fine, the tag too.
      cat >&2 <<EOF
build.sh: gcloud is not logged in, so it cannot read $launcher_image, nor build or stage
anything (gcloud said: ${out//$'\n'/ }).
Log in with
  gcloud auth login
then run build.sh again.
EOF
      exit 1
    fi
    cat >&2 <<EOF
build.sh: the launcher base image $launcher_image does not exist, or cannot be read with these
credentials (${how[0]} said: ${out//$'\n'/ }).
List its tags with
  gcloud container images list-tags $launcher_repo
and give one with --launcher-tag TAG, or leave --launcher-tag out for latest, which Google
recommends (https://cloud.google.com/dataflow/docs/reference/flex-templates-base-images).
EOF
    exit 1
  fi
}
check_launcher

# 1. The image.
if ((use_docker)); then
  run docker build --platform linux/amd64 --build-arg "LAUNCHER_TAG=$launcher_tag" -t "$image" .
  run docker push "$image"
else
  # gcloud builds submit --tag takes no build arguments: a one-step build configuration does.
  cat >"$tmp/cloudbuild.yaml" <<EOF
steps:
  - name: gcr.io/cloud-builders/docker
    args: ["build", "--build-arg", "LAUNCHER_TAG=$launcher_tag", "-t", "$image", "."]
images: ["$image"]
EOF
  if ((dry_run)); then sed 's/^/  | /' "$tmp/cloudbuild.yaml"; fi
  run gcloud builds submit --project "$project" --config "$tmp/cloudbuild.yaml" .
fi

# 2. The template spec.
run gcloud dataflow flex-template build "$spec" \
  --project "$project" \
  --image "$image" \
  --sdk-language GO \
  --metadata-file metadata.json

# 3. Some gcloud releases copy only name, description and parameters of the metadata file into the
# spec; the streaming fields tell the console that the template is streaming and which streaming
# modes it supports. Put them back when they are missing.
merge_streaming_fields() { # SPEC_IN SPEC_OUT
  if command -v jq >/dev/null; then
    jq --slurpfile m metadata.json \
      '.metadata += ($m[0] | with_entries(select(.key == "streaming" or .key == "supportsAtLeastOnce" or .key == "supportsExactlyOnce" or .key == "defaultStreamingMode")))' \
      "$1" >"$2"
  elif command -v python3 >/dev/null; then
    python3 - "$1" "$2" <<'EOF'
import json, sys
spec = json.load(open(sys.argv[1]))
meta = json.load(open("metadata.json"))
keys = ("streaming", "supportsAtLeastOnce", "supportsExactlyOnce", "defaultStreamingMode")
spec.setdefault("metadata", {}).update({k: meta[k] for k in keys if k in meta})
json.dump(spec, open(sys.argv[2], "w"), indent=4, sort_keys=True)
EOF
  else
    echo "build.sh: neither jq nor python3 found; the staged spec may lack the streaming fields of metadata.json" >&2
    return 1
  fi
}

if ((dry_run)); then
  echo "+ (if the staged spec lacks the streaming fields of metadata.json: add them and upload it again with gcloud storage cp)"
else
  gcloud storage cat --project "$project" "$spec" >"$tmp/spec.json"
  if grep -q '"supportsAtLeastOnce"' "$tmp/spec.json"; then
    echo "The staged spec has the streaming fields."
  elif merge_streaming_fields "$tmp/spec.json" "$tmp/spec-streaming.json"; then
    run gcloud storage cp --project "$project" "$tmp/spec-streaming.json" "$spec"
    echo "Added the streaming fields of metadata.json to the staged spec."
  fi
fi

echo "Done. Run a job with: flex-template/run.sh --project $project --region $region --bucket $bucket [--] NAME=VALUE..."
