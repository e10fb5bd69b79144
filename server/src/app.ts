import { maxHeaderSize, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import websocket from '@fastify/websocket';
import {
  hasZodFastifySchemaValidationErrors,
  jsonSchemaTransform,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { z } from 'zod';
import { TicketListResponse, formatFieldPath, type HealthResponse } from '@dockhand/protocol';
import { authHook, requireUser, WS_PROTOCOL } from './api/auth';
import type { AppDeps } from './api/deps';
import { approvalRoutes } from './api/approvals';
import { chainRoutes } from './api/chain';
import { eventRoutes } from './api/events';
import { TokenSockets } from './api/socket-tokens';
import { evalRoutes } from './api/evals';
import { flakyRoutes } from './api/flaky';
import { webhookRoutes } from './api/webhooks';
import { metricsRoutes } from './api/metrics';
import { repoRoutes } from './api/repos';
import { secretRoutes } from './api/secrets';
import { taskRoutes } from './api/tasks';
import { tokenRoutes } from './api/tokens';
import { pullRequestRoutes } from './api/pulls';
import { attestationRoutes } from './api/attestations';
import { bodyTooLarge, discardBody } from './api/body-limit';
import { apiServerFactory, health } from './api/http-server';
import { LoadGate, shedLoad } from './api/load';
import { DockhandError, asDockhandError } from './errors';
import { maySubmit } from './runner/registry';
import type { Logger } from './log';

export type { AppDeps } from './api/deps';

/** `/context/baseSha` or `/comments/2/body` → `context.baseSha` / `comments[2].body`. */
function fieldFromInstancePath(instancePath: string): string {
  const parts = instancePath.split('/').filter(Boolean).map((part) => (/^\d+$/.test(part) ? Number(part) : part));
  return formatFieldPath(parts);
}

/** The largest request body the API reads (Fastify's `bodyLimit`). */
export const BODY_LIMIT_BYTES = 2 * 1024 * 1024;

/** The limit a zod `too_big` issue names, as "100000 characters" / "50 items"; undefined for other issues. */
function sizeLimit(keyword: string, params: Record<string, unknown>): string | undefined {
  if (keyword !== 'too_big' || typeof params['maximum'] !== 'number') return undefined;
  // A number over its maximum (a budget) is an ordinary bad value, not a body too large.
  const unit = params['origin'] === 'string' ? 'characters' : params['origin'] === 'array' ? 'items' : undefined;
  return unit ? `${params['maximum']} ${unit}` : undefined;
}

function toDockhandError(error: FastifyError | DockhandError | Error): DockhandError {
  if (error instanceof DockhandError) return error;
  if (hasZodFastifySchemaValidationErrors(error)) {
    const first = error.validation[0];
    const field = first ? fieldFromInstancePath(first.instancePath) : '';
    const context = 'validationContext' in error ? error.validationContext : undefined;
    const where = context === 'querystring' ? 'query' : context === 'params' ? 'path' : 'body';
    // Only a body is "too large" (413); a path or query value over its limit is an ordinary bad value.
    const tooLarge = first && where === 'body' ? sizeLimit(first.keyword, first.params) : undefined;
    if (tooLarge) {
      return new DockhandError('payload_too_large', `${field || where}: too large; the limit is ${tooLarge}`, {
        ...(field ? { field } : {}),
        hint: `shorten ${field || 'the body'} to at most ${tooLarge} (a long log or file belongs in the repository, not the ticket)`,
      });
    }
    const message = `${field || where}: ${first?.message ?? 'invalid'}`;
    return new DockhandError('bad_request', message, {
      ...(field ? { field } : {}),
      hint: `fix the named ${where === 'query' ? 'query parameter' : where === 'path' ? 'path parameter' : 'field'} and send the request again`,
    });
  }
  const status = 'statusCode' in error && typeof error.statusCode === 'number' ? error.statusCode : 500;
  if (status === 429) return new DockhandError('rate_limited', 'too many requests', { hint: 'slow down and retry after a minute' });
  if (status === 413) return bodyTooLarge(BODY_LIMIT_BYTES);
  if (status === 415) {
    return new DockhandError('unsupported_media_type', `content-type: ${error.message.replace(/^Unsupported Media Type:?\s*/i, '') || 'this media type'} is not accepted; the API reads application/json`, {
      field: 'content-type',
      hint: 'send the body as JSON with "Content-Type: application/json"',
    });
  }
  if (status === 400) return new DockhandError('bad_request', error.message);
  if (status === 404) return new DockhandError('not_found', error.message);
  return asDockhandError(error);
}

/**
 * The HTTP + WebSocket API as a Fastify plugin (server.ts only listens and closes). Everything under
 * `/v1` and `/metrics` needs a bearer token; `/healthz`, `/readyz` and `/docs/json` do not.
 */
export async function app(fastify: FastifyInstance, given: AppDeps): Promise<void> {
  const tokenSockets = given.tokenSockets ?? new TokenSockets(given.store, { ...(given.limits?.wsTokenCheckMs ? { checkMs: given.limits.wsTokenCheckMs } : {}) });
  if (!given.tokenSockets) fastify.addHook('onClose', async () => tokenSockets.stop());
  const deps: AppDeps = { ...given, tokenSockets };
  fastify.setValidatorCompiler(validatorCompiler);
  fastify.setSerializerCompiler(serializerCompiler);
  fastify.decorateRequest('user', null);
  fastify.decorateRequest('scopes', null);
  fastify.decorateRequest('tokenInfo', null);
  // Before every other hook: a burst is refused before its token is looked up (`api/load.ts`); the
  // HTTP server under it (`api/http-server.ts`) shares the gate and refuses most of a burst itself.
  shedLoad(fastify, deps.loadGate ?? new LoadGate(deps.limits?.maxInFlight));
  fastify.setErrorHandler(async (error: FastifyError | DockhandError, request, reply) => {
    const failure = toDockhandError(error);
    if (failure.code === 'internal') request.log.error({ err: error }, 'request failed');
    // A body cut off at the limit (no Content-Length): the rest is read and thrown away first, so
    // the client reads this 413 instead of a reset (`api/body-limit.ts`).
    if (failure.code === 'payload_too_large' && failure.field === 'body' && !request.raw.complete) {
      await discardBody(request.raw);
      void reply.header('connection', 'close');
    }
    return reply.code(failure.status).send(failure.toBody());
  });
  fastify.setNotFoundHandler((request, reply) => {
    const failure = new DockhandError('not_found', `no route ${request.method} ${request.url.split('?')[0]}`);
    return reply.code(404).send(failure.toBody());
  });

  await fastify.register(swagger, {
    openapi: {
      info: { title: 'Dockhand fleet server', version: '1.0.0', description: 'Tasks, events, reviews and metrics.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
  });
  await fastify.register(websocket, {
    options: {
      maxPayload: 64 * 1024,
      handleProtocols: (protocols) => (protocols.has(WS_PROTOCOL) ? WS_PROTOCOL : false),
    },
  });

  const api = fastify.withTypeProvider<ZodTypeProvider>();
  api.get('/docs/json', { schema: { hide: true } }, async () => fastify.swagger());
  // On a listening server `/healthz` is answered by the HTTP server before Fastify (`api/http-server.ts`); this is `inject()`'s.
  api.get('/healthz', { schema: { hide: true } }, async (): Promise<HealthResponse> => health());
  api.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    const checks: Record<string, string> = {};
    let ok = true;
    const check = async (name: string, fn: () => Promise<void>) => {
      try {
        await fn();
        checks[name] = 'ok';
      } catch (error) {
        ok = false;
        checks[name] = error instanceof Error ? error.message : String(error);
      }
    };
    await check('store', () => deps.store.ping());
    if (deps.sandboxCheck) await check('sandbox', deps.sandboxCheck);
    return reply.code(ok ? 200 : 503).send({ ok, checks });
  });

  // Signed by the forge, not by a user: outside the bearer-token scope.
  await fastify.register(webhookRoutes, { ...deps, prefix: '/v1' });

  await fastify.register(async (authed) => {
    authed.addHook('onRequest', authHook(deps.store));
    await authed.register(rateLimit, {
      max: deps.limits?.ratePerMinute ?? 120,
      timeWindow: 60_000,
      hook: 'preHandler',
      keyGenerator: (request) => request.user?.name ?? request.ip,
      errorResponseBuilder: (_request, context) => {
        const error = new DockhandError('rate_limited', `more than ${context.max} requests in ${context.after}`, {
          hint: `retry after ${context.after}`,
        });
        return Object.assign(error, { statusCode: 429 });
      },
    });
    await authed.register(metricsRoutes, deps);
    await authed.register(async (v1) => {
      // Every log line of a task's request carries its id.
      v1.addHook('preHandler', async (request) => {
        const params = request.params;
        if (typeof params === 'object' && params !== null && 'id' in params && typeof params.id === 'string') {
          request.log = request.log.child({ taskId: params.id });
        }
      });
      await v1.register(taskRoutes, deps);
      await v1.register(chainRoutes, deps);
      await v1.register(approvalRoutes, deps);
      await v1.register(repoRoutes, deps);
      await v1.register(secretRoutes, deps);
      await v1.register(flakyRoutes, deps);
      await v1.register(tokenRoutes, deps);
      await v1.register(eventRoutes, deps);
      await v1.register(evalRoutes, deps);
      await v1.register(pullRequestRoutes, deps);
      await v1.register(attestationRoutes, deps);
      v1.withTypeProvider<ZodTypeProvider>().get('/tickets', {
        schema: { tags: ['tickets'], querystring: z.object({ repo: z.string().min(1) }), response: { 200: TicketListResponse } },
      }, async (request) => {
        const user = requireUser(request);
        if (!deps.tickets) {
          throw new DockhandError('repository_unavailable', 'this server has no forge to list issues from', {
            hint: 'start the server with a forge (the local forge is the default of `dockhand serve`; DOCKHAND_GITHUB_* for GitHub), or send the ticket as text',
          });
        }
        // Only a registered repository the caller may submit to: never a raw path or another team's issues.
        const registration = await deps.store.getRepo(request.query.repo);
        if (!registration || !maySubmit(registration, user)) {
          throw new DockhandError('not_found', `repo: repository ${request.query.repo} is not registered`, { field: 'repo', hint: 'dockhand repo list shows the ones you may use' });
        }
        return { tickets: await deps.tickets.listOpenIssues(registration.name) };
      });
      v1.withTypeProvider<ZodTypeProvider>().get('/me', {
        schema: { tags: ['users'], response: { 200: z.object({ name: z.string(), role: z.enum(['user', 'admin']) }) } },
      }, async (request) => {
        const user = requireUser(request);
        return { name: user.name, role: user.role };
      });
    }, { prefix: '/v1' });
  });
}

/** A Fastify instance with the API registered (tests use `inject`/`injectWS` on it). */
export async function buildApp(deps: AppDeps, options: { logger?: Logger } = {}): Promise<FastifyInstance> {
  const loggerInstance: FastifyBaseLogger | undefined = options.logger ?? deps.logger;
  const loadGate = new LoadGate(deps.limits?.maxInFlight);
  const fastify = Fastify({
    ...(loggerInstance ? { loggerInstance } : {}),
    bodyLimit: BODY_LIMIT_BYTES,
    // Before Fastify: /healthz, a body declared too large (refused before `100 Continue`, or read
    // and discarded first) and load shedding (`api/http-server.ts`).
    serverFactory: apiServerFactory(BODY_LIMIT_BYTES, loadGate),
    // Long ids reach the route's schema, which names the field and its limit (the router's default cap is 100).
    routerOptions: { maxParamLength: 1000 },
    // Errors the router raises before any route (a bad percent-encoding, a path segment over the cap)
    // get the API's error body too, never Fastify's own shape.
    frameworkErrors: (error: FastifyError, _request: FastifyRequest, reply: FastifyReply) => {
      const failure = new DockhandError('bad_request', `path: ${error.message}`, { field: 'path', hint: 'percent-encode the URL as UTF-8 and keep each path segment under 1000 characters' });
      void reply.code(failure.status).send(failure.toBody());
    },
    // Requests Node's HTTP parser refuses before Fastify sees them (a URL or headers past
    // maxHeaderSize, malformed HTTP): the API's error body too, not Fastify's default one.
    clientErrorHandler: answerClientError,
  });
  await fastify.register(app, { ...deps, loadGate });
  await fastify.ready();
  return fastify;
}

function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  // A reset connection has nobody to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const failure = error.code === 'HPE_HEADER_OVERFLOW'
    ? new DockhandError('bad_request', `headers: the request line and headers are larger than this server reads (${maxHeaderSize} bytes)`, {
        field: 'headers',
        hint: 'shorten the URL (an id is at most 1000 characters) or the headers',
      })
    : new DockhandError('bad_request', `the request is not HTTP/1.1 this server can read (${error.code ?? error.message})`, { hint: 'send a well-formed HTTP/1.1 request' });
  const body = JSON.stringify(failure.toBody());
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${failure.status} ${STATUS_CODES[failure.status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(error);
}

// Like fastify-plugin: the API's decorations (injectWS, swagger) and handlers belong to the
// instance it is registered on, not to a hidden child context.
Object.assign(app, { [Symbol.for('skip-override')]: true });
