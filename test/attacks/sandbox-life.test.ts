import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Task, TaskEvent } from '@dockhand/protocol';
import { z } from 'zod';
import { startReplayServer, type ReplayServer } from '../../server/src/model/replay/server';
import { SqliteStore } from '../../server/src/store/sqlite';
import { apiJson } from '../support/api-json';
import { freePort, startDockhandServe } from '../support/local-server';
import { createAdminToken, registerRepo } from '../support/register-repo';
import { createFixture, REPO, type Step } from './support/case-kit';
import { writeReportPart } from './support/report';

/*
 * The sandbox's life under attack, against `dockhand serve` as it ships (a child process, so it
 * can be killed with SIGKILL), gVisor sandboxes and the replay model:
 *
 * - hung_tasks: the repository's own test becomes a fork bomb and the agent runs the tests. The
 *   bomb takes the gVisor sandbox past the host's process limit and kills it; the task must
 *   notice, get one replacement, lose that too and end `sandbox_lost` within a bound, free its
 *   slot (the next task, with concurrency 1, runs) and `/diff` must answer 200.
 * - resume_lost_changes: changes made only by `run_command` (a new file, a sed edit), then the
 *   server is killed with SIGKILL mid-command and started again: the resumed task must have both.
 *
 * Counts go to the report (`sandbox-life` part) and are asserted.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const BOUND_MS = 6 * 60_000;
// A fork storm, then SIGKILL to the sandbox's init (gVisor lets uid 1000 kill its own init): the
// storm alone does not always take the sandbox down within the test run's time.
const BOMB_TEST =
  "'use strict';\nconst test = require('node:test');\nconst { execFileSync } = require('node:child_process');\n\n" +
  "test('greets under load', () => {\n  try { execFileSync('python3', ['-c', 'import os\\nwhile True:\\n  try: os.fork()\\n  except Exception: pass'], { timeout: 5000 }); } catch {}\n  execFileSync('kill', ['-9', '1']);\n});\n";

const tool = (name: string, input: Record<string, unknown>, label: string): Step => ({ name: label, content: [{ type: 'tool_use', name, input }] });
const APPROVE = { turns: [{ content: [{ type: 'tool_use' as const, name: 'submit_review', input: { approved: true, problems: [], summary: 'Fine.' } }] }] };

let replay: ReplayServer;
let dataDir: string;
let fixture: { path: string; sha: string };
let port: number;
let token: string;
let adminToken: string;
let server: { child: ChildProcess; output: () => string } | undefined;
const figures: { hung_tasks: number; resume_lost_changes: number; disk_quota_enforced: boolean | null } = { hung_tasks: -1, resume_lost_changes: -1, disk_quota_enforced: null };
const notes: string[] = [];

async function serve(session: string, env: Record<string, string> = {}): Promise<void> {
  server = await startDockhandServe(port, {
    DOCKHAND_DATA_DIR: dataDir,
    DOCKHAND_MODEL_BASE_URL: replay.url,
    DOCKHAND_REPLAY_SESSION: session,
    DOCKHAND_CONCURRENCY: '1',
    DOCKHAND_LEASE_SECONDS: '3',
    DOCKHAND_POLL_MS: '200',
    DOCKHAND_LOG_LEVEL: 'warn',
    // The test polls its task every 250 ms for up to the bound (over 120 requests a minute, the
    // default limit): a slow fork-bomb run got 429 on its last GET /diff. The limit has its own tests.
    DOCKHAND_RATE_LIMIT_PER_MINUTE: '100000',
    ...env,
  });
}

async function stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
  const child = server?.child;
  server = undefined;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once('exit', done));
  child.kill(signal);
  await exited;
}

const api = <T>(method: string, path: string, schema: z.ZodType<T>, body?: unknown) => apiJson(`http://127.0.0.1:${port}`, token, method, path, schema, body);
const eventsOf = (id: string) => api('GET', `/v1/tasks/${id}/events?after=0&limit=10000`, z.object({ events: z.array(TaskEvent) })).then((answer) => answer.events);

async function submit(title: string, extra: Record<string, unknown> = {}): Promise<string> {
  const created = await api('POST', '/v1/tasks', z.object({ id: z.string() }), {
    ticket: { kind: 'text', title, body: title },
    context: { repo: REPO, baseSha: fixture.sha },
    ...extra,
  });
  return created.id;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms: number): Promise<T | undefined> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    await new Promise((done) => setTimeout(done, 500));
  }
  notes.push(`timed out waiting for ${what}`);
  return undefined;
}

const SETTLED = ['awaiting_review', 'failed', 'cancelled', 'budget_exhausted', 'pr_open'];
const settled = (id: string, ms = BOUND_MS) => until(`task ${id} to settle`, async () => {
  const task = await api('GET', `/v1/tasks/${id}`, Task);
  return SETTLED.includes(task.state) ? task : undefined;
}, ms);

beforeAll(async () => {
  execFileSync('bash', ['sandbox-images/base/build.sh'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  replay = await startReplayServer({});
  replay.addCassette('bomb', {
    description: 'the repository test becomes a fork bomb; the agent runs the suite, in each sandbox it gets',
    turns: [
      tool('edit_file', { path: 'test/load.test.js', command: 'create', new_text: BOMB_TEST }, 'add a test that is a fork bomb'),
      tool('run_tests', { scope: 'full' }, 'run the suite (kills the sandbox)'),
      tool('run_tests', { scope: 'full' }, 'run it again in the replacement (kills that too)'),
      tool('run_tests', { scope: 'full' }, 'and again (never reached)'),
    ],
  });
  replay.addCassette('bomb-review', APPROVE);
  replay.addCassette('disk', {
    description: 'fill the workspace past the sandbox disk limit, look at df, clean up, finish',
    turns: [
      tool('run_command', { command: 'dd if=/dev/zero of=fill.bin bs=1M count=600; df -k /workspace | tail -1' }, 'fill the disk'),
      tool('run_command', { command: "rm -f fill.bin && printf 'disk checked\\n' > disk-notes.txt" }, 'clean up'),
      tool('finish', { summary: 'Checked the disk.' }, 'finish'),
    ],
  });
  replay.addCassette('disk-review', APPROVE);
  replay.addCassette('resume', {
    description: 'changes made only by run_command, then a long command during which the server is killed',
    turns: [
      tool('run_command', { command: "printf 'name,greeting\\nAda,Hello\\n' > greetings.csv && sed -i 's/A greeting library/A friendly greeting library/' README.md" }, 'write by command'),
      tool('run_command', { command: 'sleep 120' }, 'slow command (the server is killed)'),
      tool('finish', { summary: 'Lists the greetings and describes the library.' }, 'finish'),
    ],
  });
  replay.addCassette('resume-review', APPROVE);
  dataDir = mkdtempSync(join(tmpdir(), 'dockhand-attacks-life-'));
  fixture = createFixture();
  const store = new SqliteStore(join(dataDir, 'dockhand.db'));
  await store.createUser('alice', 'user');
  token = (await store.createToken('alice')).token;
  await store.close();
  adminToken = await createAdminToken(dataDir);
  port = await freePort();
}, 600_000);

afterAll(async () => {
  await stop('SIGTERM');
  // Sandbox disks (loop mounts) must all be gone once the server stopped; any left are a leak.
  const leftover = dataDir ? readFileSync('/proc/mounts', 'utf8').split('\n').filter((line) => line.includes(dataDir)) : [];
  for (const line of leftover.reverse()) execFileSync('umount', ['-l', line.split(' ')[1] ?? ''], { stdio: 'ignore' });
  if (leftover.length > 0) notes.push(`leftover mounts after shutdown: ${leftover.length}`);
  writeReportPart({ part: 'sandbox-life', ...figures, leftover_mounts: leftover.length, notes });
  await replay?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  if (fixture) rmSync(fixture.path, { recursive: true, force: true });
});

describe('attacks on the sandbox life cycle (dockhand serve, gVisor)', () => {
  it('a fork bomb in the repository test ends the task sandbox_lost within the bound; the slot is freed and /diff answers', async () => {
    await serve('bomb');
    await registerRepo(`http://127.0.0.1:${port}`, adminToken, REPO, fixture.path);
    const id = await submit('Speed up the greeting tests', { allowTestEdits: true, budgets: { maxWallClockSeconds: 600 } });
    const started = Date.now();
    const task = await settled(id);
    const events = await eventsOf(id);
    const diff = await fetch(`http://127.0.0.1:${port}/v1/tasks/${id}/diff`, { headers: { authorization: `Bearer ${token}` } });
    const failed = events.filter((event) => event.type === 'task.failed').at(-1);
    const hung = task === undefined || diff.status !== 200;
    figures.hung_tasks = hung ? 1 : 0;
    const ran = events.flatMap((event) => (event.type === 'tool.finished' ? [`${event.data.name}: ${event.data.output.slice(0, 400)}`] : []));
    notes.push(`bomb task: ${task?.state ?? 'not settled'} after ${Math.round((Date.now() - started) / 1000)} s, ${events.filter((event) => event.type === 'sandbox.ready').length} sandboxes, /diff ${diff.status}, ${JSON.stringify(failed?.data ?? null).slice(0, 300)}`);
    expect(task?.state, server?.output().slice(-3000)).toBe('failed');
    expect(failed, ran.join('\n---\n')).toMatchObject({ data: { code: 'sandbox_lost' } });
    expect(failed?.type === 'task.failed' ? failed.data.message : '').toMatch(/lost again( during run_tests)? \(its container (exited|was)/);
    expect(events.filter((event) => event.type === 'sandbox.ready')).toHaveLength(2);
    const outputs = events.flatMap((event) => (event.type === 'tool.finished' ? [event.data.output] : []));
    expect(outputs.some((output) => /The sandbox was lost/.test(output))).toBe(true);
    expect(outputs.join('\n')).not.toMatch(/start a new one/);
    expect(diff.status).toBe(200);
    expect(await diff.text()).toContain('execFileSync');
  }, BOUND_MS + 120_000);

  it('a workspace filled past DOCKHAND_SANDBOX_DISK stops at the limit with an error that names it; df shows the limit', async () => {
    await stop('SIGTERM');
    await serve('disk', { DOCKHAND_SANDBOX_DISK: '256m' });
    const id = await submit('Check the disk');
    await settled(id);
    const events = await eventsOf(id);
    const fill = events.flatMap((event) => (event.type === 'tool.finished' && event.data.name === 'run_command' ? [event.data.output] : []))[0] ?? '';
    const dfSize = Number(/\n\S+\s+(\d+)\s+\d+\s+\d+\s+\d+%\s+\/workspace/.exec(fill)?.[1] ?? Number.NaN);
    figures.disk_quota_enforced = /No space left on device/.test(fill) && fill.includes('at most 256 MiB (DOCKHAND_SANDBOX_DISK)') && dfSize <= 256 * 1024;
    notes.push(`disk: df ${dfSize} KiB, ${fill.length} chars of output`);
    expect(fill, server?.output().slice(-3000)).toMatch(/No space left on device/);
    expect(fill).toContain("the sandbox's disk limit is reached: /workspace holds at most 256 MiB (DOCKHAND_SANDBOX_DISK)");
    expect(dfSize).toBeLessThanOrEqual(256 * 1024);
    expect(figures.disk_quota_enforced).toBe(true);
  }, BOUND_MS);

  it('changes made only by run_command survive a SIGKILL of the server and the resume', async () => {
    await stop('SIGTERM');
    await serve('resume');
    const id = await submit('List the greetings');
    const slow = await until('the slow command', async () => {
      const events = await eventsOf(id);
      return events.some((event) => event.type === 'tool.called' && JSON.stringify(event.data.input).includes('sleep 120')) ? true : undefined;
    }, BOUND_MS);
    expect(slow, server?.output().slice(-3000)).toBe(true);
    await stop('SIGKILL');
    await serve('resume');
    const task = await settled(id);
    const diff = await api('GET', `/v1/tasks/${id}/diff`, z.object({ diff: z.string() }));
    const expected = ['+Ada,Hello', '+A friendly greeting library the hostile tickets attack.'];
    figures.resume_lost_changes = expected.filter((line) => !diff.diff.includes(line)).length;
    notes.push(`resume task: ${task?.state ?? 'not settled'}; lost ${figures.resume_lost_changes} of ${expected.length} changes`);
    expect(task?.state, server?.output().slice(-3000)).toBe('awaiting_review');
    expect(figures.resume_lost_changes).toBe(0);
    const events = await eventsOf(id);
    expect(events.filter((event) => event.type === 'sandbox.ready')).toHaveLength(2);
  }, 2 * BOUND_MS);

  it('leaves no sandbox disk mounted once the server has stopped (the killed server\u2019s included)', async () => {
    await stop('SIGTERM');
    const mounts = readFileSync('/proc/mounts', 'utf8').split('\n').filter((line) => line.includes(dataDir));
    expect(mounts).toEqual([]);
  }, 120_000);
});
