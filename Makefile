# tideline's entry points. `make run` and `make test` are the README's two
# commands; both install what they need first.
SHELL := /bin/bash
GO ?= go
CONFIG ?= config.example.yaml
# Integration tests start real services; give the whole run room but a bound.
# With one core to run on (nproc follows taskset) the suite takes about
# twice as long, and its waits scale themselves (test/integration/pace_test.go).
TEST_TIMEOUT ?= $(shell [ "$$(nproc)" -ge 2 ] && echo 45m || echo 90m)

.PHONY: all tools tools-dev build run run-sim simchain worker migrate test test-stream-integration test-stream-units test-integration test-units test-modern modern-lanes modern-lane vet bench-scheduler bench-simchain clean bench-e2e bench-catchup bench-api

all: build

## tools: install ClickHouse, Prometheus (with promtool), anvil, the Temporal dev server and geth (skips what is there)
tools:
	./scripts/install-tools.sh

## tools-dev: only what `make run` needs (ClickHouse, Prometheus, anvil, the Temporal dev server)
tools-dev:
	./scripts/install-tools.sh --dev

## build: the indexer binary in bin/
build:
	$(GO) build -o bin/indexer ./app/indexer

## run: start Temporal, ClickHouse, anvil, a load generator and the worker; Ctrl-C stops all
run: tools-dev
	$(GO) run ./app/indexer dev --config $(CONFIG)

## run-sim: the same stack on the simulated chain, BACKLOG heights behind its head (watch the catch-up in the Temporal UI)
BACKLOG ?= 200000
run-sim: tools-dev
	$(GO) run ./app/indexer dev --config $(CONFIG) --chain sim --backlog $(BACKLOG)

## simchain: serve the simulated chain alone on 127.0.0.1:8545 (see `indexer simchain --help`)
simchain:
	$(GO) run ./app/indexer simchain

## worker / migrate: against services named in $(CONFIG)
worker:
	$(GO) run ./app/indexer worker --config $(CONFIG)
migrate:
	$(GO) run ./app/indexer migrate --config $(CONFIG)

## test: vet, then every test: the packages' own tests under the race detector on ClickHouse 18.16 and then on the modern engine's lanes, beside the integration package on real services
# Two streams share the two cores (docs/performance.md, "make test in
# half the time"): the integration package, the longest, starts at once;
# beside it every other package runs under -race on 18.16, then the
# modern lanes. The integration package runs without the race detector:
# what it runs in-process (worker, activities, workflows, storage, rpc,
# api, lifecycle, push, the jobs) is under -race in those packages' own
# tests, on the same real servers where they need them; here it cost a
# quarter of the suite's CPU. TEST_SYNC keeps each stream's output whole
# (testprofile sets it empty, to read the events as they come).
INTEGRATION_PKG = ./test/integration/
TEST_SYNC ?= --output-sync=target
# Test binaries are linked without DWARF (-w): a link under -race took
# 7.1 CPU-s with it and 5.0 without (pkg/api, three each), and make test
# links about sixty. Stack traces and race reports keep their file:line
# (they read the binary's line table, not DWARF); a debugger does not get
# them: build that binary by hand without TEST_LDFLAGS.
TEST_LDFLAGS ?= -ldflags=-w
test: tools vet
	@$(MAKE) --no-print-directory -j$(TEST_STREAMS) $(TEST_SYNC) test-stream-integration test-stream-units

# The two streams, each one test binary at a time (STREAM_P; go test's
# default, two on two cores, put three heavy processes on the two cores:
# the 24.8 lane's storage package took 675 s beside the integration
# package against 153 s after it, and activities of the integration tests
# ran into their deadlines, a reorganisation's repair cut in two;
# 2026-12-07). Each stream ends with one modern lane, so that neither
# core idles while the other stream finishes.
# With one core (nproc follows taskset) the streams run one after the
# other: side by side on one core, the integration tests' live chains fell
# minutes behind their nodes (a watermark 62 of 184 at the bound) and a
# paused scheduler had already started all of its catch-up (2026-12-07).
STREAM_P ?= 1
TEST_STREAMS ?= $(shell [ "$$(nproc)" -ge 2 ] && echo 2 || echo 1)
test-stream-integration:
	@$(MAKE) --no-print-directory test-integration
	@$(MAKE) --no-print-directory modern-lane LANE=chdb MODERN_P=$(STREAM_P)
test-stream-units:
	@$(MAKE) --no-print-directory test-units UNITS_P=$(STREAM_P)
	@$(MAKE) --no-print-directory modern-lane LANE=chdb-$(MODERN_COMPAT) MODERN_P=$(STREAM_P)

# Four of the integration tests that wait on clocks at once (README.md
# there, "Serial and parallel tests"); the serial ones run first. Two with
# one core: four there kept the core busy throughout, and the Temporal
# dev server took over three minutes to describe one Schedule at a test's
# end (2026-12-07).
INTEGRATION_PARALLEL ?= $(shell [ "$$(nproc)" -ge 2 ] && echo 4 || echo 2)
test-integration:
	$(GO) test $(TEST_LDFLAGS) -count=1 -parallel $(INTEGRATION_PARALLEL) $(GOTEST_FLAGS) -timeout $(TEST_TIMEOUT) $(INTEGRATION_PKG)

# Every package but the integration one, under the race detector, on
# ClickHouse 18.16 where they need one.
test-units:
	$(GO) test $(TEST_LDFLAGS) $(if $(UNITS_P),-p $(UNITS_P)) -race -count=1 $(GOTEST_FLAGS) -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v '/test/integration$$')

# The modern engine's lanes: every package whose tests talk to ClickHouse
# runs again on ClickHouse's modern engine (chDB over HTTP, test/chdbhttp),
# at the compatibility of the compose file's server (LANE=chdb-24.8) and
# at the engine's own defaults (LANE=chdb). The storage README says what
# these lanes cannot cover. They run the same Go code as the 18.16 run,
# which has the race detector on; here the engine is under test, so the
# detector's CPU is left out (the suite is bound by the CPU of two
# cores): MODERN_FLAGS=-race puts it back.
MODERN_FLAGS ?=
MODERN_PKGS ?= ./pkg/storage/ ./pkg/api/ ./pkg/apikeys/ ./pkg/stream/ ./pkg/indexer/activity/ ./pkg/indexer/lifecycle/
MODERN_COMPAT ?= 24.8
TOOLS_BIN = $(or $(TIDELINE_HOME),$(CURDIR)/.tideline)/bin

## test-modern: the modern lanes alone (chDB at compatibility MODERN_COMPAT, then at its own defaults)
test-modern: tools modern-lanes

modern-lanes:
	@$(MAKE) --no-print-directory modern-lane LANE=chdb-$(MODERN_COMPAT)
	@$(MAKE) --no-print-directory modern-lane LANE=chdb

modern-lane:
	@echo "==> modern lane: ClickHouse engine chdb $$($(TOOLS_BIN)/chdb-http -lib $(TOOLS_BIN)/libchdb.so -version), $(if $(filter chdb,$(LANE)),the engine's own defaults,compatibility = '$(patsubst chdb-%,%,$(LANE))') (HTTP)"
	TIDELINE_TEST_CLICKHOUSE=$(LANE) $(GO) test $(TEST_LDFLAGS) $(if $(MODERN_P),-p $(MODERN_P)) $(MODERN_FLAGS) -count=1 $(GOTEST_FLAGS) -timeout $(TEST_TIMEOUT) $(MODERN_PKGS)

vet:
	$(GO) vet ./...

## bench-scheduler: scheduling throughput of the SchedulerWorkflow in the SDK's test environment
bench-scheduler:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./pkg/indexer/workflow/

## bench-simchain: blocks/s the simulated chain serves with receipts, on one core
bench-simchain:
	$(GO) test -run '^$$' -bench . -cpu 1 ./pkg/simchain/

clean:
	rm -rf bin .tideline/dev

## bench-e2e: normal-operation scan latency and catch-up throughput on the real local stack
bench-e2e: tools
	$(GO) test -run '^$$' -bench HeadScanLiveBlocks -benchtime 20x -timeout 30m ./test/integration/
	$(GO) test -run '^$$' -bench CatchupEndToEnd -benchtime 1x -timeout 30m ./test/integration/

# bench-catchup knobs (docs/performance.md): N heights of backlog, TXS per
# block, LOGS per transaction, BLOCK_TIME, RANGE (scheduler.range_size; empty
# leaves the key out: the indexer's default), the push source by polls of
# the http endpoint unless POLL=0 (HeadScan alone) or PUSH=1 (websocket),
# TRACES=debug|parity to index the call traces (CALLS inner frames per
# contract transaction), SET="key=value ..." extra config, BENCH_TIMEOUT,
# BENCH_FLAGS (more flags).
N ?= 50000
TXS ?= 20
LOGS ?= 2
BLOCK_TIME ?= 2s
RANGE ?=
PUSH ?=
POLL ?= 1
TRACES ?=
CALLS ?= 3
SET ?=
BENCH_TIMEOUT ?= 60m
BENCH_FLAGS ?=

## bench-catchup: catch up N heights of a simulated chain on the real local stack; ends with one `catchup:` line
bench-catchup: tools
	$(GO) build -o bin/bench-catchup ./test/benchcatchup
	./bin/bench-catchup -n $(N) -txs $(TXS) -logs $(LOGS) -block-time $(BLOCK_TIME) -timeout $(BENCH_TIMEOUT) \
		$(if $(RANGE),-range $(RANGE)) $(if $(filter 1 true yes,$(PUSH)),-push) $(if $(filter 0 false no,$(POLL)),-poll=false) $(if $(TRACES),-set traces=$(TRACES)) \
		-calls-per-tx $(CALLS) $(foreach s,$(SET),-set $(s)) $(BENCH_FLAGS)

# bench-api knobs (docs/performance.md): API_N heights indexed first,
# API_REQUESTS per route, API_CONCURRENCY in flight; API_DIR keeps the run's
# folder and reuses an index already built there; API_TRACES=debug|parity
# indexes the call traces too and loads the trace routes; API_WARMUP
# requests go to each route first, untimed (numbered after the measured ones).
API_N ?= 100000
API_REQUESTS ?= 2000
API_CONCURRENCY ?= 8
API_DIR ?=
API_TRACES ?=
API_WARMUP ?= 0

## bench-api: index API_N heights of the simulated chain with the worker, then load each query API route on loopback; requests/s and p50/p99 per route
bench-api: tools
	$(GO) build -o bin/bench-api ./test/benchapi
	./bin/bench-api -n $(API_N) -requests $(API_REQUESTS) -concurrency $(API_CONCURRENCY) -timeout $(BENCH_TIMEOUT) \
		$(if $(API_DIR),-dir $(API_DIR)) $(if $(API_TRACES),-traces $(API_TRACES)) -warmup $(API_WARMUP) $(BENCH_FLAGS)
