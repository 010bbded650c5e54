# Sluice: `make run` installs, builds and starts the gateway; `make test` runs every test.
BUILD ?= build
JOBS ?= 2
CONFIG ?= conf/config.yaml

.PHONY: all build run test unit integration setup clean

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

integration: build
	/usr/bin/python3 -m pytest -q tests/integration

test: unit integration

clean:
	rm -rf $(BUILD)
