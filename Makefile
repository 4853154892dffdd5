# isb: `make run` and `make test` do all set-up on a fresh Debian 12 machine (as root; packages via apt-get).
BUILD ?= build
JOBS ?= 2

.PHONY: all deps build test run demo bench fuzz clean

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
	@bash bench/api.sh $(BUILD)
	@bash bench/egress.sh $(BUILD)

# libFuzzer builds of every fuzz target (clang), each run for FUZZ_SECONDS from its seed corpus. FUZZ_SEED fixes the
# mutations (CI's run is then the same on every machine but for its speed); 0 picks a new seed each run.
FUZZ_SECONDS ?= 60
FUZZ_SEED ?= 0
FUZZ_TARGETS ?= $(shell ls fuzz/corpus)
fuzz: deps
	@bash scripts/install-deps.sh --fuzz
	@CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DISB_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@ninja -C build-fuzz -j$(JOBS) fuzz_targets
	@for t in $(FUZZ_TARGETS); do mkdir -p build-fuzz/corpus-$$t; \
	  build-fuzz/$${t}_fuzz -max_total_time=$(FUZZ_SECONDS) -seed=$(FUZZ_SEED) build-fuzz/corpus-$$t fuzz/corpus/$$t || exit 1; done

clean:
	rm -rf $(BUILD)
