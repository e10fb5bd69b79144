import { describe, expect, it } from 'vitest';
import { clipEventOutput } from './messages';
import { TASK_ID, approvalResolved, blockedForOverride, longRun, overriddenAndPushed, pushed, runUntilApproval, runUntilReview, stamp } from './test/recorded-stream';
import { applyEvents, createTrajectory } from './trajectory';

const first = stamp(TASK_ID, runUntilApproval());
const second = stamp(TASK_ID, approvalResolved('denied'), first.length + 1);
const third = stamp(TASK_ID, runUntilReview(), first.length + second.length + 1);
const fourth = stamp(TASK_ID, pushed(), first.length + second.length + third.length + 1);

describe('trajectory fold', () => {
  it('summarises state, budgets, approvals, files, policy and the PR', () => {
    const t = createTrajectory(TASK_ID);
    applyEvents(t, first);
    expect(t.summary).toMatchObject({ title: 'paginate() skips the first item of every page', state: 'awaiting_approval', turnsUsed: 3, pendingApprovals: ['ap_1'] });
    expect(t.summary.budgets).toEqual({ maxTurns: 20, maxCostUsd: 2, maxWallClockSeconds: 900 });
    expect(t.summary.costUsd).toBeCloseTo(0.08, 5);
    expect([...t.summary.changedFiles]).toEqual([['src/paginate.js', 'modified']]);
    applyEvents(t, [...second, ...third, ...fourth]);
    expect(t.summary.pendingApprovals).toEqual([]);
    expect(t.summary.state).toBe('pr_open');
    expect(t.summary.policy).toEqual({ ok: true, stage: 'push', violations: [] });
    expect(t.summary.prUrl).toBe('https://forge.example/acme/app/pull/17');
  });

  it('tells an overridden policy check from a failed one', () => {
    const t = createTrajectory(TASK_ID);
    const blocked = stamp(TASK_ID, [...runUntilApproval(), ...blockedForOverride()]);
    applyEvents(t, blocked);
    expect(t.summary.policy).toMatchObject({ ok: false });
    expect(t.summary.policy?.overridden).toBeUndefined();
    expect(t.rows.some((row) => row.kind === 'note' && row.tone === 'error' && row.text.startsWith('Policy check failed'))).toBe(true);
    applyEvents(t, stamp(TASK_ID, overriddenAndPushed(), blocked.length + 1));
    expect(t.summary.policy).toMatchObject({ ok: false, overridden: true, overriddenBy: 'olive' });
    expect(t.rows.find((row) => row.kind === 'note' && row.text.includes('overridden'))).toMatchObject({
      kind: 'note',
      tone: 'warn',
      text: 'Policy check overridden by olive (push): .github/workflows/ci.yml: CI configuration changed (modified)',
    });
  });

  it('merges a tool result into its call row and marks the row changed', () => {
    const t = createTrajectory(TASK_ID);
    applyEvents(t, first);
    const index = t.toolRows.get('tu_3')!;
    expect(t.rows[index]).toMatchObject({ kind: 'tool', name: 'run_command', version: 0 });
    expect(t.rows[index]).not.toHaveProperty('result');
    const touched = applyEvents(t, second);
    expect(touched.has(index)).toBe(true);
    expect(t.rows[index]).toMatchObject({ version: 1, result: { isError: true, output: 'The developer denied this command.' } });
    const approval = t.rows[t.approvalRows.get('ap_1')!];
    expect(approval).toMatchObject({ kind: 'approval', resolved: { decision: 'denied', by: 'dev@example.com' } });
  });

  it('ignores events it already has, so replays and duplicates change nothing', () => {
    const t = createTrajectory(TASK_ID);
    applyEvents(t, first.slice(0, 10));
    const rows = t.rows.length;
    const touched = applyEvents(t, first.slice(0, 10));
    expect(touched.size).toBe(0);
    expect(t.rows.length).toBe(rows);
    applyEvents(t, first.slice(5));
    expect(t.rows.map((r) => r.seq)).toEqual([...new Set(t.rows.map((r) => r.seq))]);
    expect(t.lastSeq).toBe(first.length);
  });

  it('says budget stops and failures in plain words', () => {
    const t = createTrajectory(TASK_ID);
    applyEvents(t, stamp(TASK_ID, [
      { type: 'budget.exceeded', data: { budget: 'cost', limit: 2, used: 2.04 } },
      { type: 'budget.exceeded', data: { budget: 'wall_clock', limit: 900, used: 905 } },
      { type: 'task.failed', data: { code: 'sandbox_unavailable', message: 'no sandbox could be started' } },
    ]));
    expect(t.rows.map((r) => (r.kind === 'note' ? r.text : ''))).toEqual([
      'Stopped: the cost budget is used up ($2.04 of $2.00).',
      'Stopped: the time budget is used up (15 min 5 s of 15 min 0 s).',
      'Task failed: no sandbox could be started',
    ]);
    expect(t.summary.failure).toBe('no sandbox could be started');
  });

  it('folds 5,000 events quickly', () => {
    const events = stamp(TASK_ID, longRun(5000, 10_000));
    const t = createTrajectory(TASK_ID);
    const started = performance.now();
    applyEvents(t, events);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(t.lastSeq).toBe(5000);
  });

  it('clips only long tool and test outputs', () => {
    const [event] = stamp(TASK_ID, [{ type: 'tool.finished', data: { toolUseId: 'x', name: 'run_command', isError: false, output: 'y'.repeat(5000), truncated: false, durationMs: 1 } }]);
    const clipped = clipEventOutput(event!, 100);
    expect(clipped.clipped).toEqual({ seq: 1, totalChars: 5000 });
    expect(clipped.event.type === 'tool.finished' && clipped.event.data.output).toBe('y'.repeat(100));
    expect(clipEventOutput(first[0]!, 100)).toEqual({ event: first[0] });
  });
});
