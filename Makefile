# The commands a developer and CI use. `make test` is the test command of the README and .ci/run.
GO ?= go
SHELL := /bin/bash

.PHONY: test unit check bench fuzz clickhouse clickhouse-stop build

# Starts a ClickHouse server on loopback when none answers (scripts/clickhouse.sh), then runs every
# test: unit tests, pipeline tests on prism, and the end-to-end tests against the server.
test: clickhouse check
	$(GO) test -count=1 -timeout 30m ./...

# Only the tests that need no server.
unit:
	$(GO) test -count=1 ./transforms/chtype/ ./transforms/convert/ ./pipeline/

check:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...

bench:
	$(GO) test -run=NONE -bench=. -benchmem ./transforms/...

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/pubsub-to-clickhouse ./flex-template

clickhouse:
	@scripts/clickhouse.sh install
	@scripts/clickhouse.sh start

clickhouse-stop:
	@scripts/clickhouse.sh stop

# Fuzz the payload parser and converters (FUZZTIME=10m for a long run). A short minimize time keeps
# the fuzzer from stalling for a minute on each new input.
FUZZTIME ?= 60s
fuzz:
	$(GO) test -run=NONE -fuzz=FuzzConvert -fuzztime=$(FUZZTIME) -fuzzminimizetime=2s ./transforms/convert/
