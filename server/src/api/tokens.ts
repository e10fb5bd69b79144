import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { DockhandError } from '../errors';
import { TOKEN_SCOPES, scopesOfRole, type Role, type Store, type TokenInfo, type TokenScope } from '../store/types';
import { requireUser } from './auth';
import type { AppDeps } from './deps';

/*
 * Tokens over the API (the `admin` scope, see ROUTE_SCOPES): create (the secret is in this one
 * answer only; the store keeps its sha256), list, revoke. `dockhand token create|list|revoke
 * --server URL --token ADMIN` calls these; without a server the CLI works on the data dir directly
 * (how the first admin token is made).
 */

/** A new token lives this long unless `expiresIn` says otherwise. */
export const DEFAULT_TOKEN_LIFETIME = '90d';
const MAX_LIFETIME_DAYS = 3650;

/** "90d", "12h", "30m" or "never" → the expiry time from `now` (undefined: never). */
export function expiryFrom(expiresIn: string, now = Date.now(), field = 'expiresIn'): string | undefined {
  if (expiresIn === 'never') return undefined;
  const match = /^(\d{1,6})([dhm])$/.exec(expiresIn);
  const amount = match ? Number(match[1]) : 0;
  const unit = match?.[2] === 'd' ? 86_400_000 : match?.[2] === 'h' ? 3_600_000 : 60_000;
  if (!match || amount === 0 || amount * unit > MAX_LIFETIME_DAYS * 86_400_000) {
    throw new DockhandError('bad_request', `${field}: "${expiresIn}" is not a lifetime; give <n>d, <n>h or <n>m (at most ${MAX_LIFETIME_DAYS} days) or never`, {
      field,
      hint: `e.g. ${DEFAULT_TOKEN_LIFETIME} (the default), 12h, never`,
    });
  }
  return new Date(now + amount * unit).toISOString();
}

export const TokenScopeSchema = z.enum(TOKEN_SCOPES);

export const TokenView = z.object({
  id: z.string(),
  user: z.string(),
  label: z.string(),
  createdAt: z.string(),
  revokedAt: z.string().optional(),
  expiresAt: z.string().optional(),
  /** Every scope the token holds (a token from before scopes: those of its user's role). */
  scopes: z.array(TokenScopeSchema),
  expired: z.boolean(),
});
export type TokenView = z.infer<typeof TokenView>;

export const CreateTokenRequest = z.strictObject({
  user: z.string().min(1).max(100),
  /** Only for a user that does not exist yet (default `user`); an existing user's role stays. */
  role: z.enum(['user', 'admin']).optional(),
  label: z.string().max(200).default(''),
  expiresIn: z.string().max(20).default(DEFAULT_TOKEN_LIFETIME),
  /** Default: every scope of the user's role. */
  scopes: z.array(TokenScopeSchema).min(1).max(TOKEN_SCOPES.length).optional(),
});
export type CreateTokenRequest = z.input<typeof CreateTokenRequest>;

export const CreateTokenResponse = z.object({ token: z.string(), info: TokenView });
export const TokenListResponse = z.object({ tokens: z.array(TokenView) });

/** What the API and the CLI show of a token: never its hash. */
export async function viewOf(store: Store, info: TokenInfo, roles: Map<string, Role> = new Map()): Promise<TokenView> {
  const role = roles.get(info.user) ?? (await store.getUser(info.user))?.role ?? 'user';
  roles.set(info.user, role);
  const allowed = scopesOfRole(role);
  return {
    ...info,
    scopes: (info.scopes ?? allowed).filter((scope) => allowed.includes(scope)),
    expired: info.expiresAt !== undefined && Date.parse(info.expiresAt) <= Date.now(),
  };
}

/**
 * Creates a token (and its user, when missing) for the API and the CLI's data-dir path alike:
 * scopes beyond the user's role are refused naming `scopes`.
 */
export async function createTokenFor(store: Store, input: z.output<typeof CreateTokenRequest>): Promise<{ token: string; info: TokenView }> {
  const expiresAt = expiryFrom(input.expiresIn);
  let user = await store.getUser(input.user);
  if (!user) user = await store.createUser(input.user, input.role ?? 'user');
  else if (input.role !== undefined && input.role !== user.role) {
    throw new DockhandError('bad_request', `role: ${user.name} is already a ${user.role}; a token does not change a user's role`, {
      field: 'role',
      hint: 'leave out role for an existing user',
    });
  }
  const allowed = scopesOfRole(user.role);
  const refused: TokenScope[] = (input.scopes ?? []).filter((scope) => !allowed.includes(scope));
  if (refused.length > 0) {
    throw new DockhandError('bad_request', `scopes: ${user.name} is a ${user.role} and may not hold ${refused.join(', ')}`, {
      field: 'scopes',
      hint: `a ${user.role}'s token may hold ${allowed.join(', ')}`,
    });
  }
  const { token, info } = await store.createToken(user.name, {
    label: input.label,
    ...(expiresAt ? { expiresAt } : {}),
    ...(input.scopes ? { scopes: input.scopes } : {}),
  });
  return { token, info: await viewOf(store, info) };
}

/** The scope check (auth.ts) already refused tokens without `admin`; this holds if a route's line there is lost. */
function requireAdmin(request: Parameters<typeof requireUser>[0]) {
  const user = requireUser(request);
  if (user.role !== 'admin') throw new DockhandError('forbidden', 'scope: tokens are managed with the "admin" scope', { field: 'scope' });
  return user;
}

export async function tokenRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const { store } = deps;

  api.post('/tokens', {
    schema: {
      tags: ['tokens'],
      summary: 'Create a token (admin scope); the secret is in this answer only',
      body: CreateTokenRequest,
      response: { 201: CreateTokenResponse },
    },
  }, async (request, reply) => {
    const admin = requireAdmin(request);
    const created = await createTokenFor(store, request.body);
    request.log.info({ tokenId: created.info.id, for: created.info.user, by: admin.name, scopes: created.info.scopes, expiresAt: created.info.expiresAt }, 'token created');
    return reply.code(201).send(created);
  });

  api.get('/tokens', {
    schema: {
      tags: ['tokens'],
      summary: 'List tokens (admin scope), without their secrets',
      querystring: z.object({ user: z.string().min(1).max(100).optional() }),
      response: { 200: TokenListResponse },
    },
  }, async (request) => {
    requireAdmin(request);
    const roles = new Map<string, Role>();
    const tokens = await store.listTokens(request.query.user);
    return { tokens: await Promise.all(tokens.map((info) => viewOf(store, info, roles))) };
  });

  api.delete('/tokens/:id', {
    schema: {
      tags: ['tokens'],
      summary: 'Revoke a token (admin scope)',
      params: z.object({ id: z.string().min(1).max(100) }),
      response: { 200: z.object({ id: z.string(), revoked: z.literal(true) }) },
    },
  }, async (request) => {
    const admin = requireAdmin(request);
    if (!(await store.revokeToken(request.params.id))) {
      throw new DockhandError('not_found', `token ${request.params.id} not found or already revoked`, { hint: 'dockhand token list shows the tokens' });
    }
    request.log.info({ tokenId: request.params.id, by: admin.name }, 'token revoked');
    // Its open WebSockets in this process close now; other processes' at their next check.
    deps.tokenSockets?.revoked(request.params.id);
    return { id: request.params.id, revoked: true as const };
  });
}
