# Chorus — the two commands are `make run` and `make test`; everything they need is installed here.
SHELL := /bin/bash
# chromium: the headless browser of the web client's end-to-end test (Tests/Interop/test_browser.py)
# and the H.264 publisher and viewer of Tests/Interop/test_h264_forward.py.
# janus, iproute2, curl: the Janus peer of `chorus load --target janus` (Tests/Interop/test_load_janus.py
# and `make bench-compare`), run in a network namespace.
# coturn: the TURN relay that Tests/Interop/test_turn.py starts (as a plain child process, on a
# generated configuration) between a walled-in Chromium and the server. Debian enables its
# systemd unit on install; on a machine without systemd nothing starts.
# nftables, socat: the namespaces' firewalls (Tests/Interop/netns.py) and the forwarder of a
# namespaced Chromium's DevTools port (Tests/Interop/chromium.py) or Firefox's BiDi port
# (Tests/Interop/firefox.py), used by test_ice_tcp.py and test_turn.py; installed here before but
# never listed.
# firefox-esr: the second browser of Tests/Interop/test_leave_browsers.py (a headless Firefox driven
# over WebDriver BiDi by Tests/Interop/firefox.py): a call the server ends closes its DTLS transport;
# and of test_ice_tcp.py (ICE-TCP through a firewall that drops all UDP).
# gstreamer1.0-plugins-{base,good,bad}, gstreamer1.0-nice, python3-gi and the gir1.2-gst* typelibs:
# the GStreamer webrtcbin peer of Tests/Interop/test_gstreamer_whip.py (Tests/Interop/gst_whip_peer.py,
# run by Debian's /usr/bin/python3): webrtcbin, DTLS and SRTP (bad), Opus, test sources and
# converters (base), VP8, RTP, level and spectrum (good), libnice's ICE (nice), GstWebRTC and
# GstSdp from Python (the typelibs).
# postgresql: initdb, pg_ctl and psql (/usr/lib/postgresql/15/bin) for the throwaway PostgreSQL
# servers that the storage tests (Sources/ChorusTestSupport/PostgresTestServer.swift) and the
# interop tests (Tests/Interop/postgres.py) start in a temporary folder, as `nobody` under root.
# Debian's own cluster on port 5432 is not used (and does not start on a machine without systemd).
APT_PACKAGES := libopus-dev libvpx-dev libsrtp2-dev libssl-dev libsqlite3-dev pkg-config chromium janus iproute2 curl coturn nftables socat firefox-esr postgresql opus-tools \
	gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-nice \
	python3-gi gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0 gir1.2-gst-plugins-bad-1.0
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
VENV := .venv
PY := $(VENV)/bin/python
HTTP_PORT ?= 8080
OUTPUT := test-output

.PHONY: run test check deps venv build build-release unit interop tsan bench bench-thresholds bench-instructions bench-compare bench-cluster bench-lanes bench-capacity bench-mouth-to-ear bench-opus-quality fuzz fuzz-smoke fuzz-campaign soak clean

run: deps build-release
	.build/release/chorus serve --db ./chorus.sqlite --demo --http-port $(HTTP_PORT)

# `make test`: the one build (tests, benchmarks and fuzz harnesses together), every Swift test,
# the interop tests (those that may run at once three at a time, then the ones that must run
# alone), and each fuzz harness briefly. Tests/Scripts/phases.sh prints each phase's time and
# test counts at the end; the logs are in test-output/.
INTEROP = CHORUS_BIN=$(CURDIR)/.build/debug/chorus $(PY) -m pytest Tests/Interop -q -p no:cacheprovider --durations=10
test: deps venv
	@Tests/Scripts/phases.sh \
	  "build::swift build --build-tests" \
	  "unit::swift test --skip-build" \
	  "interop::$(INTEROP) -m 'not serial' -n 3" \
	  "interop 1by1::$(INTEROP) -m serial" \
	  "fuzz smoke::$(MAKE) --no-print-directory fuzz-smoke"

# The edit-test loop: the build, every Swift test and the interop tests that run three at a time
# (no browsers, load runs, floods or measured links: `make interop` runs those too).
check: deps venv
	@Tests/Scripts/phases.sh \
	  "build::swift build --build-tests" \
	  "unit::swift test --skip-build" \
	  "interop::$(INTEROP) -m 'not serial' -n 3"

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
	$(INTEROP) -m 'not serial' -n 3
	$(INTEROP) -m serial

# ThreadSanitizer over every Swift test suite (XCTest and Swift Testing; not the Python system
# tests), built in its own scratch folder so that the normal debug build in .build stays valid.
# Not part of `make test`: the TSan build is a third full build (~4 min on 2 cores).
# halt_on_error=1: the first race report ends the test process at once, with a failure. The
# team's toolchain notes record Swift 6.3.1's `swift test --sanitize=thread` exiting 0 with no
# report on a planted race without it; here such a race failed either way (TSan's exit-time
# status), but with the option the failure does not depend on that. A planted race fails
# `make tsan`: see docs/RELIABILITY.md. TSAN_EXTRA adds options (TSAN_EXTRA=verbosity=1).
TSAN_SCRATCH ?= .build-tsan
TSAN_EXTRA ?=
tsan: deps
	TSAN_OPTIONS="halt_on_error=1 $(TSAN_EXTRA)" swift test --sanitize=thread --scratch-path $(TSAN_SCRATCH)

# Benchmarks run from a release build in their own scratch folder (`make test` builds them, debug,
# with everything else, so they cannot rot). `make bench` runs them once, prints each one's wall-clock p90 and allocations, and checks the
# allocations (p90) against Benchmarks/Thresholds (Benchmarks/check_allocations.py): more than
# the stored count + 2 fails. Times are reported, never checked: this machine is too noisy.
BENCH = swift package --scratch-path .build-bench --disable-sandbox --allow-writing-to-package-directory
BENCH_TARGETS = --target MediaPath --target ControlPlane
bench: deps
	rm -rf bench-output/bench && mkdir -p bench-output/bench
	$(BENCH) benchmark thresholds update --path bench-output/bench $(BENCH_TARGETS)
	python3 Benchmarks/check_allocations.py bench-output/bench Benchmarks/Thresholds

# Stores each benchmark's allocations (p90) as its threshold (Benchmarks/Thresholds, in git).
bench-thresholds: deps
	rm -rf bench-output/bench && mkdir -p bench-output/bench
	$(BENCH) benchmark thresholds update --path bench-output/bench $(BENCH_TARGETS)
	python3 Benchmarks/check_allocations.py --store bench-output/bench Benchmarks/Thresholds

# Instructions and allocations of one audio tick (rooms of 40 and 1,000) and one forwarded video
# packet, counted by callgrind: repeatable on this noisy machine (Benchmarks/Instructions/count.sh).
bench-instructions: deps
	@dpkg -s valgrind >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq valgrind; }
	Benchmarks/Instructions/count.sh

# Chorus and Janus 1.1.2 (Debian's janus: AudioBridge) under the same `chorus load` scenarios, in
# one run on this machine; Janus in a network namespace the script creates (root: ip netns).
# Results and the comparison table go to bench-output/compare/ (see docs/PERFORMANCE.md).
bench-compare: deps build-release
	$(SUDO) Benchmarks/Compare/bench-compare.sh

# The true mouth-to-ear latency the server adds (Benchmarks/MouthToEar: an aiortc talker's tone
# bursts, onsets detected in what an aiortc listener decodes, against the two peers directly).
# `chorus load`'s "mouth-to-ear" starts at the generator's send call instead; both are reported
# in docs/PERFORMANCE.md, each named for what it measures.
bench-mouth-to-ear: deps venv build-release
	CHORUS_BIN=$(CURDIR)/.build/release/chorus $(PY) Benchmarks/MouthToEar/mouth_to_ear.py

# The speech quality a CELT-only mix (`--opus-mode celt`) gives up, and the encode time it saves:
# PESQ-WB of espeak-ng speech through libopus in both modes (Benchmarks/Quality/opus_modes.py;
# espeak-ng, sox and the `pesq` package are installed here only; results in bench-output/opus-quality).
bench-opus-quality: deps venv
	@dpkg -s espeak-ng sox >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq espeak-ng sox; }
	$(PY) -m pip install -q --disable-pip-version-check pesq
	$(PY) Benchmarks/Quality/opus_modes.py bench-output/opus-quality

# Capacity side by side: the largest single room (3 talkers) and the most rooms of 10 (1 talker)
# that Chorus, Janus with its defaults and Janus with a prebuffer matched to Chorus's each carry
# under the same bar, 3 of 3 runs per size, searches interleaved (Benchmarks/Capacity/capacity.py;
# root for Janus's network namespace; results in bench-output/capacity, docs/PERFORMANCE.md).
bench-capacity: deps build-release
	$(SUDO) python3 Benchmarks/Capacity/capacity.py

# One big room (3 talkers) with every room on one queue and with lanes, interleaved, sizes
# 1,500-3,000 (Benchmarks/Capacity/room-lanes.sh; results in bench-output/lanes, docs/PERFORMANCE.md).
bench-lanes: deps build-release
	Benchmarks/Capacity/room-lanes.sh

# Joins and registrations per second, one node on SQLite, one and three on a throwaway PostgreSQL (docs/PERFORMANCE.md).
CLUSTER_ROUNDS ?= 3
bench-cluster: deps venv build-release
	$(PY) Benchmarks/Cluster/cluster_bench.py .build/release/chorus $(CLUSTER_ROUNDS) bench-output/cluster

# libFuzzer harnesses (Fuzz/<Name>/, built with -sanitize=fuzzer,address) in their own scratch
# folder: the manifest differs with CHORUS_FUZZ set. Each runs FUZZ_SECONDS, one at a time, from
# the committed seeds (Fuzz/Corpus/<Name>/, read only) and a working corpus in $(FUZZ_SCRATCH);
# a crashing input is written to Fuzz/Crashes/<Name>/: commit it, and FuzzReplayTests replays it
# in every `make test`.
FUZZ_TARGETS := FuzzSTUN FuzzRTP FuzzRTCP FuzzSDP FuzzDTLS FuzzDatagram FuzzTCPFraming
FUZZ_SECONDS ?= 60
FUZZ_SCRATCH ?= .build-fuzz
FUZZ_CONFIG ?= release
# 1: start from the committed corpus (Fuzz/Corpus/<Target>) as well as the scratch folder's.
FUZZ_SEEDS ?= 1
# One combined -sanitize=fuzzer,address: swiftc keeps only the last of several -sanitize= flags, so
# SwiftPM's `--sanitize=fuzzer --sanitize=address` would build ASan without coverage (the fuzzer
# then runs blind). `--sanitize=fuzzer` stays so that SwiftPM lets libFuzzer supply main. Release
# (-O keeps bounds, overflow and precondition traps) runs about 7 times more inputs than debug.
FUZZ_BUILD := CHORUS_FUZZ=1 swift build -c $(FUZZ_CONFIG) --scratch-path $(FUZZ_SCRATCH) \
	--sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address

fuzz: deps
	@set -o pipefail; for t in $(FUZZ_TARGETS); do \
	  $(FUZZ_BUILD) --product $$t 2>&1 | { grep -v 'ld.gold: warning: Cannot export local symbol' || true; } || exit 1; \
	done
	@failed=""; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_SCRATCH)/corpus/$$t Fuzz/Crashes/$$t; \
	  echo "== $$t: $(FUZZ_SECONDS) s"; \
	  SWIFT_BACKTRACE=enable=no $(FUZZ_SCRATCH)/$(FUZZ_CONFIG)/$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	    -print_final_stats=1 -artifact_prefix=Fuzz/Crashes/$$t/ $(FUZZ_SCRATCH)/corpus/$$t $(if $(filter 1,$(FUZZ_SEEDS)),Fuzz/Corpus/$$t) \
	    || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: failures in$$failed; inputs saved in Fuzz/Crashes/"; exit 1; fi

# Part of `make test` (so CI builds and starts every harness and they cannot rot): each harness,
# built by `make build` with the rest (libFuzzer instruments the harness module only: seconds of
# compiling), runs for FUZZ_SMOKE_SECONDS. The smoke runs are blind (no coverage of the parsers,
# no ASan): they check that each harness links, starts and survives random inputs.
# FuzzReplayTests replays every committed input through the same entry points in the Swift suite;
# finding new bugs is `make fuzz`'s and the campaign's job (coverage and ASan everywhere), so CI
# time is not spent on it.
FUZZ_SMOKE_SECONDS ?= 3
# The long campaign (Fuzz/campaign.sh): CAMPAIGN_SECONDS (3600) per target, CAMPAIGN_JOBS (2) at a
# time at nice 19, then the committed corpus becomes the minimised union; commit Fuzz/Corpus.
fuzz-campaign: deps
	@set -o pipefail; for t in $(FUZZ_TARGETS); do \
	  $(FUZZ_BUILD) --product $$t 2>&1 | { grep -v 'ld.gold: warning: Cannot export local symbol' || true; } || exit 1; \
	done
	FUZZ_SCRATCH=$(FUZZ_SCRATCH) Fuzz/campaign.sh $(CAMPAIGN_TARGETS)

fuzz-smoke:
	@mkdir -p test-output
	@failed=""; for t in $(FUZZ_TARGETS); do \
	  mkdir -p Fuzz/Crashes/$$t; \
	  echo "== $$t: $(FUZZ_SMOKE_SECONDS) s"; \
	  SWIFT_BACKTRACE=enable=no .build/debug/$$t -max_total_time=$(FUZZ_SMOKE_SECONDS) -timeout=10 \
	    -artifact_prefix=Fuzz/Crashes/$$t/ >test-output/fuzz-$$t.log 2>&1 || failed="$$failed $$t"; \
	  tail -1 test-output/fuzz-$$t.log; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz smoke: failures in$$failed; inputs saved in Fuzz/Crashes/"; exit 1; fi

# A bounded load held for SOAK_MINUTES (60) against a release build, with resource growth
# judged after the warm-up (Benchmarks/Soak; results in bench-output/soak, docs/RELIABILITY.md).
SOAK_MINUTES ?= 60
soak: deps build-release
	SOAK_MINUTES=$(SOAK_MINUTES) Benchmarks/Soak/soak.sh

clean:
	rm -rf .build $(VENV) $(OUTPUT)
