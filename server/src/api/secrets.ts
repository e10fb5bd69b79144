import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { RepoName, type RepoRegistration } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { maySubmit } from '../runner/registry';
import { MAX_SECRET_BYTES, SecretName, SecretView } from '../secrets/types';
import type { User } from '../store/types';
import { requireUser } from './auth';
import type { AppDeps } from './deps';

/*
 * A registered repository's secrets (`secrets/`): admins and the repository's owners set, list and
 * remove them; nobody reads a value back (the server uses them itself: the registry front's
 * upstream credentials). A value is in the PUT body only; no answer, log line or event holds it.
 */

const SecretParams = z.object({ name: RepoName, secret: SecretName });
export const SetSecretRequest = z.object({ value: z.string().min(1, 'give the secret\'s value').max(MAX_SECRET_BYTES) });
export const SecretListResponse = z.object({ repo: z.string(), secrets: z.array(SecretView) });
export const SecretRemoved = z.object({ name: z.string(), removed: z.literal(true) });

export async function secretRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const api = app.withTypeProvider<ZodTypeProvider>();

  /** The registration, when the caller is an admin or one of its owners; else as if absent (others may not learn its secrets' names). */
  async function managed(user: User, name: string): Promise<RepoRegistration> {
    const registration = await deps.store.getRepo(name);
    // One the caller may not see is absent (404, no owner named); one it sees without owning it is a 403.
    if (!registration || !maySubmit(registration, user)) throw new DockhandError('not_found', `repository ${name} is not registered`, { hint: 'dockhand repo list shows the ones you may use' });
    if (user.role !== 'admin' && !registration.owners.includes(user.name)) {
      throw new DockhandError('forbidden', `the secrets of ${name} are for admins and its owners`, { hint: registration.owners.length ? `ask ${registration.owners.join(', ')}` : 'ask an admin' });
    }
    return registration;
  }

  function secrets() {
    if (!deps.secrets) throw new DockhandError('internal', 'this server was started without its secrets store');
    return deps.secrets;
  }

  api.get('/repos/:name/secrets', {
    schema: {
      tags: ['secrets'],
      summary: 'A repository\'s secrets (admins, owners): names, who set them, when, last use; never values',
      params: z.object({ name: RepoName }),
      response: { 200: SecretListResponse },
    },
  }, async (request) => {
    const registration = await managed(requireUser(request), request.params.name);
    return { repo: registration.name, secrets: await secrets().list(registration.name) };
  });

  api.put('/repos/:name/secrets/:secret', {
    schema: {
      tags: ['secrets'],
      summary: 'Set a secret of a repository (admins, owners): kept encrypted, never shown again',
      params: SecretParams,
      body: SetSecretRequest,
      response: { 200: SecretView },
    },
  }, async (request) => {
    const user = requireUser(request);
    const registration = await managed(user, request.params.name);
    const view = await secrets().set(registration.name, request.params.secret, request.body.value, user.name);
    request.log.info({ repo: registration.name, secret: view.name }, 'repository secret set');
    return view;
  });

  api.delete('/repos/:name/secrets/:secret', {
    schema: {
      tags: ['secrets'],
      summary: 'Remove a secret of a repository (admins, owners)',
      params: SecretParams,
      response: { 200: SecretRemoved },
    },
  }, async (request) => {
    const registration = await managed(requireUser(request), request.params.name);
    if (!(await secrets().remove(registration.name, request.params.secret))) {
      throw new DockhandError('not_found', `${registration.name} has no secret ${request.params.secret}`, { hint: `dockhand secret list ${registration.name} shows its secrets` });
    }
    request.log.info({ repo: registration.name, secret: request.params.secret }, 'repository secret removed');
    return { name: request.params.secret, removed: true as const };
  });
}
