import type { FastifyInstance } from 'fastify';
import { handleGitHubWebhook, type PullRequestWebhookOutcome } from '../forge';
import type { AppDeps } from './deps';

/*
 * `POST /v1/webhooks/github`: GitHub's pull_request deliveries. The HMAC signature over the raw
 * body is the authentication (no bearer token), so the body is kept as the exact bytes received:
 * a re-serialised JSON body would not verify. A verified delivery is only a nudge: the forge stays
 * the source of truth, and the outcome poller re-reads it and records `pr.outcome` (merged,
 * closed, reverted) on the task that opened the PR. Other events and actions are acknowledged and
 * ignored.
 */
export async function webhookRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const webhooks = deps.webhooks;
  if (!webhooks) return;
  // Encapsulated: only this plugin's routes get JSON as raw bytes.
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  app.post('/webhooks/github', { schema: { hide: true } }, async (request, reply) => {
    const rawBody = Buffer.isBuffer(request.body) ? request.body : Buffer.from('');
    const outcome = handleGitHubWebhook(webhooks.githubSecret, { headers: request.headers, rawBody });
    if (outcome) await webhooks.onPullRequest(outcome);
    return reply.code(202).send({ accepted: outcome !== undefined });
  });
}

export interface WebhookDeps {
  githubSecret: string;
  /** A verified pull_request closed delivery arrived. */
  onPullRequest(outcome: PullRequestWebhookOutcome): Promise<void>;
}
