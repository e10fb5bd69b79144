import type { FastifyInstance } from 'fastify';
import { GitHubWebhookReceiver, type GitHubFeedback, type PullRequestWebhookOutcome } from '../forge';
import type { AppDeps } from './deps';

/*
 * `POST /v1/webhooks/github`: GitHub's deliveries, verified and parsed by `@octokit/webhooks`
 * (forge/webhook.ts). The HMAC signature over the raw body is the authentication (no bearer
 * token), so the body is kept as the exact bytes received: a re-serialised JSON body would not
 * verify. A PR's end is only a nudge: the forge stays the source of truth, and the outcome poller
 * re-reads it and records `pr.outcome` (merged, closed, reverted) on the task that opened the PR.
 * Comments, reviews and finished checks go to `onFeedback` (the PR follower). Other events and
 * actions are acknowledged and ignored.
 */
export async function webhookRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const webhooks = deps.webhooks;
  if (!webhooks) return;
  const receiver = new GitHubWebhookReceiver(webhooks.githubSecret);
  // Encapsulated: only this plugin's routes get JSON as raw bytes.
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  app.post('/webhooks/github', { schema: { hide: true } }, async (request, reply) => {
    const rawBody = Buffer.isBuffer(request.body) ? request.body : Buffer.from('');
    const feedback = await receiver.receive({ headers: request.headers, rawBody });
    for (const item of feedback) {
      if (item.kind === 'outcome') await webhooks.onPullRequest(item);
      else await webhooks.onFeedback?.(item);
    }
    return reply.code(202).send({ accepted: feedback.length > 0, kinds: feedback.map((item) => item.kind) });
  });
}

export interface WebhookDeps {
  githubSecret: string;
  /** A verified pull_request closed delivery arrived. */
  onPullRequest(outcome: PullRequestWebhookOutcome): Promise<void>;
  /** A verified comment, review or finished check on a PR arrived. */
  onFeedback?(feedback: Exclude<GitHubFeedback, { kind: 'outcome' }>): Promise<unknown>;
}
