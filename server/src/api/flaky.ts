import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { DockhandError } from '../errors';
import { maySubmit } from '../runner/registry';
import type { User } from '../store/types';
import { requireUser } from './auth';
import type { AppDeps } from './deps';

const FlakyTestView = z.object({
  repo: z.string(),
  testId: z.string(),
  since: z.string(),
  history: z.array(z.object({ testId: z.string(), diffHash: z.string(), outcome: z.enum(['passed', 'failed']), at: z.string() })),
});

/**
 * The feedback engine's quarantine: tests that failed then passed on an unchanged workspace no
 * longer decide green/red. Whoever may see a repository (submit to it) may list its quarantine;
 * only admins clear it. A repository the caller may not see is 404, as if not registered.
 */
export async function flakyRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const api = app.withTypeProvider<ZodTypeProvider>();

  /** The registered name (the quarantine's key) of a repository the caller may see. */
  async function visible(user: User, repo: string): Promise<string> {
    const registration = await deps.repos.find(repo);
    if (!registration || !maySubmit(registration, user)) {
      throw new DockhandError('not_found', `repo: repository ${repo} is not registered`, { field: 'repo', hint: 'dockhand repo list shows the ones you may use' });
    }
    return registration.name;
  }

  api.get('/flaky', {
    schema: { tags: ['flaky tests'], querystring: z.object({ repo: z.string().min(1) }), response: { 200: z.object({ tests: z.array(FlakyTestView) }) } },
  }, async (request) => {
    return { tests: await deps.store.flaky.list(await visible(requireUser(request), request.query.repo)) };
  });
  api.delete('/flaky', {
    schema: {
      tags: ['flaky tests'],
      querystring: z.object({ repo: z.string().min(1), testId: z.union([z.string(), z.array(z.string())]).optional() }),
      response: { 200: z.object({ cleared: z.number() }) },
    },
  }, async (request) => {
    const user = requireUser(request);
    const { testId } = request.query;
    const repo = await visible(user, request.query.repo);
    if (user.role !== 'admin') throw new DockhandError('forbidden', 'only admins clear the flaky-test quarantine');
    const ids = testId === undefined ? undefined : Array.isArray(testId) ? testId : [testId];
    return { cleared: await deps.store.flaky.clear(repo, ids) };
  });
}
