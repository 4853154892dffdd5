# isb: `make run` and `make test` do all set-up on a fresh Debian 12 machine (as root; packages via apt-get).
BUILD ?= build
JOBS ?= 2

.PHONY: all deps build test run demo bench clean

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@ninja -C $(BUILD) -j$(JOBS)

# Every test: unit tests in parallel, then the boundary suites (real sandboxes) one at a time.
test: build
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 300

# The main job: the daemon in the foreground (state in ./.isb). `make demo` tours `isb run`.
run: build
	@bash scripts/serve-dev.sh $(BUILD)/isb

demo: build
	@bash scripts/demo.sh $(BUILD)/isb

bench: build
	@bash scripts/install-deps.sh --bench
	@bash bench/startup.sh $(BUILD)

clean:
	rm -rf $(BUILD)
