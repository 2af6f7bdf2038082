# memra — the two commands of the README, and the steps behind them.
#
#   make run    install what is missing, build, fetch the default model once,
#               chat with it (GPU when present, CPU otherwise)
#   make test   build and run every test: unit tests (ctest), fuzzers for a
#               bounded time, and the Python reference tests (pytest)
#
# The real build description is CMakeLists.txt; this file only sequences it.
BUILD       ?= build
FUZZ_BUILD  ?= build-fuzz
FUZZ_SECONDS ?= 60
JOBS        ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build test unit fuzz pytest run model clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory

test: build
	@scripts/run-tests.sh $(BUILD) $(FUZZ_BUILD) $(FUZZ_SECONDS)

unit: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

fuzz: deps
	@scripts/run-fuzzers.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

model:
	@scripts/fetch-model.sh

run: build
	@scripts/run-demo.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(FUZZ_BUILD)
