import { describe, expect, it } from 'vitest';
import type { EventPayload, TaskEvent } from '@dockhand/protocol';
import { describeEvent } from './format';

function budgetWait(data: EventPayload<'model.budget_wait'>): TaskEvent {
  return { taskId: 't_1', seq: 7, ts: '2026-12-03T08:00:00.000Z', type: 'model.budget_wait', data };
}

describe('describeEvent: model.budget_wait', () => {
  it('says which limit is full and the estimate while a turn waits', () => {
    const line = describeEvent(budgetWait({ phase: 'waiting', limit: 'input_tokens_per_minute', windowSeconds: 60, tokens: 45_000, waitMs: 12_400 }));
    expect(line).toBe("waiting for the fleet's model budget: input tokens per minute are used up; the turn goes ahead in about 12 s (this turn: ~45,000 input tokens)");
  });

  it('names the request limit without a token count', () => {
    const line = describeEvent(budgetWait({ phase: 'waiting', limit: 'requests_per_minute', windowSeconds: 60, tokens: 900, waitMs: 3_000 }));
    expect(line).toBe("waiting for the fleet's model budget: requests per minute are used up; the turn goes ahead in about 3 s");
  });

  it('says how long the turn waited once it goes ahead (at least 1 s)', () => {
    expect(describeEvent(budgetWait({ phase: 'done', limit: 'requests_per_minute', windowSeconds: 60, tokens: 900, waitMs: 31_600 }))).toBe(
      "waited 32 s for the fleet's model budget (requests per minute); the turn went ahead",
    );
    expect(describeEvent(budgetWait({ phase: 'done', limit: 'input_tokens_per_minute', windowSeconds: 60, tokens: 10, waitMs: 120 }))).toBe(
      "waited 1 s for the fleet's model budget (input tokens per minute); the turn went ahead",
    );
  });
});

describe('describeEvent: tests.finished', () => {
  const run = (data: Partial<EventPayload<'tests.finished'>>): TaskEvent => ({
    taskId: 't_1',
    seq: 9,
    ts: '2026-12-07T20:00:00.000Z',
    type: 'tests.finished',
    data: { command: 'npm test → node check.js', scope: 'full', passed: 0, failed: 1, skipped: 0, ok: true, quarantined: [], output: '', durationMs: 10, ...data },
  });

  it('says when no step can judge the change (every step red at the base by its exit status)', () => {
    const line = describeEvent(run({ preExisting: ['npm test → node check.js (exited with 1)'], judged: false, steps: [{ name: 'npm test → node check.js', counted: 'exit status', judgement: 'cannot judge', exitCode: 1, passed: 0, failed: 1 }] }));
    expect(line).toBe('tests cannot judge: 0 passed, 1 failed (full, 1 pre-existing; cannot judge: npm test → node check.js) — no step can judge this change');
  });

  it('names a step that cannot judge beside steps that do', () => {
    const line = describeEvent(run({ passed: 2, steps: [{ name: 'jest', counted: 'tests', judgement: 'tests', exitCode: 0, passed: 2, failed: 0 }, { name: 'tsd', counted: 'exit status', judgement: 'cannot judge', exitCode: 1, passed: 0, failed: 1 }] }));
    expect(line).toBe('tests red: 2 passed, 1 failed (full; cannot judge: tsd)');
  });
});
