import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { TaskChainReport } from '@dockhand/protocol';
import { verifyTaskChain } from '../provenance/chain';
import { loadTaskAsReader, requireUser } from './auth';
import type { AppDeps } from './deps';

/**
 * `GET /v1/tasks/:id/chain`: the server recomputes the task's event hash chain from the stored
 * rows and says what it checked (`provenance/chain.ts`); `dockhand verify task` prints it. Whoever
 * may read the task's events may ask (its requester, admins, its repository's owners); anyone
 * else gets the 404 of every task route.
 */
export async function chainRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.get('/tasks/:id/chain', {
    schema: {
      tags: ['tasks'],
      summary: "Recompute the task's event hash chain and name the first event that does not match",
      params: z.object({ id: z.string().min(1).max(200) }),
      response: { 200: TaskChainReport },
    },
  }, async (request) => {
    const { task } = await loadTaskAsReader(deps.store, deps.repoPolicy, requireUser(request), request.params.id);
    return verifyTaskChain(deps.store, task.id);
  });
}
