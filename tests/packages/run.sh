#!/usr/bin/env bash
# run.sh: proves the install packages in dist/ (`make dist`) offline, the way their users install
# them. `make test-packages` runs it after `make dist`; by hand, from the repository's root:
#
#   tests/packages/run.sh
#
# 1. every manifest parses, names the crate's version and agrees with the others (manifests.py),
#    and every package holds its platform's archive binary (.ci/packages/check_binaries.py);
# 2. npm: a local registry (verdaccio, no uplink, on 127.0.0.1) receives the seven npm packages,
#    and `npx -y gemini-relay` from an empty npm cache answers `initialize` and a `tools/call`
#    against the fake agy; `config gemini` through npx names `npx -y gemini-relay`; the launcher
#    says what is wrong when its platform package is missing or its binary is not executable;
# 3. PyPI: the wheel installs with pip from dist/ alone into a fresh virtual environment, and runs
#    through `uvx` and `pipx` (both from PyPI), and answers the same;
# 4. MCP bundles: `mcpb unpack` then `mcpb validate` pass for each, and the Linux bundle's
#    unpacked binary is executable and answers;
# 5. Gemini CLI 0.61 installs the extension from dist/gemini-extension and `gemini mcp list`
#    shows the relay connected (started by npx from the local registry);
# 6. Claude Code validates the plugin and the repository's marketplace (`claude plugin validate`),
#    installs the plugin through that marketplace (from the local registry) and `claude mcp list`
#    shows the relay connected;
# 7. `ruby -c` accepts the Homebrew formula (its hashes are checked in step 1).
#
# The test tools (verdaccio, @anthropic-ai/mcpb, @google/gemini-cli@0.61, @anthropic-ai/claude-code,
# uv, pipx) come from npm and PyPI once, into $GEMINI_RELAY_PACKAGES_CACHE (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/gemini-relay-packages); no gemini-relay artefact comes from outside
# the machine. Every step runs under a deadline; the whole run takes about a minute once the tools
# are there. Exit status 0 when every check passed, 1 otherwise.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KIT=$ROOT/tests/packages
cd "$ROOT"
CACHE=${GEMINI_RELAY_PACKAGES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gemini-relay-packages}
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
DIST=$ROOT/dist
PUBLIC=https://registry.npmjs.org
say() { echo "== $*"; }
die() { echo "test-packages: FAIL: $*" >&2; exit 1; }

[ -f "$DIST/gemini-relay-$VERSION.tgz" ] || die "no $DIST/gemini-relay-$VERSION.tgz (run make dist first)"
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
[ "$node_major" -ge 20 ] || die "Node.js 20 or later is needed (Gemini CLI 0.61 runs on it); node here: $(node --version 2>&1)"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gemini-relay-packages.XXXXXX")
VERDACCIO_PID=
cleanup() {
  if [ -n "$VERDACCIO_PID" ]; then kill "$VERDACCIO_PID" 2>/dev/null || true; wait "$VERDACCIO_PID" 2>/dev/null || true; fi
  chmod -R u+w "$WORK" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

say "1. manifests and binaries"
python3 "$KIT/manifests.py" "$DIST" | tail -n 3
python3 .ci/packages/check_binaries.py "$DIST" "$VERSION"

say "test tools in $CACHE"
TOOLS=$CACHE/npm
want_tools="verdaccio@6.2.1 @anthropic-ai/mcpb@2.1.2 @google/gemini-cli@0.61.0 @anthropic-ai/claude-code@2.1.197"
if [ "$(cat "$TOOLS/.installed" 2>/dev/null)" != "$want_tools" ]; then
  mkdir -p "$TOOLS"
  # shellcheck disable=SC2086
  timeout 600 npm install --prefix "$TOOLS" --registry "$PUBLIC" --no-audit --no-fund --loglevel=error \
    $want_tools >"$WORK/tools.log" 2>&1 || { cat "$WORK/tools.log" >&2; die "npm install of the test tools"; }
  echo "$want_tools" >"$TOOLS/.installed"
fi
PY=$CACHE/python-tools/bin
if [ ! -x "$PY/uv" ] || [ ! -x "$PY/pipx" ]; then
  python3 -m venv "$CACHE/python-tools" &&
    timeout 300 "$PY/pip" install --quiet --index-url https://pypi.org/simple uv pipx ||
    echo "test-packages: uv or pipx is not installable here; its run is skipped" >&2
fi
BIN=$TOOLS/node_modules/.bin

# The fake agy every relay below calls: the Rust fake CLI, named agy.
cargo build --quiet --locked --example fake-cli
mkdir -p "$WORK/fake" && cp target/debug/examples/fake-cli "$WORK/fake/agy"
export AGY_CLI_PATH=$WORK/fake/agy GEMINI_MCP_BACKEND=agy

say "2. npm, from a local registry"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
REGISTRY=http://127.0.0.1:$PORT
mkdir -p "$WORK/verdaccio/storage"
cat >"$WORK/verdaccio/config.yaml" <<EOF
storage: $WORK/verdaccio/storage
auth:
  htpasswd:
    file: $WORK/verdaccio/htpasswd
uplinks: {}
packages:
  '**':
    access: \$all
    publish: \$authenticated
log: { type: file, path: $WORK/verdaccio/log, level: warn }
EOF
"$BIN/verdaccio" --config "$WORK/verdaccio/config.yaml" --listen "127.0.0.1:$PORT" >"$WORK/verdaccio/out" 2>&1 &
VERDACCIO_PID=$!
# Wait (at most 30 s) for it to answer, then make a user and take its token.
TOKEN=$(python3 - "$REGISTRY" <<'EOF'
import json, sys, time, urllib.request
registry = sys.argv[1]
deadline = time.monotonic() + 30
while True:
    try:
        urllib.request.urlopen(registry + "/-/ping", timeout=2)
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit("verdaccio did not answer within 30 s")
        time.sleep(0.2)
body = json.dumps({"name": "ci", "password": "ci-password"}).encode()
request = urllib.request.Request(registry + "/-/user/org.couchdb.user:ci", body, method="PUT",
                                 headers={"content-type": "application/json"})
print(json.load(urllib.request.urlopen(request, timeout=10))["token"])
EOF
) || die "verdaccio on $REGISTRY"
# Every npm and npx below reads this configuration only, with an empty cache.
cat >"$WORK/npmrc" <<EOF
registry=$REGISTRY/
//127.0.0.1:$PORT/:_authToken=$TOKEN
audit=false
fund=false
update-notifier=false
EOF
export npm_config_userconfig=$WORK/npmrc npm_config_globalconfig=$WORK/npmrc-global \
  npm_config_cache=$WORK/npm-cache npm_config_registry=$REGISTRY/
for tgz in gemini-relay-{linux-x64,linux-arm64,darwin-arm64,darwin-x64,win32-x64,claude-plugin}-"$VERSION".tgz \
  gemini-relay-"$VERSION".tgz; do
  timeout 60 npm publish --loglevel=error "$DIST/$tgz" >/dev/null || die "npm publish $tgz"
done
echo "published 7 packages to $REGISTRY"
mkdir -p "$WORK/empty" && cd "$WORK/empty"
python3 "$KIT/mcp_check.py" "npx -y gemini-relay" 120 npx -y gemini-relay
config=$(timeout 60 npx -y gemini-relay config gemini 2>/dev/null)
python3 - "$config" <<'EOF' || die "config gemini through npx: $config"
import json, sys
server = json.loads(sys.argv[1])["mcpServers"]["gemini-relay"]
assert server["command"] == "npx" and server["args"] == ["-y", "gemini-relay"], server
print('config gemini through npx: "command": "npx", "args": ["-y", "gemini-relay"]')
EOF
# The launcher's own errors: a binary that is not executable, and no platform package at all.
bin=$(ls "$WORK"/npm-cache/_npx/*/node_modules/@gemini-relay/linux-x64/bin/gemini-relay)
chmod -x "$bin"
out=$(timeout 60 npx -y gemini-relay --version 2>&1) && die "npx ran a binary that is not executable"
case $out in *"is not executable"*) echo "not executable: $out" ;; *) die "not executable: $out" ;; esac
chmod +x "$bin"
# SIGTERM to the launcher reaches the relay: both are gone within 5 s, with the relay's exit status.
python3 - "$(dirname "$(dirname "$(dirname "$(dirname "$bin")")")")/gemini-relay/bin/gemini-relay.js" "$bin" <<'EOF' ||
import os, signal, subprocess, sys, time
launcher, binary = sys.argv[1:3]
proc = subprocess.Popen(["node", launcher], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'); proc.stdin.flush()
assert b'"id":1' in proc.stdout.readline(), "no answer to ping"
children = [p for p in os.listdir("/proc") if p.isdigit() and os.path.exists(f"/proc/{p}/exe")
            and os.path.realpath(f"/proc/{p}/exe") == os.path.realpath(binary)]
assert children, "no relay process under the launcher"
proc.send_signal(signal.SIGTERM)
status = proc.wait(timeout=5)
deadline = time.monotonic() + 5
while any(os.path.exists(f"/proc/{p}") for p in children) and time.monotonic() < deadline:
    time.sleep(0.05)
assert not any(os.path.exists(f"/proc/{p}") for p in children), "the relay outlived the launcher"
print(f"SIGTERM to the launcher: relay {children} gone, launcher exit status {status}")
EOF
  die "SIGTERM to the launcher"
mkdir -p "$WORK/no-optional" && cd "$WORK/no-optional"
timeout 120 npm install --omit=optional --loglevel=error gemini-relay@"$VERSION" >/dev/null
out=$(node node_modules/gemini-relay/bin/gemini-relay.js --version 2>&1) && die "the launcher ran without its platform package"
case $out in
  *"gemini-relay-$VERSION-x86_64-unknown-linux-musl.tar.gz"*) echo "no platform package: $out" ;;
  *) die "no platform package: $out" ;;
esac
cd "$ROOT"

say "3. PyPI wheel, from dist/ alone"
python3 -m venv "$WORK/venv"
timeout 120 "$WORK/venv/bin/pip" install --quiet --no-index --find-links "$DIST" gemini-relay=="$VERSION"
python3 "$KIT/mcp_check.py" "pip install gemini-relay" 30 "$WORK/venv/bin/gemini-relay"
if [ -x "$PY/uv" ]; then
  UV_CACHE_DIR=$WORK/uv-cache UV_TOOL_DIR=$WORK/uv-tools python3 "$KIT/mcp_check.py" "uvx gemini-relay" 60 \
    "$PY/uv" tool run --offline --no-index --find-links "$DIST" gemini-relay
fi
if [ -x "$PY/pipx" ]; then
  PIPX_HOME=$WORK/pipx PIPX_BIN_DIR=$WORK/pipx/bin timeout 120 "$PY/pipx" install --quiet \
    --pip-args="--no-index --find-links $DIST" gemini-relay=="$VERSION" >/dev/null
  python3 "$KIT/mcp_check.py" "pipx install gemini-relay" 30 "$WORK/pipx/bin/gemini-relay"
fi

say "4. MCP bundles"
for bundle in "$DIST"/gemini-relay-"$VERSION"-*.mcpb; do
  platform=${bundle##*/gemini-relay-"$VERSION"-}; platform=${platform%.mcpb}
  out=$WORK/mcpb/$platform
  timeout 60 "$BIN/mcpb" unpack "$bundle" "$out" >/dev/null || die "mcpb unpack $bundle"
  timeout 60 "$BIN/mcpb" validate "$out/manifest.json" | tail -n 1 || die "mcpb validate $bundle"
  case $platform in
    win32-*) [ -f "$out/server/gemini-relay.exe" ] || die "no server/gemini-relay.exe in $bundle" ;;
    *) [ -x "$out/server/gemini-relay" ] || die "the unpacked $platform bundle's binary is not executable" ;;
  esac
done
python3 "$KIT/mcp_check.py" "bundle linux-x64" 30 "$WORK/mcpb/linux-x64/server/gemini-relay"

say "5. Gemini CLI $("$BIN/gemini" --version 2>/dev/null) installs the extension"
# A fresh home, where the user has trusted the extension's folder (what answering its install
# question with y records); no terminal, so nothing can wait for an answer.
GEMINI_HOME=$WORK/gemini-home
mkdir -p "$GEMINI_HOME/.gemini" "$WORK/gemini-project"
python3 -c 'import json, sys; json.dump({sys.argv[1]: "TRUST_FOLDER"}, open(sys.argv[2], "w"))' \
  "$(cd "$DIST/gemini-extension" && pwd -P)" "$GEMINI_HOME/.gemini/trustedFolders.json"
cd "$WORK/gemini-project"
HOME=$GEMINI_HOME timeout 120 setsid "$BIN/gemini" extensions install "$DIST/gemini-extension" --consent \
  </dev/null 2>&1 | tail -n 2
list=$(HOME=$GEMINI_HOME timeout 120 setsid "$BIN/gemini" mcp list </dev/null 2>&1) || true
echo "$list" | grep gemini-relay || true
echo "$list" | grep -q "gemini-relay.*Connected" || die "gemini mcp list does not show gemini-relay connected: $list"
cd "$ROOT"

say "6. Claude Code validates the plugin and the marketplace, installs the plugin from it, connects"
CLAUDE=$(ls "$TOOLS"/node_modules/@anthropic-ai/claude-code-linux-x64/claude 2>/dev/null || echo "$BIN/claude")
claude() { HOME=$WORK/claude-home timeout 120 setsid "$CLAUDE" "$@" </dev/null 2>&1; }
mkdir -p "$WORK/claude-home"
claude plugin validate --strict "$DIST/claude-plugin" | tail -n 1
claude plugin validate --strict "$ROOT" | tail -n 1
# The marketplace of this checkout; its plugin comes from the local registry as an npm package.
claude plugin marketplace add "$ROOT" | tail -n 1
claude plugin install gemini-relay@gemini-relay | tail -n 1
list=$(cd "$WORK/claude-home" && claude mcp list) || true
echo "$list" | grep gemini-relay || true
echo "$list" | grep -q "gemini-relay.*Connected" || die "claude mcp list does not show gemini-relay connected: $list"

say "7. Homebrew formula"
if command -v ruby >/dev/null 2>&1; then
  ruby -c "$DIST/gemini-relay.rb"
else
  die "ruby is missing (Debian package ruby)"
fi
say "test-packages: every check passed"
