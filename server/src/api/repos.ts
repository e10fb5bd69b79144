import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ReadinessCheckRequest, ReadinessCheckStatus, RegisterRepoRequest, RegistrationStatus, RepoListResponse, RepoName, RepoRegistration } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { maySubmit } from '../runner/registry';
import type { User } from '../store/types';
import { requireUser } from './auth';
import type { AppDeps } from './deps';

/*
 * Registered repositories. Admins register (the copy runs in the background on the server; a
 * client that asks `Prefer: respond-async` gets 202 and polls its status) and remove; everyone sees the repositories they may
 * submit to (admins: all). A readiness check (admins and the repository's owners) runs for
 * minutes: POST answers 202 with its status, GET polls it until `done` or `failed`.
 */

const RepoParams = z.object({ name: RepoName });

function requireAdmin(user: User, what: string): void {
  if (user.role !== 'admin') {
    throw new DockhandError('forbidden', `${what} is for admins; ${user.name} is not one`, { hint: 'ask an admin (dockhand token create --user NAME --role admin makes one)' });
  }
}

export async function repoRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const { store, repos } = deps;

  async function visible(user: User, name: string): Promise<RepoRegistration> {
    const registration = await store.getRepo(name);
    if (!registration || !maySubmit(registration, user)) {
      throw new DockhandError('not_found', `repository ${name} is not registered`, { hint: 'dockhand repo list shows the ones you may use' });
    }
    return registration;
  }

  api.post('/repos', {
    schema: {
      tags: ['repos'],
      summary: 'Register a repository (admins): a path on the server host or an https/ssh URL; again with the same source: refresh and update owners/submitters. With `Prefer: respond-async`: 202 and the registration\'s status at once (poll GET /repos/:name/registration); without: the answer when every branch is copied',
      body: RegisterRepoRequest,
      headers: z.object({ prefer: z.string().max(200).optional() }),
      response: { 200: RepoRegistration, 201: RepoRegistration, 202: RegistrationStatus },
    },
  }, async (request, reply) => {
    const user = requireUser(request);
    requireAdmin(user, 'registering a repository');
    // The copy runs on the server whatever happens to this request (a client that goes away stops nothing).
    const job = await repos.start(request.body, user);
    if (/\brespond-async\b/i.test(request.headers.prefer ?? '')) {
      request.log.info({ repo: job.status.name, source: job.status.source }, 'repository registration started');
      return reply.code(202).header('location', `/v1/repos/${encodeURIComponent(job.status.name)}/registration`).send(job.status);
    }
    const { registration, created } = await job.finished;
    request.log.info({ repo: registration.name, source: registration.source, created }, 'repository registered');
    return reply.code(created ? 201 : 200).send(registration);
  });

  api.get('/repos/:name/registration', {
    schema: {
      tags: ['repos'],
      summary: 'The last registration of the repository on this server (admins): stage, refs copied of how many, git\'s progress; done or failed with the cause',
      params: RepoParams,
      response: { 200: RegistrationStatus },
    },
  }, async (request) => {
    const user = requireUser(request);
    requireAdmin(user, 'a registration\'s status');
    const status = repos.registrationStatus(request.params.name);
    if (!status) throw new DockhandError('not_found', `no registration of ${request.params.name} has run on this server`, { hint: `start one: dockhand repo add ${request.params.name} --from <path or URL>` });
    return status;
  });

  api.get('/repos', {
    schema: { tags: ['repos'], summary: 'Repositories you may submit to (admins: all)', response: { 200: RepoListResponse } },
  }, async (request) => {
    const user = requireUser(request);
    return { repos: (await store.listRepos()).filter((registration) => maySubmit(registration, user)) };
  });

  api.get('/repos/:name', {
    schema: { tags: ['repos'], params: RepoParams, response: { 200: RepoRegistration } },
  }, async (request) => visible(requireUser(request), request.params.name));

  api.delete('/repos/:name', {
    schema: {
      tags: ['repos'],
      summary: 'Remove a registration (admins); its forge repository, tasks and PRs stay',
      params: RepoParams,
      response: { 200: z.object({ name: z.string(), removed: z.literal(true) }) },
    },
  }, async (request) => {
    const user = requireUser(request);
    requireAdmin(user, 'removing a repository');
    if (!(await store.deleteRepo(request.params.name))) throw new DockhandError('not_found', `repository ${request.params.name} is not registered`);
    // Its secrets go with it: a later registration of the name must not inherit its registry tokens.
    const secrets = await deps.secrets?.removeRepository(request.params.name);
    if (secrets) request.log.info({ repo: request.params.name, secrets }, 'repository removed with its secrets');
    return { name: request.params.name, removed: true as const };
  });

  const checkSchema = { tags: ['repos'], params: RepoParams, response: { 200: ReadinessCheckStatus, 202: ReadinessCheckStatus } };

  api.post('/repos/:name/check', {
    schema: { ...checkSchema, summary: 'Start a readiness check (admins, owners): 202 and the status; poll GET until done', body: ReadinessCheckRequest.optional() },
  }, async (request, reply) => {
    const user = requireUser(request);
    const registration = await visible(user, request.params.name);
    if (user.role !== 'admin' && !registration.owners.includes(user.name)) {
      throw new DockhandError('forbidden', `a readiness check of ${registration.name} is for admins and its owners`, {
        hint: registration.owners.length ? `ask ${registration.owners.join(', ')}` : 'ask an admin',
      });
    }
    if (!deps.readiness) throw new DockhandError('sandbox_unavailable', 'this server runs no sandboxes, so it cannot check readiness');
    return reply.code(202).send(await deps.readiness.start(registration, request.body?.sha));
  });

  api.get('/repos/:name/check', {
    schema: { ...checkSchema, summary: 'The last readiness check of the repository (running, done with its report, or failed)' },
  }, async (request) => {
    const registration = await visible(requireUser(request), request.params.name);
    const status = deps.readiness?.status(registration.name);
    if (!status) throw new DockhandError('not_found', `no readiness check of ${registration.name} has run on this server`, { hint: `start one: dockhand repo check ${registration.name}` });
    return status;
  });
}
