import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { DockhandError } from '../errors';
import type { PullRequestOutcome } from './types';

/**
 * GitHub webhooks: signature verification and the `pull_request` closed event (merged or
 * closed). The route (owned by the API layer) must hand over the raw request body exactly as
 * received; a re-serialised JSON body does not verify.
 *
 * Verification follows GitHub's "Validating webhook deliveries": HMAC-SHA256 of the raw body
 * with the webhook secret, hex, prefixed `sha256=`, in `X-Hub-Signature-256`, compared in
 * constant time.
 */

export const SIGNATURE_HEADER = 'x-hub-signature-256';
export const EVENT_HEADER = 'x-github-event';

export function signWebhookBody(secret: string, body: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export function verifyWebhookSignature(secret: string, body: string | Buffer, signature: string | undefined): boolean {
  if (!secret || signature === undefined || !/^sha256=[0-9a-f]{64}$/.test(signature)) return false;
  const expected = Buffer.from(signWebhookBody(secret, body));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

const PullRequestClosed = z.object({
  action: z.literal('closed'),
  number: z.number().int().min(1),
  pull_request: z.object({
    merged: z.boolean().nullable().optional(),
    merged_at: z.string().nullable().optional(),
    closed_at: z.string().nullable().optional(),
    merge_commit_sha: z.string().nullable().optional(),
    head: z.object({ ref: z.string() }),
  }),
  repository: z.object({ full_name: z.string() }),
});

export interface PullRequestWebhookOutcome extends PullRequestOutcome {
  repo: string;
  number: number;
  branch: string;
}

/** The outcome a `pull_request` delivery reports; undefined for every other event or action. */
export function parsePullRequestWebhook(event: string | undefined, payload: unknown): PullRequestWebhookOutcome | undefined {
  if (event !== 'pull_request') return undefined;
  const parsed = PullRequestClosed.safeParse(payload);
  if (!parsed.success) return undefined;
  const { pull_request: pull } = parsed.data;
  const merged = pull.merged === true || Boolean(pull.merged_at);
  const at = (merged ? pull.merged_at : pull.closed_at) ?? pull.closed_at ?? new Date().toISOString();
  return {
    repo: parsed.data.repository.full_name,
    number: parsed.data.number,
    branch: pull.head.ref,
    outcome: merged ? 'merged' : 'closed',
    at,
  };
}

export interface WebhookRequest {
  /** Header names in lower case, as Node gives them. */
  headers: Record<string, string | string[] | undefined>;
  rawBody: string | Buffer;
}

function header(headers: WebhookRequest['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Verifies and parses one delivery. Throws `unauthenticated` for a bad or missing signature and
 * `bad_request` for a body that is not JSON; returns undefined for events Dockhand ignores.
 */
export function handleGitHubWebhook(secret: string, request: WebhookRequest): PullRequestWebhookOutcome | undefined {
  if (!verifyWebhookSignature(secret, request.rawBody, header(request.headers, SIGNATURE_HEADER))) {
    throw new DockhandError('unauthenticated', 'webhook signature does not match', {
      hint: `check the webhook secret; GitHub signs the raw body in ${SIGNATURE_HEADER}`,
    });
  }
  let payload: unknown;
  try {
    payload = JSON.parse(request.rawBody.toString());
  } catch (error) {
    throw new DockhandError('bad_request', 'webhook body is not JSON', { cause: error });
  }
  return parsePullRequestWebhook(header(request.headers, EVENT_HEADER), payload);
}
