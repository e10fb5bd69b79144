import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CreateTaskRequest, type TaskEvent } from '@dockhand/protocol';
import { EventHub, EventLog } from '../store/hub';
import { SqliteStore } from '../store/sqlite';
import { createTwoFilesPatch } from 'diff';
import { FileCheckpointStore } from './checkpoints';
import { replayFileChanges } from './sandbox-life';
import { TaskRunner } from './task-runner';
import type { AgentInput, AgentResult } from './ports';
import { CountingPublisher, FakePolicy, FakeSandboxProvider, MemorySandbox, ScriptedAgent, type AgentScript } from './testing/fakes';

/*
 * The runner's side of a sandbox's life: checkpoints restore changes that only a command made
 * (after a restart and after a loss), a lost sandbox is replaced once and then ends the task, and
 * the wall clock ends a run whose tool call never returns.
 */

const request = (budgets?: Record<string, number>) =>
  CreateTaskRequest.parse({ ticket: { kind: 'text', title: 'Generate the table' }, context: { repo: '/srv/app.git', baseSha: 'a'.repeat(40) }, ...(budgets ? { budgets } : {}) });

let store: SqliteStore;
let log: EventLog;
let sandboxes: FakeSandboxProvider;
let dataDir: string;
beforeEach(async () => {
  store = new SqliteStore(':memory:');
  log = new EventLog(store, new EventHub());
  sandboxes = new FakeSandboxProvider();
  dataDir = mkdtempSync(join(tmpdir(), 'dockhand-checkpoints-'));
  await store.createUser('alice', 'user');
});
afterEach(async () => {
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
});

function runnerWith(script: AgentScript, checkpoints = true) {
  const agent = new ScriptedAgent(script);
  const runner = new TaskRunner({
    log, sandboxes, agent, policy: new FakePolicy(), publisher: new CountingPublisher(),
    ...(checkpoints ? { checkpoints: new FileCheckpointStore({ dataDir }) } : {}),
    watchTiming: { graceMs: 0, abandonAfterMs: 200 },
  });
  return { agent, runner };
}

/** What run_command does to the log and the workspace: the file appears, no file.changed is written. */
async function commandWrites(input: AgentInput, id: string, path: string, text: string): Promise<void> {
  await input.events.append({ type: 'tool.called', data: { turn: 1, toolUseId: id, name: 'run_command', input: { command: `generate ${path}` } } });
  await input.sandbox.writeFile(path, text);
  await input.events.append({ type: 'tool.finished', data: { toolUseId: id, name: 'run_command', isError: false, output: 'Exit code 0', truncated: false, durationMs: 5 } });
}

/** A tool call that is under way when the sandbox dies, and a loop that stops when told to. */
async function callThatKillsTheSandbox(input: AgentInput, id: string): Promise<AgentResult> {
  await input.events.append({ type: 'tool.called', data: { turn: 2, toolUseId: id, name: 'run_tests', input: {} } });
  (input.sandbox as MemorySandbox).lose('its container exited (code 2)', ['npm test']);
  await new Promise((resolve) => input.signal.addEventListener('abort', resolve, { once: true }));
  return { outcome: 'cancelled', summary: 'Cancelled.', diff: '' };
}

const finish = async (input: AgentInput): Promise<AgentResult> => ({ outcome: 'finished', summary: 'done', diff: await input.sandbox.diff() });
const of = (events: TaskEvent[], type: TaskEvent['type']) => events.filter((event) => event.type === type);

describe('sandbox life (runner)', () => {
  it('restores changes made only by run_command when a restarted server resumes the task', async () => {
    const { task } = await store.createTask('alice', request());
    const crashed = new AbortController();
    const first = runnerWith(async (input) => {
      await commandWrites(input, 'tu-1', 'table.txt', 'generated\n');
      crashed.abort(new Error('server stopping'));
      return { outcome: 'cancelled', summary: '', diff: '' };
    });
    await first.runner.run(task.id, crashed.signal);
    // A new process on the same data directory: the old sandbox is gone.
    sandboxes.alive.clear();
    let seen: string | undefined;
    const second = runnerWith(async (input) => {
      seen = (await input.sandbox.readFile('table.txt').catch(() => Buffer.from('MISSING'))).toString();
      return finish(input);
    });
    await second.runner.run(task.id, new AbortController().signal);
    expect(seen).toBe('generated\n');
    expect((await store.getResult(task.id))?.diff).toContain('+generated');
    expect((await store.getTask(task.id))?.state).toBe('awaiting_review');
  });

  it('without checkpoints the same resume loses the change (what the checkpoint fixes)', async () => {
    const { task } = await store.createTask('alice', request());
    const crashed = new AbortController();
    await runnerWith(async (input) => {
      await commandWrites(input, 'tu-1', 'table.txt', 'generated\n');
      crashed.abort(new Error('server stopping'));
      return { outcome: 'cancelled', summary: '', diff: '' };
    }, false).runner.run(task.id, crashed.signal);
    sandboxes.alive.clear();
    let seen = '';
    await runnerWith(async (input) => {
      seen = (await input.sandbox.readFile('table.txt').catch(() => Buffer.from('MISSING'))).toString();
      return finish(input);
    }, false).runner.run(task.id, new AbortController().signal);
    expect(seen).toBe('MISSING');
  });

  it('replaces a lost sandbox once, with the workspace restored and the cut call answered', async () => {
    const { task } = await store.createTask('alice', request());
    let restored = '';
    const { runner } = runnerWith(async (input, call) => {
      if (call === 1) {
        await commandWrites(input, 'tu-1', 'table.txt', 'generated\n');
        return callThatKillsTheSandbox(input, 'tu-2');
      }
      restored = (await input.sandbox.readFile('table.txt')).toString();
      return finish(input);
    });
    await runner.run(task.id, new AbortController().signal);
    const events = await store.listEvents(task.id);
    expect(restored).toBe('generated\n');
    expect((await store.getTask(task.id))?.state).toBe('awaiting_review');
    expect(of(events, 'sandbox.ready')).toHaveLength(2);
    expect(sandboxes.released).toContain('sbx-1');
    const cut = events.find((event) => event.type === 'tool.finished' && event.data.toolUseId === 'tu-2');
    expect(cut).toMatchObject({ data: { isError: true, name: 'run_tests' } });
    expect(cut?.type === 'tool.finished' ? cut.data.output : '').toMatch(/sandbox was lost \(its container exited \(code 2\)\) while it ran: npm test/);
    const note = events.find((event) => event.type === 'user.message' && event.data.from === 'dockhand-sandbox');
    expect(note?.type === 'user.message' ? note.data.text : '').toMatch(/moved this task to a new sandbox/);
    expect(note?.type === 'user.message' ? note.data.text : '').not.toMatch(/start a new/i);
  });

  it('ends the task sandbox_lost, naming what ran, when the replacement is lost too; /diff still has the workspace', async () => {
    const { task } = await store.createTask('alice', request());
    const { runner } = runnerWith(async (input, call) => {
      if (call === 1) await commandWrites(input, 'tu-1', 'table.txt', 'generated\n');
      return callThatKillsTheSandbox(input, `tu-bomb-${call}`);
    });
    await runner.run(task.id, new AbortController().signal);
    const events = await store.listEvents(task.id);
    expect((await store.getTask(task.id))?.state).toBe('failed');
    const failed = of(events, 'task.failed').at(-1);
    expect(failed).toMatchObject({ data: { code: 'sandbox_lost' } });
    expect(failed?.type === 'task.failed' ? failed.data.message : '').toMatch(/lost again during run_tests \(its container exited \(code 2\)\); it was running: npm test/);
    expect(await runner.liveDiff(task.id)).toContain('+generated');
    expect((await store.getResult(task.id))?.diff).toContain('+generated');
  });

  it('ends a run whose tool call never returns once the wall clock is over, and frees the sandbox', async () => {
    const { task } = await store.createTask('alice', request({ maxWallClockSeconds: 10 }));
    const { runner } = runnerWith(async (input) => {
      await commandWrites(input, 'tu-1', 'table.txt', 'generated\n');
      await input.events.append({ type: 'tool.called', data: { turn: 2, toolUseId: 'tu-2', name: 'run_tests', input: {} } });
      return new Promise<AgentResult>(() => undefined); // a call stuck in a sandbox that no longer answers
    });
    const started = Date.now();
    await runner.run(task.id, new AbortController().signal);
    expect(Date.now() - started).toBeLessThan(14_000);
    expect((await store.getTask(task.id))?.state).toBe('budget_exhausted');
    const events = await store.listEvents(task.id);
    expect(of(events, 'budget.exceeded').at(-1)).toMatchObject({ data: { budget: 'wall_clock', limit: 10 } });
    expect((await store.getResult(task.id))?.diff).toContain('+generated');
    expect(sandboxes.released).toEqual(['sbx-1']);
  }, 20_000);
});

describe('replayFileChanges', () => {
  const change = (seq: number, path: string, before: string, after: string): TaskEvent => ({
    seq, taskId: 't', ts: new Date(0).toISOString(), type: 'file.changed',
    data: { path, change: 'modified', patch: createTwoFilesPatch(`a/${path}`, `b/${path}`, before, after, undefined, undefined, { context: 3 }) },
  });

  it('skips a change the checkpoint already holds (its file.changed was logged after the checkpointed tool result), and still refuses one that fits neither way', async () => {
    const sandbox = new MemorySandbox('sbx', 'a'.repeat(40), { 'src/calc.js': 'let index = 1;\nreturn total;\n' });
    // What the restored checkpoint left: the edit is already there.
    await sandbox.writeFile('src/calc.js', 'let index = 0;\nreturn total;\n');
    expect(await replayFileChanges(sandbox, [change(13, 'src/calc.js', 'let index = 1;\nreturn total;\n', 'let index = 0;\nreturn total;\n')])).toBe(0);
    expect((await sandbox.readFile('src/calc.js')).toString()).toBe('let index = 0;\nreturn total;\n');
    await expect(replayFileChanges(sandbox, [change(14, 'src/calc.js', 'something else\n', 'other\n')])).rejects.toThrow('recorded change to src/calc.js (seq 14) does not apply to a fresh workspace');
  });
});
