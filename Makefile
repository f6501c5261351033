# The two commands a newcomer needs: `make run` and `make test`.
GO ?= go
TEST_TIMEOUT ?= 12m

.PHONY: run test build vet fmt-check bench

## run: start the whole service on the embedded stack (agentplane dev)
run:
	$(GO) run ./cmd/agentplane dev

## test: every test, with the race detector, plus vet and gofmt
test: fmt-check vet
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/agentplane ./cmd/agentplane

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## bench: benchmarks; numbers go to docs/BENCHMARKS.md
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./...
