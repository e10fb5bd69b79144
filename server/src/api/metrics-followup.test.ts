import { describe, expect, it } from 'vitest';
import { TaskEvent, type NewEvent, type Task } from '@dockhand/protocol';
import { computeMetrics, prometheusText } from './metrics';

const usage = (costUsd: number) => ({ inputTokens: 100, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd });
const task = (id: string, state: string, costUsd: number) => ({ id, state, context: { repo: 'app' }, usage: usage(costUsd) }) as unknown as Task;
const log = (taskId: string, events: NewEvent[]) =>
  events.map((event, index) => TaskEvent.parse({ ...event, taskId, seq: index + 1, ts: new Date(Date.UTC(2026, 11, 4, 12, 0, index * 10)).toISOString() }));
const opened: NewEvent = { type: 'pr.opened', data: { number: 1, url: 'u', branch: 'b', headSha: 'a'.repeat(40) } };
const mergedEvent: NewEvent = { type: 'pr.outcome', data: { outcome: 'merged', at: '2026-12-04T13:00:00.000Z' } };
const base = { number: 1, seenThrough: 1, checksSeenThrough: 0, comments: [], ignored: [] };
const round = (n: number): NewEvent => ({ type: 'pr.feedback', data: { ...base, kind: 'round', round: n } });
const pushed = (n: number): NewEvent => ({ type: 'pr.pushed', data: { round: n, number: 1, headSha: 'c'.repeat(40), commit: true, replied: [] } });
const triaged = (triage: 'pre_existing' | 'flaky' | 'infrastructure'): NewEvent => ({ type: 'pr.feedback', data: { ...base, kind: 'triaged', check: { id: 1, name: 'ci', conclusion: 'failure', triage, evidence: 'e' } } });

describe('metrics of following PRs (issue 26)', () => {
  it('rounds per merged PR, merge rate of PRs that needed rounds, time to the follow-up push, checks by class; cost per merged PR counts every round', () => {
    const tasks = [task('a', 'merged', 3), task('b', 'closed', 1), task('c', 'merged', 1)];
    const events = [
      // a: two rounds, merged; each push 10 s after its round started
      ...log('a', [opened, round(2), pushed(2), round(3), pushed(3), triaged('flaky'), mergedEvent]),
      // b: one round, then closed
      ...log('b', [opened, round(2), pushed(2), triaged('infrastructure'), { type: 'pr.outcome', data: { outcome: 'closed', at: '2026-12-04T13:00:00.000Z' } }]),
      // c: merged as opened
      ...log('c', [opened, triaged('pre_existing'), mergedEvent]),
    ];
    const [group] = computeMetrics(tasks, events);
    expect(group).toMatchObject({
      followUpRounds: 3,
      prsWithRounds: 2,
      prsMergedWithRounds: 1,
      roundsPerMergedPr: 1,
      mergeRateWithRounds: 0.5,
      medianFollowUpPushSeconds: 10,
      checksTriaged: { flaky: 1, infrastructure: 1, pre_existing: 1 },
      // Every task's cost (each of its rounds, and the closed PR's) over the merged PRs.
      costPerMergedPrUsd: 2.5,
    });
    const text = prometheusText(computeMetrics(tasks, events));
    expect(text).toContain('dockhand_rounds_per_merged_pr{repo="app",model="none"} 1');
    expect(text).toContain('dockhand_checks_triaged_total{repo="app",model="none",triage="flaky"} 1');
    expect(text).toContain('dockhand_merge_rate_with_rounds{repo="app",model="none"} 0.5');
  });
});
