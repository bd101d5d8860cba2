#!/usr/bin/env python3
"""Starts an installed gemini-relay as a host would (a command line, stdio) and checks that it
answers `initialize` and a `gemini-ask` `tools/call` against the fake agy (AGY_CLI_PATH in the
environment). Prints the `initialize` answer and the time from the start to it, and exits 1 when
an answer is missing, wrong or late. Python 3 standard library only.

Usage: mcp_check.py LABEL DEADLINE_SECONDS COMMAND [ARGS...]
"""

import json
import os
import queue
import subprocess
import sys
import threading
import time


def main():
    label, deadline, command = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    start = time.monotonic()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(l) for l in proc.stdout] and None, daemon=True).start()
    errors = []
    threading.Thread(target=lambda: errors.extend(proc.stderr), daemon=True).start()

    def send(message):
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()

    def answer(wanted):
        while True:
            left = deadline - (time.monotonic() - start)
            try:
                line = lines.get(timeout=max(left, 0.01))
            except queue.Empty:
                fail(f"no answer to request {wanted} within {deadline:.0f} s")
            message = json.loads(line)
            if message.get("id") == wanted:
                return message

    def fail(why):
        proc.kill()
        proc.wait()
        tail = b"".join(errors[-5:]).decode(errors="replace")
        print(f"{label}: FAIL: {why}\n{tail}", file=sys.stderr)
        sys.exit(1)

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
          "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                     "clientInfo": {"name": "test-packages", "version": "0"}}})
    init = answer(1)
    took = time.monotonic() - start
    info = init.get("result", {}).get("serverInfo", {})
    if info.get("name") != "gemini-relay":
        fail(f"initialize answered {init}")
    print(f"{label}: initialize answered in {took * 1000:.0f} ms: {json.dumps(init)}")
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
          "params": {"name": "gemini-ask", "arguments": {"prompt": "hello from test-packages"}}})
    call = answer(2)
    text = "".join(c.get("text", "") for c in call.get("result", {}).get("content", []))
    if call.get("result", {}).get("isError") or "FAKE-ANSWER" not in text:
        fail(f"tools/call answered {call}")
    print(f"{label}: tools/call gemini-ask answered: {text.strip()[:120]!r}")
    proc.stdin.close()
    try:
        proc.wait(timeout=max(deadline - (time.monotonic() - start), 5))
    except subprocess.TimeoutExpired:
        fail("still running after stdin closed")


if __name__ == "__main__":
    main()
