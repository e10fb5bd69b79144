import { describe, expect, it } from 'vitest';
import { testsBadge } from './rows';

describe('the test run badge', () => {
  it('does not say "tests pass" in green beside a failure that was already failing at the base', () => {
    expect(testsBadge({ ok: true, failed: 1, preExisting: ['calc > divides by zero'] })).toEqual({ tone: 'tone-warn', label: 'no new failures' });
    expect(testsBadge({ ok: true, failed: 0, preExisting: [] })).toEqual({ tone: 'tone-ok', label: 'tests pass' });
    expect(testsBadge({ ok: false, failed: 2, preExisting: [] })).toEqual({ tone: 'tone-error', label: 'tests fail' });
    expect(testsBadge({ ok: false, interrupted: true, failed: 0, preExisting: [] })).toEqual({ tone: 'tone-muted', label: 'tests interrupted' });
  });
});
