#!/usr/bin/env python3
"""A console CTRL_C ends the Windows relay mid-call within a second, with nothing left running.

Run by `make test-windows` (WINEPREFIX and WINEDEBUG set) as
    ctrl_c.py <gemini-relay.exe> <fake-cli.exe>
Wine turns a SIGINT sent to a Windows process into a CTRL_C console event, which the relay takes
through its console control handler; that cannot be sent from inside Wine without a console, so
this check runs on the POSIX side. The fake agy hangs and leaves a grandchild holding its pipes;
the relay must answer the CTRL_C by killing that whole tree and exiting. What runs under Wine is
a POSIX process whose command line names the Windows program, so leftovers are found with `ps`.
Prints `N passed, N failed` and exits non-zero on a failure.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROUNDS = 3
EXIT_LIMIT = 1.0


def winpath(path):
    return subprocess.run(["winepath", "-w", path], check=True, capture_output=True,
                          text=True).stdout.strip()


def wait_for(what, predicate, limit):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"no {what} within {limit} s")


def survivors(marker):
    listing = subprocess.run(["ps", "-A", "-o", "pid=,args="], check=True, capture_output=True,
                             text=True).stdout
    return [line.strip() for line in listing.splitlines() if marker in line]


def send(relay, message):
    relay.stdin.write((json.dumps(message) + "\n").encode())
    relay.stdin.flush()


def one_round(relay_exe, fake_exe, work):
    bin_dir = os.path.join(work, "bin")
    os.makedirs(bin_dir)
    agy = os.path.join(bin_dir, "agy.exe")
    shutil.copy(fake_exe, agy)
    log = os.path.join(work, "fake.log")
    env = dict(os.environ, AGY_CLI_PATH=winpath(agy), FAKE_LOG=winpath(log), FAKE_HANG="1",
               FAKE_GRANDCHILD="1", GEMINI_MCP_BACKEND="agy", RUST_LOG="info")
    # The relay's log goes to a file, so that a full pipe can never stall it.
    stderr_path = os.path.join(work, "relay.stderr")
    stderr_file = open(stderr_path, "wb")
    relay = subprocess.Popen(["wine", relay_exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=stderr_file, env=env)
    # What runs under Wine shows its Windows path (Z:\tmp\...) to ps: the work directory's name is
    # what both forms share.
    marker = os.path.basename(work)
    try:
        send(relay, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "ctrl-c", "version": "0"}}})
        send(relay, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(relay, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "gemini-ask", "arguments": {"prompt": "hang"}}})

        def started():
            if not os.path.exists(log):
                return False
            with open(log, encoding="utf-8") as lines:
                return any(json.loads(line).get("kind") == "run" for line in lines)

        wait_for("agy run", started, 30)
        wait_for("grandchild", lambda: len(survivors(marker)) >= 2, 10)
        sent = time.monotonic()
        relay.send_signal(signal.SIGINT)
        try:
            code = relay.wait(timeout=10)
        except subprocess.TimeoutExpired:
            raise AssertionError("the relay did not exit after CTRL_C")
        took = time.monotonic() - sent
        assert took <= EXIT_LIMIT, f"exit took {took:.2f} s"
        # Exit 0 is the relay's own shutdown; a signal's default action or a crash ends it otherwise.
        assert code == 0, f"exit code {code}"
        # The tree was killed before the relay exited; give Wine a moment to reap it.
        try:
            wait_for("empty tree", lambda: not survivors(marker), 2)
        except AssertionError:
            raise AssertionError(f"still running after exit: {survivors(marker)}")
        with open(stderr_path, encoding="utf-8", errors="replace") as log:
            stderr = log.read()
        return f"exit {code} after {took * 1000:.0f} ms; stderr ends: {stderr.strip()[-200:]!r}"
    finally:
        if relay.poll() is None:
            relay.kill()
            relay.wait()
        stderr_file.close()
        # A failed round leaves nothing behind for the next one.
        for line in survivors(marker):
            try:
                os.kill(int(line.split()[0]), signal.SIGKILL)
            except (OSError, ValueError):
                pass


def main():
    relay_exe, fake_exe = sys.argv[1:3]
    passed = failed = 0
    for n in range(ROUNDS):
        work = tempfile.mkdtemp(prefix="gemini-relay-ctrl-c-")
        try:
            detail = one_round(relay_exe, fake_exe, work)
            passed += 1
            print(f"ctrl_c round {n + 1}: ok, {detail}")
        except AssertionError as err:
            failed += 1
            print(f"ctrl_c round {n + 1}: FAILED, {err}")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
