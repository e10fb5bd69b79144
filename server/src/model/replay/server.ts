import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { z } from 'zod';
import { formatFieldPath } from '@dockhand/protocol';
import { DEFAULT_PRICES } from '../pricing';
import { parseCassette, stepTurns, type Cassette, type CassetteInput, type Fault, type Turn } from './cassette';
import { PromptCache, TooManyBreakpointsError, totalTokens, type CacheUsage } from './prompt-cache';
import { CountTokensRequest, MessagesRequest, positionOf, unmetExpectation } from './request';
import { invalidToolChoice, unmetToolChoice } from './tool-choice';
import { ERROR_STATUS, buildMessage, errorBody, formatSse, newRequestId, streamEvents, type ApiErrorType } from './wire';

/*
 * The replay model server: a plain node:http server that speaks the Messages API well enough for
 * the real @anthropic-ai/sdk to talk to it, and answers from cassettes. See ./README.md.
 *
 * Which cassette answers a request (its "session"), first match wins:
 *   1. the `x-replay-session` header;
 *   2. the API key (`x-api-key`, or `Authorization: Bearer`) `replay:<session>`, so
 *      `new Anthropic({ apiKey: 'replay:<session>', baseURL })` selects one without code changes;
 *   3. an API key that is itself a session name;
 *   4. `defaultSession`, when the server was started with one (the CLI with a single cassette).
 * Sessions are independent: their own cassette, prompt cache and fault counters.
 */

export interface ReplayServerOptions {
  /** 0 or absent: any free port. */
  port?: number;
  host?: string;
  cassettes?: Record<string, Cassette | CassetteInput>;
  defaultSession?: string;
  /** The clock of the prompt cache (TTL expiry), injectable for tests. */
  now?: () => number;
  /**
   * The provider's organisation-wide limits, over a sliding minute and all sessions: input tokens
   * (uncached, cache reads and writes alike) and requests. A request that would pass one is
   * answered 429 `rate_limit_error` with `retry-after` (and counted in `rateLimited()`).
   */
  limits?: { inputTokensPerMinute?: number; requestsPerMinute?: number };
  /**
   * How long an admitted request takes before its answer starts, as a real model's time to read
   * the prompt (`bench:scale` paces turns with it; a function is asked per request); absent or 0,
   * at once.
   */
  latencyMs?: number | (() => number);
}

export interface ReplayRequestRecord {
  session: string;
  /** Cassette position (0-based) the request asked for. */
  position: number;
  turn: string | undefined;
  model: string;
  stream: boolean;
  status: number;
  fault: Fault['kind'] | undefined;
  usage: CacheUsage | undefined;
  error: string | undefined;
  body: MessagesRequest;
}

export interface ReplayServer {
  /** Base URL for the SDK (`new Anthropic({ baseURL: url })`). */
  url: string;
  port: number;
  /** Adds or replaces a session; its cache, fault counters and request log start empty. */
  addCassette(session: string, cassette: Cassette | CassetteInput): void;
  /** Requests to /v1/messages so far, oldest first (all sessions, or one). */
  requests(session?: string): ReplayRequestRecord[];
  /** Requests refused with 429 by `limits` so far (faults from cassettes not counted). */
  rateLimited(): number;
  close(): Promise<void>;
}

const MAX_LOGGED_REQUESTS = 2000;

interface Session {
  cassette: Cassette;
  cache: PromptCache;
  /** `${position}:${alternative}:${faultIndex}` → attempts that got the fault. */
  faultUses: Map<string, number>;
}

class ApiFailure extends Error {
  constructor(
    readonly type: ApiErrorType,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export async function startReplayServer(options: ReplayServerOptions = {}): Promise<ReplayServer> {
  const now = options.now ?? Date.now;
  const sessions = new Map<string, Session>();
  const log: ReplayRequestRecord[] = [];
  const addCassette = (name: string, cassette: Cassette | CassetteInput): void => {
    sessions.set(name, {
      cassette: parseCassette(cassette, `cassette ${name}`),
      cache: new PromptCache(now),
      faultUses: new Map(),
    });
    for (let index = log.length - 1; index >= 0; index--) if (log[index]?.session === name) log.splice(index, 1);
  };
  for (const [name, cassette] of Object.entries(options.cassettes ?? {})) addCassette(name, cassette);

  const resolveSession = (request: IncomingMessage): { name: string; session: Session } => {
    const header = headerValue(request, 'x-replay-session');
    const key = headerValue(request, 'x-api-key') ?? headerValue(request, 'authorization')?.replace(/^Bearer\s+/i, '');
    const keySession = key?.startsWith('replay:') ? key.slice('replay:'.length) : key;
    const candidates = [header, keySession, options.defaultSession];
    for (const name of candidates) {
      const session = name === undefined ? undefined : sessions.get(name);
      if (name !== undefined && session) return { name, session };
    }
    const asked = header ?? keySession ?? '(none)';
    throw new ApiFailure(
      'authentication_error',
      `no replay cassette for session ${JSON.stringify(asked)}; known sessions: ${[...sessions.keys()].join(', ') || '(none)'}. ` +
        `Select one with the x-replay-session header or the API key "replay:<session>".`,
    );
  };

  // The limits' sliding minute: when each admitted request came and its input tokens.
  const admitted: Array<{ at: number; tokens: number }> = [];
  let limitedCount = 0;
  const admit = (tokens: number) => {
    const limits = options.limits;
    if (!limits) return;
    const at = now();
    while (admitted.length > 0 && admitted[0]!.at <= at - 60_000) admitted.shift();
    const used = admitted.reduce((sum, entry) => sum + entry.tokens, 0);
    const overTokens = limits.inputTokensPerMinute !== undefined && used + tokens > limits.inputTokensPerMinute;
    const overRequests = limits.requestsPerMinute !== undefined && admitted.length + 1 > limits.requestsPerMinute;
    if (overTokens || overRequests) {
      limitedCount += 1;
      const retryAfter = Math.max(1, Math.ceil(((admitted[0]?.at ?? at) + 60_000 - at) / 1000));
      throw new ApiFailure('rate_limit_error', `Number of ${overTokens ? 'input tokens' : 'requests'} has exceeded your per-minute rate limit (replay limits).`, {
        'retry-after': String(retryAfter),
      });
    }
    admitted.push({ at, tokens });
  };

  const handleMessages = async (request: IncomingMessage, response: ServerResponse, requestId: string): Promise<void> => {
    const { name, session } = resolveSession(request);
    const body = parseBody(MessagesRequest, await readJson(request));
    const badChoice = invalidToolChoice(body);
    if (badChoice) throw new ApiFailure('invalid_request_error', badChoice);
    const position = positionOf(body, session.cassette);
    const record: ReplayRequestRecord = {
      session: name,
      position,
      turn: undefined,
      model: body.model,
      stream: body.stream === true,
      status: 200,
      fault: undefined,
      usage: undefined,
      error: undefined,
      body,
    };
    log.push(record);
    // A demo server can run for days; the log is for tests and debugging, not an archive.
    if (log.length > MAX_LOGGED_REQUESTS) log.splice(0, log.length - MAX_LOGGED_REQUESTS);
    try {
      const { turn, alternative } = selectTurn(session.cassette, position, body, name);
      record.turn = turn.name ?? `turn ${position + 1}`;
      if (turn.expect) {
        const unmet = unmetExpectation(turn.expect, body);
        if (unmet) throw new ApiFailure('invalid_request_error', `replay ${name}, ${record.turn}: expectation ${unmet}`);
      }
      const unplayable = unmetToolChoice(body, turn);
      if (unplayable) throw new ApiFailure('invalid_request_error', `replay ${name}, ${record.turn}: ${unplayable}`);
      const fault = takeFault(session, turn, position, alternative, body.model);
      record.fault = fault?.kind;
      if (fault?.kind === 'rate_limit') {
        throw new ApiFailure('rate_limit_error', 'Number of requests has exceeded your rate limit (replay fault).', {
          'retry-after': String(fault.retryAfterSeconds),
        });
      }
      if (fault?.kind === 'overloaded') throw new ApiFailure('overloaded_error', 'Overloaded (replay fault).');
      if (fault?.kind === 'api_error') throw new ApiFailure('api_error', 'Internal server error (replay fault).');

      admit(totalTokens(body));
      const latency = typeof options.latencyMs === 'function' ? options.latencyMs() : options.latencyMs;
      if (latency) await new Promise((resolve) => setTimeout(resolve, latency));
      const usage = processCache(session.cache, body);
      record.usage = usage;
      const message = buildMessage(turn, { model: body.model, position, alternative }, usage);
      if (!body.stream) {
        if (fault?.kind === 'cut') return void response.destroy();
        if (fault?.kind === 'stream_error') throw new ApiFailure(fault.errorType, 'Overloaded (replay fault).');
        return sendJson(response, 200, message, requestId);
      }
      response.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'request-id': requestId,
      });
      let deltas = 0;
      for (const event of streamEvents(message)) {
        if (response.destroyed) return;
        if (event.isDelta && fault && (fault.kind === 'cut' || fault.kind === 'stream_error') && deltas >= fault.afterDeltas) {
          if (fault.kind === 'stream_error') {
            const error = errorBody(fault.errorType, 'Overloaded (replay fault).', requestId);
            await write(response, formatSse({ event: 'error', data: error, isDelta: false }));
            return void response.end();
          }
          return void (fault.mode === 'reset' ? response.destroy() : response.end());
        }
        if (event.isDelta) deltas++;
        await write(response, formatSse(event));
        if (session.cassette.deltaDelayMs > 0) await sleep(session.cassette.deltaDelayMs);
      }
      response.end();
    } catch (error) {
      if (error instanceof ApiFailure) {
        record.status = ERROR_STATUS[error.type];
        record.error = error.message;
      }
      throw error;
    }
  };

  const server = createServer((request, response) => {
    const requestId = newRequestId();
    route(request, response, requestId).catch((error: unknown) => {
      const failure = error instanceof ApiFailure ? error : new ApiFailure('api_error', String(error));
      if (response.headersSent) return void response.destroy();
      sendJson(response, ERROR_STATUS[failure.type], errorBody(failure.type, failure.message, requestId), requestId, failure.headers);
    });
  });

  const route = async (request: IncomingMessage, response: ServerResponse, requestId: string): Promise<void> => {
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    if (request.method === 'POST' && path === '/v1/messages') return handleMessages(request, response, requestId);
    if (request.method === 'POST' && path === '/v1/messages/count_tokens') {
      const body = parseBody(CountTokensRequest, await readJson(request));
      return sendJson(response, 200, { input_tokens: totalTokens(body) }, requestId);
    }
    if (request.method === 'GET' && path === '/v1/models') {
      const data = MODELS.map(modelInfo);
      return sendJson(response, 200, { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null }, requestId);
    }
    const modelMatch = /^\/v1\/models\/([^/]+)$/.exec(path);
    if (request.method === 'GET' && modelMatch?.[1]) return sendJson(response, 200, modelInfo(decodeURIComponent(modelMatch[1])), requestId);
    throw new ApiFailure('not_found_error', `${request.method ?? 'GET'} ${path} is not served by the replay model server`);
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? (address satisfies AddressInfo).port : 0;
  const host = options.host ?? '127.0.0.1';
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    addCassette,
    requests: (session) => log.filter((record) => session === undefined || record.session === session),
    rateLimited: () => limitedCount,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

function selectTurn(cassette: Cassette, position: number, body: MessagesRequest, session: string): { turn: Turn; alternative: number } {
  const step = cassette.turns[position];
  if (!step) {
    throw new ApiFailure(
      'invalid_request_error',
      `replay ${session}: the cassette has ${cassette.turns.length} turns but the request asks for turn ${position + 1} ` +
        `(the conversation already holds ${position} assistant turns); the agent went further than the script`,
    );
  }
  const turns = stepTurns(step);
  if (turns.length === 1 && turns[0] && !('oneOf' in step)) return { turn: turns[0], alternative: 0 };
  const reasons: string[] = [];
  for (const [alternative, turn] of turns.entries()) {
    const unmet = turn.when ? unmetExpectation(turn.when, body) : undefined;
    if (!unmet) return { turn, alternative };
    reasons.push(`${turn.name ?? `alternative ${alternative + 1}`}: ${unmet}`);
  }
  throw new ApiFailure('invalid_request_error', `replay ${session}, turn ${position + 1}: no alternative matches (${reasons.join('; ')})`);
}

function takeFault(session: Session, turn: Turn, position: number, alternative: number, model: string): Fault | undefined {
  for (const [index, fault] of turn.faults.entries()) {
    if (fault.model !== undefined && !model.startsWith(fault.model)) continue;
    const key = `${position}:${alternative}:${index}`;
    const used = session.faultUses.get(key) ?? 0;
    if (used >= fault.times) continue;
    session.faultUses.set(key, used + 1);
    return fault;
  }
  return undefined;
}

function processCache(cache: PromptCache, body: MessagesRequest): CacheUsage {
  try {
    return cache.process(body);
  } catch (error) {
    if (error instanceof TooManyBreakpointsError) throw new ApiFailure('invalid_request_error', error.message);
    throw error;
  }
}

const MODELS = Object.keys(DEFAULT_PRICES).filter((id) => id.startsWith('claude-'));

function modelInfo(id: string): { type: 'model'; id: string; display_name: string; created_at: string } {
  return { type: 'model', id, display_name: id, created_at: '2025-01-01T00:00:00Z' };
}

function headerValue(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === '' ? undefined : first;
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new ApiFailure('invalid_request_error', 'the request body is not valid JSON');
  }
}

function parseBody<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new ApiFailure('invalid_request_error', `${issue ? formatFieldPath(issue.path) : 'body'}: ${issue?.message ?? 'invalid'}`);
}

function sendJson(response: ServerResponse, status: number, body: unknown, requestId: string, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'request-id': requestId,
    ...(status >= 400 ? { 'x-should-retry': String(status === 429 || status >= 500) } : {}),
    ...headers,
  });
  response.end(text);
}

function write(response: ServerResponse, chunk: string): Promise<void> {
  return new Promise((resolve) => {
    response.write(chunk, () => resolve());
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
