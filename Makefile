# clinfer — `make run` runs the main job on the embedded default model;
# `make test` installs what the tests need (Debian 12, as root or with sudo)
# and runs every check CI runs. See README.md.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := test
# Steps share the two cores and depend on each other's side effects (deps
# before models before tests): never run them in parallel.
.NOTPARALLEL:

# Go: the one on PATH, else the toolchain `deps` installs in /usr/local/go.
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
GOFMT ?= $(dir $(GO))gofmt
# The Go release go.mod asks for, for the message when there is no Go.
GO_VERSION ?= $(shell sed -n 's/^go \([0-9.]*\).*/\1/p' go.mod)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# System packages the tests need: OpenCL (POCL as the CPU OpenCL device, the
# ICD loader and headers for cgo), clinfo, oclgrind (OpenCL kernel checker),
# CLBlast (GEMM peer for benchmarks), pkg-config, the ONNX backend test
# data, debootstrap (the device bundle's Debian 11 build sysroot), clang-15
# (the LLVM of Debian 12's POCL: the kernels' portability matrix builds
# them for CPU targets POCL here does not compile for), protoc (the
# check that serve/inferencepb's generated gRPC code is up to date),
# qemu-user (runs the kernel launch tests on POCL devices of other x86
# CPUs: cpu-targets).
APT_PKGS := pocl-opencl-icd ocl-icd-opencl-dev opencl-headers clinfo \
	libonnx-testdata oclgrind libclblast-dev pkg-config debootstrap clang-15 \
	protobuf-compiler qemu-user

# Packages whose tests exercise concurrency; `test` also runs them with -race.
RACE_PKGS := ./plugin/... ./cpu_fallback/... ./clbackend/... ./hetero/... ./auto/... ./batch/... ./serve/...
# The tests package takes 3-4 min on an idle 2-core box; 25m keeps a busy CI machine (load 10+)
# from timing out a passing run (a fresh clone of 40b34fc at load 11-13, under nice, hit 15m in tests/).
TEST_TIMEOUT ?= 25m
FUZZTIME ?= 5m
BENCH_COUNT ?= 5
OUT := clinfer-out

.PHONY: test deps go-toolchain models refs run serve tuning-db bench-serve bench-models bench-tune bench-cpu bench-auto bench-gemm bench-conv bench-fusion oclgrind cpu-targets fuzz fmt-check vet unit race race-plain-check build-nocgo vet-noopencl test-noopencl conformance device-bundle device-bundle-check device-matrix device-matrix-check faults ops ops-check clean

## deps: install the missing system packages (apt-get update only when
## something is missing) and Node.js if `node` is missing; checks for Go.
deps: go-toolchain
	@missing=(); \
	for p in $(APT_PKGS); do \
		dpkg -s "$$p" >/dev/null 2>&1 || missing+=("$$p"); \
	done; \
	command -v node >/dev/null 2>&1 || missing+=(nodejs); \
	command -v npm >/dev/null 2>&1 || missing+=(npm); \
	if (( $${#missing[@]} )); then \
		echo "deps: installing $${missing[*]}"; \
		$(SUDO) apt-get update; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$${missing[@]}"; \
	else \
		echo "deps: system packages present"; \
	fi

go-toolchain:
	@[ -x "$(GO)" ] || { echo "deps: no Go toolchain on PATH or in /usr/local/go; install Go >= $(GO_VERSION) (the Debian 12 machines CI uses have it in /usr/local/go)"; exit 1; }

## models: the real models and ONNX Runtime for Node (into .cache/).
models: deps
	GO=$(GO) bash scripts/fetch-models.sh

## refs: regenerate the reference outputs of the real-model tests with ONNX Runtime.
refs: models
	NODE_PATH=.cache/node_modules node scripts/ortref/make_refs.js

## test: everything CI checks, each suite once: `unit` runs every package
## but RACE_PKGS, which `race` runs with the race detector (RACE_PLAIN
## without it); oclgrind and the
## clang matrix run inside `unit` (kernels); `test-noopencl` runs the
## packages whose code depends on the OpenCL build; the bundle check runs
## the bundle's benchmarks and lists its suites. Each step prints its time,
## and a table of them ends the run ($(OUT)/test-times.txt). A failed step
## fails the run; the steps after it still run once the setup (deps,
## models) has passed, so one run shows every failure.
TEST_STEPS := deps models fmt-check vet unit race build-nocgo vet-noopencl test-noopencl device-matrix-check ops-check device-bundle-check
test:
	@mkdir -p $(OUT); : >$(OUT)/test-times.txt; start=$$(date +%s); rc=0; \
	for s in $(TEST_STEPS); do \
		t0=$$(date +%s); src=0; \
		$(MAKE) --no-print-directory $$s || src=$$?; \
		t=$$(( $$(date +%s) - t0 )); \
		printf '%-20s %5d s%s\n' $$s $$t "$$( ((src)) && echo '   FAILED' || true)" >>$(OUT)/test-times.txt; \
		echo "make test: $$s took $$t s"; \
		if ((src)); then rc=$$src; case $$s in deps|models) break ;; esac; fi; \
	done; \
	echo "make test: time per step (load average now $$(cut -d' ' -f1-3 /proc/loadavg))"; \
	cat $(OUT)/test-times.txt; \
	echo "make test: $$(( $$(date +%s) - start )) s in all"; \
	exit $$rc

fmt-check:
	@bad=$$($(GOFMT) -l .); \
	if [ -n "$$bad" ]; then echo "gofmt -l: these files need gofmt -w:"; echo "$$bad"; exit 1; fi

vet:
	$(GO) vet ./...

# The ONNX backend suite writes its per-directory table and every case's
# outcome (which ops-check reads), one file per device, here; -count=1 so
# that the tables (and the CPU/GPU parity check in tests/main_test.go) come
# from this run, not the test cache.
CASES_ENV := CONFORMANCE_CASES='$(CURDIR)/$(OUT)/conformance-cases-{device}.txt'
# The checks the tests must not skip under `make test` (make deps installs
# clang-15 and oclgrind): the clang portability matrix, oclgrind on every
# kernel (TestKernelsUnderOclgrind, in package kernels).
REQUIRE_ENV := CLINFER_REQUIRE_CLANG=1 CLINFER_REQUIRE_OCLGRIND=1
# `unit` tests every package but RACE_PKGS, which `race` tests, with the
# race detector: each package's tests run once.
UNIT_PKGS = $(filter-out $(shell $(GO) list $(RACE_PKGS)),$(shell $(GO) list ./...))
unit:
	mkdir -p $(OUT)
	@rc=0; $(REQUIRE_ENV) CONFORMANCE_SUMMARY='$(CURDIR)/$(OUT)/conformance-{device}.txt' $(CASES_ENV) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(UNIT_PKGS) || rc=$$?; \
	for d in CPU GPU; do sed -n '1,7p' $(OUT)/conformance-$$d.txt 2>/dev/null || true; done; \
	exit $$rc

# RACE_PLAIN are clbackend's tests that run one inference at a time, op by
# op (no goroutines of their own: the lowerings, f16, element types,
# variants and the quantized variants' bits against the CPU device, and the
# lowerings' build options under clang): under the race detector they took 227 s of clbackend's 337 s
# (load 12, POCL pthread-skylake-avx512), without it 137 s (before
# TestElementTypesMatchCPU, 60-90 s without it). `race` runs them without the
# detector, beside the race run (on the packages `unit` compiled), and
# skips them there; the request path they drive runs under the detector in
# clbackend's device suites (TestSuites) and its other tests.
# TestQuantizedVariantsBitExact joined them when the race run's clbackend
# reached 497 s of make test's 953 s (load 1-2.5).
# With an empty POCL kernel cache (a fresh CI machine) nearly all of their
# time is POCL building programs, one at a time in a process (a fresh clone
# at load 8-13 timed out at 25 min in them), so they run as three processes
# of one test binary, which keep both cores busy once the race run's
# packages are done: PLAIN_RUNS, each a -run pattern and a -skip pattern
# ('' skips nothing): TestVariantsMatchCPU's conv family; the other
# families with TestQuantizedVariantsBitExact, which runs the integer
# families' variants on the same instances and device (POCL caches a
# program per OpenCL device), so one of them builds those programs; the
# lowering suites. TestVariantsMatchCPU checks each family it ran whole.
# The two lists name the same tests: race-plain-check (which `race` runs
# first) fails when they do not.
RACE_PLAIN := ^(TestLoweringsMatchCPU|TestHalfLoweringsMatchCPU|TestVariantsMatchCPU|TestQuantizedVariantsBitExact|TestLoweringOptionsBuildEverywhere|TestElementTypesMatchCPU)$$
PLAIN_RUNS := '^TestVariantsMatchCPU$$/^conv$$' '' \
	'^(TestQuantizedVariantsBitExact|TestVariantsMatchCPU)$$' '^TestVariantsMatchCPU$$/^conv$$' \
	'^(TestLoweringsMatchCPU|TestHalfLoweringsMatchCPU|TestLoweringOptionsBuildEverywhere|TestElementTypesMatchCPU)$$' ''
PLAIN_TEST := $(CURDIR)/$(OUT)/clbackend-plain.test
# race-plain-check: RACE_PLAIN (what the race run skips) and PLAIN_RUNS
# (what the plain processes run) name the same tests, each of which the
# binary has: the tests each run pattern selects (its part before the
# first '/'), less those a skip pattern without '/' drops, are RACE_PLAIN's;
# a skip of subtests ('/') is another process's run pattern (TestVariantsMatchCPU's
# conv family). A test added to one list only, or renamed, fails here
# instead of falling out of `make race` (or running twice).
race-plain-check:
	@[ -x $(PLAIN_TEST) ] || { mkdir -p $(OUT) && $(GO) test -c -o $(PLAIN_TEST) ./clbackend/; }
	@cd clbackend; names=$$(sed 's/[]^$$()[]//g' <<<'$(RACE_PLAIN)' | tr '|' '\n' | sort); \
	want=$$($(PLAIN_TEST) -test.list '$(RACE_PLAIN)' | sort); \
	if [ "$$want" != "$$names" ]; then \
		echo "race-plain-check: RACE_PLAIN names tests clbackend does not have: $$(comm -23 <(echo "$$names") <(echo "$$want") | tr '\n' ' ')(renamed? update RACE_PLAIN and PLAIN_RUNS)"; exit 1; fi; \
	set -- $(PLAIN_RUNS); runs=() skips=() got=(); \
	while (( $$# )); do runs+=("$$1"); skips+=("$$2"); shift 2; done; \
	for i in "$${!runs[@]}"; do \
		sel=$$($(PLAIN_TEST) -test.list "$${runs[$$i]%%/*}"); \
		if [ -n "$${skips[$$i]}" ] && [[ "$${skips[$$i]}" != */* ]]; then \
			sel=$$(comm -23 <(sort <<<"$$sel") <($(PLAIN_TEST) -test.list "$${skips[$$i]}" | sort)); \
		elif [[ "$${skips[$$i]}" == */* ]] && ! printf '%s\n' "$${runs[@]}" | grep -qxF -- "$${skips[$$i]}"; then \
			echo "race-plain-check: a PLAIN_RUNS process skips '$${skips[$$i]}', which no other process runs"; exit 1; fi; \
		got+=($$sel); \
	done; \
	got=$$(printf '%s\n' "$${got[@]}" | sort -u); \
	if [ "$$want" != "$$got" ]; then \
		echo "race-plain-check: RACE_PLAIN (skipped by the race run) and PLAIN_RUNS (run without the detector) differ:"; \
		echo "  in RACE_PLAIN only (never run): $$(comm -23 <(echo "$$want") <(echo "$$got") | tr '\n' ' ')"; \
		echo "  in PLAIN_RUNS only (run twice): $$(comm -13 <(echo "$$want") <(echo "$$got") | tr '\n' ' ')"; \
		exit 1; fi; \
	echo "race-plain-check: PLAIN_RUNS runs RACE_PLAIN's $$(wc -l <<<"$$want") tests in $${#runs[@]} processes"
race:
	@rc=0; mkdir -p $(OUT); \
	( $(GO) test -c -o $(PLAIN_TEST) ./clbackend/ && $(MAKE) --no-print-directory race-plain-check || exit; \
	  cd clbackend; pids=(); set -- $(PLAIN_RUNS); \
	  while (( $$# )); do \
	    run=$$1 skip=$$2; shift 2; \
	    ( t0=$$(date +%s); src=0; \
	      $(REQUIRE_ENV) $(PLAIN_TEST) -test.count=1 -test.timeout $(TEST_TIMEOUT) -test.run "$$run" -test.skip "$$skip" || src=$$?; \
	      echo "race: $$( ((src)) && echo FAIL || echo ok ) clbackend -run '$$run' -skip '$$skip' (no race detector) $$(( $$(date +%s) - t0 )) s"; exit $$src ) & pids+=($$!); \
	  done; \
	  prc=0; for p in "$${pids[@]}"; do wait $$p || prc=$$?; done; exit $$prc ) & plain=$$!; \
	$(REQUIRE_ENV) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -skip '$(RACE_PLAIN)' $(RACE_PKGS) || rc=$$?; \
	wait $$plain || rc=$$?; \
	exit $$rc

build-nocgo:
	CGO_ENABLED=0 $(GO) build ./...

vet-noopencl:
	$(GO) vet -tags noopencl ./...

# Built without OpenCL the module must still pass its tests: the GPU plugin
# then reports that it was built without OpenCL. The packages whose code or
# tests depend on the build (a `!cgo || noopencl` file, a test reading
# cl.Enabled or cl.ErrNotBuilt) and the root package run here; vet-noopencl
# type-checks every package's tests under the tag, and the others' tests
# are the ones `unit` ran (the GPU's files drop out, the rest is the same).
NOOPENCL_PKGS = . $(sort $(dir $(shell grep -rlE --include='*.go' 'go:build !cgo \|\| noopencl|cl\.(Enabled|ErrNotBuilt)' .)))
test-noopencl:
	$(GO) test -tags noopencl -count=1 -timeout $(TEST_TIMEOUT) $(NOOPENCL_PKGS)

## conformance: only the ONNX backend suite and real-model tests on CPU, verbose summary.
conformance:
	mkdir -p $(OUT)
	@rc=0; CONFORMANCE_SUMMARY=$(CURDIR)/$(OUT)/conformance-CPU.txt $(GO) test -timeout $(TEST_TIMEOUT) -run 'TestONNXBackendCPU|TestRealModelsCPU' ./tests/ || rc=$$?; \
	cat $(OUT)/conformance-CPU.txt; \
	exit $$rc

## run: the main job on the embedded default model: one inference on the
## GPU device (POCL when there is no GPU) with what ran where, the outputs,
## the timing and the largest difference from the CPU device; then a short
## throughput run. `deps` first, so a fresh machine has an OpenCL driver.
run: deps
	$(GO) run ./cmd/infer -d GPU -compare CPU
	$(GO) run ./cmd/benchmark -d GPU -t 2 -hint throughput

## serve: the Open Inference Protocol server on the embedded default model
## (REST and /metrics on :8000, gRPC on :8001) until Ctrl-C; SERVE_FLAGS
## adds cmd/serve flags (e.g. SERVE_FLAGS='-model m.onnx -d GPU').
SERVE_FLAGS ?=
serve: deps
	$(GO) run ./cmd/serve $(SERVE_FLAGS)

## bench-serve: cmd/serve under load (bench/serveload): PP-OCR cls on
## BATCH:GPU(8) with 1, 8 and 64 clients over REST JSON, REST binary and
## gRPC, next to cmd/benchmark in-process, in one run; loopback only.
bench-serve: models
	mkdir -p $(OUT)
	$(GO) run ./bench/serveload -json $(OUT)/bench-serve.json | tee $(OUT)/bench-serve.txt

## bench-models: the real models side by side in one run (bench/modelbench):
## PP-OCR det 320/640, cls, rec, IS-Net medium (fp16 and its fp32 twin) and
## small, Silero VAD v5, the wake-word heads, each on clinfer's CPU, its GPU
## (POCL when there is no GPU) with the heuristics and with the shipped
## tuning database, and ONNX Runtime (CPU, 2 threads), interleaved in
## rounds; medians, ratios, the devices and the load average. It writes
## the run to docs/bench-models.json and its table into README.md
## (Performance); BENCH_MODELS_FLAGS adds flags (-models det_640,cls,
## -seconds 10). bench-cpu is the old name. Minutes: not part of `test`,
## whose TestQuickRun runs the same path on one model.
BENCH_MODELS_FLAGS ?=
bench-models bench-cpu: models
	mkdir -p $(OUT)
	GOMAXPROCS=2 $(GO) run ./bench/modelbench -json docs/bench-models.json -readme README.md $(BENCH_MODELS_FLAGS) | tee $(OUT)/bench-models.txt

## bench-auto: AUTO and BATCH next to the devices they run on, each
## measurement cmd/benchmark in a fresh process with cold kernel caches,
## medians of 3: PP-OCR det 640 time to first result (GPU vs AUTO:GPU,CPU),
## det 640 throughput (GPU, CPU, AUTO with CUMULATIVE_THROUGHPUT) and PP-OCR
## cls with 8 requests in flight (GPU vs BATCH:GPU(8)).
bench-auto: models
	mkdir -p $(OUT)
	$(GO) run ./bench/autobench -runs 3 -json $(OUT)/bench-auto.json | tee $(OUT)/bench-auto.txt

## bench-tune: the tuned kernels, side by side in one run: cmd/tune -mode
## fast tunes PP-OCR det 640, det 320 and cls into $(OUT)/tune-cache (the
## tuning passes' times), then $(BENCH_COUNT) rounds each of the PP-OCR
## models on the GPU with the heuristics and tuned, SGEMM 1024 tuned next
## to the FP32 FMA peak, the data-movement kernels next to the copy
## bandwidth, and ONNX Runtime (2 threads); medians and ratios, the
## device (POCL target) named.
TUNE_CACHE := $(OUT)/tune-cache
bench-tune: models
	mkdir -p $(OUT)
	rm -rf $(TUNE_CACHE) $(OUT)/bench-tune-go.txt $(OUT)/bench-tune-ort.txt
	$(GO) build -o $(OUT)/tune ./cmd/tune
	$(GO) test -c -o $(OUT)/bench.test ./bench/
	$(OUT)/tune -m .cache/models/ch_PP-OCRv4_det_infer.onnx -shape 'x=[1,3,640,640]' -mode fast -cache_dir $(TUNE_CACHE) -json $(OUT)/tune-det640.json | tail -3
	$(OUT)/tune -m .cache/models/ch_PP-OCRv4_det_infer.onnx -shape 'x=[1,3,320,320]' -mode fast -cache_dir $(TUNE_CACHE) -json $(OUT)/tune-det320.json | tail -2
	$(OUT)/tune -m .cache/models/ch_ppocr_mobile_v2.0_cls_infer.onnx -shape 'x=[1,3,48,192]' -mode fast -cache_dir $(TUNE_CACHE) -json $(OUT)/tune-cls.json | tail -2
	for i in $$(seq $(BENCH_COUNT)); do \
		(cd bench && CLINFER_TUNE_CACHE=$(CURDIR)/$(TUNE_CACHE) GOMAXPROCS=2 ../$(OUT)/bench.test -test.run '^$$' \
			-test.bench '^Benchmark(PPOCRTuned|PeakFMA|SGEMMTuned|DataMovement|Copy)$$' -test.benchtime 10x) | tee -a $(OUT)/bench-tune-go.txt; \
		NODE_PATH=.cache/node_modules node scripts/ortref/bench.js --threads 2 | tee -a $(OUT)/bench-tune-ort.txt; \
	done
	$(GO) run ./bench/sidebyside -go $(OUT)/bench-tune-go.txt -ort $(OUT)/bench-tune-ort.txt -tune $(OUT)/tune-det640.json,$(OUT)/tune-det320.json,$(OUT)/tune-cls.json

## bench-conv: the GPU device's Conv kernels (regular, 1x1, depthwise,
## deconvolution) in GFLOPS on PP-OCR shapes.
bench-conv: deps
	$(GO) test -run '^$$' -bench '^BenchmarkConv$$' -benchtime 5x ./bench/

## bench-fusion: kernel launches and GPU latency per inference with and
## without transformations (DISABLE_TRANSFORMATIONS), side by side.
bench-fusion: models
	$(GO) test -run '^$$' -bench '^Benchmark(Fusion|KernelFusions)$$' -benchtime 10x ./bench/

## bench-gemm: clinfer's sgemm kernel next to CLBlast's Sgemm on the same
## OpenCL device at 256..2048, GFLOPS (median of the iterations), one run.
bench-gemm: deps
	mkdir -p $(OUT)
	$(GO) test -tags clblast -run '^TestCLBlastSgemm$$' ./clbackend/cl/
	$(GO) test -tags clblast -run '^$$' -bench '^BenchmarkSGEMM$$' -benchtime 5x ./bench/ | tee $(OUT)/bench-gemm.txt

## oclgrind: every kernel of the catalogue on small shapes under oclgrind
## (memcheck, data races, API checks); fails on any error it reports.
oclgrind: deps
	CLINFER_REQUIRE_OCLGRIND=1 $(GO) test -count=1 -run '^(TestKernelsUnderOclgrind|TestOclgrindCatchesOutOfBounds)$$' -v ./kernels/

## cpu-targets: the kernel launch tests on the POCL devices of other x86
## CPUs, emulated by qemu-user, since POCL compiles for the CPU it runs on
## (Debian's ignores POCL_LLVM_CPU_NAME): haswell (AVX2, no AVX-512: float
## vectors up to 8 wide) and a plain x86-64 (qemu64, which LLVM calls
## athlon64: SSE2, vectors of 4). Each run must see POCL report that
## device and pass: the launch helpers refuse what the device's limits
## refuse, fused_gemm's variants and the SGEMM tilings run within them.
## Long: 1-2 min per CPU with a warm POCL kernel cache, 10 min with a
## cold one on a busy 2-core machine (every build is emulated).
QEMU_CPUS := Haswell=haswell qemu64=athlon64
CPU_TARGETS_RUN := ^(TestLaunchRefusesOverTheLimits|TestSGEMM)$$|^TestCatalogueKernels$$/^(fused_gemm|sgemm)$$
cpu-targets: deps
	mkdir -p $(OUT)
	$(GO) test -c -o $(OUT)/kernels.test ./kernels/
	@for pair in $(QEMU_CPUS); do \
		cpu=$${pair%%=*}; want=pthread-$${pair#*=}; log=$(CURDIR)/$(OUT)/cpu-targets-$$cpu.log; start=$$(date +%s); \
		echo "cpu-targets: qemu-x86_64 -cpu $$cpu, POCL device $$want expected (log in $$log)"; \
		(cd kernels && qemu-x86_64 -cpu $$cpu $(CURDIR)/$(OUT)/kernels.test -test.v -test.count=1 -test.timeout 60m \
			-test.run '$(CPU_TARGETS_RUN)') >$$log 2>&1 || { grep -v '^=== RUN' $$log | tail -40; exit 1; }; \
		grep -q "on device $$want" $$log || { echo "cpu-targets: under -cpu $$cpu POCL did not report a $$want device"; exit 1; }; \
		grep -E '^--- |on device pthread|not launched' $$log; \
		echo "cpu-targets: -cpu $$cpu passed in $$(( $$(date +%s) - start )) s"; \
	done

## faults: fail every OpenCL call that compiling and running PP-OCR cls
## makes (GPU and HETERO), one at a time (`go test` alone fails the first
## call of each kind and 12 more); long: about 2 x 2700 compilations.
faults: models
	CLINFER_FAULT_STRIDE=1 $(GO) test -count=1 -timeout 3h -run '^TestFaultInjectionEveryOpenCLCall$$' -v ./tests/ | grep -v '^=== RUN'

## fuzz: every fuzz target for $(FUZZTIME) each.
fuzz:
	@$(GO) test -list '^Fuzz' ./... | while read -r a b _; do \
		case "$$a" in \
		Fuzz*) targets+=("$$a") ;; \
		ok) for f in "$${targets[@]}"; do \
			echo "fuzz: $$b $$f for $(FUZZTIME)"; \
			$(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) "$$b" </dev/null || exit 1; \
			done; targets=() ;; \
		*) targets=() ;; \
		esac; \
	done

## device-bundle: $(OUT)/device-bundle/, a self-contained bundle (test
## binaries, commands, models, ONNX backend data, the ICD loader, run.sh)
## that proves clinfer on any Linux x86-64 OpenCL machine without Go.
device-bundle: models
	$(SUDO) bash scripts/devicebundle/sysroot.sh .cache/sysroot-bullseye
	GO=$(GO) bash scripts/devicebundle/build.sh $(OUT)/device-bundle

## device-bundle-check: build the bundle and run `run.sh --quick` on POCL
## with an environment stripped to the basics and no Go on PATH, as a
## machine with only a driver would. Its test suites are the ones `unit`
## and `race` ran on this device, so each binary lists its tests
## (--list-suites: it starts, links and finds its data) and the benchmarks
## run; BUNDLE_CHECK_FLAGS= runs the suites too.
BUNDLE_CHECK_FLAGS ?= --list-suites
device-bundle-check: device-bundle
	@if env -i PATH=/usr/bin:/bin bash -c 'command -v go' >/dev/null; then \
		echo "device-bundle-check: /usr/bin or /bin has a go; the check needs a PATH without Go"; exit 1; fi
	rm -rf $(OUT)/device-report-quick
	env -i PATH=/usr/bin:/bin HOME=$(CURDIR)/$(OUT) LANG=C.UTF-8 \
		bash $(OUT)/device-bundle/run.sh --quick $(BUNDLE_CHECK_FLAGS) $(CURDIR)/$(OUT)/device-report-quick
	rm -rf $(OUT)/device-report-quick/bundle

## tuning-db: the shipped tuning database of a device (kernels/tuning):
## with REPORT=<device bundle report dir> (run.sh --tune exhaustive) the
## one that run wrote; without, this machine's default OpenCL device's,
## by tuning the benchmark models here (TUNE_MODE=fast or exhaustive).
TUNE_MODE ?= fast
TUNING_DB_CACHE := $(OUT)/tuning-db-cache
tuning-db:
	@if [ -n "$(REPORT)" ]; then \
		$(GO) run ./cmd/devicereport -tuning-db kernels/tuning -from "$(REPORT)"; \
	else \
		$(MAKE) --no-print-directory models && \
		rm -rf $(TUNING_DB_CACHE) && $(GO) build -o $(OUT)/tune ./cmd/tune && \
		for spec in "ch_PP-OCRv4_det_infer.onnx x=[1,3,640,640]" "ch_PP-OCRv4_det_infer.onnx x=[1,3,320,320]" \
			"ch_ppocr_mobile_v2.0_cls_infer.onnx x=[1,3,48,192]" "ch_PP-OCRv4_rec_infer.onnx x=[1,3,48,320]" \
			"hello_deepa.onnx" "namaste_deepa.onnx"; do \
			set -- $$spec; shape=(); [ -n "$${2:-}" ] && shape=(-shape "$$2"); \
			$(OUT)/tune -m .cache/models/$$1 "$${shape[@]}" -mode $(TUNE_MODE) -cache_dir $(TUNING_DB_CACHE) -ship kernels/tuning | tail -3 || exit 1; \
		done; \
	fi

## device-matrix: the README's "Devices tested" table from docs/devices/*.json.
device-matrix:
	$(GO) run ./cmd/devicereport -matrix docs/devices -readme README.md

device-matrix-check:
	$(GO) run ./cmd/devicereport -matrix docs/devices -readme README.md -check

## ops: OPS.md, the op support matrix, from the op tables (graph, onnx,
## cpu_fallback/ref, clbackend, fusion) and a run of the ONNX backend
## suite on CPU and GPU.
ops: deps
	mkdir -p $(OUT)
	$(CASES_ENV) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -run '^TestONNXBackend(CPU|GPU)$$' ./tests/
	$(GO) run ./cmd/ops -cases $(OUT) -o OPS.md

## ops-check: fail when the committed OPS.md is not what the tables and the
## suite run of `unit` (its case outcomes in $(OUT)) give.
ops-check:
	$(GO) run ./cmd/ops -cases $(OUT) -check OPS.md

clean:
	rm -rf $(OUT)
