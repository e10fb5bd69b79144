import { describe, expect, it } from 'vitest';
import { TaskEvent, type NewEvent, type Task } from '@dockhand/protocol';
import { computeMetrics, prometheusText } from './metrics';

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
