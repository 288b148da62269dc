# DeepContext — the two commands of the README are `make demo` and `make test`.
# Plain `make` only builds (into build/).

BUILD      ?= build
BUILD_TYPE ?= RelWithDebInfo
CMAKE_ARGS ?=
PYTHON     ?= /usr/bin/python3
CTEST_ARGS ?=
# What `make demo` needs: the CLI, the injected runtime (with its GPU backend),
# the staged Python package and the PyTorch adapter's source. Not the tests.
DEMO_TARGETS = deepcontext_cli deepcontext deepcontext_python deepcontext_torch_adapter_source

.PHONY: all build deps configure test fuzz test-aarch64 test-aarch64-root test-gpu test-pip demo asan tsan bench bench-gpu clean

all: build

deps:
	./scripts/install-deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	      -DDEEPCONTEXT_PYTHON=$(PYTHON) $(CMAKE_ARGS)

configure: $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD)

# Everything CI runs: dependencies, a warnings-as-errors build, unit tests,
# integration tests (real PyTorch programs under the profiler), the demo, the
# reader's fuzzer for 45 s, then the runtime's unit tests cross-built for
# aarch64 and run under qemu-user.
test: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	      -DDEEPCONTEXT_WERROR=ON -DDEEPCONTEXT_PYTHON=$(PYTHON) $(CMAKE_ARGS)
	cmake --build $(BUILD)
	ctest --test-dir $(BUILD) --output-on-failure $(CTEST_ARGS)
	./scripts/fuzz-reader.sh $(BUILD)-fuzz 45 $(BUILD)/bin
	./scripts/test-aarch64.sh $(BUILD)-aarch64 $(BUILD_TYPE)

# The reader's fuzzer alone, for a bounded time (FUZZ_SECONDS).
FUZZ_SECONDS ?= 45
fuzz: deps build
	./scripts/fuzz-reader.sh $(BUILD)-fuzz $(FUZZ_SECONDS) $(BUILD)/bin

# The aarch64 part of `make test` alone.
test-aarch64: deps
	./scripts/test-aarch64.sh $(BUILD)-aarch64 $(BUILD_TYPE)

# The whole profiler in a Debian 12 arm64 root under qemu-user: torch,
# `deepcontext run`, --native, report, analyze, exports (README "ARM").
# Not part of `make test`: the first run builds the root and the project
# (~50 min on 2 cores), later runs take ~1 min; run it before resolving
# issues that touch the runtime.
test-aarch64-root: deps
	./scripts/test-aarch64-root.sh

# The GPU tests alone (they skip themselves without a CUDA device).
test-gpu: deps build
	ctest --test-dir $(BUILD) --output-on-failure -L gpu

# `pip install .` compiled from source into a fresh virtualenv (minutes;
# `make test` installs from the build tree instead).
test-pip: deps build
	DEEPCONTEXT_TEST_PIP_FROM_SOURCE=1 DEEPCONTEXT_BUILD=$(abspath $(BUILD)) \
	  $(PYTHON) -m pytest -q -p no:cacheprovider tests/integration/test_pip_install.py

# Profiles the bundled training loop and prints the report. Builds only what
# the demo runs (DEMO_TARGETS); fails if the profile lacks torch's operators.
demo:
	./scripts/install-deps.sh --demo
	$(MAKE) --no-print-directory configure
	cmake --build $(BUILD) --target $(DEMO_TARGETS)
	./scripts/demo.sh $(BUILD) $(PYTHON)

# Unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (not the
# tests that load an instrumented library into an uninstrumented Python:
# those named integration.*, python_frames* and native_splice*, and the
# analyzer's, labelled integration), then deepcontext run with the
# instrumented runtime in Python (scripts/sanitized-runs.sh; libstdc++ is
# preloaded too, or ASan's exception interceptor finds no __cxa_throw in a
# Python that does not link it; leaks are not checked, Python's own are
# many). Undefined behaviour stops the test (UBSAN_OPTIONS): a report that
# only printed would leave the test passing. Not -fno-sanitize-recover=
# undefined: built with it, GCC 12 reports a stack-use-after-scope inside a
# live local array of CallPathBuilder::InsideOpContext, whose prologue
# leaves that array's shadow bytes as it finds them; clang++ builds the
# same tests with the flag and they pass.
UBSAN_HALT = UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
asan: deps
	cmake -S . -B $(BUILD)-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	      -DDEEPCONTEXT_SANITIZE=ON -DDEEPCONTEXT_WERROR=ON -DDEEPCONTEXT_PYTHON=$(PYTHON)
	cmake --build $(BUILD)-asan
	$(UBSAN_HALT) ctest --test-dir $(BUILD)-asan --output-on-failure \
	      -E "^(integration|python_frames|native_splice)" -LE integration
	$(UBSAN_HALT) ASAN_OPTIONS=detect_leaks=0 ./scripts/sanitized-runs.sh $(BUILD)-asan \
	      $(PYTHON) "$$(g++ -print-file-name=libasan.so) libstdc++.so.6"

# The runtime's unit tests under ThreadSanitizer, then `deepcontext run` with
# the instrumented runtime in Python (scripts/test-tsan.sh).
tsan: deps
	./scripts/test-tsan.sh $(BUILD)-tsan $(PYTHON)

bench: deps build
	node bench/view_bench.mjs $(BUILD)
	$(BUILD)/bin/event_cost
	if [ -x $(BUILD)/bin/attribution_cost ]; then $(BUILD)/bin/attribution_cost; fi
	$(BUILD)/bin/merge_cost
	$(PYTHON) bench/cpu_overhead.py --build $(BUILD)

bench-gpu: deps build
	$(BUILD)/bin/gpu_launch_cost
	$(PYTHON) bench/gpu_overhead.py --build $(BUILD) --python $(PYTHON)

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan $(BUILD)-aarch64
