import { describe, expect, it } from 'vitest';
import { branchName } from './push';

describe('branchName', () => {
  it('gives each task on the same issue its own branch', () => {
    const first = branchName('42', 'Fix paginate() off-by-one!', 't_3f2c7a1e-9b4d-4c8e-a1f2-7d3e9b0c6a15');
    const second = branchName('42', 'Fix paginate() off-by-one!', 't_0c1d2e3f-0000-4c8e-a1f2-aa11bb22cc33');
    expect(first).toBe('dockhand/42-fix-paginate-off-by-one-9b0c6a15');
    expect(second).toBe('dockhand/42-fix-paginate-off-by-one-bb22cc33');
    expect(first).not.toBe(second);
  });

  it('keeps the old form without a task id, and does not repeat an id already in the name', () => {
    expect(branchName('42', 'Fix it')).toBe('dockhand/42-fix-it');
    expect(branchName('9b0c6a15', 'Fix it', 't_x-9b0c6a15')).toBe('dockhand/9b0c6a15-fix-it');
  });
});

describe('the PR body records the test-edits decision', () => {
  it('says who allowed test edits, or that they were not allowed', async () => {
    const { buildPullRequestBody } = await import('./pr-body');
    const usage = { turns: 1, inputTokens: 1, outputTokens: 1, costUsd: 0 };
    expect(buildPullRequestBody({ ticket: { title: 't' }, summary: 's', requester: 'alice', allowTestEdits: true, usage })).toContain('**Test edits:** allowed by the requester (alice)');
    expect(buildPullRequestBody({ ticket: { title: 't' }, summary: 's', allowTestEdits: false, usage })).toContain('**Test edits:** not allowed');
  });
});
