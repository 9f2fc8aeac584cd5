# ironlaw — the two commands of the quick start, and a few more.
#   make run    install missing packages, build (Release), run the default scenario
#   make test   install missing packages, build, run the whole Catch2 suite via ctest
#   make bench  build and run the benchmarks (engine events/s, default scenario wall time)
#   make test-sanitize  the whole suite built with ASan + UBSan (gcc), in build-sanitize/
#   make fuzz   the libFuzzer targets (clang-14) for FUZZ_SECONDS each, in build-fuzz/
BUILD    ?= build
JOBS     ?= $(shell nproc)
SCENARIO ?= scenarios/llama3-8b-fsdp-128.yaml
SAN_BUILD  ?= build-sanitize
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60

.PHONY: all setup configure build run test test-sanitize fuzz bench clean

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

# Sanitizer reports abort the test that triggered them (halt_on_error), leaks included.
# allocator_may_return_null: libhdf5's malloc of what a damaged file claims (terabytes) returns
# NULL as under glibc, and HDF5 reports the error (the Release binary exits 2 on that file);
# our own operator new still reports an out-of-memory.
test-sanitize: setup
	@cmake -S . -B $(SAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
	  -DIRONLAW_SANITIZE=ON > /dev/null
	@cmake --build $(SAN_BUILD) -j $(JOBS)
	cd $(SAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:allocator_may_return_null=1:suppressions=$(CURDIR)/fuzz/asan-hdf5.supp \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/fuzz/lsan-hdf5.supp \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS)

fuzz: setup
	@CC=clang-14 CXX=clang++-14 cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIRONLAW_FUZZ=ON > /dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_scenario fuzz_h5_reader
	bash scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(BUILD)

bench: build
	@cmake --build $(BUILD) -j $(JOBS) --target ironlaw_bench
	./$(BUILD)/ironlaw_bench

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(FUZZ_BUILD)
