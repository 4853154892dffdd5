# isb: `make run` and `make test` do all set-up on a fresh Debian 12 machine (as root; packages via apt-get).
BUILD ?= build
JOBS ?= 2

.PHONY: all deps build docs format install test test-images thread-safety run demo bench san-build sanitize fuzz clean

all: build

deps:
	@bash scripts/install-deps.sh

# Optimized, with line tables only (-g1): backtraces and profiles name files and lines; full debug info (-g) would
# cost a third more compile time and four times the object size for what a debugger build (CMAKE_BUILD_TYPE=Debug)
# is for.
CONFIGURE = cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
build: deps
	@$(CONFIGURE) >/dev/null
	@ninja -C $(BUILD) -j$(JOBS)

# docs/tools.md and docs/cli.md from the tool registry and the CLI's flags (src/docs/). `make test` checks that the
# committed pages are what this writes now (the docs_up_to_date test).
docs: deps
	@$(CONFIGURE) >/dev/null
	@ninja -C $(BUILD) -j$(JOBS) isb_docs
	@$(BUILD)/isb_docs docs

# Every .cc and .h into .clang-format's layout (clang-format-14, a package of `make build`'s); `make test` checks it.
format: deps
	@git ls-files -z --cached --others --exclude-standard -- '*.cc' '*.h' | xargs -0 -n 100 -P $(JOBS) clang-format-14 -i

# The built isb into $(DESTDIR)$(PREFIX)/bin, the systemd unit (its ExecStart naming that isb) into UNITDIR and its
# flags into SYSCONFDIR/default/isb, kept if there already. Builds nothing: `make build` first (as any user).
PREFIX ?= /usr/local
SYSCONFDIR ?= /etc
UNITDIR ?= $(SYSCONFDIR)/systemd/system
install:
	@test -x $(BUILD)/isb || { echo "make install: no $(BUILD)/isb; run make build first" >&2; exit 1; }
	install -D -m 0755 $(BUILD)/isb $(DESTDIR)$(PREFIX)/bin/isb
	install -d -m 0755 $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/default
	sed -e 's|/usr/local/bin/isb|$(PREFIX)/bin/isb|' -e 's|/etc/default/isb|$(SYSCONFDIR)/default/isb|' \
	  contrib/isb.service > $(DESTDIR)$(UNITDIR)/isb.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/isb.service
	test -e $(DESTDIR)$(SYSCONFDIR)/default/isb || install -m 0600 contrib/isb.defaults $(DESTDIR)$(SYSCONFDIR)/default/isb
	chmod 0600 $(DESTDIR)$(SYSCONFDIR)/default/isb
	install -d -m 0700 $(DESTDIR)$(SYSCONFDIR)/isb

# Every test: the locks checked by clang, unit tests in parallel, then the boundary suites (real sandboxes) one at a
# time. THREAD_SAFETY=0 leaves the locks to the sanitizer build, which compiles every file with clang's
# -Wthread-safety as an error (CI runs both, so it parses nothing twice).
THREAD_SAFETY ?= 1
test: build $(if $(filter 0,$(THREAD_SAFETY)),,thread-safety) test-images
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 300

# The Debian image the image tests run apt and python in: made once by mmdebstrap from the host's apt sources and
# kept in the build dir (a test that finds none makes it itself, which takes minutes).
test-images: build
	@bash tests/image/make_debian_image.sh $(BUILD)/debian-image

# clang's -Wthread-safety, as an error, over every src/ file that uses the locks of base/mutex.h: a member
# ISB_GUARDED_BY a mutex touched without it, a function that ISB_REQUIRES a lock called without it. A parse of each
# file with the build's own flags (compile_commands.json), nothing generated.
thread-safety: build
	@bash scripts/install-deps.sh --clang
	@bash scripts/thread_safety.sh $(BUILD) $(JOBS)

# The main job: the daemon in the foreground (state in ./.isb), its first admin and token made on the first start and
# the commands that work printed. ARGS go to `isb serve` (make run ARGS="--bind-root DIR --listen 127.0.0.1:9000").
# `make demo` tours `isb run`.
ARGS ?=
run: build
	@bash scripts/serve-dev.sh $(BUILD)/isb $(ARGS)

demo: build
	@bash scripts/demo.sh $(BUILD)/isb

bench: build
	@bash scripts/install-deps.sh --bench
	@ninja -C $(BUILD) -j$(JOBS) benches
	@bash bench/startup.sh $(BUILD)
	@bash bench/api.sh $(BUILD)
	@bash bench/egress.sh $(BUILD)
	@bash bench/secrets.sh $(BUILD)
	@bash bench/density.sh $(BUILD)
	@bash bench/images.sh $(BUILD)

# The sanitizer build (clang, ASan and UBSan, -O1 with line tables), shared by `make sanitize` and `make fuzz`; it
# checks the locks too (-Wthread-safety, an error, CMakeLists.txt).
SAN_BUILD ?= build-fuzz
san-build: deps
	@bash scripts/install-deps.sh --fuzz
	@CC=clang CXX=clang++ cmake -S . -B $(SAN_BUILD) -G Ninja -DISB_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" >/dev/null

# The unit tests and the escape suite under ASan and UBSan: a memory error, a leak or undefined behaviour fails them.
sanitize: san-build
	@ninja -C $(SAN_BUILD) -j$(JOBS) isb isb_unit_tests isb_escape_tests escape_helper
	@$(SAN_BUILD)/isb_unit_tests --gtest_brief=1
	@$(SAN_BUILD)/isb_escape_tests --gtest_brief=1

# libFuzzer builds of every fuzz target, each run for FUZZ_SECONDS from its seed corpus, FUZZ_JOBS at a time.
# FUZZ_SEED fixes the mutations (CI's run is then the same on every machine but for its speed); 0 picks a new seed
# each run.
FUZZ_SECONDS ?= 60
FUZZ_SEED ?= 0
FUZZ_JOBS ?= 1
FUZZ_TARGETS ?= $(shell ls fuzz/corpus)
fuzz: san-build
	@ninja -C $(SAN_BUILD) -j$(JOBS) fuzz_targets
	@bash scripts/fuzz.sh $(SAN_BUILD) $(FUZZ_SECONDS) $(FUZZ_SEED) $(FUZZ_JOBS) $(FUZZ_TARGETS)

clean:
	rm -rf $(BUILD)
