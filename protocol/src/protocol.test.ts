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

  it('keeps an owner override on policy.checked and the diff binding on approval.requested', () => {
    const ts = new Date().toISOString();
    const checked = TaskEvent.parse({
      taskId: 't1', seq: 4, ts, type: 'policy.checked',
      data: { ok: false, stage: 'push', violations: [{ rule: 'ci-config', path: '.github/workflows/ci.yml', message: 'CI change' }], overridden: true, overriddenBy: 'olive' },
    });
    expect(checked.data).toMatchObject({ ok: false, overridden: true, overriddenBy: 'olive' });
    const plain = TaskEvent.parse({ taskId: 't1', seq: 5, ts, type: 'policy.checked', data: { ok: true, stage: 'review', violations: [] } });
    expect(plain.data).not.toHaveProperty('overridden');
    expect(TaskEvent.safeParse({ ...checked, data: { ...checked.data, overridden: 'yes' } }).success).toBe(false);
    const requested = TaskEvent.parse({
      taskId: 't1', seq: 6, ts, type: 'approval.requested',
      data: { approvalId: 'apr_1', kind: 'policy_override', reason: 'ci-config', diffDigest: 'ab'.repeat(32) },
    });
    expect(requested.data).toMatchObject({ diffDigest: 'ab'.repeat(32) });
  });

  it('knows final states', () => {
    expect(isFinalState('merged')).toBe(true);
    expect(isFinalState('running')).toBe(false);
  });
});
