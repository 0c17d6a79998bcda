# The commands a developer and CI use. `make test` is the test command of the README and .ci/run.
GO ?= go
SHELL := /bin/bash

.PHONY: test test-modern unit check bench bench-parse bench-e2e-clickhouse bench-sdk bench-dataflow-shape fuzz clickhouse clickhouse-stop clickhouse-modern clickhouse-modern-stop emulator emulator-stop build demo bench-e2e

# Starts a ClickHouse server on loopback when none answers (scripts/clickhouse.sh), then runs every
# test: unit tests, pipeline tests on prism, and the end-to-end tests against the server; then the
# tests of the HTTP stand-in over the ClickHouse 26 engine (test-modern). The binary is built first
# (build): the end-to-end tests build it again as the Dockerfile does, and then find its packages
# compiled, rather than compile them while every package's tests run beside.
test: clickhouse check build
	$(GO) test -count=1 -timeout 30m ./...
	@$(MAKE) --no-print-directory test-modern

# The HTTP stand-in's own tests (integration_test/chmodern, build tag chdb: its package loads the
# engine's library when it starts), when the library is installed (scripts/chdb.sh install; .ci/run
# does). Without it they do not run, and say so (a failure under CI=true); the end-to-end tests on
# the engine (chtest.StartModern) skip in the same way.
test-modern:
	@if lib=$$(scripts/chdb.sh path 2>/dev/null); then \
	  echo "CHDB_LIB_PATH=$$lib $(GO) test -count=1 -tags chdb ./integration_test/chmodern/"; \
	  CHDB_LIB_PATH=$$lib $(GO) test -count=1 -tags chdb ./integration_test/chmodern/; \
	else \
	  echo "make test: the ClickHouse 26 engine is not installed, so the tests on it did not run (the HTTP stand-in's, in integration_test/chmodern) or skipped (TestModernCorpus): install it with scripts/chdb.sh install (npm, 178 MB)"; \
	  if [ "$${CI:-}" = true ]; then exit 1; fi; \
	fi

# Only the tests that need no server.
unit:
	$(GO) test -count=1 ./transforms/chtype/ ./transforms/convert/ ./transforms/chclient/ ./transforms/secret/ ./transforms/udf/ ./pipeline/

check:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags chdb ./integration_test/chmodern/

bench:
	$(GO) test -run=NONE -bench=. -benchmem ./transforms/...

# The converter against ClickHouse's own single-threaded JSONEachRow parse, side by side on the same
# files (the demo events, the Wikipedia edits): rows per CPU-second of each and the ratio, min and
# median of RUNS rounds (default 7). See scripts/parse-vs-clickhouse.sh.
bench-parse: clickhouse
	scripts/parse-vs-clickhouse.sh

# The whole pipeline (the binary on the local runner, a Pub/Sub emulator, the INSERTs) against
# ClickHouse's single-threaded JSONEachRow parse of the same corpus (wikipedia_edits five times
# over): CPU-seconds per 100,000 messages of each and the ratio, min and median of RUNS rounds
# (default 3). See scripts/pipeline-vs-clickhouse.sh.
bench-e2e-clickhouse: clickhouse build
	scripts/pipeline-vs-clickhouse.sh

# The SDK side apart from the runner: prism as its own process, the binary submitting to it (what
# a Dataflow worker runs is the binary's process); CPU-seconds per 100,000 demo messages of each,
# then of wikipedia_edits x5 beside ClickHouse's single-threaded JSONEachRow parse and their
# ratio; min and median of RUNS rounds (default 3), and with BEFORE=<binary> that build beside it
# in the same rounds. Each also runs the first BASELINE messages (default 5,000) alone, and prints
# beside the whole figure what each message costs beyond them, without what a run costs once
# (start, job submission, the idle wait). See scripts/sdk-vs-runner.sh and
# scripts/pipeline-vs-clickhouse.sh.
BASELINE ?= 5000
bench-sdk: clickhouse build
	BASELINE=$(BASELINE) scripts/sdk-vs-runner.sh
	BASELINE=$(BASELINE) OWN_RUNNER=1 scripts/pipeline-vs-clickhouse.sh

# The SDK side in the shape Dataflow gives it (one element per message, handed over by the runner)
# beside the local runner's shape (the demo): CPU-seconds per 100,000 demo messages, min and median
# of RUNS rounds (default 3). See scripts/dataflow-shape.sh and integration_test/dataflowshape.
bench-dataflow-shape: clickhouse build
	scripts/dataflow-shape.sh

# The version that --version and the start-up log give: the commit, with -dirty for a modified
# tree (without git, the toolchain's own record of the build, or "devel").
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)

build:
	@echo "building bin/pubsub-to-clickhouse (the first build compiles the Beam SDK and takes a few minutes)"
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o bin/pubsub-to-clickhouse ./flex-template

# The main job on realistic data, on this machine only: ClickHouse on loopback, a Pub/Sub emulator,
# 100,000 web/app events (2% malformed), the pipeline on the local runner until idle, a summary.
# DATABASE=name gives it a database of its own (default pubsub_to_clickhouse_demo, dropped and
# created again at each run; a second demo on a database in use stops at once).
demo: clickhouse build
	$(GO) run ./integration_test/demo -binary bin/pubsub-to-clickhouse -messages $${MESSAGES:-100000} -database $${DATABASE:-pubsub_to_clickhouse_demo} \
		-pipeline-flags "--batchRowCount=5000 --windowSeconds=5 $${FLAGS:-}"

# Throughput of the whole pipeline: 200,000 demo messages; prints messages per second, the
# pipeline process's CPU seconds per 100,000 messages and its peak memory, and fails above 512 MiB.
# With BEFORE=<binary>, that build beside this one in RUNS rounds (default 3), with the ratio of
# the two in each round (scripts/e2e-vs-before.sh).
bench-e2e: clickhouse build
	@if [ -n "$${BEFORE:-}" ]; then scripts/e2e-vs-before.sh; else \
	  $(GO) run ./integration_test/demo -binary bin/pubsub-to-clickhouse -messages 200000 -max-rss-mib 512; fi

clickhouse:
	@scripts/clickhouse.sh install
	@scripts/clickhouse.sh start

clickhouse-stop:
	@scripts/clickhouse.sh stop

# A Pub/Sub emulator in the background on 127.0.0.1:8085 (PUBSUB_EMULATOR_PORT), built as
# bin/emulator, its pid file and log in /tmp/pubsub-to-clickhouse-emulator (EMULATOR_DIR); it prints
# the export line of PUBSUB_EMULATOR_HOST. emulator-stop stops it (scripts/emulator.sh).
emulator:
	@scripts/emulator.sh start

emulator-stop:
	@scripts/emulator.sh stop

# ClickHouse's HTTP interface served by the ClickHouse 26 engine (integration_test/chmodern), in the
# background on 127.0.0.1:18123 (CHMODERN_PORT), tables in /tmp/pubsub-to-clickhouse-chmodern
# (CHMODERN_DIR); installs the engine first (scripts/chdb.sh install: 178 MB the first time).
clickhouse-modern:
	@scripts/chdb.sh install >/dev/null
	@scripts/chdb.sh start

clickhouse-modern-stop:
	@scripts/chdb.sh stop

# Fuzz the payload parser and converters (FUZZTIME=10m for a long run). A short minimize time keeps
# the fuzzer from stalling for a minute on each new input.
FUZZTIME ?= 60s
fuzz:
	$(GO) test -run=NONE -fuzz=FuzzConvert -fuzztime=$(FUZZTIME) -fuzzminimizetime=2s ./transforms/convert/
	$(GO) test -run=NONE -fuzz=FuzzDecode -fuzztime=$(FUZZTIME) -fuzzminimizetime=2s ./transforms/pubsubio/
