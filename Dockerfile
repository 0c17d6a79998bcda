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
# The launcher image is pinned to a dated release tag, so that a rebuild gets the launcher that
# was tested; choose another with
#   docker build --build-arg LAUNCHER_IMAGE=gcr.io/dataflow-templates-base/go-template-launcher-base:TAG ...
# (tags: gcloud container images list-tags gcr.io/dataflow-templates-base/go-template-launcher-base).

ARG GO_IMAGE=golang:1.26
ARG LAUNCHER_IMAGE=gcr.io/dataflow-templates-base/go-template-launcher-base:20250220-rc00

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

FROM ${LAUNCHER_IMAGE}
COPY --from=build /out/pubsub-to-clickhouse /template/pubsub-to-clickhouse
ENV FLEX_TEMPLATE_GO_BINARY=/template/pubsub-to-clickhouse
ENTRYPOINT ["/opt/google/dataflow/go_template_launcher"]
