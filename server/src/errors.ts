import { formatFieldPath, type ErrorBody, type ErrorCode } from '@dockhand/protocol';
import type { z } from 'zod';

/**
 * The one error type of the server. Every failure that leaves the server (HTTP body, WebSocket
 * `error` frame, CLI message) is a `DockhandError`; its `code` decides the HTTP status here and
 * nowhere else.
 */
export class DockhandError extends Error {
  readonly code: ErrorCode;
  readonly field: string | undefined;
  readonly hint: string | undefined;

  constructor(code: ErrorCode, message: string, options: { field?: string; hint?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DockhandError';
    this.code = code;
    this.field = options.field;
    this.hint = options.hint;
  }

  toBody(): ErrorBody {
    const error: ErrorBody['error'] = { code: this.code, message: this.message };
    if (this.field !== undefined) error.field = this.field;
    if (this.hint !== undefined) error.hint = this.hint;
    return { error };
  }

  get status(): number {
    return HTTP_STATUS[this.code];
  }
}

export const HTTP_STATUS: Record<ErrorCode, number> = {
  bad_request: 400,
  unauthenticated: 401,
  token_expired: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  rate_limited: 429,
  policy_violation: 422,
  sandbox_unavailable: 503,
  model_unavailable: 503,
  budget_exceeded: 422,
  test_infrastructure: 503,
  repository_unavailable: 503,
  payload_too_large: 413,
  unsupported_media_type: 415,
  model_refused: 502,
  overloaded: 503,
  internal: 500,
};

/** WebSocket close codes for errors sent before closing (4000 + HTTP status, a common convention). */
export function wsCloseCode(code: ErrorCode): number {
  return 4000 + HTTP_STATUS[code];
}

/** A zod failure at a boundary → `bad_request` naming the first offending field. */
export function fromZodError(error: z.ZodError, prefix?: string): DockhandError {
  const issue = error.issues[0];
  if (!issue) return new DockhandError('bad_request', 'invalid input');
  const path = formatFieldPath(issue.path);
  const field = prefix ? (path ? `${prefix}.${path}` : prefix) : path || undefined;
  const message = field ? `${field}: ${issue.message}` : issue.message;
  const more = error.issues.length > 1 ? ` (and ${error.issues.length - 1} more problem(s))` : '';
  return new DockhandError('bad_request', message + more, {
    ...(field === undefined ? {} : { field }),
    hint: 'fix the named field and send the request again',
  });
}

export function notFound(what: string, id: string): DockhandError {
  return new DockhandError('not_found', `${what} ${id} not found`);
}

/** Anything thrown → a DockhandError (unknown errors become `internal` without leaking details). */
export function asDockhandError(error: unknown): DockhandError {
  if (error instanceof DockhandError) return error;
  return new DockhandError('internal', 'internal error', { cause: error });
}
