import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorBody } from '@dockhand/protocol';
import { RunDirectory, type InstanceResult } from '../eval/run-dir';
import { harness, type Harness } from './test-support';

/*
 * GET /v1/evals, /v1/evals/:id and the eval series on /metrics, over run directories as
 * `dockhand eval run` and `eval grade` leave them, scoped as the task metrics are.
 */

const errorOf = (body: string) => ErrorBody.parse(JSON.parse(body)).error;

function result(id: string, repo: string, reachedReview: boolean, costUsd: number, extra: Partial<InstanceResult> = {}): InstanceResult {
  return {
    instance_id: id, repo, status: 'settled', taskId: `t-${id}`, state: reachedReview ? 'awaiting_review' : 'failed', reachedReview,
    model_patch: reachedReview ? 'diff --git a/x b/x\n+secret-looking patch\n' : '', policy: { checked: true, ok: reachedReview, blocked: false, violations: [] },
    refusedFinishes: 0, turns: 4, costUsd, inputTokens: 100, outputTokens: 20, cacheReadTokens: 300, cacheWriteTokens: 0, wallSeconds: 60, queuedSeconds: 40, attempt: 1,
    ...extra,
  };
}

/** A run directory as a run and a grade leave it. */
function makeRun(runsDir: string, id: string, mode: 'gold' | 'null', results: InstanceResult[], resolved?: string[], attempts = 1): void {
  const dir = new RunDirectory(join(runsDir, id));
  dir.claim({ mode, model: `dockhand-replay/${mode}`, instancesFile: '/srv/eval/instances.jsonl', budgets: {}, attempts, createdAt: `2026-12-0${id.length % 9}T00:00:00.000Z` });
  for (const entry of results) dir.writeResult(entry);
  if (resolved) {
    writeFileSync(join(dir.path, 'grade.json'), JSON.stringify({
      instances: Object.fromEntries(results.map((entry) => [entry.instance_id, { resolved: resolved.includes(entry.instance_id), status: resolved.includes(entry.instance_id) ? 'resolved' : 'unresolved', flaky: [] }])),
    }));
  }
}

let h: Harness;
let runsDir: string;

beforeEach(async () => {
  runsDir = mkdtempSync(join(tmpdir(), 'dockhand-evals-api-'));
  // owner/app: registered here (owner__app, anyone may submit); someone/secret: not registered.
  makeRun(runsDir, 'gold-a', 'gold', [result('app-1', 'owner/app', true, 0.02), result('app-2', 'owner/app', true, 0.04)], ['app-1']);
  makeRun(runsDir, 'secret-null', 'null', [result('s-1', 'someone/secret', false, 0.01)]);
  makeRun(runsDir, 'best-of-2', 'gold', [
    result('app-1', 'owner/app', true, 0.06, { attempt: 2, attempts: [{ attempt: 1, reachedReview: false, turns: 2, costUsd: 0.02, wallSeconds: 10 }, { attempt: 2, reachedReview: true, turns: 2, costUsd: 0.04, wallSeconds: 20 }] }),
    result('app-2', 'owner/app', true, 0.04, { attempt: 1, attempts: [{ attempt: 1, reachedReview: true, turns: 2, costUsd: 0.02, wallSeconds: 10 }, { attempt: 2, reachedReview: true, turns: 2, costUsd: 0.02, wallSeconds: 10 }] }),
  ], ['app-1', 'app-2'], 2);
  writeFileSync(join(runsDir, 'not-a-run.txt'), 'ignored');
  h = await harness({ deps: { evalRunsDir: runsDir } });
  await h.store.putRepo({ name: 'owner__app', source: '/srv/eval/repos/app', defaultBranch: 'main', owners: [], submitters: [], createdAt: '2026-12-01T00:00:00.000Z', createdBy: 'root' });
});

afterEach(async () => {
  await h.close();
  rmSync(runsDir, { recursive: true, force: true });
});

describe('GET /v1/evals', () => {
  it('lists the runs with their figures; a user sees only runs of repositories they may submit to', async () => {
    const admin = JSON.parse((await h.app.inject({ url: '/v1/evals', headers: h.auth('admin') })).body);
    expect(admin.runs.map((run: { id: string }) => run.id).sort()).toEqual(['best-of-2', 'gold-a', 'secret-null']);
    const gold = admin.runs.find((run: { id: string }) => run.id === 'gold-a');
    expect(gold).toMatchObject({ mode: 'gold', model: 'dockhand-replay/gold', attempts: 1, instances: 2, graded: true, resolved: 1, resolvedShare: 0.5, reachedReview: 2, repos: ['owner/app'] });
    expect(gold.costPerResolvedUsd).toBeCloseTo(0.06);
    expect(admin.runs.find((run: { id: string }) => run.id === 'best-of-2')).toMatchObject({ passAt1: 1, passAtN: 2 });

    const alice = JSON.parse((await h.app.inject({ url: '/v1/evals', headers: h.auth('alice') })).body);
    expect(alice.runs.map((run: { id: string }) => run.id).sort()).toEqual(['best-of-2', 'gold-a']);
    expect((await h.app.inject({ url: '/v1/evals' })).statusCode).toBe(401);
  });

  it('one run: its report as JSON without the patches; unknown, hidden and malformed ids answer like the other routes', async () => {
    const res = await h.app.inject({ url: '/v1/evals/best-of-2', headers: h.auth('alice') });
    expect(res.statusCode).toBe(200);
    const run = JSON.parse(res.body);
    expect(run.summary).toMatchObject({ id: 'best-of-2', resolved: 2 });
    expect(run.attempts).toMatchObject({ attempts: 2, passAt1: 1, passAtN: 2, reachedReviewAt1: 1, reachedReviewAtN: 2 });
    expect(run.attempts.firstAttemptCostUsd).toBeCloseTo(0.04);
    expect(run.attempts.allAttemptsCostUsd).toBeCloseTo(0.1);
    expect(run.overall).toMatchObject({ instances: 2, medianQueuedSeconds: 40 });
    expect(run.instances.map((row: { instance_id: string; resolved: boolean }) => [row.instance_id, row.resolved])).toEqual([['app-1', true], ['app-2', true]]);
    expect(res.body).not.toContain('secret-looking patch');

    const hidden = await h.app.inject({ url: '/v1/evals/secret-null', headers: h.auth('alice') });
    const missing = await h.app.inject({ url: '/v1/evals/nope', headers: h.auth('alice') });
    expect([hidden.statusCode, missing.statusCode]).toEqual([404, 404]);
    expect(errorOf(hidden.body).message).toBe('evaluation run secret-null not found');
    expect((await h.app.inject({ url: '/v1/evals/secret-null', headers: h.auth('admin') })).statusCode).toBe(200);
    const bad = await h.app.inject({ url: '/v1/evals/..%2Fetc', headers: h.auth('admin') });
    expect(bad.statusCode).toBe(400);
    expect(errorOf(bad.body)).toMatchObject({ code: 'bad_request', field: 'id' });
  });

  it('is in the OpenAPI document', async () => {
    const doc = JSON.parse((await h.app.inject({ url: '/docs/json' })).body);
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1/evals', '/v1/evals/{id}']));
  });
});

describe('eval figures on /metrics', () => {
  it('resolved share, cost per resolved and pass@k per run, scoped to the caller', async () => {
    const admin = (await h.app.inject({ url: '/metrics', headers: h.auth('admin') })).body;
    expect(admin).toContain('dockhand_eval_resolved_share{run="gold-a",mode="gold",model="dockhand-replay/gold"} 0.5');
    expect(admin).toContain('dockhand_eval_cost_per_resolved_usd{run="gold-a",mode="gold",model="dockhand-replay/gold"} 0.06');
    expect(admin).toContain('dockhand_eval_resolved_share{run="secret-null",mode="null",model="dockhand-replay/null"} 0');
    expect(admin).not.toMatch(/dockhand_eval_cost_per_resolved_usd\{run="secret-null"/);
    expect(admin).toContain('dockhand_eval_pass_at_1{run="best-of-2",mode="gold",model="dockhand-replay/gold"} 1');
    expect(admin).toContain('dockhand_eval_pass_at_n{run="best-of-2",mode="gold",model="dockhand-replay/gold"} 2');
    // The task metrics are still there.
    expect(admin).toContain('# TYPE dockhand_tasks gauge');
    const alice = (await h.app.inject({ url: '/metrics', headers: h.auth('alice') })).body;
    expect(alice).toContain('dockhand_eval_resolved{run="gold-a",mode="gold",model="dockhand-replay/gold"} 1');
    expect(alice).not.toContain('secret-null');
  });
});
