# Mayfly build and test entry points. `make test` is what CI runs.
GO ?= go
STATICCHECK_VERSION ?= v0.8.2

.PHONY: run test lint unit clients specs fuzz bench release

run:
	$(GO) run ./cmd/mayfly

# Every test: lint, unit tests, integration tests (real server on
# 127.0.0.1 driven by the Go driver, mongosh, the Node.js driver and
# pymongo; two tests at once, scripts/integration.sh), and a
# short run of each fuzz target.
test: lint clients specs
	$(GO) test -count=1 -timeout 25m $$($(GO) list ./... | grep -v '/integration$$')
	./scripts/integration.sh 2
	$(MAKE) fuzz FUZZTIME=10s

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# The Node.js clients, pinned by clients/package-lock.json.
clients:
	cd clients && npm ci --no-audit --no-fund --ignore-scripts

# The drivers' unified specification tests that TestUnifiedSpec runs, laid
# out as mongodb/specifications' source/ in .cache/specifications from the
# Go module proxy (scripts/specs.sh says which module and why).
specs:
	./scripts/specs.sh

FUZZTIME ?= 30s
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

bench:
	$(GO) run ./cmd/mayfly-bench -short

# Static binaries for the platforms Mayfly ships on, into dist/. The time
# zone database is built in (timetzdata), so they run on images without one.
RELEASE_TARGETS ?= linux/amd64 linux/arm64 darwin/arm64
release:
	@mkdir -p dist
	@for t in $(RELEASE_TARGETS); do \
		os=$${t%/*}; arch=$${t#*/}; out=dist/mayfly-$$os-$$arch; \
		echo "building $$out"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -tags timetzdata \
			-ldflags="-s -w" -o $$out ./cmd/mayfly || exit 1; \
	done
