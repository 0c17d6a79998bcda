# The Flex Template image: the Dataflow Go template launcher and the pipeline's binary.
#
# Build it from the repository root (flex-template/build.sh does, with Cloud Build or Docker):
#
#   docker build --platform linux/amd64 -t IMAGE .
#
# The launcher (/opt/google/dataflow/go_template_launcher, from Google's Go launcher base image)
# runs the binary named by FLEX_TEMPLATE_GO_BINARY with the template parameters as flags
# (--name=value); the binary builds the pipeline and submits it to Dataflow, and is also staged as
# the workers' binary (main.go sets --worker_binary to itself), hence linux/amd64 and static.
#
# The launcher's tag is the one build argument LAUNCHER_TAG. Its default is latest, the tag that
# Google's page of the base images calls the official release and recommends
# (https://cloud.google.com/dataflow/docs/reference/flex-templates-base-images), and the one that
# gcloud's own generated Dockerfile uses. To pin a release, give a tag the repository has:
#   docker build --build-arg LAUNCHER_TAG=TAG ...
# (tags: gcloud container images list-tags gcr.io/dataflow-templates-base/go-template-launcher-base;
# flex-template/build.sh --launcher-tag TAG checks that it exists before it builds).

ARG GO_IMAGE=golang:1.26
ARG LAUNCHER_TAG=latest

FROM ${GO_IMAGE} AS build
WORKDIR /src
# Modules first, so that the download is cached while only the code changes.
COPY go.mod go.sum ./
RUN go mod download
# Only the packages the binary is built from (flex-template/binary_test.go checks that these
# directories hold every package of the module that ./flex-template imports).
COPY flex-template/ flex-template/
COPY pipeline/ pipeline/
COPY transforms/ transforms/
# The build command is checked by flex-template/binary_test.go, which runs it: keep it on one line.
RUN CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o /out/pubsub-to-clickhouse ./flex-template

FROM gcr.io/dataflow-templates-base/go-template-launcher-base:${LAUNCHER_TAG}
COPY --from=build /out/pubsub-to-clickhouse /template/pubsub-to-clickhouse
ENV FLEX_TEMPLATE_GO_BINARY=/template/pubsub-to-clickhouse
ENTRYPOINT ["/opt/google/dataflow/go_template_launcher"]
