#!/usr/bin/env bash
# The real Gemini CLI as the relay's backend, talking to a loopback fake model: a gemini-ask call with
# an attachment whose name needs escaping must reach the model as an inline data part of the right
# media type holding the file's bytes.
# usage: gemini-attach.sh GEMINI_BIN -- relay-cmd args...
set -euo pipefail
gemini_bin=$1; shift 2
KIT=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d); mkdir -p "$work/home/.gemini" "$work/proj" "$work/bin"
trap 'kill "$model" 2>/dev/null || true; rm -rf "$work"' EXIT
echo '{"security":{"auth":{"selectedType":"gemini-api-key"}}}' > "$work/home/.gemini/settings.json"
printf '#!/bin/sh\nexec node %q "$@"\n' "$gemini_bin" > "$work/bin/gemini"; chmod +x "$work/bin/gemini"
# A 1x1 PNG under a name with a space and parentheses.
python3 -c 'import base64,sys; open(sys.argv[1],"wb").write(base64.b64decode(
"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"))' "$work/proj/my shot (1).png"
python3 "$KIT/fake_model.py" "$work/port" "$work/model.log" none '{}' & model=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")
cd "$work/proj"
env -i PATH="$work/bin:$PATH" HOME="$work/home" GEMINI_CLI_TRUST_WORKSPACE=true GEMINI_API_KEY=dummy \
  GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:$port" GEMINI_MCP_BACKEND=gemini \
  python3 - "$@" <<'PY'
import json, subprocess, sys
relay = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def send(msg): relay.stdin.write(json.dumps(msg) + "\n"); relay.stdin.flush()
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
      "capabilities": {}, "clientInfo": {"name": "gemini-attach", "version": "1"}}})
relay.stdout.readline()
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "gemini-ask",
      "arguments": {"prompt": "What is in this picture?", "attachments": ["my shot (1).png"]}}})
while True:
    answer = json.loads(relay.stdout.readline())
    if answer.get("id") == 2: break
relay.stdin.close(); relay.wait(10)
text = answer["result"]["content"][0]["text"]
print(text)
assert not answer["result"]["isError"] and text.startswith("📎 Attached: 1 file(s), 69 B\n\n"), text
PY
python3 - "$work/model.log" "$work/proj/my shot (1).png" <<'PY'
import base64, json, sys
want = base64.b64encode(open(sys.argv[2], "rb").read()).decode()
parts = []
for line in open(sys.argv[1]):
    if " POST " in line and "generateContent" in line.split(" POST ")[1].split(" ")[0]:
        req = json.loads(line.split(" ", 4)[4])
        parts += [p["inlineData"] for c in req.get("contents", []) for p in c.get("parts", []) if "inlineData" in p]
print(json.dumps([{"mimeType": p["mimeType"], "bytes": len(base64.b64decode(p["data"]))} for p in parts]))
assert any(p["mimeType"] == "image/png" and p["data"] == want for p in parts), "no image/png inline data part"
print("the model received the PNG as inline data (image/png)")
PY
