import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Task } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { canOverridePolicy, type RepoPolicy } from '../policy';
import type { Store, User } from '../store/types';

declare module 'fastify' {
  interface FastifyRequest {
    user: User | null;
  }
}

/**
 * Authentication: a per-user bearer token (`Authorization: Bearer dh_...`). Browsers cannot set
 * headers on a WebSocket, so the events socket also accepts the token as a subprotocol
 * (`new WebSocket(url, ['dockhand.v1', 'dockhand.bearer.' + token])`; the server answers with
 * `dockhand.v1`) or as `?token=` on the upgrade only (the logger redacts it; a REST request with
 * `?token=` is refused). The header wins when several are given.
 */
export const WS_PROTOCOL = 'dockhand.v1';
const BEARER_PROTOCOL_PREFIX = 'dockhand.bearer.';

function isWebSocketUpgrade(request: FastifyRequest): boolean {
  return request.headers.upgrade?.toLowerCase() === 'websocket';
}

function queryToken(request: FastifyRequest): string | undefined {
  const query = request.query;
  if (typeof query === 'object' && query !== null && 'token' in query && typeof query.token === 'string') return query.token;
  return undefined;
}

export function tokenFrom(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header) {
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    return match?.[1];
  }
  const protocols = request.headers['sec-websocket-protocol'];
  if (typeof protocols === 'string') {
    for (const protocol of protocols.split(',').map((p) => p.trim())) {
      if (protocol.startsWith(BEARER_PROTOCOL_PREFIX)) return protocol.slice(BEARER_PROTOCOL_PREFIX.length);
    }
  }
  // Only the WebSocket upgrade may carry the token in its URL (browsers cannot set its headers).
  return isWebSocketUpgrade(request) ? queryToken(request) : undefined;
}

export function authHook(store: Store) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    if (!isWebSocketUpgrade(request) && queryToken(request) !== undefined) {
      // A token in a REST URL ends up in proxy and access logs: refused even with a valid header.
      throw new DockhandError('unauthenticated', 'the ?token= query parameter is accepted only on the events WebSocket upgrade', {
        hint: 'send the token in the Authorization header: Authorization: Bearer <token>',
      });
    }
    const token = tokenFrom(request);
    if (!token) {
      throw new DockhandError('unauthenticated', 'missing bearer token', {
        hint: 'send Authorization: Bearer <token> (create one with `dockhand token create --user NAME`)',
      });
    }
    const user = await store.authenticate(token);
    if (!user) throw new DockhandError('unauthenticated', 'unknown or revoked token', { hint: 'create a new token' });
    request.user = user;
  };
}

export function requireUser(request: FastifyRequest): User {
  if (!request.user) throw new DockhandError('unauthenticated', 'not signed in');
  return request.user;
}

/**
 * Ownership: a task is visible to its owner and to admins. Anyone else gets 404, exactly as if the
 * task did not exist, so task ids cannot be probed.
 */
export async function loadOwnedTask(store: Store, user: User, taskId: string): Promise<Task> {
  const task = await store.getTask(taskId);
  if (!task || (task.owner !== user.name && user.role !== 'admin')) {
    throw new DockhandError('not_found', `task ${taskId} not found`);
  }
  return task;
}

/**
 * The task for its requester and admins, and also for the owners of its repo (`owners` in its
 * `.dockhand/policy.yml` at the base SHA, read through `repoPolicy`), who decide its policy
 * overrides and so may read it (`asRepoOwner`). Anyone else gets the usual 404.
 */
export async function loadTaskAsReader(
  store: Store,
  repoPolicy: ((task: Task) => Promise<RepoPolicy>) | undefined,
  user: User,
  taskId: string,
): Promise<{ task: Task; asRepoOwner: boolean }> {
  const task = await store.getTask(taskId);
  if (task && task.owner !== user.name && user.role !== 'admin' && repoPolicy) {
    const policy = await repoPolicy(task).catch(() => undefined);
    if (policy && canOverridePolicy(policy, user.name)) return { task, asRepoOwner: true };
  }
  return { task: await loadOwnedTask(store, user, taskId), asRepoOwner: false };
}
