# gemini-relay: build, test, run, benchmark and interop targets.
# `make` leaves an optimised, stripped, statically linked binary at target/release/gemini-relay.

CARGO    ?= cargo
HOST     := $(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p')
HOST_ENV := $(shell echo '$(HOST)' | tr 'a-z-' 'A-Z_')
BIN      := target/release/gemini-relay
SHARED   ?= $(abspath ../shared)
# The interop client config: which tools each step calls. fixtures/interop-ask.json makes every host
# call gemini-ask against the fake agy.
INTEROP_CFG ?= $(SHARED)/interop/relay-cfg.json

.PHONY: all release test lint fmt-check clippy unit run demo bench interop clean

all: release

# Static linking applies to the target only (build scripts stay dynamic), through --target.
# Frame pointers shrink the unwind tables (.eh_frame) by about 20 KB for a few hundred bytes of code.
release:
	CARGO_TARGET_$(HOST_ENV)_RUSTFLAGS="-C target-feature=+crt-static -C relocation-model=static -C force-frame-pointers=yes" \
		$(CARGO) build --release --locked --target $(HOST)
	mkdir -p target/release
	cp target/$(HOST)/release/gemini-relay $(BIN)
	@ls -l $(BIN) | awk '{print "built " $$9 ": " $$5 " bytes"}'

test: lint unit

lint: fmt-check clippy

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --locked --all-targets -- -D warnings

unit:
	sh fixtures/selftest.sh
	$(CARGO) test --locked

run: release
	$(BIN)

demo: release
	python3 fixtures/demo.py $(BIN)

bench: release
	$(SHARED)/bench/run.sh --quick

interop: release
	SERVER="env GEMINI_MCP_TEST_TOOLS=1 GEMINI_MCP_PROGRESS_INTERVAL_MS=200 AGY_CLI_PATH=$(CURDIR)/fixtures/fake-agy $(CURDIR)/$(BIN)" \
	CFG=$(abspath $(INTEROP_CFG)) \
	CONF_SCENARIOS="server-initialize ping tools-list prompts-list logging-set-level" \
	$(SHARED)/interop/interop.sh

clean:
	$(CARGO) clean

# Fuzzing, not part of `make test`: each target of tests/fuzz runs for FUZZ_SECONDS seconds on the
# nightly toolchain (cargo-fuzz is installed from crates.io if missing). New inputs go to
# tests/fuzz/work/<target> and findings to tests/fuzz/artifacts/<target>; the committed seeds in
# tests/fuzz/corpus/<target> are only read.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= jsonrpc scan glob changemode agy_output jail
FUZZ_WORK    := tests/fuzz/work

.PHONY: fuzz
fuzz:
	$(CARGO) +nightly fuzz --version >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked
	rm -rf $(FUZZ_WORK)/gemini-relay-fuzz-jail-*
	set -e; for target in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_WORK)/$$target; \
		FUZZ_JAIL_DIR=$(CURDIR)/$(FUZZ_WORK) $(CARGO) +nightly fuzz run --fuzz-dir tests/fuzz $$target \
			$(FUZZ_WORK)/$$target tests/fuzz/corpus/$$target -- -max_total_time=$(FUZZ_SECONDS) -timeout=10; \
	done
	rm -rf $(FUZZ_WORK)/gemini-relay-fuzz-jail-*
