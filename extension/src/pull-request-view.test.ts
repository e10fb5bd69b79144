import { describe, expect, it, vi } from 'vitest';

vi.mock('vscode', () => import('./test/vscode-stub'));


import { TASK_ID, approvalResolved, pushed, runUntilApproval, runUntilReview, stamp } from '../../webview-ui/src/test/recorded-stream';
import { changeRounds } from '@dockhand/protocol';
import { renderPullRequest } from './pull-request-view';

type NewEvent = Parameters<typeof stamp>[1][number];

/** The agent's accepted finish, as the loop logs it (a refused one has isError: true). */
function finish(id: string, summary: string, refused = false): NewEvent[] {
  return [
    { type: 'tool.called', data: { turn: 5, toolUseId: id, name: 'finish', input: { summary } } },
    { type: 'tool.finished', data: { toolUseId: id, name: 'finish', isError: refused, output: refused ? 'Tests fail.' : 'Verified.', truncated: false, durationMs: 3 } },
  ];
}

const requested: NewEvent = { type: 'review.requested_changes', data: { by: 'dev', comments: [{ path: 'src/paginate.js', line: 3, body: 'Name the offset.' }, { body: 'Say why.' }], rejectedFiles: ['CHANGELOG.md'] } };

function text(html: string): string {
  return html.replace(/<[^>]+>/g, ' ').replace(/&#39;/g, "'").replace(/&amp;/g, '&').replace(/\s+/g, ' ');
}

describe('pull request view', () => {
  it('is titled by the PR and shows its head, checks and changed files, the self-review as a check only', () => {
    const events = stamp(TASK_ID, [...runUntilApproval(), ...approvalResolved('approved'), ...runUntilReview(), ...finish('f1', 'The offset started at 1; it starts at 0 now.'), ...pushed()]);
    const shown = renderPullRequest('paginate() skips the first item of every page', events)!;
    const opened = events.findLast((e) => e.type === 'pr.opened');
    if (opened?.type !== 'pr.opened') throw new Error('the recorded stream opens a PR');
    expect(shown.title).toBe(`PR #${opened.data.number}: paginate() skips the first item of every page`);
    const body = text(shown.html);
    expect(body).toContain(`PR #${opened.data.number}: paginate() skips the first item of every page`);
    expect(body).toContain(`${opened.data.branch} at ${opened.data.headSha.slice(0, 12)}`);
    expect(body).toContain('What changed The offset started at 1; it starts at 0 now.');
    // The self-review's verdict is a check, not the description.
    expect(body).not.toContain('Description');
    expect(body).not.toContain('Fixes the off-by-one; tests cover page 1');
    expect(body).toContain('✓ Self-review approved');
    expect(body).toContain('✓ Tests: 12 passed, 0 failed');
    expect(body).toContain('✓ Policy checks passed');
    expect(body).toContain('src/paginate.js (modified)');
    expect(renderPullRequest('x', stamp(TASK_ID, runUntilApproval()))).toBeUndefined();
  });

  it('tells every round: each accepted finish and the request for changes before it', () => {
    const events = stamp(TASK_ID, [
      ...runUntilReview(),
      ...finish('f0', 'Refused: tests fail.', true),
      ...finish('f1', 'The offset started at 1; it starts at 0 now.'),
      requested,
      ...finish('f2', 'Named the offset and said why.'),
      ...pushed(),
    ]);
    expect(changeRounds(events)).toEqual([
      { round: 1, summary: 'The offset started at 1; it starts at 0 now.' },
      { round: 2, requested: { by: 'dev', comments: ['src/paginate.js:3 Name the offset.', 'Say why.'], revert: ['CHANGELOG.md'] }, summary: 'Named the offset and said why.' },
    ]);
    const body = text(renderPullRequest('t', events)!.html);
    expect(body).toContain('Round 1 The offset started at 1; it starts at 0 now. Round 2 dev asked: src/paginate.js:3 Name the offset. · Say why. (and to revert CHANGELOG.md ) Named the offset and said why.');
  });

  it('escapes what the agent and the reviewer wrote', () => {
    const events = stamp(TASK_ID, [...runUntilReview(), ...finish('f1', '<img src=x onerror=alert(1)> done'), ...pushed()]);
    const html = renderPullRequest('<b>t</b>', events)!.html;
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<b>t</b>');
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt; done');
  });

  it('lists the files the approval left out apart, not among the changed files', () => {
    const review = [...runUntilApproval(), ...approvalResolved('approved'), ...runUntilReview()];
    const notes = { type: 'file.changed' as const, data: { path: 'CHANGELOG.md', change: 'added' as const, patch: '' } };
    const rejected = { type: 'review.files_rejected' as const, data: { by: 'dev', rejected: ['CHANGELOG.md'], accepted: ['src/paginate.js'] } };
    const body = text(renderPullRequest('t', stamp(TASK_ID, [notes, ...review, rejected, ...pushed()]))!.html);
    expect(body).toContain('Changed files (1) src/paginate.js (modified)');
    expect(body).toContain('Left out in review Not in this pull request; the tests ran with them in: CHANGELOG.md');
    // A rejection of an earlier round (before the task was last in review) does not count.
    const earlier = text(renderPullRequest('t', stamp(TASK_ID, [notes, rejected, ...review, ...pushed()]))!.html);
    expect(earlier).toContain('Changed files (2)');
    expect(earlier).not.toContain('Left out in review');
  });
});

