# The two commands a newcomer needs: `make run` and `make test`.
GO ?= go
# TEST_TIMEOUT bounds each package's test binary: alone on a quiet 2-core machine the api package
# takes about 3 minutes under -race, cmd/agentplane about 2.
TEST_TIMEOUT ?= 20m
FUZZTIME ?= 5000x

# FUZZ lists the fuzz targets as package:target; `make fuzz` runs each for FUZZTIME, from the seeds
# committed with it (f.Add) and what it finds. The default is a count of executions, not a
# duration: Go 1.26's fuzzing coordinator may fail a run with "context deadline exceeded" when a
# duration ends while a worker is mid-input (golang/go#75804, fixed in Go 1.27), and a count has
# no deadline to race.
FUZZ = ./api/httpx:FuzzDecode ./api/httpx:FuzzSSE ./shared/adapters/safehttp:FuzzCheckURL ./shared/workflows:FuzzMatches \
	./shared/workflows:FuzzRender ./shared/memory/text:FuzzSplit ./shared/memory/text:FuzzExtractHTML

.PHONY: run test build vet fmt-check bench fuzz faults

## run: start the whole service on the embedded stack (agentplane dev)
run:
	$(GO) run ./cmd/agentplane dev

## test: every test, with the race detector, plus vet, gofmt and a short run of every fuzz target.
## Fuzzing instruments every package of a test binary: the targets live in packages whose test
## binaries build small (the api package's holds the whole service and its test stack, about
## 1,140 packages; api/httpx's 450).
## The tests share one embedded store that cmd/teststore runs built without the race detector
## (under it the store runs 5-8 times slower).
test: fmt-check vet
	$(GO) build -o bin/teststore ./cmd/teststore
	bin/teststore $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...
	$(MAKE) --no-print-directory fuzz

## fuzz: each fuzz target for FUZZTIME (make fuzz FUZZTIME=10m for a real search)
fuzz:
	@set -e; for t in $(FUZZ); do \
		echo "fuzz $${t#*:} ($${t%%:*}, $(FUZZTIME))"; \
		out=$$($(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) "$${t%%:*}" 2>&1) || { echo "$$out"; exit 1; }; \
	done

## faults: the fault suite's heavier variant (more clients, 15 s outages, every fault twice)
faults:
	$(GO) test -race -count=1 -timeout 30m -run '^TestFaultsUnderLoad$$' -v ./cmd/agentplane -args -faults.heavy

## build: bin/agentplane, static, without debug information or local paths (as deploy/Dockerfile builds it)
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags="-s -w" -o bin/agentplane ./cmd/agentplane

## vet: go vet, on packages built as the tests build them (-race), so that on a cold build cache
## `make test` compiles the dependencies once for both rather than once each
vet:
	$(GO) vet -race ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## bench: benchmarks; numbers go to docs/BENCHMARKS.md
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./...
