import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TaskEvent, type NewEvent, type Task } from '@dockhand/protocol';
import { DependencyCache } from '../sandbox/dep-cache';
import { computeMetrics, prometheusText } from './metrics';
import { harness } from './test-support';

const usage = (costUsd: number) => ({ inputTokens: 100, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd });
const task = (id: string, costUsd: number) => ({ id, state: 'merged', context: { repo: 'app' }, usage: usage(costUsd) }) as unknown as Task;
const log = (taskId: string, events: NewEvent[]) =>
  events.map((event, index) => TaskEvent.parse({ ...event, taskId, seq: index + 1, ts: new Date(Date.UTC(2026, 11, 2, 12, 0, index)).toISOString() }));
const turn = (model: string): NewEvent => ({
  type: 'model.turn',
  data: { turn: 1, model, usage: { inputTokens: 100, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0 }, costUsd: 0, stopReason: 'tool_use', contextTokens: 100, content: [] },
});
const wait = (phase: 'waiting' | 'done', waitMs: number): NewEvent => ({
  type: 'model.budget_wait',
  data: { phase, limit: 'input_tokens_per_minute', windowSeconds: 60, tokens: 500, waitMs },
});
const merged: NewEvent[] = [
  { type: 'pr.opened', data: { number: 1, url: 'u', branch: 'b', headSha: 'a'.repeat(40) } },
  { type: 'pr.outcome', data: { outcome: 'merged', at: '2026-12-02T13:00:00.000Z' } },
];

describe('metrics of budget waits and of cost per model', () => {
  it('counts finished budget waits and their seconds per repo and model, and splits cost per merged PR by model', () => {
    const tasks = [task('a', 2), task('b', 0.2), task('c', 0.4)];
    const events = [
      ...log('a', [wait('waiting', 2_000), wait('done', 2_500), turn('claude-sonnet-4-6'), ...merged]),
      ...log('b', [turn('claude-haiku-4-5'), wait('waiting', 1_000), wait('done', 1_500), wait('waiting', 900), wait('done', 1_000), ...merged]),
      ...log('c', [turn('claude-haiku-4-5'), ...merged]),
    ];
    const groups = computeMetrics(tasks, events);
    const by = (model: string) => groups.find((group) => group.model === model);
    expect(by('claude-sonnet-4-6')).toMatchObject({ tasks: 1, budgetWaits: 1, budgetWaitSeconds: 2.5, costPerMergedPrUsd: 2 });
    expect(by('claude-haiku-4-5')).toMatchObject({ tasks: 2, budgetWaits: 2, budgetWaitSeconds: 2.5, prsMerged: 2 });
    expect(by('claude-haiku-4-5')?.costPerMergedPrUsd).toBeCloseTo(0.3, 10);
    const text = prometheusText(groups);
    expect(text).toContain('dockhand_model_budget_waits_total{repo="app",model="claude-haiku-4-5"} 2');
    expect(text).toContain('dockhand_model_budget_wait_seconds_total{repo="app",model="claude-sonnet-4-6"} 2.5');
    expect(text).toContain('# TYPE dockhand_model_budget_wait_seconds_total counter');
    expect(text).toContain('dockhand_cost_per_merged_pr_usd{repo="app",model="claude-sonnet-4-6"} 2');
  });
});

describe("the node's dependency cache on /metrics", () => {
  it('shows hits, misses, bytes by source, what it keeps and its bound to admins only', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dockhand-metrics-dep-cache-'));
    const cache = new DependencyCache({ dir, maxBytes: 1_000_000 });
    const h = await harness({ deps: { dependencyCache: () => cache.metrics() } });
    try {
      await cache.write('/left-pad/-/left-pad-1.3.0.tgz', Buffer.alloc(1_500));
      Object.assign(cache.stats, { hits: 3, misses: 1, bytesFromCache: 4_500, bytesFromUpstream: 1_500 });
      const admin = (await h.app.inject({ url: '/metrics', headers: h.auth('admin') })).body;
      expect(admin).toContain('# TYPE dockhand_dep_cache_hits_total counter\ndockhand_dep_cache_hits_total 3\n');
      expect(admin).toContain('\ndockhand_dep_cache_misses_total 1\n');
      expect(admin).toContain('\ndockhand_dep_cache_bytes_total{source="cache"} 4500\ndockhand_dep_cache_bytes_total{source="upstream"} 1500\n');
      expect(admin).toContain('\ndockhand_dep_cache_kept_bytes 1500\n');
      expect(admin).toContain('\ndockhand_dep_cache_max_bytes 1000000\n');
      const json = JSON.parse((await h.app.inject({ url: '/v1/metrics', headers: h.auth('admin') })).body);
      expect(json.dependencyCache).toMatchObject({ stats: { hits: 3, misses: 1 }, keptBytes: 1_500, maxBytes: 1_000_000 });
      // Its tarballs serve every repository's builds: a user's view (their own tasks) leaves it out.
      expect((await h.app.inject({ url: '/metrics', headers: h.auth('alice') })).body).not.toContain('dockhand_dep_cache');
      expect(JSON.parse((await h.app.inject({ url: '/v1/metrics', headers: h.auth('alice') })).body).dependencyCache).toBeUndefined();
    } finally {
      await cache.close();
      await h.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('has no series on a server without one (an API replica, or the cache off)', async () => {
    const h = await harness({ deps: { dependencyCache: async () => undefined } });
    try {
      expect((await h.app.inject({ url: '/metrics', headers: h.auth('admin') })).body).not.toContain('dockhand_dep_cache');
    } finally {
      await h.close();
    }
  });
});
