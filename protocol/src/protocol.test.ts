import { describe, expect, it } from 'vitest';
import { CreateTaskRequest, TaskEvent, formatFieldPath, isFinalState } from './index';

describe('protocol', () => {
  it('fills defaults in a minimal task request', () => {
    const req = CreateTaskRequest.parse({
      ticket: { kind: 'text', title: 'Fix the off-by-one in paginate()' },
      context: { repo: '/srv/repos/app.git', baseSha: 'a'.repeat(40) },
    });
    expect(req.priority).toBe('normal');
    expect(req.allowTestEdits).toBe(false);
    expect(req.context.contextFiles).toEqual([]);
  });

  it('names the bad field', () => {
    const r = CreateTaskRequest.safeParse({
      ticket: { kind: 'text', title: 'x' },
      context: { repo: 'r', baseSha: 'main' },
    });
    expect(r.success).toBe(false);
    const issue = r.error!.issues[0]!;
    expect(formatFieldPath(issue.path)).toBe('context.baseSha');
    expect(issue.message).toMatch(/40-character/);
  });

  it('validates an event envelope by type', () => {
    const ok = TaskEvent.safeParse({
      taskId: 't1', seq: 3, ts: new Date().toISOString(), type: 'budget.exceeded',
      data: { budget: 'turns', limit: 40, used: 40 },
    });
    expect(ok.success).toBe(true);
    const bad = TaskEvent.safeParse({
      taskId: 't1', seq: 3, ts: 'x', type: 'budget.exceeded', data: { budget: 'minutes' },
    });
    expect(bad.success).toBe(false);
  });

  it('knows final states', () => {
    expect(isFinalState('merged')).toBe(true);
    expect(isFinalState('running')).toBe(false);
  });
});
