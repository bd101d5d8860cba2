#!/usr/bin/env python3
"""tap.py LOG -- server-cmd args...
Runs a stdio server with every line it reads and writes logged to LOG, one JSON object a line:
{"t": <Unix time, s>, "dir": "in"|"out", "line": "<the line>"} ("in": what the server read). The first
record is {"t":..,"dir":"pids","tap":<this pid>,"server":<the server's pid>}. End of input is passed
on to the server; SIGTERM, SIGINT and SIGHUP are passed on too; the tap exits when the server's
stdout closes and the server has exited, with the server's exit status."""
import json, os, signal, subprocess, sys, threading, time

log_path, cmd = sys.argv[1], sys.argv[3:]
assert sys.argv[2] == '--' and cmd, __doc__
log = open(log_path, 'a', buffering=1)
lock = threading.Lock()


def record(**fields):
    with lock:
        log.write(json.dumps(dict(t=round(time.time(), 6), **fields)) + '\n')


srv = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
record(dir='pids', tap=os.getpid(), server=srv.pid)
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, lambda n, _f: (record(dir='signal', signal=n), srv.send_signal(n)))


def pump_in():
    src = sys.stdin.buffer
    try:
        for line in iter(src.readline, b''):
            record(dir='in', line=line.decode('utf-8', 'replace').rstrip('\n'))
            srv.stdin.write(line)
            srv.stdin.flush()
    except (BrokenPipeError, OSError):
        pass
    record(dir='eof')
    try:
        srv.stdin.close()
    except OSError:
        pass


threading.Thread(target=pump_in, daemon=True).start()
out = sys.stdout.buffer
for line in iter(srv.stdout.readline, b''):
    record(dir='out', line=line.decode('utf-8', 'replace').rstrip('\n'))
    try:
        out.write(line)
        out.flush()
    except (BrokenPipeError, OSError):
        pass
rc = srv.wait()
record(dir='exit', code=rc)
sys.exit(rc if rc >= 0 else 128 - rc)
