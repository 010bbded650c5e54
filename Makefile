# Sluice: `make run` installs, builds and starts the gateway; `make test` runs every test.
BUILD ?= build
JOBS ?= 2
CONFIG ?= conf/config.yaml

.PHONY: all build run test unit integration setup clean bench bench-tls bench-auth bench-traffic \
	bench-accesslog
.PHONY: arm64 test-arm64 setup-arm64 clean-arm64

all: build

setup:
	scripts/setup

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

run: setup build
	$(BUILD)/sluice run -c $(CONFIG)

unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The suite runs in PYTEST_WORKERS processes (pytest-xdist; every test takes its own ports
# and directories), then the tests marked `serial` (they measure time or capacity) alone.
# Exit status 5 is pytest's "no test selected".
PYTEST_WORKERS ?= 3
PYTEST = /usr/bin/python3 -m pytest -q
# $(1): test paths; $(2): environment assignments for both passes.
define pytest_two_passes
	$(2) $(PYTEST) -n $(PYTEST_WORKERS) -m "not serial" $(1)
	$(2) $(PYTEST) -m serial $(1) || [ $$? -eq 5 ]
endef

integration: build
	$(call pytest_two_passes,tests/integration tests/bench_kit)

# The full default benchmark (docs/benchmark.md): Sluice, nginx, HAProxy and the upstream,
# scenarios 1 and 2, 5 rounds of each, and the p99 <= 3 ms throughput search. BENCH_ARGS adds
# options (e.g. BENCH_ARGS="--duration 10 --peer apisix=http://127.0.0.1:9080").
BENCH_OUT ?= bench-out
BENCH_ARGS ?=
bench: build
	$(BUILD)/sluice bench --out $(BENCH_OUT) $(BENCH_ARGS)

# TLS termination against nginx (docs/performance.md, "TLS"): CPU per kept-alive HTTPS
# request, full and resumed handshakes per CPU-second, as Sluice / nginx ratios. About 6
# minutes with the defaults (5 runs of 5 s); BENCH_TLS_ARGS="--quick" checks it runs.
BENCH_TLS_OUT ?= bench-tls-out
BENCH_TLS_ARGS ?=
bench-tls: build
	$(BUILD)/sluice bench tls --out $(BENCH_TLS_OUT) $(BENCH_TLS_ARGS)

# Authenticated routes (docs/performance.md, "Authentication"): CPU per kept-alive request of
# Sluice plain, with key-auth and with jwt-auth (HS256, 1,000 consumers), nginx plain and with
# a static key check (map), as ratios. About 3 minutes with the defaults (5 runs of 5 s);
# BENCH_AUTH_ARGS="--quick" checks it runs.
BENCH_AUTH_OUT ?= bench-auth-out
BENCH_AUTH_ARGS ?=
bench-auth: build
	$(BUILD)/sluice bench auth --out $(BENCH_AUTH_OUT) $(BENCH_AUTH_ARGS)

# The traffic plugins (docs/performance.md, "Traffic plugins"): CPU per kept-alive request of
# Sluice plain, with cors + request-id + limit-req and with proxy-cache memory hits, and nginx
# doing the same in its own directives, as ratios. About 3 minutes with the defaults;
# BENCH_TRAFFIC_ARGS="--quick" checks it runs.
BENCH_TRAFFIC_OUT ?= bench-traffic-out
BENCH_TRAFFIC_ARGS ?=
bench-traffic: build
	$(BUILD)/sluice bench traffic --out $(BENCH_TRAFFIC_OUT) $(BENCH_TRAFFIC_ARGS)

# The access log (docs/performance.md, "Access log"): CPU per kept-alive request of Sluice with
# its access log off and on, nginx with access_log off and buffered, as ratios. About 2 minutes
# with the defaults; BENCH_ACCESSLOG_ARGS="--quick" checks it runs.
BENCH_ACCESSLOG_OUT ?= bench-accesslog-out
BENCH_ACCESSLOG_ARGS ?=
bench-accesslog: build
	$(BUILD)/sluice bench accesslog --out $(BENCH_ACCESSLOG_OUT) $(BENCH_ACCESSLOG_ARGS)

test: unit integration

clean:
	rm -rf $(BUILD)

# arm64: cross-built with Debian's aarch64 toolchain and multiarch libraries into
# $(ARM64_BUILD)/, tested under qemu-aarch64-static (README.md, "Arm64").
ARM64_BUILD ?= build-arm64

setup-arm64:
	scripts/setup --arm64

# The micro-benchmarks are left out: under qemu they would measure the emulator (the x86
# build compiles them; on a real arm64 box `make build` does).
$(ARM64_BUILD)/build.ninja:
	cmake -S . -B $(ARM64_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/cmake/aarch64-linux-gnu.cmake -DSLUICE_BENCHMARKS=OFF

arm64: setup-arm64 $(ARM64_BUILD)/build.ninja
	cmake --build $(ARM64_BUILD) -j $(JOBS)

# Under qemu-aarch64-static: ctest runs every unit test and fuzz corpus replay (the toolchain
# file makes qemu the CMAKE_CROSSCOMPILING_EMULATOR); tests/arm64/smoke.py starts the aarch64
# gateway, proxies, changes a route, stops it; then the integration suite runs against it
# through tests/arm64/sluice-qemu, without the throughput tests (SLUICE_SKIP_SLOW: a 1 GiB
# transfer and wrk load measure qemu, not Sluice). ARM64_INTEGRATION=0 leaves the suite out.
ARM64_INTEGRATION ?= 1

test-arm64: arm64
	cd $(ARM64_BUILD) && ctest --output-on-failure --timeout 300 -j $(JOBS)
	/usr/bin/python3 tests/arm64/smoke.py $(ARM64_BUILD)/sluice
ifeq ($(ARM64_INTEGRATION),1)
	SLUICE_BIN=$(CURDIR)/tests/arm64/sluice-qemu SLUICE_ARM64_BIN=$(abspath $(ARM64_BUILD))/sluice \
	  SLUICE_SKIP_SLOW=1 SLUICE_READY_TIMEOUT=30 /usr/bin/python3 -m pytest -q tests/integration
endif

clean-arm64:
	rm -rf $(ARM64_BUILD)

# Sanitizers: the whole suite under ASan + UBSan (the 1 GiB transfers and wrk load tests are
# skipped there: they prove throughput, not memory safety, and take minutes under ASan), and
# the cross-thread unit tests (event loop posts, workers serving while snapshots are
# published, limit-count's node-wide counters hammered by 8 threads, limit-req's buckets,
# limit-conn's counts and api-breaker's states taken by many threads at once, request-id's
# per-thread generators, metric cells read while a worker records, health state reported by
# workers while the checker flips it, the loggers' batch processors fed by workers while their
# sender threads cut batches) under TSan.
.PHONY: test-asan test-tsan build-asan build-tsan
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan

$(ASAN_BUILD)/build.ninja:
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DSLUICE_SANITIZE=ON -DSLUICE_BENCHMARKS=OFF

build-asan: $(ASAN_BUILD)/build.ninja
	cmake --build $(ASAN_BUILD) -j $(JOBS)

test-asan: build-asan
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS)
	$(call pytest_two_passes,tests/integration,SLUICE_BIN=$(CURDIR)/$(ASAN_BUILD)/sluice SLUICE_SKIP_SLOW=1)

$(TSAN_BUILD)/build.ninja:
	cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DSLUICE_TSAN=ON -DSLUICE_BENCHMARKS=OFF

build-tsan: $(TSAN_BUILD)/build.ninja
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target unit_io unit_server \
	  unit_plugins_limit_count unit_plugins_limit_req unit_plugins_limit_conn \
	  unit_plugins_api_breaker unit_plugins_request_id unit_metrics unit_health unit_etcd \
	  unit_batch

test-tsan: build-tsan
	$(TSAN_BUILD)/unit_io
	$(TSAN_BUILD)/unit_server
	$(TSAN_BUILD)/unit_plugins_limit_count
	$(TSAN_BUILD)/unit_plugins_limit_req
	$(TSAN_BUILD)/unit_plugins_limit_conn
	$(TSAN_BUILD)/unit_plugins_api_breaker
	$(TSAN_BUILD)/unit_plugins_request_id
	$(TSAN_BUILD)/unit_batch
	$(TSAN_BUILD)/unit_metrics
	$(TSAN_BUILD)/unit_health
	$(TSAN_BUILD)/unit_etcd
