import { describe, expect, it } from 'vitest';
import type { TaskEvent } from '@dockhand/protocol';
import { describeEvent } from './format';
import { describeCheck, describeComment } from './pr-commands';

const envelope = { taskId: 't_1', seq: 1, ts: '2026-12-04T00:00:00Z' };

describe('the trajectory and the pr commands say what came back on a PR', () => {
  it('a round with its comments, a triaged check, a limit, a push', () => {
    const base = { number: 1, seenThrough: 2, checksSeenThrough: 0, comments: [], ignored: [{ id: 2, author: 'mallory', reason: 'no' }] };
    const round: TaskEvent = { ...envelope, type: 'pr.feedback', data: { ...base, kind: 'round', round: 2, comments: [{ id: 1, author: 'alice', path: 'src/a.ts', line: 3, body: 'x' }] } };
    expect(describeEvent(round)).toBe('PR #1 round 2: #1 by alice on src/a.ts:3; ignored: #2 by mallory');
    const triaged: TaskEvent = { ...envelope, type: 'pr.feedback', data: { ...base, ignored: [], kind: 'triaged', check: { id: 4, name: 'ci', conclusion: 'timed_out', triage: 'infrastructure', evidence: 'timed out' } } };
    expect(describeEvent(triaged)).toBe('PR #1: check ci timed_out, infrastructure: timed out; no round');
    expect(describeEvent({ ...envelope, type: 'pr.feedback', data: { ...base, kind: 'limit', reason: 'its 3 follow-up rounds are used' } })).toBe('PR #1: no more rounds (its 3 follow-up rounds are used); ignored: #2 by mallory');
    expect(describeEvent({ ...envelope, type: 'pr.pushed', data: { round: 2, number: 1, headSha: 'a'.repeat(40), commit: true, replied: [1] } })).toBe('PR #1 round 2: pushed aaaaaaaaaaaa, replied to #1');
    // A follow-up round heads its events; a review before the PR has no heading of its own.
    expect(describeEvent({ ...envelope, type: 'review.requested_changes', data: { by: 'alice', comments: [], followUp: { number: 1, round: 2 } } })).toBe('── PR #1 round 2 ── started by alice');
    expect(describeEvent({ ...envelope, type: 'review.requested_changes', data: { by: 'alice', comments: [] } })).toBeUndefined();
  });

  it('pr checks lists who steers and who was ignored', () => {
    const comment = { id: 3, repo: 'app', number: 1, author: 'bob', kind: 'comment' as const, body: 'x', steering: 'ignored' as const, ignoredBecause: 'bob is not an owner', headSha: 'h', createdAt: '' };
    expect(describeComment(comment)).toBe('#3 bob comment — ignored: bob is not an owner');
    expect(describeComment({ ...comment, steering: 'allowed', path: 'a.ts', line: 2, resolvedBy: 'c'.repeat(40) })).toBe('#3 bob comment on a.ts:2 — steers the task (resolved by cccccccccccc)');
    expect(describeCheck({ id: 1, repo: 'app', sha: 'd'.repeat(40), name: 'ci/test', conclusion: 'failure', log: '', postedBy: 'ci', createdAt: '' })).toBe('failure   ci/test (by ci, on dddddddddddd)');
  });
});
