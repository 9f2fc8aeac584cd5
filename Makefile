# ironlaw — the two commands of the quick start, and a few more.
#   make run    install missing packages, build (Release), run the default scenario
#   make test   install missing packages, build, run the whole Catch2 suite via ctest
#   make bench  build and run the benchmarks (engine events/s, default scenario wall time)
BUILD    ?= build
JOBS     ?= $(shell nproc)
SCENARIO ?= scenarios/llama3-8b-fsdp-128.yaml

.PHONY: all setup configure build run test bench clean

all: build

setup:
	@bash scripts/setup.sh

configure: setup
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release > /dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	./$(BUILD)/ironlaw run $(SCENARIO)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	@cmake --build $(BUILD) -j $(JOBS) --target ironlaw_bench
	./$(BUILD)/ironlaw_bench

clean:
	rm -rf $(BUILD)
