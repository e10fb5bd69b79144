import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Task, TaskEvent } from '@dockhand/protocol';
import { loadConfig } from '../config';
import type { FeedbackEngine, TestReport } from '../feedback/types';
import { LocalForge } from '../forge';
import type { CassetteInput } from '../model/replay/cassette';
import { startReplayServer, type ReplayServer } from '../model/replay/server';
import { PostgresStore } from '../store/postgres';
import { dropSchema, testDatabaseUrl, testSchema } from '../store/postgres.test-support';
import { createFleet, type Fleet } from './fleet';
import { FakeSandboxProvider } from './testing/fakes';

/*
 * The model side of scale-out, end to end on real Postgres: the real runner, agent loop, policy,
 * local forge and Anthropic SDK against the replay server; the in-memory sandbox and a green test
 * runner stand in for gVisor. Cost routing (routine tasks on the routine model, per repository or
 * fleet-wide) and a turn that waits for the fleet's model rate budget.
 */

const gitEnv = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: gitEnv, encoding: 'utf8' }).trim();
const BASE = { 'src/a.ts': 'one\ntwo\nthree\n' };

const CASSETTE: CassetteInput = {
  turns: [
    { name: 'fix', content: [{ type: 'tool_use', name: 'edit_file', input: { path: 'src/a.ts', command: 'replace', old_text: 'two', new_text: 'TWO' } }] },
    { name: 'finish', content: [{ type: 'tool_use', name: 'finish', input: { summary: 'Made two loud.' } }] },
  ],
};

const greenTests: FeedbackEngine = {
  async runTests(): Promise<TestReport> {
    return {
      command: 'npm test', scope: 'full', selectionReason: 'stand-in', passed: 1, failed: 0, skipped: 0, ok: true, quarantined: [],
      output: '1 passed', durationMs: 1, cases: [], runner: 'unknown', wholeCommand: true,
    };
  },
  async diagnostics() {
    return [];
  },
};

let replay: ReplayServer;
beforeAll(async () => {
  replay = await startReplayServer();
});
afterAll(async () => {
  await replay.close();
});

describe('cost routing and budget waits on Postgres, end to end', () => {
  let dir: string;
  let url: string;
  let schema: string;
  let fleet: Fleet | undefined;
  let sessions = 0;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dockhand-routing-'));
    url = await testDatabaseUrl();
    schema = testSchema();
  });
  afterEach(async () => {
    await fleet?.close();
    fleet = undefined;
    await dropSchema(url, schema);
    rmSync(dir, { recursive: true, force: true });
  });

  async function start(env: Record<string, string>, repos: Record<string, Record<string, string>>) {
    const session = `routing-${++sessions}`;
    replay.addCassette(session, CASSETTE);
    const config = loadConfig({
      DOCKHAND_DATA_DIR: join(dir, 'data'), DOCKHAND_POLL_MS: '20', DOCKHAND_DATABASE_URL: url,
      DOCKHAND_MODEL_BASE_URL: replay.url, DOCKHAND_REPLAY_SESSION: session, DOCKHAND_MODEL: 'claude-sonnet-4-6', ...env,
    });
    const store = await PostgresStore.open({ url, schema, poolSize: 6 });
    const running = await createFleet(config, { store, hub: await store.liveEvents(), sandboxes: new FakeSandboxProvider(BASE), feedback: greenTests, agentConfig: { review: false } });
    fleet = running;
    const admin = await running.store.createUser('root', 'admin');
    const shas: Record<string, string> = {};
    for (const [name, extra] of Object.entries(repos)) {
      const work = join(dir, `work-${name}`);
      for (const [path, content] of Object.entries({ ...BASE, ...extra })) {
        mkdirSync(dirname(join(work, path)), { recursive: true });
        writeFileSync(join(work, path), content);
      }
      git(work, 'init', '-q', '-b', 'main');
      git(work, 'add', '-A');
      git(work, 'commit', '-q', '-m', 'base');
      shas[name] = git(work, 'rev-parse', 'HEAD');
      await running.repos.register({ name, source: work }, admin);
    }
    await running.store.createUser('alice', 'user');
    const token = (await running.store.createToken('alice')).token;
    const adminToken = (await running.store.createToken('root')).token;
    running.scheduler.start();
    return { fleet: running, session, shas, token, adminToken, forge: new LocalForge({ dataDir: join(config.dataDir, 'forge'), store: running.store.pullRequests }) };
  }

  async function submit(f: Fleet, token: string, repo: string, baseSha: string, priority: 'normal' | 'routine'): Promise<string> {
    const created = await f.app.inject({
      method: 'POST', url: '/v1/tasks', headers: { authorization: `Bearer ${token}` },
      payload: { ticket: { kind: 'text', title: `Make two loud (${priority})` }, context: { repo, baseSha }, priority },
    });
    expect(created.statusCode).toBe(202);
    return (JSON.parse(created.body) as { id: string }).id;
  }

  async function waitFor(f: Fleet, token: string, id: string, state: string): Promise<Task> {
    // Read from the store, not polled through the API: a poll every 20 ms meets the API's own rate
    // limit (120 a minute) once a task takes longer than a few seconds, as on a loaded machine.
    for (let i = 0; i < 3000; i++) {
      const task = await f.store.getTask(id);
      if (task?.state === state) return task;
      if (task && ['failed', 'cancelled'].includes(task.state)) throw new Error(`task ${id} ${task.state}: ${JSON.stringify(await f.store.listEvents(id))}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`task ${id} never reached ${state}`);
  }

  const turnModels = (events: TaskEvent[]) => events.flatMap((event) => (event.type === 'model.turn' ? [event.data.model] : []));

  it('routine tasks run on the routine model (the repository\'s wins over the fleet\'s), normal ones on the default; cost per merged PR splits by model', async () => {
    const { fleet: f, session, shas, token, adminToken, forge } = await start(
      { DOCKHAND_MODEL_ROUTINE: 'claude-haiku-4-5' },
      { app: {}, lib: { '.dockhand/policy.yml': 'routineModel: claude-haiku-5-5\n' } },
    );
    const normal = await submit(f, token, 'app', shas.app!, 'normal');
    const routine = await submit(f, token, 'app', shas.app!, 'routine');
    const routineLib = await submit(f, token, 'lib', shas.lib!, 'routine');
    const expected: Record<string, string> = { [normal]: 'claude-sonnet-4-6', [routine]: 'claude-haiku-4-5', [routineLib]: 'claude-haiku-5-5' };
    for (const [id, model] of Object.entries(expected)) {
      await waitFor(f, token, id, 'awaiting_review');
      expect(turnModels(await f.store.listEvents(id))).toEqual([model, model]);
    }
    // What the provider (the replay server) was asked for: two turns on each model.
    const asked = replay.requests(session).map((request) => request.model).sort();
    expect(asked).toEqual(['claude-haiku-4-5', 'claude-haiku-4-5', 'claude-haiku-5-5', 'claude-haiku-5-5', 'claude-sonnet-4-6', 'claude-sonnet-4-6']);

    for (const id of Object.keys(expected)) {
      await f.app.inject({ method: 'POST', url: `/v1/tasks/${id}/review`, headers: { authorization: `Bearer ${token}` }, payload: { action: 'approve' } });
      await waitFor(f, token, id, 'pr_open');
      const opened = (await f.store.listEvents(id)).find((event) => event.type === 'pr.opened');
      if (opened?.type !== 'pr.opened') throw new Error('no pr.opened');
      await forge.merge((await f.store.getTask(id))!.context.repo, opened.data.number);
    }
    await f.outcomes.pollOnce();
    const metrics = (await f.app.inject({ url: '/metrics', headers: { authorization: `Bearer ${adminToken}` } })).body;
    const costPerMergedPr = (repo: string, model: string) => {
      const match = new RegExp(`^dockhand_cost_per_merged_pr_usd\\{repo="${repo}",model="${model}"\\} (\\S+)$`, 'm').exec(metrics);
      return match ? Number(match[1]) : undefined;
    };
    const task = async (id: string) => (await f.store.getTask(id))!.usage.costUsd;
    expect(costPerMergedPr('app', 'claude-sonnet-4-6')).toBeCloseTo(await task(normal), 9);
    expect(costPerMergedPr('app', 'claude-haiku-4-5')).toBeCloseTo(await task(routine), 9);
    expect(costPerMergedPr('lib', 'claude-haiku-5-5')).toBeCloseTo(await task(routineLib), 9);
    // The same turns on the cheaper models cost less.
    expect(await task(routine)).toBeLessThan(await task(normal));
    expect(await task(routineLib)).toBeLessThan(await task(routine));
    expect(await task(routineLib)).toBeGreaterThan(0);
  });

  it('a turn that waits for the fleet\'s model budget is two model.budget_wait events in the task log (written by the loop under the lease) and a /metrics figure', async () => {
    const tpm = 200_000;
    const { fleet: f, shas, token, adminToken } = await start({ DOCKHAND_MODEL_BUDGET_TPM: String(tpm) }, { app: {} });
    // Another worker spent the whole minute's tokens 57.5 s ago (database clock): the first turn waits ~2.5 s.
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`INSERT INTO ${schema}.model_spend (at, tokens) VALUES ((extract(epoch from clock_timestamp()) * 1000)::bigint - 57500, $1)`, [tpm]);
    } finally {
      await client.end();
    }
    const id = await submit(f, token, 'app', shas.app!, 'normal');
    await waitFor(f, token, id, 'awaiting_review');
    const events = await f.store.listEvents(id);
    const waits = events.flatMap((event) => (event.type === 'model.budget_wait' ? [event] : []));
    expect(waits.map((event) => [event.data.phase, event.data.limit, event.data.windowSeconds])).toEqual([
      ['waiting', 'input_tokens_per_minute', 60],
      ['done', 'input_tokens_per_minute', 60],
    ]);
    const [waiting, done] = waits;
    // The wait is what is left of the window when the turn asks: at most 2.5 s, less the time the
    // task took to reach its first turn (1.1 s less on a loaded machine); it lasted that long.
    expect(waiting!.data.waitMs).toBeGreaterThan(0);
    expect(waiting!.data.waitMs).toBeLessThanOrEqual(2_600);
    expect(done!.data.waitMs).toBeGreaterThanOrEqual(waiting!.data.waitMs - 100);
    expect(done!.data.tokens).toBeGreaterThan(0);
    // Both before the first turn, in the task's own log (seq order), and the second turn did not wait.
    const firstTurn = events.findIndex((event) => event.type === 'model.turn');
    expect(events.indexOf(done!)).toBeLessThan(firstTurn);
    const metrics = (await f.app.inject({ url: '/metrics', headers: { authorization: `Bearer ${adminToken}` } })).body;
    expect(metrics).toContain('dockhand_model_budget_waits_total{repo="app",model="claude-sonnet-4-6"} 1');
    const seconds = /^dockhand_model_budget_wait_seconds_total\{repo="app",model="claude-sonnet-4-6"\} (\S+)$/m.exec(metrics)?.[1];
    expect(Number(seconds)).toBeCloseTo(done!.data.waitMs / 1000, 6);
  });
});
