import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { DockhandError } from '../errors';
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
 * longer decide green/red. Anyone may list a repo's quarantine; only admins clear it.
 */
export async function flakyRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.get('/flaky', {
    schema: { tags: ['flaky tests'], querystring: z.object({ repo: z.string().min(1) }), response: { 200: z.object({ tests: z.array(FlakyTestView) }) } },
  }, async (request) => {
    requireUser(request);
    return { tests: await deps.store.flaky.list(request.query.repo) };
  });
  api.delete('/flaky', {
    schema: {
      tags: ['flaky tests'],
      querystring: z.object({ repo: z.string().min(1), testId: z.union([z.string(), z.array(z.string())]).optional() }),
      response: { 200: z.object({ cleared: z.number() }) },
    },
  }, async (request) => {
    const user = requireUser(request);
    if (user.role !== 'admin') throw new DockhandError('forbidden', 'only admins clear the flaky-test quarantine');
    const { repo, testId } = request.query;
    const ids = testId === undefined ? undefined : Array.isArray(testId) ? testId : [testId];
    return { cleared: await deps.store.flaky.clear(repo, ids) };
  });
}
