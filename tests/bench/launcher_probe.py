#!/usr/bin/env python3
"""launcher_probe.py: what the npm launcher (`npx -y gemini-relay` runs it once npm has the
packages) adds to the relay's cold start. It times, taking turns, N cold starts of the bare relay and
of `node <launcher>` (spawn -> `initialize` answered), and N runs of `node -e 0` (spawn -> exit),
and checks the goal: the launcher's added time (median launcher - median bare) within 1.2x of
`node -e 0`'s own start-up. Python standard library only.

Usage: launcher_probe.py --relay BIN --launcher JS [--n N] [--json-out FILE]
Prints a small table and the verdict; exit 0 when measured (whatever the verdict), 2 on an error.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time

INIT = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        b'"capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}\n')


def cold(argv):
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    proc.stdin.write(INIT)
    proc.stdin.flush()
    line = proc.stdout.readline()
    took = time.perf_counter() - t0
    proc.stdin.close()
    proc.wait(timeout=10)
    if b'"serverInfo"' not in line:
        raise RuntimeError(f"{argv}: no initialize answer: {line[:200]!r}")
    return took * 1e3


def run(argv):
    t0 = time.perf_counter()
    subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    return (time.perf_counter() - t0) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--relay", required=True)
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--json-out")
    o = ap.parse_args()
    times = {"bare": [], "launcher": [], "node": []}
    try:
        for _ in range(2):  # warm the page cache
            cold([o.relay]), cold(["node", o.launcher]), run(["node", "-e", "0"])
        for _ in range(o.n):
            times["bare"].append(cold([o.relay]))
            times["launcher"].append(cold(["node", o.launcher]))
            times["node"].append(run(["node", "-e", "0"]))
    except (OSError, RuntimeError, subprocess.SubprocessError) as err:
        print(f"launcher_probe.py: {err}", file=sys.stderr)
        sys.exit(2)
    med = {k: statistics.median(v) for k, v in times.items()}
    added = med["launcher"] - med["bare"]
    ratio = added / med["node"]
    ok = ratio <= 1.2
    print(f"npx launcher (node {subprocess.check_output(['node', '--version']).decode().strip()}, "
          f"{o.n} cold starts each, medians):")
    print(f"  bare relay -> initialize   {med['bare']:7.2f} ms")
    print(f"  node launcher -> initialize {med['launcher']:7.2f} ms")
    print(f"  node -e 0                  {med['node']:7.2f} ms")
    print(f"  added by the launcher      {added:7.2f} ms = {ratio:.2f}x node -e 0 (goal <= 1.20x): "
          f"{'MET' if ok else 'MISSED'}")
    if o.json_out:
        with open(o.json_out, "w") as f:
            json.dump({"median_ms": med, "added_ms": added, "ratio_to_node": ratio, "met": ok}, f)


if __name__ == "__main__":
    main()
