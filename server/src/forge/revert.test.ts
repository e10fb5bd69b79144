import { describe, expect, it } from 'vitest';
import { findRevert } from './revert';
import { isOutcomeFinal } from './types';

const merge = 'a'.repeat(40);
const commitSha = 'b'.repeat(40);
const mergedAt = '2026-11-01T10:00:00.500Z';

describe('findRevert', () => {
  it('finds a revert of the merge commit or of a PR commit (abbreviated too) within the window', () => {
    const commits = [
      { sha: 'c1', message: 'Unrelated\n\nThis reverts commit 1234567.', date: '2026-11-02T00:00:00Z' },
      { sha: 'c2', message: `Revert "Fix paginate"\n\nThis reverts commit ${commitSha.slice(0, 12)}.`, date: '2026-11-05T00:00:00Z' },
    ];
    expect(findRevert({ commits, prShas: [merge, commitSha], mergedAt })).toEqual({
      outcome: 'reverted',
      at: '2026-11-05T00:00:00.000Z',
      revertSha: 'c2',
    });
    const ofMerge = [{ sha: 'c3', message: `Revert\n\nThis reverts commit ${merge}, reversing\nchanges made to x.`, date: '2026-11-01T10:00:00Z' }];
    expect(findRevert({ commits: ofMerge, prShas: [merge], mergedAt })?.revertSha).toBe('c3');
  });

  it('ignores reverts after the window, before the merge, and of other commits', () => {
    const late = [{ sha: 'c', message: `This reverts commit ${merge}.`, date: '2026-11-15T10:00:01Z' }];
    expect(findRevert({ commits: late, prShas: [merge], mergedAt })).toBeUndefined();
    expect(findRevert({ commits: late, prShas: [merge], mergedAt, windowDays: 30 })?.outcome).toBe('reverted');
    const early = [{ sha: 'c', message: `This reverts commit ${merge}.`, date: '2026-10-31T00:00:00Z' }];
    expect(findRevert({ commits: early, prShas: [merge], mergedAt })).toBeUndefined();
    const other = [{ sha: 'c', message: `This reverts commit ${'d'.repeat(40)}.`, date: '2026-11-02T00:00:00Z' }];
    expect(findRevert({ commits: other, prShas: [merge, commitSha], mergedAt })).toBeUndefined();
  });
});

describe('isOutcomeFinal', () => {
  const now = new Date('2026-11-10T00:00:00Z');
  it('keeps polling a merge until the revert window has passed', () => {
    expect(isOutcomeFinal(undefined, { now })).toBe(false);
    expect(isOutcomeFinal({ outcome: 'merged', at: '2026-11-01T00:00:00Z' }, { now })).toBe(false);
    expect(isOutcomeFinal({ outcome: 'merged', at: '2026-10-01T00:00:00Z' }, { now })).toBe(true);
    expect(isOutcomeFinal({ outcome: 'closed', at: '2026-11-09T00:00:00Z' }, { now })).toBe(true);
    expect(isOutcomeFinal({ outcome: 'reverted', at: '2026-11-09T00:00:00Z' }, { now })).toBe(true);
  });
});
