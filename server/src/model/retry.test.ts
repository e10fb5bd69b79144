import { APIConnectionError, APIError, APIUserAbortError, AnthropicError, BadRequestError, OverloadedError } from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { RetryPolicy, classifyFailure, retryAfterMs, retryDelayMs } from './retry';

const headers = (entries: Record<string, string> = {}): Headers => new Headers(entries);

describe('classifyFailure', () => {
  it('retries overload, rate limits, server errors, dead connections and interrupted streams', () => {
    expect(classifyFailure(new OverloadedError(529, { type: 'error', error: { type: 'overloaded_error' } }, undefined, headers()))).toMatchObject({
      retryable: true,
      reason: '529 overloaded_error',
    });
    expect(classifyFailure(APIError.generate(429, { type: 'error', error: { type: 'rate_limit_error' } }, undefined, headers({ 'retry-after': '2' })))).toMatchObject({
      retryable: true,
      retryAfterMs: 2000,
    });
    expect(classifyFailure(APIError.generate(503, undefined, 'unavailable', headers())).retryable).toBe(true);
    expect(classifyFailure(new APIConnectionError({ message: 'socket hang up' })).retryable).toBe(true);
    expect(classifyFailure(new AnthropicError('stream ended without producing a Message with role=assistant'))).toMatchObject({
      retryable: true,
      reason: 'stream interrupted: stream ended without producing a Message with role=assistant',
    });
    const midStream = new APIError(undefined, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, undefined, headers());
    expect(classifyFailure(midStream)).toMatchObject({ retryable: true, reason: 'stream error overloaded_error' });
  });

  it('does not retry rejected requests, aborts or our own bugs', () => {
    expect(classifyFailure(new BadRequestError(400, { type: 'error', error: { type: 'invalid_request_error' } }, undefined, headers())).retryable).toBe(false);
    expect(classifyFailure(APIError.generate(401, undefined, 'bad key', headers())).retryable).toBe(false);
    expect(classifyFailure(new APIUserAbortError())).toMatchObject({ retryable: false, aborted: true });
    expect(classifyFailure(new TypeError('x is undefined')).retryable).toBe(false);
  });
});

describe('retryAfterMs', () => {
  it('reads retry-after-ms, retry-after seconds and retry-after dates', () => {
    expect(retryAfterMs(headers({ 'retry-after-ms': '250', 'retry-after': '9' }))).toBe(250);
    expect(retryAfterMs(headers({ 'retry-after': '1.5' }))).toBe(1500);
    const now = Date.parse('2026-11-29T10:00:00Z');
    expect(retryAfterMs(headers({ 'retry-after': 'Sun, 29 Nov 2026 10:00:04 GMT' }), now)).toBe(4000);
    expect(retryAfterMs(headers())).toBeUndefined();
    expect(retryAfterMs(headers({ 'retry-after': 'soon' }))).toBeUndefined();
  });
});

describe('retryDelayMs', () => {
  const policy = RetryPolicy.parse({ baseDelayMs: 500, maxDelayMs: 4000, jitter: 0.5, maxRetryAfterMs: 10_000 });
  const failure = { retryable: true, aborted: false, reason: 'x', retryAfterMs: undefined };

  it('doubles per attempt up to the cap, jitter taking up to its fraction off', () => {
    expect([1, 2, 3, 4, 5].map((attempt) => retryDelayMs(attempt, policy, failure, () => 0))).toEqual([500, 1000, 2000, 4000, 4000]);
    expect(retryDelayMs(2, policy, failure, () => 1)).toBe(500);
    expect(retryDelayMs(2, policy, failure, () => 0.5)).toBe(750);
  });

  it('honours a sane retry-after and ignores an absurd one', () => {
    expect(retryDelayMs(1, policy, { ...failure, retryAfterMs: 7000 }, () => 0.9)).toBe(7000);
    expect(retryDelayMs(1, policy, { ...failure, retryAfterMs: 3_600_000 }, () => 0)).toBe(500);
  });

  it('has defaults that fill a partial policy', () => {
    expect(RetryPolicy.parse({})).toEqual({
      maxAttempts: 6,
      baseDelayMs: 500,
      maxDelayMs: 30_000,
      jitter: 0.25,
      maxRetryAfterMs: 60_000,
      fallbackAfter: 3,
      whenUnavailable: 'fallback',
      handBackDelayMs: 30_000,
    });
  });
});
