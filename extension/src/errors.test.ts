import { describe, expect, it } from 'vitest';
import { DockhandError, describeError, errorActions, isSignedOutError, tokenExpiredText } from './errors';

describe('an expired token', () => {
  const expired = new DockhandError('token_expired', 'token tok_3f expired on 2026-03-01T09:30:00.000Z', { status: 401, hint: 'create a new one' });

  it('is told as when it expired and how to make a new one', () => {
    expect(describeError(expired)).toBe(
      'Your Dockhand token expired on 2026-03-01 09:30 UTC: create a new one with "dockhand token create --user <you>" on the server and run "Dockhand: Sign in" with it.',
    );
    expect(tokenExpiredText('no date here')).toMatch(/^Your Dockhand token expired: create a new one/);
  });

  it('signs the window out and offers to sign in again', () => {
    expect(isSignedOutError(expired)).toBe(true);
    expect(errorActions(expired)).toEqual([{ title: 'Sign in', command: 'dockhand.signIn' }]);
    expect(isSignedOutError(new DockhandError('forbidden', 'scope'))).toBe(false);
  });
});
