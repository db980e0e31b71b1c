# Chorus — the two commands are `make run` and `make test`; everything they need is installed here.
SHELL := /bin/bash
APT_PACKAGES := libopus-dev libvpx-dev libsrtp2-dev libssl-dev libsqlite3-dev pkg-config
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
VENV := .venv
PY := $(VENV)/bin/python
HTTP_PORT ?= 8080
OUTPUT := test-output

.PHONY: run test deps venv build build-release unit interop bench clean

run: deps build-release
	.build/release/chorus serve --db ./chorus.sqlite --dev-app --http-port $(HTTP_PORT)

test: deps venv build
	swift test --skip-build
	mkdir -p $(OUTPUT)
	CHORUS_BIN=$(CURDIR)/.build/debug/chorus $(PY) -m pytest Tests/Interop -q -p no:cacheprovider

# Debian packages: installed only when missing (apt-get update first, as a fresh machine needs).
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

# The Python virtualenv for interop and system tests, rebuilt when requirements change.
venv: $(VENV)/.installed
$(VENV)/.installed: Tests/Interop/requirements.txt
	@python3 -m venv --help >/dev/null 2>&1 && python3 -c 'import ensurepip' 2>/dev/null || \
	  { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq python3-venv; }
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r Tests/Interop/requirements.txt
	touch $@

build:
	swift build --build-tests

build-release:
	swift build -c release --product chorus

unit: deps build
	swift test --skip-build

interop: deps venv build
	CHORUS_BIN=$(CURDIR)/.build/debug/chorus $(PY) -m pytest Tests/Interop -q -p no:cacheprovider

# Benchmarks build in their own scratch folder: the manifest differs with CHORUS_BENCHMARKS set.
bench: deps
	CHORUS_BENCHMARKS=1 swift package --scratch-path .build-bench --disable-sandbox benchmark

clean:
	rm -rf .build $(VENV) $(OUTPUT)
