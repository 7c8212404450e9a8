# agentstate — build, test, benchmark, demo.
GO       ?= go
BIN      ?= bin/agentstate
FUZZTIME ?= 10s
PKGS     := ./...

.PHONY: all build install test race test-deps bench fuzz demo vet cross fmt clean

all: build

# agentstate is the small front end every command starts (static, stripped:
# it must start as fast as a hello-world program); agentstate-engine beside it
# runs commands when no server holds the store, and serves. The engine is
# built without urfave/cli's man-page and markdown generators, which it never
# calls: their markdown library's initialiser cost every unserved command
# about 0.4 ms (a plain go build works the same, a little slower).
# agentstate-engine-lean is the same engine built with the tag lean: every
# command but push, restore, mcp and serve, whose packages (go-ethereum, the
# MCP SDK, the page) cost every start about 2 ms; the front end starts it
# when it is installed, and it hands those four to agentstate-engine.
# All three are static (CGO_ENABLED=0): no dynamic loader and no libc
# threads at every start, about 2 ms and 1.5 MiB less per unserved command
# (docs/performance.md); nothing here needs cgo (SQLite is modernc's Go).
ENGINE_TAGS := urfave_cli_no_docs
GOBIN_DIR   = $$($(GO) env GOBIN | grep . || echo $$($(GO) env GOPATH)/bin)

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o $(BIN) ./cmd/agentstate
	CGO_ENABLED=0 $(GO) build -tags $(ENGINE_TAGS) -o $(BIN)-engine ./cmd/agentstate-engine
	CGO_ENABLED=0 $(GO) build -tags $(ENGINE_TAGS),lean -o $(BIN)-engine-lean ./cmd/agentstate-engine

install:
	CGO_ENABLED=0 $(GO) install -trimpath -ldflags='-s -w' ./cmd/agentstate
	CGO_ENABLED=0 $(GO) install -tags $(ENGINE_TAGS) ./cmd/agentstate-engine
	CGO_ENABLED=0 $(GO) build -tags $(ENGINE_TAGS),lean -o "$(GOBIN_DIR)/agentstate-engine-lean" ./cmd/agentstate-engine

# Everything the tests need that is not a Go module: Debian's chromium and the
# other tools the tests use (installed when run as root on Debian, else named),
# and the ENS contracts from npm.
test-deps:
	./scripts/test-deps.sh

test: test-deps
	$(GO) vet $(PKGS)
	$(GO) test $(PKGS)

# The race detector slows every command the script tests run (each one a
# process built with -race) several times over: on two cores
# internal/cli's scripts need more than go test's default 10 minutes.
race: test-deps
	$(GO) test -race -timeout 45m $(PKGS)

# BENCHFLAGS=-quick for a one-minute run; see docs/performance.md.
bench: build
	$(GO) run ./internal/cmd/bench -bin $(BIN) $(BENCHFLAGS)
	$(GO) test -run '^$$' -bench . -benchmem ./objects/... ./export/... ./walrus/... ./dag/inspect/...

# Run every fuzz target for FUZZTIME each.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s $$pkg; \
	  done; \
	done

# The tour: a brain committed, logged, diffed, checked out, forked, snapshotted and restored.
demo: build
	./scripts/tour.sh $(BIN)

vet:
	$(GO) vet $(PKGS)

# Type-check every package and test for the other supported systems: Linux
# runs the tests; macOS and Windows must build (the fast front end is Linux
# only; elsewhere agentstate is the engine itself).
CROSS ?= darwin/amd64 darwin/arm64 windows/amd64 windows/arm64 linux/arm64
cross:
	@set -e; for t in $(CROSS); do echo "== $$t"; GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) vet $(PKGS); done

fmt:
	gofmt -l -w .

clean:
	rm -rf bin .cache/tour
