import { describe, expect, it, vi } from 'vitest';

vi.mock('vscode', () => import('./test/vscode-stub'));

import { TASK_ID, approvalResolved, pushed, runUntilApproval, runUntilReview, stamp } from '../../webview-ui/src/test/recorded-stream';
import { renderPullRequest } from './pull-request-view';

describe('pull request view', () => {
  it('shows a local-forge PR with its description, head, checks and changed files', () => {
    const events = stamp(TASK_ID, [...runUntilApproval(), ...approvalResolved('approved'), ...runUntilReview(), ...pushed()]);
    const markdown = renderPullRequest('paginate() skips the first item of every page', events)!;
    const opened = events.findLast((e) => e.type === 'pr.opened');
    if (opened?.type !== 'pr.opened') throw new Error('the recorded stream opens a PR');
    expect(markdown.split('\n')[0]).toBe(`# #${opened.data.number} paginate() skips the first item of every page`);
    expect(markdown).toContain(`\`${opened.data.branch}\` at \`${opened.data.headSha.slice(0, 12)}\``);
    expect(markdown).toContain('## Description');
    expect(markdown).toContain('✓ Tests: 12 passed, 0 failed');
    expect(markdown).toContain('✓ Policy checks passed');
    expect(markdown).toContain('- `src/paginate.js` (modified)');
    expect(renderPullRequest('x', stamp(TASK_ID, runUntilApproval()))).toBeUndefined();
  });

  it('lists the files the approval left out apart, not among the changed files', () => {
    const review = [...runUntilApproval(), ...approvalResolved('approved'), ...runUntilReview()];
    const notes = { type: 'file.changed' as const, data: { path: 'CHANGELOG.md', change: 'added' as const, patch: '' } };
    const rejected = { type: 'review.files_rejected' as const, data: { by: 'dev', rejected: ['CHANGELOG.md'], accepted: ['src/paginate.js'] } };
    const markdown = renderPullRequest('t', stamp(TASK_ID, [notes, ...review, rejected, ...pushed()]))!;
    expect(markdown).toContain('## Changed files (1)\n\n- `src/paginate.js` (modified)');
    expect(markdown).toContain('## Left out in review\n\nNot in this pull request; the tests ran with them in:\n\n- `CHANGELOG.md`');
    // A rejection of an earlier round (before the task was last in review) does not count.
    const earlier = renderPullRequest('t', stamp(TASK_ID, [notes, rejected, ...review, ...pushed()]))!;
    expect(earlier).toContain('## Changed files (2)');
    expect(earlier).not.toContain('Left out in review');
  });
});
