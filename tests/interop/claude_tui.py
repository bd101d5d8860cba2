#!/usr/bin/env python3
"""claude_tui.py SCENARIO -- server-cmd args...
Drives interactive Claude Code (its TUI, in a pseudo-terminal) against a loopback fake model
(fake_model.py) with the stdio server behind tap.py, and checks one scenario from the tapped wire,
the fake model's log and the process table. Needs the `pyte` terminal emulator (the kit's venv).
Prints each tools/call's timings (to its answer, polls, end) and the scenario's own measures, then
the screen when the scenario failed. Environment: CLAUDE (the claude executable), CLAUDE_ENV (extra
NAME=VALUE words for Claude Code's environment), KEEP=1 keeps the work directory (wire.jsonl,
model.log, fake-agy.jsonl, screen.raw: the terminal output, each read prefixed with `\n@<time> `),
VERBOSE=1 prints the screen also on success."""
import json, os, pty, re, shutil, signal, subprocess, sys, tempfile, termios, fcntl, struct, threading, time, select
import pyte

KIT = os.path.dirname(os.path.abspath(__file__))
ROWS, COLS = 40, 140


def now():
    return time.time()


def wait_for(what, pred, timeout, step=0.05):
    """Polls pred() until it returns something truthy or `timeout` seconds pass; raises on timeout."""
    end = now() + timeout
    while True:
        v = pred()
        if v:
            return v
        if now() > end:
            raise Failure(f'timed out after {timeout:g}s waiting for {what}')
        time.sleep(step)


class Failure(Exception):
    pass


# ---------------------------------------------------------------- the terminal
class Terminal:
    """Claude Code in a pty: a pyte screen fed by a reader thread; the terminal's answers to the
    program's queries (cursor position, device attributes) go back through the pty, as a terminal's."""

    def __init__(self, argv, env, cwd, transcript):
        self.screen = pyte.Screen(COLS, ROWS)
        self.stream = pyte.ByteStream(self.screen)
        self.screen.write_process_input = self._answer
        self.lock = threading.Lock()
        self.raw = open(transcript, 'wb')
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack('HHHH', ROWS, COLS, 0, 0))

        def ctty():
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=slave, stdout=slave, stderr=slave,
                                     preexec_fn=ctty, close_fds=True)
        os.close(slave)
        self.master = master
        self.closed = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _answer(self, data):
        try:
            os.write(self.master, data.encode())
        except OSError:
            pass

    def _read(self):
        while True:
            try:
                r, _, _ = select.select([self.master], [], [], 0.2)
                if not r:
                    if self.proc.poll() is not None:
                        break
                    continue
                data = os.read(self.master, 65536)
            except OSError:
                break
            if not data:
                break
            self.raw.write(f'\n@{now():.3f} '.encode() + data)
            with self.lock:
                self.stream.feed(data)
        self.closed = True

    def text(self):
        with self.lock:
            return '\n'.join(line.rstrip() for line in self.screen.display)

    def send(self, data):
        os.write(self.master, data.encode() if isinstance(data, str) else data)

    def type(self, text):
        for ch in text:
            self.send(ch)
            time.sleep(0.01)


# ---------------------------------------------------------------- the logs
def read_jsonl(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                if line.endswith('\n'):
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass
    except FileNotFoundError:
        pass
    return out


class Wire:
    """The tapped wire: records with parsed messages."""

    def __init__(self, path):
        self.path = path

    def records(self):
        recs = read_jsonl(self.path)
        for r in recs:
            if r.get('dir') in ('in', 'out'):
                try:
                    r['msg'] = json.loads(r['line'])
                except ValueError:
                    r['msg'] = None
        return recs

    def msgs(self, direction, method=None):
        return [r for r in self.records() if r.get('dir') == direction and isinstance(r.get('msg'), dict)
                and (method is None or r['msg'].get('method') == method)]

    def answer(self, rid):
        for r in self.msgs('out'):
            m = r['msg']
            if 'method' not in m and m.get('id') == rid:
                return r
        return None

    def pids(self):
        return [r for r in self.records() if r.get('dir') == 'pids']


class Model:
    """The fake model's request log: `<t> POST <path> #<n> <json>` lines."""

    def __init__(self, path):
        self.path = path

    def requests(self):
        out = []
        try:
            for line in open(self.path):
                parts = line.split(' ', 4)
                if len(parts) == 5 and parts[1] == 'POST' and parts[2].endswith('/messages'):
                    try:
                        out.append((float(parts[0]), json.loads(parts[4])))
                    except ValueError:
                        pass
        except FileNotFoundError:
            pass
        return out

    def received(self, snippet, after=0.0):
        """The time of the first request after `after` whose messages carry `snippet`."""
        for t, req in self.requests():
            if t >= after and snippet in json.dumps(req.get('messages'), ensure_ascii=False):
                return t
        return None


# ---------------------------------------------------------------- the process table
def alive(pid):
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except (FileNotFoundError, IndexError):
        return False


def marked(marker):
    """Pids of live processes whose environment carries MARKER (everything this run started)."""
    found = []
    for d in os.listdir('/proc'):
        if d.isdigit() and int(d) != os.getpid():
            try:
                with open(f'/proc/{d}/environ', 'rb') as f:
                    if marker.encode() in f.read() and alive(int(d)):
                        found.append(int(d))
            except OSError:
                pass
    return found


def describe(pids):
    out = []
    for p in pids:
        try:
            out.append(f'{p}: ' + open(f'/proc/{p}/cmdline', 'rb').read().replace(b'\0', b' ').decode()[:150])
        except OSError:
            out.append(f'{p}: (gone)')
    return '; '.join(out)


def fake_runs(path):
    """The fake agy's `run` invocations from its FAKE_LOG: start records, with their grandchildren."""
    return [r for r in read_jsonl(path) if r.get('event') == 'start' and r.get('kind') == 'run']


# ---------------------------------------------------------------- one session
class Session:
    def __init__(self, name, server, tool, args, model_env=None, claude_env=None, allowed=()):
        self.name = name
        self.work = tempfile.mkdtemp(prefix=f'claude-tui-{name}-')
        self.home, self.proj = f'{self.work}/home', f'{self.work}/proj'
        os.makedirs(self.home)
        os.makedirs(self.proj)
        self.marker = f'INTEROP_TUI_RUN={os.path.basename(self.work)}'
        self.wire = Wire(f'{self.work}/wire.jsonl')
        self.model = Model(f'{self.work}/model.log')
        self.fake_log = f'{self.work}/fake-agy.jsonl'
        key = 'sk-ant-offline-interop-key-0123456789abcdef'
        # The answers to the first-run dialogs (theme, onboarding, "use this API key?", folder trust)
        # live in ~/.claude.json: the key is remembered by its last 20 characters.
        json.dump({'theme': 'dark', 'hasCompletedOnboarding': True, 'numStartups': 1,
                   'customApiKeyResponses': {'approved': [key[-20:]], 'rejected': []},
                   'projects': {self.proj: {'hasTrustDialogAccepted': True, 'hasCompletedProjectOnboarding': True,
                                            'projectOnboardingSeenCount': 1, 'allowedTools': []}}},
                  open(f'{self.home}/.claude.json', 'w'))
        srv = ['env', f'FAKE_LOG={self.fake_log}'] + list(server)
        json.dump({'mcpServers': {'srv': {'command': sys.executable,
                                          'args': [f'{KIT}/tap.py', self.wire.path, '--'] + srv}}},
                  open(f'{self.work}/mcp.json', 'w'))
        menv = dict(os.environ, **(model_env or {}))
        menv[self.marker.split('=')[0]] = self.marker.split('=')[1]
        self.model_proc = subprocess.Popen([sys.executable, f'{KIT}/fake_model.py', f'{self.work}/port', self.model.path,
                                            tool, json.dumps(args)], env=menv, stderr=open(f'{self.work}/model.err', 'w'))
        try:
            port = wait_for('the fake model', lambda: os.path.exists(f'{self.work}/port') and open(f'{self.work}/port').read(), 10)
        except Failure:
            self.model_proc.kill()
            self.model_proc.wait()
            raise
        env = {'PATH': os.environ['PATH'], 'HOME': self.home, 'TERM': 'xterm-256color', 'LANG': 'C.UTF-8',
               'ANTHROPIC_BASE_URL': f'http://127.0.0.1:{port}', 'ANTHROPIC_API_KEY': key,
               'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC': '1', 'DISABLE_AUTOUPDATER': '1',
               'ENABLE_TOOL_SEARCH': 'false', 'MCP_TIMEOUT': '30000'}
        env.update(claude_env or {})
        env.update(w.split('=', 1) for w in os.environ.get('CLAUDE_ENV', '').split())
        env[self.marker.split('=')[0]] = self.marker.split('=')[1]
        claude = os.environ.get('CLAUDE') or shutil.which('claude')
        argv = [claude, '--mcp-config', f'{self.work}/mcp.json', '--strict-mcp-config']
        argv += ['--allowedTools', ' '.join(('mcp__srv',) + tuple(allowed))]
        try:
            self.term = Terminal(argv, env, self.proj, f'{self.work}/screen.raw')
        except OSError:
            self.model_proc.kill()
            self.model_proc.wait()
            raise

    def prompt(self, text, tries=5):
        """Waits for the relay's tools and the input box, then types a prompt and Enter. Claude Code may
        take the first prompt before it has added the server's tools to the session (the fake model
        then answers 'ok'): then the prompt is typed again, up to `tries` times."""
        wait_for('tools/list answered', lambda: any('"tools"' in r['line'] for r in self.wire.msgs('out')), 30)
        for _ in range(tries):
            wait_for('the input prompt', lambda: re.search(r'^\s*[>❯]\s*$', self.term.text(), re.M), 30)
            sent = now()
            self.term.type(text)
            time.sleep(0.3)
            self.term.send('\r')

            def offered():
                for t, req in self.model.requests():
                    names = [x.get('name', '') for x in req.get('tools') or []]
                    if t >= sent and text in json.dumps(req.get('messages')) and names:
                        return 'yes' if any(n.startswith('mcp__srv__') for n in names) else 'no'
            if wait_for('the model request', offered, 30) == 'yes':
                return
            wait_for('the turn to end', lambda: self.model.requests() and '● ok' in self.term.text(), 10)
        raise Failure(f"the relay's tools were not offered to the model in {tries} tries")

    def quit(self, timeout=15):
        """Ctrl-C until Claude Code exits (it asks for a second press); returns the time of the first
        Ctrl-C, or None when Claude Code is still running after `timeout` seconds."""
        start = now()
        end = start + timeout
        while self.term.proc.poll() is None and now() < end:
            self.term.send('\x03')
            try:
                self.term.proc.wait(0.4)
            except subprocess.TimeoutExpired:
                pass
        return start if self.term.proc.poll() is not None else None

    def close(self):
        """Kills whatever is left: Claude Code's session, the fake model, and every marked process."""
        for p in (self.term.proc, self.model_proc):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL) if p is self.term.proc else p.kill()
                except OSError:
                    pass
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass
        for pid in marked(self.marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.close(self.term.master)
        except OSError:
            pass
        if os.environ.get('KEEP') == '1':
            print(f'kept {self.work}')
        else:
            shutil.rmtree(self.work, ignore_errors=True)


# ---------------------------------------------------------------- the wire, read
TASKS_EXT = 'io.modelcontextprotocol/tasks'


def declares_tasks(msg):
    meta = (msg.get('params') or {}).get('_meta') or {}
    caps = meta.get('io.modelcontextprotocol/clientCapabilities') or {}
    return TASKS_EXT in (caps.get('extensions') or {})


def result_text(result):
    """The first text of a CallToolResult, cut to a piece that survives JSON escaping unchanged."""
    for c in (result or {}).get('content') or []:
        if c.get('type') == 'text':
            return re.split(r'["\\\n\r\t<>&]', c['text'])[0][:40]
    return None


class Call:
    """One tools/call as the wire shows it."""

    def __init__(self, wire, rec):
        self.t = rec['t']
        self.msg = rec['msg']
        self.id = self.msg['id']
        self.tool = self.msg['params']['name']
        self.tasks = declares_tasks(self.msg)
        ans = wire.answer(self.id)
        self.answer_t = ans and ans['t']
        res = ans and (ans['msg'].get('result') or {})
        self.is_task = bool(res) and res.get('resultType') == 'task'
        self.task_id = res.get('taskId') if self.is_task else None
        self.poll_ms = res.get('pollIntervalMs') if self.is_task else None
        self.sync_result = res if ans and not self.is_task else None
        ins = wire.msgs('in')
        self.cancelled = [r for r in ins if r['msg'].get('method') == 'notifications/cancelled'
                          and (r['msg'].get('params') or {}).get('requestId') == self.id]
        self.progress = [r for r in wire.msgs('out', 'notifications/progress') if self.t <= r['t'] <= (self.answer_t or 1e12)]
        self.gets, self.cancel_t, self.completed_t, self.final = [], None, None, None
        if self.task_id:
            for r in ins:
                p = r['msg'].get('params') or {}
                if p.get('taskId') != self.task_id:
                    continue
                if r['msg'].get('method') == 'tasks/get':
                    a = wire.answer(r['msg']['id'])
                    st = a and (a['msg'].get('result') or {})
                    self.gets.append((r['t'], st))
                    if st and st.get('status') != 'working' and self.final is None:
                        self.final, self.completed_t = st, a['t']
                elif r['msg'].get('method') == 'tasks/cancel' and self.cancel_t is None:
                    self.cancel_t = r['t']

    def answer_ms(self):
        return None if self.answer_t is None else (self.answer_t - self.t) * 1000

    def summary(self):
        out = f'tools/call {self.tool}: '
        if self.answer_t is None:
            out += 'no answer'
        elif self.is_task:
            out += f'task answer in {self.answer_ms():.1f} ms (pollIntervalMs {self.poll_ms})'
        else:
            out += f'synchronous answer in {self.answer_ms():.0f} ms, {len(self.progress)} progress notifications'
        if self.gets:
            ts = [g[0] for g in self.gets]
            gaps = [b - a for a, b in zip(ts, ts[1:])]
            out += f'; {len(ts)} tasks/get, first {ts[0] - self.t:.2f} s after the call'
            if gaps:
                out += f', then every {sum(gaps) / len(gaps):.2f} s'
        if self.final:
            out += f'; {self.final.get("status")} {self.completed_t - self.t:.2f} s after the call'
        if self.cancel_t:
            out += f'; tasks/cancel {self.cancel_t - self.t:.2f} s after the call'
        if self.cancelled:
            r = self.cancelled[0]
            out += f'; CANCELLED by Claude Code {(r["t"] - self.t) * 1000:.0f} ms after the call ({(r["msg"].get("params") or {}).get("reason")})'
        return out


def calls(wire):
    return [Call(wire, r) for r in wire.msgs('in', 'tools/call')]


NOTES = []


def note(line):
    NOTES.append(line)


def check(cond, what):
    if not cond:
        raise Failure(what)


# ---------------------------------------------------------------- scenarios
def the_call(s, timeout=30):
    c = wait_for('the tools/call', lambda: calls(s.wire), timeout)[0]
    return wait_for('its answer or a cancellation', lambda: next((x for x in calls(s.wire) if x.answer_t or x.cancelled), None), 15)


def assert_task(c):
    check(c.tasks, 'the tools/call does not declare the tasks extension')
    check(not c.cancelled, 'Claude Code cancelled the call')
    check(c.is_task, 'the call was not answered with a task')
    check(c.answer_ms() <= 50, f'the task answer took {c.answer_ms():.0f} ms (more than 50 ms)')


def model_got(s, c, text, limit):
    """Waits until the model has been sent `text` after the call; returns the seconds it took."""
    check(text, 'the result has no text')
    t = wait_for(f'the model receiving "{text}"', lambda: s.model.received(text, c.t), limit)
    note(f'result reached the model {t - c.t:.2f} s after the tools/call')
    return t - c.t


def completes(s, timeout):
    """Waits for the task to be polled to a final state; returns the call."""
    c = wait_for('the task polled to its end', lambda: next((x for x in calls(s.wire) if x.final or x.cancelled), None), timeout)
    assert_task(c)
    check(c.final.get('status') == 'completed', f'the task ended {c.final.get("status")}')
    return c


def task_run(s, timeout):
    s.prompt('call the tool')
    assert_task(the_call(s))
    c = completes(s, timeout)
    check(c.final.get('result') and not c.final['result'].get('isError'), f'the result is an error: {c.final.get("result")}')
    model_got(s, c, result_text(c.final['result']), 15)


def sc_task_timeout(server):
    """(a) a task-declared gemini-timeout-test: a task at once, polled to completed, the result at the model."""
    s = Session('task-timeout', server, 'gemini-timeout-test', {'duration': 4000})
    return s, lambda: task_run(s, 30)


def sc_task_ask(server):
    """(b) gemini-ask against a fake agy that takes 4 s: the same."""
    s = Session('task-ask', ['env', 'FAKE_SLEEP=4'] + server, 'gemini-ask', {'prompt': 'Say hello'})
    return s, lambda: task_run(s, 30)


# A quick call's result reaches the model within this many seconds of its tools/call. Measured: the
# relay answers the task at once, Claude Code polls it at once (0.05-0.4 s after the call) and sees it
# completed, then spends two model turns (the "moved to the background" tool result, then the task
# notification): 0.6-0.75 s in all, 1.7 s at worst with a build running alongside on 2 cores. A call
# still running at that first poll is read at the next, pollIntervalMs later.
LIMIT_HELP_S = 2.0


def sc_esc(server):
    """An Esc (the interrupt key) 150 ms into a long call: Claude Code stops whatever call of the turn is
    still in the foreground (`notifications/cancelled`, reason user-cancel, "Interrupted" on the screen);
    a call already answered with its task has moved to the background and runs on to completed."""
    s = Session('esc', server, 'gemini-timeout-test', {'duration': 3000})

    def run():
        s.prompt('call the tool')
        c = wait_for('the tools/call', lambda: calls(s.wire), 30)[0]
        while now() < c.t + 0.15:
            time.sleep(0.005)
        s.term.send('\x1b')
        note(f'Esc pressed {(now() - c.t) * 1000:.0f} ms after the tools/call')
        c = wait_for('its answer or a cancellation', lambda: next((x for x in calls(s.wire) if x.answer_t or x.cancelled), None), 15)
        assert_task(c)
        c = completes(s, 20)
        model_got(s, c, result_text(c.final['result']), 15)
    return s, run


def sc_quick_help(server):
    """(c) a quick gemini-help: its result reaches the model within about 1.5 s of the call."""
    s = Session('quick-help', server, 'gemini-help', {})

    def run():
        s.prompt('call the tool')
        assert_task(the_call(s))
        c = completes(s, 10)
        took = model_got(s, c, result_text(c.final['result']), 10)
        check(took <= LIMIT_HELP_S, f'the result reached the model {took:.2f} s after the call (more than {LIMIT_HELP_S} s)')
    return s, run



def gone_within(pids, t0, limit):
    """Waits until every pid is gone; fails if that takes past t0 + limit. Returns the time it took."""
    end = t0 + limit
    while any(alive(p) for p in pids):
        if now() > end:
            raise Failure(f'still alive {limit:g} s after: {describe([p for p in pids if alive(p)])}')
        time.sleep(0.02)
    return now() - t0


def agy_tree(s):
    runs = wait_for('the fake agy run', lambda: fake_runs(s.fake_log), 15)
    return [p for r in runs for p in (r['pid'], r.get('grandchild')) if p]


def sc_stop(server):
    """(d) the model stops the task with TaskStop: tasks/cancel, the fake agy's tree gone within 1 s."""
    s = Session('stop', ['env', 'FAKE_SLEEP=60', 'FAKE_GRANDCHILD=1'] + server, 'gemini-ask', {'prompt': 'Take long'},
                model_env={'FAKE_MODEL_STOP': 'TaskStop'}, allowed=('TaskStop',))

    def run():
        s.prompt('call the tool')
        assert_task(the_call(s))
        tree = agy_tree(s)
        check(all(alive(p) for p in tree), 'the fake agy run ended early')
        c = wait_for('tasks/cancel', lambda: next((x for x in calls(s.wire) if x.cancel_t), None), 20)
        took = gone_within(tree, c.cancel_t, 1.0)
        note(f'fake agy tree ({len(tree)} processes) gone {took:.2f} s after tasks/cancel')
    return s, run


def sc_quit(server):
    """(e) Claude Code quits while a task runs: no relay, tap or fake agy process is left."""
    s = Session('quit', ['env', 'FAKE_SLEEP=60', 'FAKE_GRANDCHILD=1'] + server, 'gemini-ask', {'prompt': 'Take long'})

    def run():
        s.prompt('call the tool')
        assert_task(the_call(s))
        tree = agy_tree(s)
        check(all(alive(p) for p in tree), 'the fake agy run ended early')
        wait_for('a tasks/get', lambda: calls(s.wire)[0].gets, 10)
        t = s.quit()
        check(t, 'Claude Code did not exit on Ctrl-C')
        exited = now() - t
        pids = tree + [p for r in s.wire.pids() for p in (r['tap'], r['server'])]
        took = gone_within(pids, t, 5.0)
        left = [p for p in marked(s.marker) if p != s.model_proc.pid]
        check(not left, f'left running: {describe(left)}')
        seen = [r['dir'] if r['dir'] != 'signal' else f'signal {r["signal"]}' for r in s.wire.records()
                if r['dir'] in ('eof', 'signal') or r.get('msg') and r['msg'].get('method') == 'tasks/cancel']
        note(f'Claude Code exited {exited:.2f} s after the first Ctrl-C (the relay saw: {", ".join(seen) or "nothing"}); '
             f'relay, tap and fake agy tree ({len(pids)} processes) gone {took:.2f} s after the first Ctrl-C')
    return s, run


def sc_legacy(server):
    """(f) the legacy era: a synchronous answer with progress notifications."""
    s = Session('legacy', server, 'gemini-timeout-test', {'duration': 3000}, claude_env={'MCP_PROTOCOL_NEGOTIATION': 'legacy'})

    def run():
        s.prompt('call the tool')
        c = wait_for('the answer', lambda: next((x for x in calls(s.wire) if x.answer_t or x.cancelled), None), 20)
        check(not c.tasks, 'the legacy-era call declares the tasks extension')
        check(not c.cancelled, 'Claude Code cancelled the call')
        check(c.sync_result and c.sync_result.get('content') and not c.sync_result.get('isError'), 'no synchronous result')
        check(c.progress, 'no progress notification before the answer')
        model_got(s, c, result_text(c.sync_result), 10)
    return s, run


SCENARIOS = {'task-timeout': sc_task_timeout, 'task-ask': sc_task_ask, 'esc': sc_esc, 'quick-help': sc_quick_help,
             'stop': sc_stop, 'quit': sc_quit, 'legacy': sc_legacy}


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in SCENARIOS or sys.argv[2] != '--':
        sys.exit(__doc__ + '\nscenarios: ' + ' '.join(SCENARIOS))
    s, run = SCENARIOS[sys.argv[1]](sys.argv[3:])
    ok = False
    try:
        run()
        if s.term.proc.poll() is None:
            check(s.quit() is not None, 'Claude Code did not exit on Ctrl-C')
            pids = [p for r in s.wire.pids() for p in (r['tap'], r['server'])] + \
                [p for r in fake_runs(s.fake_log) for p in (r['pid'], r.get('grandchild')) if p]
            gone_within(pids, now(), 5.0)
        ok = True
    except Failure as e:
        note(f'FAIL: {e}')
    finally:
        if not ok or os.environ.get('VERBOSE') == '1':
            print('--- screen ---\n' + s.term.text().rstrip() + '\n---')
        for c in calls(s.wire):
            print(c.summary())
        print('\n'.join(NOTES))
        s.close()
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
