#!/usr/bin/env python3
"""long-answer.py BYTES < claude-stream.jsonl
Reads claude-call.sh's stream-json and checks that the tool result the model saw (what fake_model.py
echoes back as 'DONE: <result>') holds the whole answer of the fake agy's FAKE_AGY_RESPONSE_BYTES=BYTES:
every one of its 100-byte lines, in order. Prints the model-side length; exit 1 when it was cut or
replaced by a preview."""
import json, sys

want = int(sys.argv[1])
lines = want // 100
result = None
for raw in sys.stdin:
    try:
        event = json.loads(raw)
    except ValueError:
        continue
    if event.get('type') == 'result':
        result = event.get('result') or ''
if result is None or not result.startswith('DONE: '):
    sys.exit(f'no final model answer in the stream: {result!r:.200}')
seen = result[len('DONE: '):]
print(f'model-side view of a {want}-byte answer: {len(seen)} chars')
at = 0
for n in range(1, lines + 1):
    at = seen.find(f'line {n:06d} ', at)
    if at < 0:
        sys.exit(f'cut: line {n} of {lines} is missing (head {seen[:200]!r})')
print(f'whole: all {lines} lines, in order')
