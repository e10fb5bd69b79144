import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { DsseEnvelope, TaskAttestationQuery, type TaskEvent } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { loadTaskAsReader, requireUser } from './auth';
import type { AppDeps } from './deps';

/*
 * A task's signed attestations (issue 33, `server/src/provenance/`): `GET /v1/tasks/:id/attestation`
 * answers the DSSE envelope of the latest push (`?round=N`: of that round) exactly as it was signed
 * and stored, so the sha256 of the body is the digest in the commit's `Dockhand-Attestation:`
 * trailer. Who may read it is who may read the task (its requester, admins, the repository's
 * owners); anyone else gets the same 404 as for a task that does not exist.
 */

const TaskParams = z.object({ id: z.string().min(1).max(200) });

type Signed = Extract<TaskEvent, { type: 'attestation.signed' }>;

/** The round's last attestation (a retry that rebuilt a round's commit differently signs again), or the latest one. */
export function attestationOf(events: readonly TaskEvent[], round?: number): Signed | undefined {
  const signed = events.filter((event): event is Signed => event.type === 'attestation.signed' && (round === undefined || event.data.round === round));
  return signed.at(-1);
}

export async function attestationRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  // Not the zod type provider's typed reply: the body is the stored string, sent as is (Fastify
  // serialises only objects), while the schema still validates the query and documents the answer.
  app.get<{ Params: z.infer<typeof TaskParams>; Querystring: z.infer<typeof TaskAttestationQuery> }>('/tasks/:id/attestation', {
    schema: {
      tags: ['provenance'],
      summary: "A push's signed attestation (in-toto Statement v1 in a DSSE envelope)",
      params: TaskParams,
      querystring: TaskAttestationQuery,
      response: { 200: DsseEnvelope },
    },
  }, async (request, reply) => {
    const { task } = await loadTaskAsReader(deps.store, deps.repoPolicy, requireUser(request), request.params.id);
    const round = request.query.round;
    const signed = attestationOf(await deps.store.listEvents(task.id), round);
    if (!signed) {
      throw new DockhandError('not_found', round === undefined ? `task ${task.id} has no attestation yet: one is signed at its push` : `task ${task.id} has no attestation for round ${round}`, {
        ...(round === undefined ? {} : { field: 'round' }),
        hint: 'an attestation exists once the task has pushed (its PR is open)',
      });
    }
    // The stored bytes, not a re-serialisation: their sha256 is the commit trailer's digest.
    return reply
      .header('content-type', 'application/json; charset=utf-8')
      .header('etag', `"${signed.data.digest}"`)
      .header('x-dockhand-attestation-round', String(signed.data.round))
      .send(signed.data.envelope);
  });
}
