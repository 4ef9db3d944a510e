# tideline's entry points. `make run` and `make test` are the README's two
# commands; both install what they need first.
SHELL := /bin/bash
GO ?= go
CONFIG ?= config.example.yaml
# Integration tests start real services; give the whole run room but a bound.
TEST_TIMEOUT ?= 45m

.PHONY: all tools build run run-sim simchain worker migrate test vet bench-scheduler bench-simchain clean bench-e2e

all: build

## tools: install ClickHouse, anvil, the Temporal dev server and geth (skips what is there)
tools:
	./scripts/install-tools.sh

## build: the indexer binary in bin/
build:
	$(GO) build -o bin/indexer ./app/indexer

## run: start Temporal, ClickHouse, anvil, a load generator and the worker; Ctrl-C stops all
run: tools
	$(GO) run ./app/indexer dev --config $(CONFIG)

## run-sim: the same stack on the simulated chain, BACKLOG heights behind its head (watch the catch-up in the Temporal UI)
BACKLOG ?= 200000
run-sim: tools
	$(GO) run ./app/indexer dev --config $(CONFIG) --chain sim --backlog $(BACKLOG)

## simchain: serve the simulated chain alone on 127.0.0.1:8545 (see `indexer simchain --help`)
simchain:
	$(GO) run ./app/indexer simchain

## worker / migrate: against services named in $(CONFIG)
worker:
	$(GO) run ./app/indexer worker --config $(CONFIG)
migrate:
	$(GO) run ./app/indexer migrate --config $(CONFIG)

## test: vet, then every test (unit and integration on real services) under the race detector
test: tools vet
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...

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
