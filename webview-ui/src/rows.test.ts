import { describe, expect, it } from 'vitest';
import { testsBadge } from './rows';

describe('the test run badge', () => {
  it('does not say "tests pass" in green beside a failure that was already failing at the base', () => {
    expect(testsBadge({ ok: true, failed: 1, preExisting: ['calc > divides by zero'] })).toEqual({ tone: 'tone-warn', label: 'no new failures' });
    expect(testsBadge({ ok: true, failed: 0, preExisting: [] })).toEqual({ tone: 'tone-ok', label: 'tests pass' });
    expect(testsBadge({ ok: false, failed: 2, preExisting: [] })).toEqual({ tone: 'tone-error', label: 'tests fail' });
    expect(testsBadge({ ok: false, interrupted: true, failed: 0, preExisting: [] })).toEqual({ tone: 'tone-muted', label: 'tests interrupted' });
  });

  it('says "cannot judge" for a run no step of which could judge the change (every step red at the base by its exit status)', () => {
    expect(testsBadge({ ok: true, failed: 1, preExisting: ['tox (exited with 1)'], unjudged: true })).toEqual({ tone: 'tone-warn', label: 'cannot judge' });
    expect(testsBadge({ ok: true, failed: 0, preExisting: [], unjudged: true })).toEqual({ tone: 'tone-warn', label: 'cannot judge' });
  });
});
