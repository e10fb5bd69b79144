import { z } from 'zod';

/** One error vocabulary for HTTP bodies, WebSocket error frames and CLI output. */
export const ERROR_CODES = [
  'bad_request',
  'unauthenticated',
  // A known token past its expiresAt (401): the message names the time, the hint how to make a new one.
  'token_expired',
  'forbidden',
  'not_found',
  'conflict',
  'rate_limited',
  'policy_violation',
  'sandbox_unavailable',
  'model_unavailable',
  'budget_exceeded',
  // The repository's test runner (not its tests) failed: missing, crashed, timed out, no report.
  'test_infrastructure',
  // A registered repository's source did not answer (timeout, unreachable host) or is not a repository.
  'repository_unavailable',
  // A request body (or one field of it) over its size limit; the message names the field and the limit.
  'payload_too_large',
  // A Content-Type the API does not read (it reads application/json).
  'unsupported_media_type',
  // The model API answered the request itself as invalid (400/404/413/422): not retried, not "unreachable".
  'model_refused',
  // The server is at its limit of requests in flight (503 with Retry-After): retry later.
  'overloaded',
  'internal',
] as const;
export const ErrorCode = z.enum(ERROR_CODES);
export type ErrorCode = z.infer<typeof ErrorCode>;

export const ErrorBody = z.object({
  error: z.object({
    code: ErrorCode,
    message: z.string(),
    /** Dotted path of the offending field, when one field is to blame. */
    field: z.string().optional(),
    /** What to do about it. */
    hint: z.string().optional(),
  }),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

/** Formats a zod issue path as `context.baseSha` / `comments[2].body`. */
export function formatFieldPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out;
}
