import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Task, TaskEvent } from '@dockhand/protocol';
import { z } from 'zod';
import { apiJson } from '../support/api-json';
import { INTERRUPTED_TOOL_OUTPUT } from '../../server/src/agent/conversation';
import { InMemoryPullRequestStore, LocalForge } from '../../server/src/forge';
import { startReplayServer, type ReplayServer } from '../../server/src/model/replay/server';
import { SqliteStore } from '../../server/src/store/sqlite';
import { exited, freePort, pollUntil, startDockhandServe } from '../support/local-server';
import { createFixtureRepo, type FixtureRepo } from '../support/fixture-repo';
import { createAdminToken, registerRepo } from '../support/register-repo';

/*
 * Crash safety of the real server process: SIGKILL it while the agent is in the middle of a tool
 * call inside its gVisor sandbox, start it again on the same data directory, and watch the task
 * resume from its event log (fresh sandbox with the recorded edit replayed, conversation rebuilt
 * with the interrupted call reported as such), reach review, and — after approval — push once and
 * open one PR on the local forge, with a gap-free event log.
 *
 * Real pieces: the CLI's `dockhand serve` (tsx), SQLite, the scheduler's leases, the agent loop, the
 * Anthropic SDK against the replay server (in this process), DockerSandboxDriver on runsc, git.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const SESSION = 'fleet-crash';

let replay: ReplayServer;
let dataDir: string;
let fixture: FixtureRepo;
let bare: string;
let token: string;
let adminToken: string;
let port: number;
let server: ChildProcess | undefined;
/** What the server started last has written, for failure messages. */
let serverOutput = (): string => '';

async function startServer(session = SESSION): Promise<ChildProcess> {
  const started = await startDockhandServe(port, {
    DOCKHAND_DATA_DIR: dataDir,
    DOCKHAND_MODEL_BASE_URL: replay.url,
    DOCKHAND_REPLAY_SESSION: session,
    DOCKHAND_LEASE_SECONDS: '3',
    DOCKHAND_POLL_MS: '200',
    DOCKHAND_LOG_LEVEL: 'warn',
  });
  serverOutput = started.output;
  return started.child;
}

function api<T>(method: string, path: string, schema: z.ZodType<T>, body?: unknown): Promise<T> {
  return apiJson(`http://127.0.0.1:${port}`, token, method, path, schema, body);
}

const Events = z.object({ events: z.array(TaskEvent) });
const events = (id: string) => api('GET', `/v1/tasks/${id}/events?after=0&limit=10000`, Events).then((r) => r.events);

const waitFor = <T>(what: string, probe: () => Promise<T | undefined>, ms = 240_000) => pollUntil(what, probe, { ms, fatal: /failed|ended/, output: () => serverOutput() });

beforeAll(async () => {
  execFileSync('bash', ['sandbox-images/base/build.sh'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  replay = await startReplayServer({});
  replay.addCassette(SESSION, {
    turns: [
      { name: 'fix', content: [{ type: 'tool_use', name: 'edit_file', input: { path: 'src/calc.js', command: 'replace', old_text: 'let index = 1;', new_text: 'let index = 0;' } }] },
      { name: 'slow command (the server is killed during it)', content: [{ type: 'tool_use', name: 'run_command', input: { command: 'sleep 90' } }] },
      {
        name: 'finish after the restart',
        expect: { toolResultContains: 'Interrupted: the server stopped while this tool call was running' },
        content: [{ type: 'tool_use', name: 'finish', input: { summary: 'average() now starts summing at index 0.' } }],
      },
    ],
  });
  const approveReview = { turns: [{ content: [{ type: 'tool_use' as const, name: 'submit_review', input: { approved: true, problems: [], summary: 'Minimal, correct fix.' } }] }] };
  replay.addCassette(`${SESSION}-review`, approveReview);
  replay.addCassette(`${SESSION}-approval`, {
    turns: [
      { name: 'fix', content: [{ type: 'tool_use', name: 'edit_file', input: { path: 'src/calc.js', command: 'replace', old_text: 'let index = 1;', new_text: 'let index = 0;' } }] },
      { name: 'destructive (waits for approval; the server is killed)', content: [{ type: 'tool_use', name: 'run_command', input: { command: 'git push origin HEAD:main' } }] },
      {
        name: 'finish after the restart',
        expect: { toolResultContains: 'Interrupted: the server stopped while this tool call was running' },
        content: [{ type: 'tool_use', name: 'finish', input: { summary: 'Fixed average(); did not push.' } }],
      },
    ],
  });
  replay.addCassette(`${SESSION}-approval-review`, approveReview);
  dataDir = mkdtempSync(join(tmpdir(), 'dockhand-crash-'));
  fixture = createFixtureRepo('buggy-calc');
  // A lockfile so the snapshot's dependency step is `npm ci` (nothing to install) rather than an
  // `npm install` that would leave a new package-lock.json in the snapshot's workspace.
  fixture.commit({
    'package-lock.json': `${JSON.stringify({ name: 'buggy-calc', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'buggy-calc', version: '1.0.0' } } }, null, 2)}\n`,
  }, 'lockfile');
  bare = await new LocalForge({ dataDir: join(dataDir, 'forge'), store: new InMemoryPullRequestStore() }).createRepository('calc', fixture.path);
  const store = new SqliteStore(join(dataDir, 'dockhand.db'));
  await store.createUser('alice', 'user');
  token = (await store.createToken('alice')).token;
  await store.close();
  adminToken = await createAdminToken(dataDir);
  port = await freePort();
});

afterAll(async () => {
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await exited(server);
  }
  await replay?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('fleet server crash safety', () => {
  it('resumes a task after SIGKILL from its event log and pushes exactly once', async () => {
    server = await startServer();
    await registerRepo(`http://127.0.0.1:${port}`, adminToken, 'calc', fixture.path);
    const { id } = await api('POST', '/v1/tasks', z.object({ id: z.string() }), {
      ticket: { kind: 'text', title: 'average() returns the wrong value', body: 'average([1, 2, 3]) should be 2.' },
      context: { repo: bare, baseSha: fixture.sha },
    });

    // Kill the server while `sleep 90` runs in the sandbox: the edit is recorded, the tool call is not finished.
    await waitFor('the slow command to start', async () => {
      const log = await events(id);
      const failed = log.find((e) => e.type === 'task.failed');
      if (failed) throw new Error(`task failed before the crash: ${JSON.stringify(failed.data)}`);
      return log.some((e) => e.type === 'tool.called' && e.data.name === 'run_command') ? true : undefined;
    });
    const before = await events(id);
    expect(before.filter((e) => e.type === 'file.changed')).toHaveLength(1);
    server.kill('SIGKILL');
    await exited(server);

    server = await startServer();
    const review = await waitFor('awaiting_review after the restart', async () => {
      const task = await api('GET', `/v1/tasks/${id}`, Task);
      if (['failed', 'cancelled', 'budget_exhausted'].includes(task.state)) throw new Error(`task ended ${task.state}: ${task.error}`);
      return task.state === 'awaiting_review' ? task : undefined;
    });
    expect(review.state).toBe('awaiting_review');

    const diff = await api('GET', `/v1/tasks/${id}/diff`, z.object({ diff: z.string() }));
    expect(diff.diff).toMatch(/^\+  for \(let index = 0;/m);
    await api('POST', `/v1/tasks/${id}/review`, Task, { action: 'approve', comments: [] });
    const done = await waitFor('pr_open', async () => {
      const task = await api('GET', `/v1/tasks/${id}`, Task);
      if (task.state === 'failed') throw new Error(`push failed: ${task.error}`);
      return task.state === 'pr_open' ? task : undefined;
    });
    expect(done.prUrl).toBe('dockhand-local://calc/pulls/1');

    const log = await events(id);
    // Gap-free, duplicate-free log across the crash.
    expect(log.map((e) => e.seq)).toEqual(Array.from({ length: log.length }, (_, i) => i + 1));
    // Two sandboxes (the first died with the server); the one edit was replayed, not redone.
    expect(log.filter((e) => e.type === 'sandbox.ready')).toHaveLength(2);
    expect(log.filter((e) => e.type === 'file.changed')).toHaveLength(1);
    // The interrupted call never finished; the model was told so (the cassette's expectation).
    const slow = log.find((e) => e.type === 'tool.called' && e.data.name === 'run_command');
    const slowId = slow?.type === 'tool.called' ? slow.data.toolUseId : '';
    expect(log.some((e) => e.type === 'tool.finished' && e.data.toolUseId === slowId)).toBe(false);
    expect(INTERRUPTED_TOOL_OUTPUT).toContain('Interrupted');
    // Verified by the server after the restart, then one push and one PR.
    expect(log.filter((e) => e.type === 'tests.finished').at(-1)).toMatchObject({ data: { ok: true } });
    expect(log.filter((e) => e.type === 'pr.opened')).toHaveLength(1);
    const opened = log.find((e) => e.type === 'pr.opened');
    const branch = opened?.type === 'pr.opened' ? opened.data.branch : '';
    const commits = execFileSync('git', ['-C', bare, 'rev-list', `${fixture.sha}..${branch}`], { encoding: 'utf8' }).trim().split('\n');
    expect(commits).toHaveLength(1);
    expect(execFileSync('git', ['-C', bare, 'show', `${branch}:src/calc.js`], { encoding: 'utf8' })).toContain('let index = 0;');
    const states = log.flatMap((e) => (e.type === 'task.state' ? [e.data.state] : []));
    expect(states.slice(-3)).toEqual(['awaiting_review', 'pushing', 'pr_open']);

    // A graceful stop leaves no sandbox of ours running.
    server.kill('SIGTERM');
    expect(await exited(server)).toBe(0);
    const left = execFileSync('docker', ['ps', '-aq', '--filter', `label=dockhand.task=${id}`], { encoding: 'utf8' }).trim();
    expect(left).toBe('');
  });

  it('a command approval pending at the crash is closed on resume, and the loop goes on without running it', async () => {
    server = await startServer(`${SESSION}-approval`);
    await registerRepo(`http://127.0.0.1:${port}`, adminToken, 'calc', fixture.path);
    const { id } = await api('POST', '/v1/tasks', z.object({ id: z.string() }), {
      ticket: { kind: 'text', title: 'average() returns the wrong value', body: 'average([1, 2, 3]) should be 2.' },
      context: { repo: bare, baseSha: fixture.sha },
    });
    const requested = await waitFor('the approval request', async () => {
      const log = await events(id);
      const failed = log.find((e) => e.type === 'task.failed');
      if (failed) throw new Error(`task failed before the crash: ${JSON.stringify(failed.data)}`);
      const event = log.find((e) => e.type === 'approval.requested');
      return event?.type === 'approval.requested' ? event.data : undefined;
    });
    expect(requested.command).toContain('git push');
    expect((await api('GET', `/v1/tasks/${id}`, Task)).state).toBe('awaiting_approval');
    server.kill('SIGKILL');
    await exited(server);

    server = await startServer(`${SESSION}-approval`);
    await waitFor('awaiting_review after the restart', async () => {
      const task = await api('GET', `/v1/tasks/${id}`, Task);
      if (['failed', 'cancelled', 'budget_exhausted'].includes(task.state)) throw new Error(`task ended ${task.state}: ${task.error}`);
      return task.state === 'awaiting_review' ? task : undefined;
    });
    const log = await events(id);
    const resolved = log.find((e) => e.type === 'approval.resolved' && e.data.approvalId === requested.approvalId);
    expect(resolved?.type === 'approval.resolved' && resolved.data).toMatchObject({ decision: 'denied', by: 'dockhand' });
    expect(log.map((e) => e.seq)).toEqual(Array.from({ length: log.length }, (_, i) => i + 1));
    // The command never ran: no tool.finished for it.
    const call = log.find((e) => e.type === 'tool.called' && e.data.name === 'run_command');
    const callId = call?.type === 'tool.called' ? call.data.toolUseId : '';
    expect(log.some((e) => e.type === 'tool.finished' && e.data.toolUseId === callId)).toBe(false);
    const rejected = await api('POST', `/v1/tasks/${id}/review`, Task, { action: 'reject', comments: [] });
    expect(rejected.state).toBe('cancelled');
    server.kill('SIGTERM');
    expect(await exited(server)).toBe(0);
  });
});
