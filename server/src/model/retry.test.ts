import { APIConnectionError, APIError, APIUserAbortError, AnthropicError, BadRequestError, OverloadedError } from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { withHandBack, type HandBackRequest } from '../scheduler/hand-back';
import { RetryPolicy, classifyFailure, retriesExhausted, retryAfterMs, retryDelayMs } from './retry';
import type { RetryNotice } from './types';

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

describe('retriesExhausted', () => {
  const policy = RetryPolicy.parse({ maxAttempts: 3, handBackDelayMs: 10_000, jitter: 0.5 });
  const ending = (onRetry: (notice: RetryNotice) => void) => ({
    policy, random: () => 1, subject: 'model m', model: 'm', reason: '529 overloaded_error', onRetry, hint: 'try later',
  });

  it('under a scheduler: hands the task back for the jittered delay, tells onRetry last, and returns model_unavailable', () => {
    const notices: RetryNotice[] = [];
    const handedBack: HandBackRequest[] = [];
    const error = withHandBack((request) => handedBack.push(request), () => retriesExhausted(ending((notice) => notices.push(notice))));
    expect(error.code).toBe('model_unavailable');
    expect(error.message).toBe('model m unreachable after 3 attempts: 529 overloaded_error');
    expect(handedBack).toEqual([{ reason: 'model m unreachable after 3 attempts: 529 overloaded_error', delayMs: 5_000 }]);
    expect(notices).toEqual([{ attempt: 3, of: 3, model: 'm', reason: '529 overloaded_error', delayMs: 5_000, handBack: true }]);
  });

  it('with no scheduler: no hand-back and no notice, the same error', () => {
    const notices: RetryNotice[] = [];
    const error = retriesExhausted(ending((notice) => notices.push(notice)));
    expect(error.message).toBe('model m unreachable after 3 attempts: 529 overloaded_error');
    expect(notices).toEqual([]);
  });
});
