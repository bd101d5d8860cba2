// The 2025-11-25 tasks through the official TypeScript SDK's experimental task client
// (client.experimental.tasks): a tool call as a task streamed to its result, the task read, listed
// and its result read again, and a second task cancelled while it runs.
// usage: node sdk-tasks.mjs CONFIG.json -- server-cmd args...
// CONFIG: {"taskTool":{"name":..,"arguments":{..}}, "cancelTaskTool":{...}}; without taskTool the
// step has nothing to check and says so.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import fs from 'node:fs';

const sep = process.argv.indexOf('--');
const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const [command, ...args] = process.argv.slice(sep + 1);
if (!cfg.taskTool) { console.log('no taskTool in the config: nothing to check'); process.exit(0); }
let failures = 0, passes = 0;
const ok = (name, detail = '') => { passes++; console.log(`PASS ${name} ${detail}`); };
const bad = (name, e) => { failures++; console.log(`FAIL ${name}: ${e?.message ?? e}`); };
const check = (name, cond, detail) => (cond ? ok(name, detail) : bad(name, detail));

const transport = new StdioClientTransport({ command, args, stderr: 'ignore' });
const sent = [], received = [];
const origSend = transport.send.bind(transport);
transport.send = (msg, opts) => { sent.push({ at: Date.now(), msg }); return origSend(msg, opts); };
// A client that declares tasks (as VS Code does); the SDK then negotiates 2025-11-25.
const client = new Client({ name: 'ts-sdk-tasks', version: '0.0.1' },
  { capabilities: { tasks: { list: {}, cancel: {} } } });
const t0 = Date.now();
try {
  await client.connect(transport, { timeout: 10000 });
  const { onmessage } = transport;
  transport.onmessage = (m, extra) => { received.push({ at: Date.now(), msg: m }); return onmessage(m, extra); };
  ok('initialize', `protocolVersion=${sent.find((s) => s.msg.method === 'initialize').msg.params.protocolVersion} tasks=${JSON.stringify(client.getServerCapabilities()?.tasks)}`);
} catch (e) { bad('initialize', e); process.exit(1); }
const tasks = client.experimental.tasks;
const answerTo = (request) => received.find((r) => r.msg.id === request.msg.id && !r.msg.method);
const lastSent = (method) => sent.filter((s) => s.msg.method === method).at(-1);

try {
  const { tools } = await client.listTools();
  const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport ?? '-']));
  check('tools/list', support[cfg.taskTool.name] === 'optional', JSON.stringify(support));
} catch (e) { bad('tools/list', e); }

// A task streamed to its result: taskCreated, taskStatus (polled at pollInterval), result.
let taskId, first;
try {
  const start = Date.now(), seen = [];
  for await (const m of tasks.callToolStream(cfg.taskTool, CallToolResultSchema, { timeout: 60000 })) {
    seen.push(m.type === 'result' || m.type === 'error' ? m.type : `${m.type}:${m.task.status}`);
    if (m.type === 'taskCreated') taskId = m.task.taskId;
    if (m.type === 'result') first = m.result;
    if (m.type === 'error') throw m.error;
  }
  const call = lastSent('tools/call'), created = answerTo(call);
  const payload = answerTo(lastSent('tasks/result'));
  const related = payload?.msg.result?._meta?.['io.modelcontextprotocol/related-task']?.taskId;
  check('task call', call.msg.params.task && first && !first.isError && related === taskId,
    `params.task=${JSON.stringify(call.msg.params.task)} created in ${created.at - call.at} ms, ` +
    `${sent.filter((s) => s.msg.method === 'tasks/get').length} tasks/get, result in ${Date.now() - start} ms ` +
    `(related-task ${related === taskId ? 'matches' : 'MISSING'}): ${seen.join(' ')}; ${JSON.stringify(first?.content).slice(0, 80)}`);
} catch (e) { bad('task call', e); }

try {
  const task = await tasks.getTask(taskId);
  check('tasks/get', task.status === 'completed', JSON.stringify(task));
  const { tasks: listed, nextCursor } = await tasks.listTasks();
  check('tasks/list', listed.some((t) => t.taskId === taskId), `${listed.length} task(s), nextCursor=${nextCursor ?? 'none'}`);
  const again = await tasks.getTaskResult(taskId, CallToolResultSchema);
  check('tasks/result again', JSON.stringify(again.content) === JSON.stringify(first.content), 'the same content');
} catch (e) { bad('tasks/get, tasks/list, tasks/result', e); }

// A second task cancelled while it runs: the stream ends with the SDK's cancelled error.
if (cfg.cancelTaskTool) try {
  const start = Date.now();
  let cancelled, ended;
  for await (const m of tasks.callToolStream(cfg.cancelTaskTool, CallToolResultSchema, { timeout: 60000 })) {
    if (m.type === 'taskStatus' && !cancelled) cancelled = await tasks.cancelTask(m.task.taskId);
    if (m.type === 'result' || m.type === 'error') ended = m;
  }
  check('tasks/cancel', cancelled?.status === 'cancelled' && ended?.type === 'error' && /cancelled/.test(ended.error.message),
    `stream ended ${Date.now() - start} ms after the call with ${ended?.type}: ${ended?.error?.message}; ` +
    `tasks/cancel answered ${cancelled?.status} (${cancelled?.statusMessage})`);
  try { await tasks.cancelTask(cancelled.taskId); bad('cancel an ended task', 'accepted'); }
  catch (e) { check('cancel an ended task', e.code === -32602, `${e.code} ${e.message}`); }
  const r = await tasks.getTaskResult(cancelled.taskId, CallToolResultSchema);
  check('tasks/result of a cancelled task', r.isError === true, JSON.stringify(r.content));
} catch (e) { bad('tasks/cancel', e); }

try { await client.ping(); ok('ping'); } catch (e) { bad('ping', e); }
await client.close();
console.log(`${passes} passed, ${failures} failed  (${Date.now() - t0} ms)`);
process.exit(failures ? 1 : 0);
