import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Task, TaskEvent, type TaskState } from '@dockhand/protocol';
import { z } from 'zod';
import { PullRequestCommentSchema } from '../../server/src/forge/comments';
import { PullRequestView } from '../../server/src/api/pulls';
import { startReplayServer, type ReplayServer } from '../../server/src/model/replay/server';
import { SqliteStore } from '../../server/src/store/sqlite';
import { apiJson } from '../support/api-json';
import { createFixtureRepo, type FixtureRepo } from '../support/fixture-repo';
import { exited, freePort, pollUntil, startDockhandServe } from '../support/local-server';
import { createAdminToken, registerRepo } from '../support/register-repo';

/*
 * `kill -9` in the middle of a follow-up round (issue 26): the server dies while round 2's command
 * runs in its gVisor sandbox; started again on the same data directory, the round resumes from
 * the task's log (its workspace from the checkpoint: the PR's diff plus the round's edit), reaches
 * review, and the approved round pushes exactly once: one new commit on the PR's branch, one
 * reply on the thread. Real pieces: `dockhand serve` (the bundle), SQLite, runsc, git, the
 * Anthropic SDK against the replay server in this process.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const SESSION = 'pr-followup-crash';
const DOC = '/** Arithmetic mean of a list of numbers; 0 for an empty list. */';
const DOC_AFTER = '/** Arithmetic mean of a list of numbers (every element counts); 0 for an empty list. */';

let replay: ReplayServer;
let dataDir: string;
let fixture: FixtureRepo;
let token: string;
let adminToken: string;
let port: number;
let server: ChildProcess | undefined;
let serverOutput = (): string => '';

async function startServer(): Promise<ChildProcess> {
  const started = await startDockhandServe(port, {
    DOCKHAND_DATA_DIR: dataDir,
    DOCKHAND_MODEL_BASE_URL: replay.url,
    DOCKHAND_REPLAY_SESSION: SESSION,
    DOCKHAND_LEASE_SECONDS: '3',
    DOCKHAND_POLL_MS: '200',
    DOCKHAND_LOG_LEVEL: 'warn',
  });
  serverOutput = started.output;
  return started.child;
}

const api = <T>(method: string, path: string, schema: z.ZodType<T>, body?: unknown) => apiJson(`http://127.0.0.1:${port}`, token, method, path, schema, body);
const events = (id: string) => api('GET', `/v1/tasks/${id}/events?after=0&limit=10000`, z.object({ events: z.array(TaskEvent) })).then((r) => r.events);

const waitFor = <T>(what: string, probe: () => Promise<T | undefined>, ms = 240_000) => pollUntil(what, probe, { ms, fatal: /ended/, output: () => serverOutput() });

const inState = (id: string, state: TaskState) => waitFor(state, async () => {
  const task = await api('GET', `/v1/tasks/${id}`, Task);
  if (['failed', 'cancelled', 'budget_exhausted'].includes(task.state)) throw new Error(`task ended ${task.state}: ${task.error}`);
  return task.state === state ? task : undefined;
});

beforeAll(async () => {
  execFileSync('bash', ['sandbox-images/base/build.sh'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  replay = await startReplayServer({});
  replay.addCassette(SESSION, {
    turns: [
      { name: 'fix', content: [{ type: 'tool_use', name: 'edit_file', input: { path: 'src/calc.js', command: 'replace', old_text: 'let index = 1;', new_text: 'let index = 0;' } }] },
      { name: 'finish', content: [{ type: 'tool_use', name: 'finish', input: { summary: 'average() now starts summing at index 0.' } }] },
      { name: 'round 2 edit', expect: { userTextContains: 'say so in the doc comment' }, content: [{ type: 'tool_use', name: 'edit_file', input: { path: 'src/calc.js', command: 'replace', old_text: DOC, new_text: DOC_AFTER } }] },
      { name: 'round 2 slow command (the server is killed during it)', content: [{ type: 'tool_use', name: 'run_command', input: { command: 'sleep 90' } }] },
      {
        name: 'finish round 2 after the restart',
        expect: { toolResultContains: 'Interrupted: the server stopped while this tool call was running' },
        content: [{ type: 'tool_use', name: 'finish', input: { summary: 'The doc comment says every element counts.' } }],
      },
    ],
  });
  replay.addCassette(`${SESSION}-review`, { turns: [{ content: [{ type: 'tool_use', name: 'submit_review', input: { approved: true, problems: [], summary: 'Fine.' } }] }] });
  dataDir = mkdtempSync(join(tmpdir(), 'dockhand-followup-crash-'));
  fixture = createFixtureRepo('buggy-calc');
  fixture.commit({
    'package-lock.json': `${JSON.stringify({ name: 'buggy-calc', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'buggy-calc', version: '1.0.0' } } }, null, 2)}\n`,
  }, 'lockfile');
  const store = new SqliteStore(join(dataDir, 'dockhand.db'));
  await store.createUser('alice', 'user');
  token = (await store.createToken('alice')).token;
  await store.close();
  adminToken = await createAdminToken(dataDir);
  port = await freePort();
}, 10 * 60_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await exited(server);
  }
  await replay?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('kill -9 during a follow-up round', () => {
  it('resumes the round after SIGKILL and pushes it exactly once', async () => {
    server = await startServer();
    await registerRepo(`http://127.0.0.1:${port}`, adminToken, 'calc', fixture.path);
    const { id } = await api('POST', '/v1/tasks', z.object({ id: z.string() }), {
      ticket: { kind: 'text', title: 'average() returns the wrong value', body: 'average([1, 2, 3]) should be 2.' },
      context: { repo: 'calc', baseSha: fixture.sha },
    });
    await inState(id, 'awaiting_review');
    await api('POST', `/v1/tasks/${id}/review`, Task, { action: 'approve', comments: [] });
    await inState(id, 'pr_open');
    const bare = join(dataDir, 'forge', 'calc.git');
    const opened = (await events(id)).find((e) => e.type === 'pr.opened');
    const branch = opened?.type === 'pr.opened' ? opened.data.branch : '';
    const firstHead = opened?.type === 'pr.opened' ? opened.data.headSha : '';

    const comment = await api('POST', '/v1/repos/calc/pulls/1/comments', PullRequestCommentSchema, { body: 'Starting at 0 is right; say so in the doc comment too.', path: 'src/calc.js', line: 15 });
    expect(comment.steering).toBe('allowed');
    await waitFor('round 2\'s slow command', async () => ((await events(id)).some((e) => e.type === 'tool.called' && e.data.name === 'run_command') ? true : undefined));
    server.kill('SIGKILL');
    await exited(server);

    server = await startServer();
    await inState(id, 'awaiting_review');
    await api('POST', `/v1/tasks/${id}/review`, Task, { action: 'approve', comments: [] });
    await inState(id, 'pr_open');

    const log = await events(id);
    expect(log.map((e) => e.seq)).toEqual(Array.from({ length: log.length }, (_, i) => i + 1));
    expect(log.filter((e) => e.type === 'pr.feedback')).toMatchObject([{ data: { kind: 'round', round: 2 } }]);
    expect(log.filter((e) => e.type === 'pr.pushed')).toHaveLength(1);
    const git = (...args: string[]) => execFileSync('git', ['-C', bare, ...args], { encoding: 'utf8' }).trim();
    const head = git('rev-parse', `refs/heads/${branch}`);
    expect(git('rev-list', `${fixture.sha}..${head}`).split('\n')).toHaveLength(2);
    expect(git('rev-parse', `${head}^`)).toBe(firstHead);
    expect(git('show', `${head}:src/calc.js`)).toContain(DOC_AFTER);
    const view = await api('GET', '/v1/repos/calc/pulls/1', PullRequestView);
    expect(view.comments.filter((c) => c.author === 'dockhand' && c.inReplyTo === comment.id)).toHaveLength(1);
    expect(view.pr.headSha).toBe(head);

    server.kill('SIGTERM');
    expect(await exited(server)).toBe(0);
  }, 20 * 60_000);
});
