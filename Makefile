# BoxOffice: one Makefile for the whole go.work workspace.
# `make up` runs the system in one process; `make test` runs every module's tests.

GO          ?= go
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Every package of every workspace module, e.g. boxoffice.dev/platform/...
MODULES     := $(shell $(GO) list -m -f '{{.Path}}/...')
# Concurrency-heavy modules run under the race detector: the gateway's benchmark with it.
RACE        := boxoffice.dev/platform/... boxoffice.dev/gateway/... boxoffice.dev/tools/bench-gateway/...
# Whole-system tests (boxoffice up, the scenarios, the browser) measure latency: they run
# last and alone, so other packages' builds and tests do not share their two cores.
SYSTEM      := boxoffice.dev/cmd/boxoffice/...
# A module nested under one of those patterns (tools/bench-gateway/fastproxy) is in its set.
PLAIN       := $(filter-out $(RACE:...=%) $(SYSTEM:...=%),$(MODULES))

.PHONY: up test test-race test-plain test-system lint fmt vet staticcheck deps-check deps-sync modules-check generate proto graphql generate-check bench bench-gateway tidy build

# `make up` builds the CLI into a cache directory and then runs it, saying so first: the first
# build compiles the whole system and takes a minute or two.
BOXOFFICE_BIN ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/boxoffice/boxoffice

up: ## run every component in one process (Ctrl-C stops it); UP_ARGS="--port-offset 5000" for a second copy
	@echo "building boxoffice (first build takes a minute or two)…"
	$(GO) build -o $(BOXOFFICE_BIN) ./cmd/boxoffice
	exec $(BOXOFFICE_BIN) up $(UP_ARGS)

test: test-plain test-race test-system ## run every module's tests

test-plain:
	$(GO) test -count=1 $(PLAIN)

test-race:
	$(GO) test -count=1 -race $(RACE)

test-system:
	$(GO) test -count=1 -p 1 $(SYSTEM)

build: ## compile every deployable
	$(GO) build $(MODULES)

lint: fmt vet staticcheck deps-check ## gofmt, go vet, staticcheck, dependency versions in step

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(MODULES)

staticcheck:
	$(STATICCHECK) $(MODULES)

deps-check: ## every module requires the same version of a shared dependency
	sh scripts/deps-check.sh

deps-sync: ## raise every module to the highest version of each shared dependency
	sh scripts/deps-sync.sh

modules-check: ## every module builds and vets alone (GOWORK=off): its go.mod declares the siblings it imports
	GO=$(GO) bash scripts/modules-check

generate: proto graphql ## regenerate all generated code

proto: ## regenerate the gRPC code from proto/*.proto
	cd proto && $(GO) generate ./...

graphql: ## regenerate the BFFs' GraphQL code from their schemas (gqlgen)
	cd bff-web && $(GO) generate ./...
	cd bff-mobile && $(GO) generate ./...

generate-check: generate ## fail when regenerating changes the committed code
	@git diff --exit-code --stat -- proto bff-web/graph bff-mobile/graph || (echo "generated code is stale: run 'make generate' and commit"; exit 1)

bench: ## rate limiter benchmarks against a real redis-server (prints a table)
	$(GO) test -run '^$$' -bench . -benchtime 2000x ./gateway/ratelimit/

bench-gateway: ## the gateway next to a direct call and nginx on loopback (BENCH_ARGS=-markdown for docs/benchmarks.md)
	sh scripts/bench-gateway.sh $(BENCH_ARGS)

tidy: ## align every module's requirements with the workspace's build list
	$(GO) work sync
	sh scripts/deps-sync.sh
