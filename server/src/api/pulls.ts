import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { RepoName, type RepoRegistration } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { CHECK_CONCLUSIONS, PullRequestCheckSchema } from '../forge/checks';
import { PullRequestCommentSchema, REVIEW_VERDICTS, type PullRequestThreads } from '../forge/comments';
import { maySubmit } from '../runner/registry';
import type { User } from '../store/types';
import { requireUser } from './auth';
import { commentPathProblem } from './comment-path';
import type { AppDeps } from './deps';

/*
 * Pull requests of the local forge: what a reviewer and a CI post on them (issue 26). Who sees a
 * repository's PRs and may post on them is who may submit to it (else 404, as for the repository);
 * whether a comment steers the task is the forge's decision (`steeringOf`). Checks from an outside
 * CI are posted by admins and the repository's owners only: a red check's log reaches the model.
 */

const PullParams = z.object({ name: RepoName, number: z.coerce.number().int().min(1) });

import { PullRequestView } from '@dockhand/protocol';

export { PullRequestView };

export const PostCommentRequest = z.object({
  body: z.string().min(1).max(20_000),
  // Literal and repository-relative: never a pathspec, an absolute path or one that climbs out (`comment-path.ts`).
  path: z.string().min(1).max(1000).superRefine((path, context) => {
    const problem = commentPathProblem(path);
    if (problem) context.addIssue({ code: 'custom', message: problem });
  }).optional(),
  line: z.number().int().min(1).optional(),
  inReplyTo: z.number().int().min(1).optional(),
});

export const PostReviewRequest = z.object({ verdict: z.enum(REVIEW_VERDICTS), body: z.string().max(20_000).optional() });

export const PostCheckRequest = z.object({
  name: z.string().min(1).max(200),
  conclusion: z.enum(CHECK_CONCLUSIONS),
  log: z.string().max(1_000_000).optional(),
  sha: z.string().regex(/^[0-9a-f]{40}$/).optional(),
});

export async function pullRequestRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const api = app.withTypeProvider<ZodTypeProvider>();

  function threads(): PullRequestThreads {
    if (!deps.pullRequests) {
      throw new DockhandError('not_found', 'pull request comments and checks are kept by the local forge; this server uses another forge', { hint: 'comment on the forge itself' });
    }
    return deps.pullRequests.threads;
  }

  async function visible(user: User, name: string): Promise<RepoRegistration> {
    const registration = await deps.store.getRepo(name);
    if (!registration || !maySubmit(registration, user)) {
      throw new DockhandError('not_found', `repository ${name} is not registered`, { hint: 'dockhand repo list shows the ones you may use' });
    }
    return registration;
  }

  const posted = () => deps.pullRequests?.onActivity?.();

  api.get('/repos/:name/pulls/:number', {
    schema: { tags: ['pull requests'], summary: 'A pull request with its comments, reviews and the checks on its head', params: PullParams, response: { 200: PullRequestView } },
  }, async (request) => {
    const registration = await visible(requireUser(request), request.params.name);
    return threads().view(registration.name, request.params.number);
  });

  api.post('/repos/:name/pulls/:number/comments', {
    schema: { tags: ['pull requests'], summary: 'Comment on a pull request (general, or on a line of its diff with path and line)', params: PullParams, body: PostCommentRequest, response: { 201: PullRequestCommentSchema } },
  }, async (request, reply) => {
    const user = requireUser(request);
    const registration = await visible(user, request.params.name);
    const comment = await threads().comment({ repo: registration.name, number: request.params.number, author: user.name, ...request.body });
    posted();
    return reply.code(201).send(comment);
  });

  api.post('/repos/:name/pulls/:number/reviews', {
    schema: { tags: ['pull requests'], summary: 'Review a pull request: approve, or request changes', params: PullParams, body: PostReviewRequest, response: { 201: PullRequestCommentSchema } },
  }, async (request, reply) => {
    const user = requireUser(request);
    const registration = await visible(user, request.params.name);
    const review = await threads().review({ repo: registration.name, number: request.params.number, author: user.name, ...request.body });
    posted();
    return reply.code(201).send(review);
  });

  api.get('/repos/:name/pulls/:number/checks', {
    schema: { tags: ['pull requests'], summary: 'The latest result of each check on the pull request\'s head', params: PullParams, response: { 200: z.object({ checks: z.array(PullRequestCheckSchema) }) } },
  }, async (request) => {
    const registration = await visible(requireUser(request), request.params.name);
    return { checks: (await threads().view(registration.name, request.params.number)).checks };
  });

  api.post('/repos/:name/pulls/:number/checks', {
    schema: { tags: ['pull requests'], summary: 'Post an outside CI\'s result on the pull request\'s head (admins and repository owners)', params: PullParams, body: PostCheckRequest, response: { 201: PullRequestCheckSchema } },
  }, async (request, reply) => {
    const user = requireUser(request);
    const registration = await visible(user, request.params.name);
    if (user.role !== 'admin' && !registration.owners.includes(user.name)) {
      throw new DockhandError('forbidden', `posting a check on ${registration.name} is for admins and its owners (${registration.owners.join(', ') || 'none listed'}); ${user.name} is neither`, { hint: 'post it with an owner\'s or a CI user\'s token that is listed in the repository\'s owners' });
    }
    const { name, conclusion, log, sha } = request.body;
    const check = await threads().check({ repo: registration.name, number: request.params.number, name, conclusion, postedBy: user.name, ...(log !== undefined ? { log } : {}), ...(sha ? { sha } : {}) });
    posted();
    return reply.code(201).send(check);
  });
}
