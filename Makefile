# gemini-relay: build, test, install, release, benchmark and interop targets.
# `make` leaves an optimised, stripped, statically linked x86_64 musl binary at target/release/gemini-relay.

CARGO   ?= cargo
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
RELEASE_TARGET ?= x86_64-unknown-linux-musl
AARCH64 := aarch64-unknown-linux-musl
BIN     := target/release/gemini-relay
# The size budget of the x86_64 musl binary: 1.25 MiB, met by the target and the release profile.
BUDGET  ?= 1310720
PREFIX  ?= $(HOME)/.local
# The dist archives' timestamps: the commit's time, so that two builds of one commit are the same bytes.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
export SOURCE_DATE_EPOCH
# The interop client config: which tools each step calls. fixtures/interop-ask.json makes every host
# call gemini-ask against the fake agy.
INTEROP_CFG ?= tests/interop/relay-cfg.json
# The runner of aarch64 binaries on this machine (Debian package qemu-user-static).
QEMU_AARCH64 ?= qemu-aarch64-static

# Release builds of both musl targets: a static non-PIE executable (ldd: "not a dynamic executable"),
# with the checkout's and cargo's paths remapped so that the binary does not depend on where it was
# built. Both link with the toolchain's own rust-lld (no cross gcc for aarch64), which folds identical
# functions (--icf=all; Rust gives function addresses no identity): measured on x86_64, the binary is
# 9 KB smaller with rust-lld than with gcc and ld, and 6 KB smaller again with the folding. Static
# linking applies to the targets only: build scripts stay host binaries, because every build passes
# --target.
CARGO_HOME_DIR := $(or $(CARGO_HOME),$(HOME)/.cargo)
REMAP_RUSTFLAGS := --remap-path-prefix=$(CURDIR)=gemini-relay --remap-path-prefix=$(CARGO_HOME_DIR)=cargo
RELEASE_RUSTFLAGS := -C relocation-model=static -C link-arg=--icf=all $(REMAP_RUSTFLAGS)
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS := $(RELEASE_RUSTFLAGS)
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUSTFLAGS := $(RELEASE_RUSTFLAGS)
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_LINKER := rust-lld
# macOS binaries are position-independent (the system requires it). The linker names a binary by a
# hash of its output (LC_UUID), taken before the binary is stripped; `-S` keeps the debug stabs,
# which name rustc's temporary object files, out of the link, so that every build of one commit
# gets the same UUID and the same bytes.
DARWIN_RUSTFLAGS := $(REMAP_RUSTFLAGS) -C link-arg=-Wl,-S
export CARGO_TARGET_AARCH64_APPLE_DARWIN_RUSTFLAGS := $(DARWIN_RUSTFLAGS)
export CARGO_TARGET_X86_64_APPLE_DARWIN_RUSTFLAGS := $(DARWIN_RUSTFLAGS)
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER := rust-lld
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUNNER := $(QEMU_AARCH64)
# RUSTFLAGS in the caller's environment would replace the per-target flags above.
RELEASE_CARGO := env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS $(CARGO)

.PHONY: wine-prefix test-windows all release check-release dist dist-windows install test test-musl test-aarch64 fuzz lint self-contained fmt-check \
	clippy clippy-macos clippy-windows unit test-shells fake-cli run demo \
	bench bench-quick interop clean dist-packages test-packages

all: release

# build-<target>: the release binary at target/<target>/release/gemini-relay (adds the rustup target
# when it is missing).
build-%:
	@if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed | grep -qx '$*'; then \
		echo "rustup target add $*"; rustup target add '$*'; fi
	$(RELEASE_CARGO) build --release --locked --target $*

# The macOS binaries are linked here without Apple's SDK: cargo-zigbuild drives zig's linker, which
# carries the stubs of the system libraries (`pip install ziglang cargo-zigbuild`). They run on
# macOS 11 and later. rustc warns that it cannot find the SDK; zig does not need it.
MACOS_TARGETS := aarch64-apple-darwin x86_64-apple-darwin
MACOSX_DEPLOYMENT_TARGET ?= 11.0
build-%-apple-darwin:
	@if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed | grep -qx '$*-apple-darwin'; then \
		echo "rustup target add $*-apple-darwin"; rustup target add '$*-apple-darwin'; fi
	@command -v cargo-zigbuild >/dev/null 2>&1 || { echo "build-$*-apple-darwin: cargo-zigbuild is" \
		"missing (pip install ziglang cargo-zigbuild)" >&2; exit 1; }
	MACOSX_DEPLOYMENT_TARGET=$(MACOSX_DEPLOYMENT_TARGET) $(RELEASE_CARGO) zigbuild --release --locked \
		--target $*-apple-darwin

# The Windows binary: x86_64-pc-windows-gnu, linked by mingw-w64's gcc and GNU ld (Debian package
# mingw-w64). `+crt-static` links libgcc's unwinder and the thread library in (without it the .exe
# would need libgcc_s_seh-1.dll beside it), so it imports only system DLLs: kernel32, ntdll, msvcrt,
# bcryptprimitives and an api-ms-win-core set. GNU ld writes the time of the link into the PE header;
# --no-insert-timestamp writes 0 there, so that every build of one commit is the same bytes.
WINDOWS := x86_64-pc-windows-gnu
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER := x86_64-w64-mingw32-gcc
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUSTFLAGS := -C target-feature=+crt-static \
	-C link-arg=-Wl,--no-insert-timestamp $(REMAP_RUSTFLAGS)
build-%-pc-windows-gnu:
	@if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed | grep -qx '$*-pc-windows-gnu'; then \
		echo "rustup target add $*-pc-windows-gnu"; rustup target add '$*-pc-windows-gnu'; fi
	@command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || { echo "build-$*-pc-windows-gnu:" \
		"x86_64-w64-mingw32-gcc is missing (Debian package mingw-w64)" >&2; exit 1; }
	$(RELEASE_CARGO) build --release --locked --target $*-pc-windows-gnu

release: build-$(RELEASE_TARGET)
	mkdir -p target/release
	rm -f $(BIN) && cp target/$(RELEASE_TARGET)/release/gemini-relay $(BIN)
	@echo "built $(BIN): $$(wc -c < $(BIN)) bytes ($(RELEASE_TARGET))"

# Fails when the release binary is not static or exceeds the budget (`make check-release BUDGET=n`
# tries another budget).
check-release: release
	@out=$$(LC_ALL=C ldd $(BIN) 2>&1); case "$$out" in *"not a dynamic executable"*) ;; \
		*) echo "check-release: $(BIN) is not a static executable: $$out" >&2; exit 1 ;; esac
	@./$(BIN) --version | grep -q '^gemini-relay $(VERSION) ($(RELEASE_TARGET)' || \
		{ echo "check-release: $(BIN) --version does not name $(VERSION) and $(RELEASE_TARGET)" >&2; exit 1; }
	@size=$$(wc -c < $(BIN)); if [ "$$size" -gt $(BUDGET) ]; then \
		echo "check-release: $(BIN) is $$size bytes, over the budget of $(BUDGET) bytes" \
			"(see README, Building and releasing, for how the profile was chosen)" >&2; exit 1; fi; \
		echo "check-release: $(BIN) is static, $$size bytes (budget $(BUDGET))"

# dist/gemini-relay-<version>-<target>.tar.gz for the Linux and macOS targets, a .zip for Windows, and
# dist/SHA256SUMS. Reproducible: remapped paths (above), fixed file modes, tar entries sorted and owned
# by 0:0 with the commit's time (SOURCE_DATE_EPOCH), and gzip without a name or timestamp; the zip is
# written the same way (below).
DIST_TARGETS := x86_64-unknown-linux-musl $(AARCH64) $(MACOS_TARGETS)
DIST_FILES := $(foreach t,$(DIST_TARGETS),gemini-relay-$(VERSION)-$(t).tar.gz) \
	gemini-relay-$(VERSION)-$(WINDOWS).zip

dist: $(foreach t,$(DIST_TARGETS) $(WINDOWS),dist-$(t))
	cd dist && sha256sum $(DIST_FILES) > SHA256SUMS
	$(MAKE) --no-print-directory dist-packages
	@cat dist/SHA256SUMS

# The install packages, from the same five binaries (README, "Install"; the sources are in
# .ci/packages/): .ci/packages/generate.py stages the npm packages and the pyproject, and writes the
# MCP bundles, the host packages, the Homebrew formula and server.json; then npm packs the npm
# packages and maturin builds one wheel per target. npm pack writes every entry with one fixed time
# and a mode of 0644 or 0755, in a fixed order, and gzips without a time, so its tarballs repeat
# byte for byte. maturin runs cargo with the same per-target environment as the archives, so cargo
# finds the Linux and Windows builds fresh; the macOS wheels link through maturin's own zig wrapper
# (--zig), so cargo links those again, and the link gives the same bytes. Either way the wheel's
# binary is the archive's (checked below, byte for byte). SOURCE_DATE_EPOCH fixes the wheel's times.
# A Linux wheel is tagged both manylinux_2_17 and musllinux_1_2: the binary is static, so it runs on
# glibc and musl alike, and pip or uv on glibc takes no wheel tagged musllinux alone.
# OWNER is the GitHub owner the release comes from: the MCP registry's name is
# io.github.<OWNER>/gemini-relay, and RELEASES is where the archives and bundles are downloaded.
OWNER    ?= gemini-relay
RELEASES ?= https://github.com/$(OWNER)/gemini-relay/releases/download/v$(VERSION)
NPM      ?= npm
MATURIN  ?= maturin
NPM_PLATFORMS := linux-x64 linux-arm64 darwin-arm64 darwin-x64 win32-x64
PACKAGE_FILES := gemini-relay-$(VERSION).tgz $(foreach p,$(NPM_PLATFORMS),gemini-relay-$(p)-$(VERSION).tgz) \
	gemini-relay-claude-plugin-$(VERSION).tgz $(foreach p,$(NPM_PLATFORMS),gemini-relay-$(VERSION)-$(p).mcpb) \
	gemini-relay.rb server.json
LINUX_WHEEL_TAGS := --compatibility manylinux_2_17 musllinux_1_2
RELEASE_MATURIN := env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS MACOSX_DEPLOYMENT_TARGET=$(MACOSX_DEPLOYMENT_TARGET) $(MATURIN)

dist-packages:
	@command -v $(NPM) >/dev/null 2>&1 || { echo "dist: npm is missing (it packs the npm packages)" >&2; exit 1; }
	@command -v $(MATURIN) >/dev/null 2>&1 || { echo "dist: maturin is missing (pip install maturin)" >&2; exit 1; }
	python3 .ci/packages/generate.py dist $(VERSION) $(OWNER) $(RELEASES) $(SOURCE_DATE_EPOCH)
	rm -f dist/*.tgz dist/*.whl
	set -e; for p in gemini-relay $(NPM_PLATFORMS); do \
		(cd dist/.stage-npm/$$p && $(NPM) pack --ignore-scripts --silent --pack-destination $(CURDIR)/dist >/dev/null); done; \
	(cd dist/claude-plugin && $(NPM) pack --ignore-scripts --silent --pack-destination $(CURDIR)/dist >/dev/null)
	set -e; for t in $(DIST_TARGETS) $(WINDOWS); do \
		(cd dist/.stage-pypi && $(RELEASE_MATURIN) build --release --locked --quiet --target $$t \
			$$(case $$t in *linux*) echo $(LINUX_WHEEL_TAGS);; *darwin) echo --zig;; esac) \
			--out $(CURDIR)/dist); done
	@python3 .ci/packages/check_binaries.py dist $(VERSION)
	rm -rf dist/.stage-npm dist/.stage-pypi
	cd dist && sha256sum $(DIST_FILES) $(PACKAGE_FILES) $$(cd $(CURDIR)/dist && ls *.whl) > SHA256SUMS

# Each binary names its target in `--version`; the macOS ones cannot run here, so the text is looked
# for in the file.
dist-%: build-%
	@LC_ALL=C grep -qaF ' ($*' target/$*/release/gemini-relay || \
		{ echo "dist: target/$*/release/gemini-relay does not name $* for --version" >&2; exit 1; }
	@stage=dist/.stage-$*/gemini-relay-$(VERSION)-$*; rm -rf dist/.stage-$* && mkdir -p $$stage && \
	install -m 0755 target/$*/release/gemini-relay $$stage/gemini-relay && \
	install -m 0644 README.md LICENSE $$stage/ && chmod 0755 $$stage && \
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@$(SOURCE_DATE_EPOCH) --format=gnu \
		-C dist/.stage-$* -cf - gemini-relay-$(VERSION)-$* | gzip -9n > dist/gemini-relay-$(VERSION)-$*.tar.gz && \
	rm -rf dist/.stage-$* && echo "dist/gemini-relay-$(VERSION)-$*.tar.gz"

# The Windows zip, written by python3's zipfile (DIST_ZIP below): the folder's entry first, then its
# files sorted by name, each with the commit's time in UTC, its mode (0755 for the folder and the
# .exe, 0644 for the rest), deflated at level 9, and no extra fields. A zip cannot hold a time before
# 1980, so an earlier SOURCE_DATE_EPOCH (0 outside a git checkout) becomes 1980-01-01 00:00:00. Its
# times go in 2-second steps. The .exe is checked to import no DLL of mingw-w64's runtime (they are all
# named lib*.dll: libgcc_s_seh-1.dll, libwinpthread-1.dll), so it runs without one beside it.
define DIST_ZIP
import os, sys, time, zipfile

out, base, folder, epoch = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
stamp = time.gmtime(max(epoch, 315532800))[:6]


def entry(name, mode):
    info = zipfile.ZipInfo(name, stamp)
    info.create_system = 3
    info.external_attr = mode << 16
    return info


with zipfile.ZipFile(out, "w") as archive:
    top = entry(folder + "/", os.stat(os.path.join(base, folder)).st_mode)
    top.external_attr |= 0x10
    archive.writestr(top, b"")
    for name in sorted(os.listdir(os.path.join(base, folder))):
        path = os.path.join(base, folder, name)
        with open(path, "rb") as file:
            data = file.read()
        archive.writestr(entry(folder + "/" + name, os.stat(path).st_mode), data, zipfile.ZIP_DEFLATED, 9)
endef
export DIST_ZIP

dist-%-pc-windows-gnu: build-%-pc-windows-gnu
	@t=$*-pc-windows-gnu; exe=target/$$t/release/gemini-relay.exe; \
	LC_ALL=C grep -qaF " ($$t" $$exe || \
		{ echo "dist: $$exe does not name $$t for --version" >&2; exit 1; }; \
	dlls=$$(x86_64-w64-mingw32-objdump -p $$exe | sed -n 's/^[[:space:]]*DLL Name: //p' | sort -fu) && \
	if [ -z "$$dlls" ] || echo "$$dlls" | grep -qi '^lib'; then \
		echo "dist: $$exe imports a DLL of mingw-w64's runtime, or objdump read none:" $$dlls >&2; exit 1; fi
	@t=$*-pc-windows-gnu; name=gemini-relay-$(VERSION)-$$t; stage=dist/.stage-$$t; \
	rm -rf $$stage && mkdir -p $$stage/$$name && \
	install -m 0755 target/$$t/release/gemini-relay.exe $$stage/$$name/gemini-relay.exe && \
	install -m 0644 README.md LICENSE $$stage/$$name/ && chmod 0755 $$stage/$$name && \
	rm -f dist/$$name.zip && python3 -c "$$DIST_ZIP" dist/$$name.zip $$stage $$name $(SOURCE_DATE_EPOCH) && \
	rm -rf $$stage && echo "dist/$$name.zip"

# The install packages proved offline, the way their users install them (tests/packages/run.sh):
# npx from a local npm registry, pip and uvx from dist/ alone, the MCP bundles unpacked and validated
# by mcpb, the Gemini CLI extension installed and connected, the Claude Code plugin validated, the
# formula checked. Its test tools come from npm and PyPI once; the whole run is bounded by
# TEST_PACKAGES_SECONDS.
TEST_PACKAGES_SECONDS ?= 1200
test-packages: dist
	timeout $(TEST_PACKAGES_SECONDS) tests/packages/run.sh

# `make dist-windows`: the Windows zip alone.
dist-windows: dist-$(WINDOWS)

install: release
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/gemini-relay
	@echo "installed $(DESTDIR)$(PREFIX)/bin/gemini-relay"

# What `make test` runs needs only cargo, a C compiler (cargo's linker), python3 and the base tools
# of a Linux system (sh, coreutils, ps and kill, script). Tests that need another program run in a
# target of their own that .ci/run calls: test-shells (zsh), test-windows (Wine), test-aarch64 (qemu).
test: lint unit check-release

# The tests that paste what the relay prints into another shell (zsh), built only with the feature
# shell-tests so that `make test` never needs that shell.
test-shells:
	@command -v zsh >/dev/null 2>&1 || \
		{ echo "test-shells: zsh is missing (Debian package zsh)" >&2; exit 1; }
	$(CARGO) test --locked --features shell-tests --test integration shells::

# Unit and integration tests built for the musl target the release ships (musl's libc differs from
# glibc's in what it offers; the binary's entry and --version once broke only there).
test-musl:
	@rustup target list --installed 2>/dev/null | grep -qx x86_64-unknown-linux-musl || \
		rustup target add x86_64-unknown-linux-musl
	$(CARGO) test --locked --target x86_64-unknown-linux-musl

# The whole integration suite against the aarch64 release binary, run under qemu-user; the test
# harness and the fake CLIs stay native (tests/util.rs: GEMINI_RELAY_BIN, GEMINI_RELAY_RUNNER).
# Emulation is slow, so the limits on the relay's own speed are multiplied by GEMINI_RELAY_TEST_SLACK.
# qemu-user 7.2 (Debian 12) now and then deadlocks in the child when a many-threaded guest forks
# (the child never reaches exec, so the relay's spawn never returns; about one suite run in three
# hits it, in the signal tests that start many children at once). Tests that fail are therefore run
# again by name, at most twice, and only a test that fails three times fails the target.
# A command started with `&` from a non-interactive shell (as CI may be) inherits SIGINT and SIGQUIT
# ignored; natively the relay's own handlers take over, but under qemu-user the SIGINT rounds of the
# signal tests then fail every time, so the emulated run starts with the default dispositions.
AARCH64_TEST := env --default-signal=INT,QUIT \
	GEMINI_RELAY_BIN=$(CURDIR)/target/$(AARCH64)/release/gemini-relay \
	GEMINI_RELAY_RUNNER=$(QEMU_AARCH64) GEMINI_RELAY_TEST_SLACK=$${GEMINI_RELAY_TEST_SLACK:-10} \
	$(CARGO) test --locked --test integration
test-aarch64: build-$(AARCH64)
	@command -v $(QEMU_AARCH64) >/dev/null 2>&1 || \
		{ echo "test-aarch64: $(QEMU_AARCH64) is missing (Debian package qemu-user-static)" >&2; exit 1; }
	$(QEMU_AARCH64) target/$(AARCH64)/release/gemini-relay --version
	@log=target/test-aarch64.log; $(AARCH64_TEST) > $$log 2>&1; status=$$?; cat $$log; \
	if [ $$status -ne 0 ]; then \
		failed=$$(awk '/^failures:$$/ { n++; next } n == 2 && /^    [a-z]/ { print $$1 }' $$log); \
		[ -n "$$failed" ] || exit $$status; \
		for attempt in 2 3; do \
			echo "test-aarch64: run $$attempt of the failed tests:" $$failed; \
			if $(AARCH64_TEST) -- --exact $$failed; then \
				echo "test-aarch64: passed on run $$attempt:" $$failed; exit 0; fi; \
		done; exit 1; \
	fi

# Windows, under Wine (Debian packages wine, wine64 and mingw-w64; rustup target x86_64-pc-windows-gnu).
# The tests run in a scratch Wine prefix under target/, made once: Wine 8.0 lacks ProcessPrng, which
# every Rust program built for Windows imports, so the prefix gets a stand-in built from
# fixtures/wine/bcryptprimitives.c (the emulator's only; the release zip carries no DLL).
WINEPREFIX_DIR := $(CURDIR)/target/wine-prefix
WINE_ENV := WINEPREFIX=$(WINEPREFIX_DIR) WINEDEBUG=-all WINEDLLOVERRIDES=mscoree,mshtml=

wine-prefix: $(WINEPREFIX_DIR)/drive_c/windows/system32/bcryptprimitives.dll

$(WINEPREFIX_DIR)/drive_c/windows/system32/bcryptprimitives.dll: fixtures/wine/bcryptprimitives.c
	@for tool in wine x86_64-w64-mingw32-gcc; do command -v $$tool >/dev/null 2>&1 || \
		{ echo "wine-prefix: $$tool is missing (Debian packages wine, wine64, mingw-w64)" >&2; exit 1; }; done
	mkdir -p $(WINEPREFIX_DIR)
	$(WINE_ENV) wineboot --init >target/wineboot.log 2>&1 || { cat target/wineboot.log >&2; exit 1; }
	x86_64-w64-mingw32-gcc -O2 -shared -o target/bcryptprimitives.dll $< -ladvapi32
	cp target/bcryptprimitives.dll $@

# The unit tests and the integration suite built for Windows and run under Wine: the fake CLIs are
# the Windows program built from fixtures/fake_cli.rs (copied as agy.exe, and as the node.exe that
# npm's gemini.cmd shim runs), so every process the tests start is a Windows process. Wine cannot
# make a Windows link, so the project with links out of it is made here with POSIX links, which
# Wine follows on open (only the relay's check of each handle's final path stands in their way).
# Last, a console CTRL_C (what Wine makes of a SIGINT) must end a relay mid-call within a second
# with nothing left running (tests/wine/ctrl_c.py).
WINE_LINKS := $(CURDIR)/target/wine-links
# Under Wine every system call that names a file or a process goes through its server process, so
# the limits on how fast the relay itself answers are stretched as under qemu (GEMINI_RELAY_TEST_SLACK;
# measured: 2,000 files inlined 17 times each over by a factor of 4.5); the deadlines the relay is
# told to keep are not.
WINE_TEST_ENV := $(WINE_ENV) CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine \
	GEMINI_RELAY_LINKED_PROJECT=$(WINE_LINKS)/project GEMINI_RELAY_TEST_SLACK=$${GEMINI_RELAY_TEST_SLACK:-8}

test-windows: wine-prefix
	@rustup target list --installed 2>/dev/null | grep -qx $(WINDOWS) || rustup target add $(WINDOWS)
	rm -rf $(WINE_LINKS) && mkdir -p $(WINE_LINKS)/project $(WINE_LINKS)/outside
	echo SECRET-OUTSIDE > $(WINE_LINKS)/outside/secret.txt
	echo INSIDE > $(WINE_LINKS)/project/inside.txt
	ln -s ../outside/secret.txt $(WINE_LINKS)/project/leak.txt
	ln -s ../outside $(WINE_LINKS)/project/ldir
	$(CARGO) build --locked --target $(WINDOWS) --bins --example fake-cli
	$(WINE_TEST_ENV) $(CARGO) test --locked --target $(WINDOWS)
	$(WINE_ENV) python3 tests/wine/ctrl_c.py target/$(WINDOWS)/debug/gemini-relay.exe \
		target/$(WINDOWS)/debug/examples/fake-cli.exe

lint: self-contained fmt-check clippy

# The repository explains itself: no comment, doc or test points at a specification that a clone
# does not have (by section sign, decision or question number, file name or path). Each rule is
# written where it applies, or in the README. The pattern is spelled so that it does not match this
# Makefile itself: the section sign comes from printf and each word ends in a bracket expression.
SECTION_SIGN := $(shell printf '\302\247')
SELF_CONTAINED_PATTERN := $(SECTION_SIGN)|\bD[0-9]+\b|\bQ[0-9]+\b|\bSPE[C]|\.\./share[d]
SELF_CONTAINED_PATHS := src tests fixtures README.md Makefile .ci build.rs Cargo.toml

self-contained:
	@found=$$(LC_ALL=C grep -rnIE --exclude-dir=target --exclude-dir=work --exclude-dir=artifacts \
		'$(SELF_CONTAINED_PATTERN)' $(SELF_CONTAINED_PATHS)); \
	if [ -n "$$found" ]; then \
		echo "self-contained: these lines point outside the repository; say the rule in place:" >&2; \
		echo "$$found" >&2; exit 1; fi; \
	echo "self-contained: no references outside the repository"

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --locked --all-targets --features shell-tests -- -D warnings

# The lint of the macOS builds, tests included: clippy only type-checks, so no linker or SDK is needed.
clippy-macos:
	@for t in $(MACOS_TARGETS); do \
		if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed | grep -qx "$$t"; then \
			echo "rustup target add $$t"; rustup target add "$$t" || exit 1; fi; \
		echo "$(CARGO) clippy --locked --target $$t --all-targets -- -D warnings"; \
		$(CARGO) clippy --locked --target "$$t" --all-targets -- -D warnings || exit 1; \
	done

# The lint of the Windows build, tests included: clippy only type-checks, and no crate's build script
# compiles C for the target, so neither mingw-w64 nor Wine is needed.
clippy-windows:
	@if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed | grep -qx x86_64-pc-windows-gnu; then \
		echo "rustup target add x86_64-pc-windows-gnu"; rustup target add x86_64-pc-windows-gnu; fi
	$(CARGO) clippy --locked --target x86_64-pc-windows-gnu --all-targets -- -D warnings

# The fake CLI (fixtures/fake_cli.rs, the example fake-cli) goes through its self-test before the
# integration tests run it.
unit:
	$(CARGO) build --locked --example fake-cli
	sh fixtures/selftest.sh target/debug/examples/fake-cli
	$(CARGO) test --locked

# The fake CLI under the names of the CLIs it plays, for the demo and the interop kit: copies in
# target/fake-cli/ (the relay runs AGY_CLI_PATH as it is, and the fake reads its own name).
FAKE_CLI_DIR := $(CURDIR)/target/fake-cli
fake-cli:
	$(CARGO) build --locked --example fake-cli
	mkdir -p $(FAKE_CLI_DIR)
	for name in agy gemini; do cp -f target/debug/examples/fake-cli $(FAKE_CLI_DIR)/$$name.new && \
		mv -f $(FAKE_CLI_DIR)/$$name.new $(FAKE_CLI_DIR)/$$name || exit 1; done

run: release
	$(BIN)

demo: release fake-cli
	python3 fixtures/demo.py $(BIN) $(FAKE_CLI_DIR)/agy

# The benchmark kit (tests/bench/README.md): `make bench` is the full run, `make bench-quick` (or
# `make bench QUICK=1`) the quick one; BENCH_ARGS go to run.sh (e.g. BENCH_ARGS=--with-node).
bench: release
	tests/bench/run.sh $(if $(filter-out 0,$(QUICK)),--quick) $(BENCH_ARGS)

bench-quick: release
	tests/bench/run.sh --quick $(BENCH_ARGS)

# The interop kit (tests/interop/README.md); HOSTS=1 adds the coding-agent hosts.
interop: release fake-cli
	SERVER="env GEMINI_MCP_TEST_TOOLS=1 GEMINI_MCP_PROGRESS_INTERVAL_MS=200 AGY_CLI_PATH=$(FAKE_CLI_DIR)/agy $(CURDIR)/$(BIN)" \
	CFG=$(abspath $(INTEROP_CFG)) \
	CONF_SCENARIOS="server-initialize ping tools-list prompts-list logging-set-level" \
	tests/interop/interop.sh

clean:
	$(CARGO) clean
	rm -rf dist

# Fuzzing, not part of `make test`: each target of tests/fuzz runs for FUZZ_SECONDS seconds on the
# nightly toolchain (cargo-fuzz is installed from crates.io if missing). New inputs go to
# tests/fuzz/work/<target> and findings to tests/fuzz/artifacts/<target>; the committed seeds in
# tests/fuzz/corpus/<target> are only read.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= jsonrpc scan glob changemode agy_output jail
FUZZ_WORK    := tests/fuzz/work

fuzz:
	$(CARGO) +nightly fuzz --version >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked
	rm -rf $(FUZZ_WORK)/gemini-relay-fuzz-jail-*
	set -e; for target in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_WORK)/$$target; \
		FUZZ_JAIL_DIR=$(CURDIR)/$(FUZZ_WORK) $(CARGO) +nightly fuzz run --fuzz-dir tests/fuzz $$target \
			$(FUZZ_WORK)/$$target tests/fuzz/corpus/$$target -- -max_total_time=$(FUZZ_SECONDS) -timeout=10; \
	done
	rm -rf $(FUZZ_WORK)/gemini-relay-fuzz-jail-*
