import { APIConnectionError, APIError, APIUserAbortError, AnthropicError } from '@anthropic-ai/sdk';
import { z } from 'zod';
import { DockhandError } from '../errors';
import { canHandBack, requestHandBack } from '../scheduler/hand-back';
import type { RetryNotice } from './types';

/*
 * Our own retry policy for model calls. The SDK's built-in retries are switched off
 * (maxRetries: 0) so that each failed attempt is visible (an `onRetry` notice), testable with an
 * injected clock, and able to move to the fallback model part-way through.
 */

export const RetryPolicy = z.object({
  /** Attempts per turn, across both models, before the turn fails with `model_unavailable`. */
  maxAttempts: z.number().int().min(1).default(6),
  baseDelayMs: z.number().min(0).default(500),
  maxDelayMs: z.number().min(0).default(30_000),
  /** Fraction of each backoff delay that is randomised away (0 = none, 1 = full jitter). */
  jitter: z.number().min(0).max(1).default(0.25),
  /** A `retry-after` is honoured up to this long; beyond it the backoff delay is used. */
  maxRetryAfterMs: z.number().min(0).default(60_000),
  /** Consecutive retryable failures on the primary model before switching to the fallback. */
  fallbackAfter: z.number().int().min(1).default(3),
  /** With a fallback model configured: switch to it, or keep waiting for the primary. */
  whenUnavailable: z.enum(['fallback', 'wait']).default('fallback'),
  /**
   * When every attempt failed for a reason that may pass (connection refused or timed out, 5xx,
   * 529 overloaded, 429) and a scheduler runs the task: the task goes back to the queue for about
   * this long (jittered like a backoff) instead of failing, and any worker takes it up after.
   */
  handBackDelayMs: z.number().min(0).default(30_000),
});
export type RetryPolicy = z.infer<typeof RetryPolicy>;
export type RetryPolicyInput = z.input<typeof RetryPolicy>;

export interface Failure {
  retryable: boolean;
  aborted: boolean;
  /** Short, for logs and events: `529 overloaded_error`, `stream interrupted: terminated`. */
  reason: string;
  /** The server's own wait request (`retry-after-ms` / `retry-after`), when it sent one. */
  retryAfterMs: number | undefined;
}

const RETRYABLE_STATUS = new Set([408, 409, 429]);
const RETRYABLE_STREAM_ERRORS = new Set(['overloaded_error', 'api_error', 'rate_limit_error', 'timeout_error']);

/** What a thrown error from an SDK call means for retrying. */
export function classifyFailure(error: unknown): Failure {
  const failure = (retryable: boolean, reason: string, retryAfterMs?: number): Failure => ({
    retryable,
    aborted: false,
    reason,
    retryAfterMs,
  });
  if (error instanceof APIUserAbortError) return { ...failure(false, 'aborted'), aborted: true };
  if (error instanceof APIConnectionError) return failure(true, `connection error: ${error.message}`);
  if (error instanceof APIError) {
    const type = error.type ?? 'unknown_error';
    if (error.status === undefined) {
      // An SSE `error` event in the middle of a stream carries a type but no status.
      return failure(RETRYABLE_STREAM_ERRORS.has(type), `stream error ${type}`);
    }
    const retryable = RETRYABLE_STATUS.has(error.status) || error.status >= 500;
    return failure(retryable, `${error.status} ${type}`, retryAfterMs(error.headers));
  }
  // The SDK wraps a connection that dies mid-stream (and a stream that ends before
  // message_stop) in a plain AnthropicError.
  if (error instanceof AnthropicError) return failure(true, `stream interrupted: ${error.message}`);
  if (error instanceof Error && error.name === 'AbortError') return { ...failure(false, 'aborted'), aborted: true };
  return failure(false, error instanceof Error ? error.message : String(error));
}

export function retryAfterMs(headers: Headers | undefined, now: number = Date.now()): number | undefined {
  const milliseconds = Number.parseFloat(headers?.get('retry-after-ms') ?? '');
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return milliseconds;
  const value = headers?.get('retry-after');
  if (!value) return undefined;
  const seconds = Number.parseFloat(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isFinite(date) ? Math.max(0, date - now) : undefined;
}

/**
 * Delay before attempt `attempt + 1` (attempt counts from 1). The server's `retry-after` wins
 * when it is given and not absurd; otherwise exponential backoff, capped, with jitter so that
 * many tasks hit by the same overload do not retry in lockstep.
 */
export function handBackDelayMs(policy: RetryPolicy, random: () => number): number {
  return Math.round(policy.handBackDelayMs * (1 - policy.jitter * random()));
}

export function retryDelayMs(attempt: number, policy: RetryPolicy, failure: Failure, random: () => number): number {
  if (failure.retryAfterMs !== undefined && failure.retryAfterMs <= policy.maxRetryAfterMs) return failure.retryAfterMs;
  const exponential = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return Math.round(exponential * (1 - policy.jitter * random()));
}

export interface RetriesExhausted {
  policy: RetryPolicy;
  random: () => number;
  /** What could not be reached, as the message names it: `model claude-sonnet-4-6`, `rate budget`. */
  subject: string;
  /** The `model` of the last retry notice (`rate budget` for the budget). */
  model: string;
  /** The last failure, short (`529 overloaded_error`, the pool's error message). */
  reason: string;
  onRetry: ((notice: RetryNotice) => void) | undefined;
  hint: string;
  cause?: unknown;
}

/**
 * The ending of a turn whose every attempt failed for a reason that may pass (the model, or the
 * fleet rate budget's store, unreachable): under a scheduler the task is handed back to the queue
 * for about `handBackDelayMs` (told to `onRetry` as the last notice, with `handBack`; the run's
 * signal is aborted), and either way the error to throw is returned — `model_unavailable`, with
 * one message for both callers: `<subject> unreachable after <n> attempts: <reason>`.
 */
export function retriesExhausted(ending: RetriesExhausted): DockhandError {
  const attempts = ending.policy.maxAttempts;
  const message = `${ending.subject} unreachable after ${attempts} attempts: ${ending.reason}`;
  if (canHandBack()) {
    const delayMs = handBackDelayMs(ending.policy, ending.random);
    ending.onRetry?.({ attempt: attempts, of: attempts, model: ending.model, reason: ending.reason, delayMs, handBack: true });
    requestHandBack({ reason: message, delayMs });
  }
  return new DockhandError('model_unavailable', message, { hint: ending.hint, ...(ending.cause === undefined ? {} : { cause: ending.cause }) });
}
