import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Task } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { canOverridePolicy, type RepoPolicy } from '../policy';
import { TOKEN_SCOPES, scopesOfRole, type Store, type TokenInfo, type TokenScope, type User } from '../store/types';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The signed-in user as its token allows: an admin's token without the `admin` scope acts as a
     * plain user (its own tasks only), so every `role === 'admin'` check also needs the scope.
     */
    user: User | null;
    /** The scopes of the request's token. */
    scopes: ReadonlySet<TokenScope> | null;
    /** The request's token (its id and expiry): the events socket watches it for revocation and expiry. */
    tokenInfo: TokenInfo | null;
  }
}

/**
 * The scope each route needs, by method and route pattern. A GET (and the events WebSocket, an
 * upgraded GET) needs `read` unless listed here; any other method not listed needs `admin`, so a
 * route added without a line here is closed, not open (`auth.test.ts` checks that every route of
 * the app is listed or a GET).
 */
export const ROUTE_SCOPES: Readonly<Record<string, TokenScope>> = {
  'POST /v1/tasks': 'submit',
  'POST /v1/tasks/:id/messages': 'submit',
  'POST /v1/tasks/:id/interrupt': 'submit',
  'POST /v1/tasks/:id/pause': 'submit',
  'POST /v1/tasks/:id/resume': 'submit',
  // A readiness check runs the repository's tests in a sandbox, as a task would (admins and owners).
  'POST /v1/repos/:name/check': 'submit',
  // A repository's secrets: admins and its owners (checked by the route), as a readiness check is.
  'PUT /v1/repos/:name/secrets/:secret': 'submit',
  'DELETE /v1/repos/:name/secrets/:secret': 'submit',
  'POST /v1/tasks/:id/review': 'review',
  'POST /v1/tasks/:id/approvals/:approvalId': 'review',
  // A PR comment may steer a task (its requester, owners, submitters); a review approves or asks for changes.
  'POST /v1/repos/:name/pulls/:number/comments': 'submit',
  'POST /v1/repos/:name/pulls/:number/reviews': 'review',
  'POST /v1/repos/:name/pulls/:number/checks': 'submit',
  'POST /v1/repos': 'admin',
  'DELETE /v1/repos/:name': 'admin',
  'DELETE /v1/flaky': 'admin',
  'GET /v1/tokens': 'admin',
  'POST /v1/tokens': 'admin',
  'DELETE /v1/tokens/:id': 'admin',
};

export function scopeOfRoute(method: string, url: string): TokenScope {
  const listed = ROUTE_SCOPES[`${method} ${url}`];
  if (listed) return listed;
  return method === 'GET' || method === 'HEAD' ? 'read' : 'admin';
}

/** The scopes a token holds: its stored ones, else (a token from before scopes) every scope of the role; never more than the role allows. */
export function scopesOf(user: User, token: TokenInfo): TokenScope[] {
  const allowed = scopesOfRole(user.role);
  return (token.scopes ?? allowed).filter((scope) => allowed.includes(scope));
}

const CREATE_HINT = (user: string) => `create a new one with \`dockhand token create --user ${user}\` (an admin: also over the API, POST /v1/tokens) and sign in with it`;

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
    const auth = await store.authenticate(token);
    if (!auth) throw new DockhandError('unauthenticated', 'unknown or revoked token', { hint: 'create a new token' });
    const { user, token: info } = auth;
    if (info.expiresAt && Date.parse(info.expiresAt) <= Date.now()) {
      throw new DockhandError('token_expired', `token ${info.id} expired on ${info.expiresAt}`, { hint: CREATE_HINT(user.name) });
    }
    const scopes = new Set(scopesOf(user, info));
    const url = request.routeOptions.url;
    if (url !== undefined) {
      const needed = scopeOfRoute(request.method, url);
      if (!scopes.has(needed)) {
        const held = TOKEN_SCOPES.filter((scope) => scopes.has(scope));
        if (needed === 'admin' && user.role !== 'admin') {
          throw new DockhandError('forbidden', `scope: ${request.method} ${url} is for admins (the "admin" scope); ${user.name} is not one`, {
            field: 'scope',
            hint: 'ask an admin (dockhand token create --user NAME --role admin makes one)',
          });
        }
        throw new DockhandError('forbidden', `scope: ${request.method} ${url} needs the "${needed}" scope; token ${info.id} has ${held.join(', ')}`, {
          field: 'scope',
          hint: `use a token with the "${needed}" scope (dockhand token create --user ${user.name} --scope ${needed})`,
        });
      }
    }
    request.scopes = scopes;
    request.tokenInfo = info;
    request.user = user.role === 'admin' && !scopes.has('admin') ? { ...user, role: 'user' } : user;
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
