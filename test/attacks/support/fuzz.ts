import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scopeOfRoute } from '../../../server/src/api/auth';
import type { TokenScope } from '../../../server/src/store/types';
import type { AttackFleet } from './attack-fleet';

/*
 * The API fuzzer: every route and method in the server's own OpenAPI document (`/docs/json`),
 * hit with malformed JSON, wrong types, unknown fields, huge and deeply nested bodies, bytes that
 * are not UTF-8, hostile path and query values, wrong media types, bad, revoked and query-string
 * tokens, and hostile repository values on submission and registration. The generator is seeded
 * (the run's seed), so a failure reproduces. A 5xx, a non-JSON error or an error without a
 * message is a failure; so is a hostile repository value answered with 2xx.
 */

export interface FuzzResult {
  routes: number;
  requests: number;
  fiveHundreds: number;
  unregisteredAccepted: number;
  /** Expired tokens and tokens lacking a route's scope, on every route. */
  tokenChecks: number;
  tokenFailures: number;
  failures: string[];
}

interface Route {
  method: string;
  /** `/v1/tasks/{id}` */
  path: string;
  hasBody: boolean;
  query: string[];
}

/** mulberry32: small, seedable, good enough to pick cases. */
function generator(seed: number): { next(): number; pick<T>(items: readonly T[]): T } {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return { next, pick: (items) => items[Math.floor(next() * items.length)] as (typeof items)[number] };
}

function routesOf(document: unknown): Route[] {
  const paths = typeof document === 'object' && document !== null && 'paths' in document ? document.paths : undefined;
  if (typeof paths !== 'object' || paths === null) throw new Error('the OpenAPI document has no paths');
  const routes: Route[] = [];
  for (const [path, item] of Object.entries(paths)) {
    if (typeof item !== 'object' || item === null) continue;
    for (const [method, operation] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method) || typeof operation !== 'object' || operation === null) continue;
      const parameters = 'parameters' in operation && Array.isArray(operation.parameters) ? operation.parameters : [];
      const query = parameters.flatMap((parameter: unknown) =>
        typeof parameter === 'object' && parameter !== null && 'in' in parameter && parameter.in === 'query' && 'name' in parameter && typeof parameter.name === 'string' ? [parameter.name] : []);
      routes.push({ method: method.toUpperCase(), path, hasBody: 'requestBody' in operation, query });
    }
  }
  return routes;
}

const HOSTILE_IDS = ['..%2F..%2Fetc%2Fpasswd', '%00', 'x'.repeat(5000), '%FF%FE', 't_%27%20OR%201%3D1--', '%E2%80%AE', 'constructor', '__proto__', '-1', '1e309'];
const HOSTILE_VALUES: unknown[] = [null, true, -1, 1e309, 2 ** 53 + 1, '', 'x'.repeat(200_000), [], [[[]]], {}, { $gt: '' }, '\u0000', '\uD800', '<script>', '${7*7}', '../../etc/passwd'];
export const HOSTILE_REPOS = [
  '../../etc', '/etc/passwd', '/etc', 'ext::sh -c touch% /tmp/dockhand-pwned', '--upload-pack=touch /tmp/dockhand-pwned', '-uf', 'fd::17',
  'http://127.0.0.1:1/x.git', 'file:///etc', 'ssh://-oProxyCommand=touch%20/tmp/dockhand-pwned/x', 'git@host:-oProxyCommand=id', 'attack-app/../attack-app',
  'ATTACK-APP', 'attack-app\u0000', 'private-app',
];

function deepNest(depth: number): string {
  return `${'['.repeat(depth)}${']'.repeat(depth)}`;
}

export async function fuzzApi(fleet: AttackFleet, options: { seed: number; repo: string; baseSha: string }): Promise<FuzzResult> {
  const random = generator(options.seed);
  const result: FuzzResult = { routes: 0, requests: 0, fiveHundreds: 0, unregisteredAccepted: 0, tokenChecks: 0, tokenFailures: 0, failures: [] };
  const { root, bob } = fleet.tokens;
  const { store } = fleet.server.fleet;
  const revoked = await store.createToken('bob', 'fuzz: revoked');
  await store.revokeToken(revoked.info.id);
  const expiredAt = new Date(Date.now() - 60_000).toISOString();
  const expired = (await store.createToken('bob', { label: 'fuzz: expired', expiresAt: expiredAt })).token;
  // Each lacks some scope: the route's scope decides which one is sent (read → submitOnly).
  const readOnly = (await store.createToken('bob', { label: 'fuzz: read only', scopes: ['read'] })).token;
  const submitOnly = (await store.createToken('bob', { label: 'fuzz: submit only', scopes: ['submit'] })).token;
  const tokenFailure = (text: string) => {
    result.tokenFailures += 1;
    result.failures.push(text);
  };
  const errorOf = (body: string): { code?: string; message?: string; field?: string } => {
    try {
      const parsed = JSON.parse(body) as { error?: { code?: string; message?: string; field?: string } };
      return parsed.error ?? {};
    } catch {
      return {};
    }
  };

  async function send(method: string, path: string, init: { token?: string | undefined; body?: string | Uint8Array; headers?: Record<string, string> } = {}): Promise<{ status: number; body: string }> {
    result.requests += 1;
    const begun = Date.now();
    let status = 0;
    let text = '';
    try {
      const response = await fetch(`${fleet.url}${path}`, {
        method,
        headers: { ...(init.token ? { authorization: `Bearer ${init.token}` } : {}), ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
        ...(init.body !== undefined ? { body: init.body } : {}),
        signal: AbortSignal.timeout(30_000),
      });
      status = response.status;
      text = await response.text();
    } catch (error) {
      result.failures.push(`${method} ${path.slice(0, 120)}: no answer (${error instanceof Error ? error.message : String(error)})`);
      return { status: 0, body: '' };
    }
    const where = `${method} ${path.slice(0, 120)} (${Date.now() - begun} ms)`;
    if (status >= 500) {
      result.fiveHundreds += 1;
      result.failures.push(`${where}: ${status} ${text.slice(0, 200)}`);
    } else if (status >= 400) {
      let message: unknown;
      try {
        const parsed: unknown = JSON.parse(text);
        message = typeof parsed === 'object' && parsed !== null && 'error' in parsed && typeof parsed.error === 'object' && parsed.error !== null && 'message' in parsed.error ? parsed.error.message : undefined;
      } catch {
        message = undefined;
      }
      if (typeof message !== 'string' || message.length === 0) result.failures.push(`${where}: ${status} without a JSON error message: ${text.slice(0, 120)}`);
    }
    return { status, body: text };
  }

  const docs = await fetch(`${fleet.url}/docs/json`).then((response) => response.json());
  const routes = routesOf(docs);
  result.routes = routes.length;
  const concrete = (path: string) => path.replace(/\{[^}]+\}/g, () => random.pick(HOSTILE_IDS));
  const validTask = { ticket: { kind: 'issue', id: '9', title: 'fuzz', body: 'fuzz' }, context: { repo: options.repo, baseSha: '0'.repeat(40) } };

  for (const route of routes) {
    const path = () => concrete(route.path);
    // Tokens: none, malformed, unknown, revoked, long, on the query string (REST refuses it even when valid).
    for (const token of [undefined, '', 'x', 'dh_unknown', revoked.token, 'dh_'.padEnd(10_000, 'a'), 'd\u00e9j\u00e0']) {
      const headers: Record<string, string> = token === undefined ? {} : { authorization: token === '' ? 'Bearer' : `Bearer ${encodeURIComponent(token)}` };
      const answer = await send(route.method, path(), { headers });
      if (answer.status < 400 && !['/docs/json'].includes(route.path)) result.failures.push(`${route.method} ${route.path}: ${answer.status} with token ${JSON.stringify(token?.slice(0, 20))}`);
    }
    // A valid token on the query string of a REST route is refused, alone or beside a valid header.
    const plain = route.path.replace(/\{[^}]+\}/g, 't_fuzz');
    const tokenHeaders: Array<Record<string, string>> = [{}, { authorization: `Bearer ${bob}` }];
    for (const headers of tokenHeaders) {
      const viaQuery = await send(route.method, `${plain}?token=${bob}`, { headers });
      if (viaQuery.status !== 401) result.failures.push(`${route.method} ${route.path}?token= (${Object.keys(headers).length ? 'with' : 'without'} a header): ${viaQuery.status}, not 401`);
    }
    // An expired token: 401 token_expired naming when, on every route.
    result.tokenChecks += 1;
    const late = await send(route.method, plain, { token: expired, ...(route.hasBody ? { body: '{}' } : {}) });
    const lateError = errorOf(late.body);
    if (late.status !== 401 || lateError.code !== 'token_expired' || !lateError.message?.includes(`expired on ${expiredAt}`)) {
      tokenFailure(`${route.method} ${route.path} with an expired token: ${late.status} ${late.body.slice(0, 160)}`);
    }
    // A token without the route's scope: 403 naming the scope. With it, never a scope refusal.
    const needed: TokenScope = scopeOfRoute(route.method, route.path.replace(/\{([^}]+)\}/g, ':$1'));
    result.tokenChecks += 2;
    const lacking = await send(route.method, plain, { token: needed === 'read' ? submitOnly : readOnly, ...(route.hasBody ? { body: '{}' } : {}) });
    const lackingError = errorOf(lacking.body);
    if (lacking.status !== 403 || lackingError.field !== 'scope' || !lackingError.message?.includes(`"${needed}"`)) {
      tokenFailure(`${route.method} ${route.path} with a token lacking "${needed}": ${lacking.status} ${lacking.body.slice(0, 160)}`);
    }
    if (needed === 'read' || needed === 'submit') {
      const holding = await send(route.method, plain, { token: needed === 'read' ? readOnly : submitOnly, ...(route.hasBody ? { body: '{}' } : {}) });
      if (errorOf(holding.body).field === 'scope') tokenFailure(`${route.method} ${route.path} refused a token holding "${needed}": ${holding.body.slice(0, 160)}`);
    }
    // Query strings: wrong types, repeated keys, hostile values.
    for (const name of route.query) {
      for (const value of ['-1', 'abc', '1e309', '%FF', '', 'x'.repeat(10_000), '[object Object]']) await send(route.method, `${path()}?${name}=${value}`, { token: bob });
      await send(route.method, `${path()}?${name}=1&${name}=2`, { token: bob });
    }
    if (!route.hasBody) continue;
    // Bodies, as the non-admin bob (admins' registrations are fuzzed below with hostile sources only).
    const bodies: Array<string | Uint8Array> = [
      '{"ticket": ', '{', '[]', 'null', '"x"', '1', 'true', '{"__proto__": {"admin": true}}', '{"constructor": {"prototype": {"x": 1}}}',
      deepNest(5_000), JSON.stringify({ ...validTask, extra: 1, context: { ...validTask.context, extra: { deep: [1, 2] } } }),
      new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]), `{"text": "${'\\ud800'.repeat(10)}"}`,
      JSON.stringify({ text: 'x'.repeat(3 * 1024 * 1024) }),
    ];
    for (let index = 0; index < 12; index++) {
      const mutated: Record<string, unknown> = JSON.parse(JSON.stringify(validTask));
      const key = random.pick(['ticket', 'context', 'action', 'decision', 'text', 'comments', 'name', 'source', 'owners', 'sha', 'allowTestEdits', 'budgets', 'priority']);
      mutated[key] = random.pick(HOSTILE_VALUES);
      bodies.push(JSON.stringify(mutated));
    }
    for (const body of bodies) await send(route.method, path(), { token: bob, body });
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', 'application/xml']) {
      await send(route.method, path(), { token: bob, body: '{}', headers: { 'content-type': type } });
    }
  }

  // Hostile repository values: submitted by a user, registered by an admin. None may be accepted.
  const other = mkdtempSync(join(tmpdir(), 'dockhand-private-app-'));
  try {
    writeFileSync(join(other, 'README.md'), 'private\n');
    execFileSync('bash', ['-c', 'git init -q -b main && git add -A && git -c user.name=x -c user.email=x@x commit -qm private'], { cwd: other });
    const registered = await send('POST', '/v1/repos', { token: root, body: JSON.stringify({ name: 'private-app', source: other, submitters: ['alice'] }) });
    if (registered.status !== 201) result.failures.push(`registering private-app: ${registered.status} ${registered.body.slice(0, 200)}`);
    // (A registered repository's own source path names it, as `submit --repo <path>` does; other host paths do not.)
    for (const repo of [...HOSTILE_REPOS, join(fleet.dataDir, 'forge'), join(fleet.dataDir, 'dockhand.db')]) {
      const submitted = await send('POST', '/v1/tasks', { token: bob, body: JSON.stringify({ ...validTask, context: { repo, baseSha: options.baseSha } }) });
      if (submitted.status < 300) {
        result.unregisteredAccepted += 1;
        result.failures.unshift(`repo ${JSON.stringify(repo)} accepted: ${submitted.status} ${submitted.body.slice(0, 120)}`);
      }
      else if (submitted.status < 500 && !/context\.repo/.test(submitted.body)) result.failures.push(`repo ${JSON.stringify(repo)}: ${submitted.status} does not name context.repo: ${submitted.body.slice(0, 160)}`);
    }
    for (const source of HOSTILE_REPOS.filter((value) => value !== 'private-app' && !value.startsWith('attack-app') && value !== 'ATTACK-APP')) {
      const name = `fuzz-${result.requests}`;
      const answer = await send('POST', '/v1/repos', { token: root, body: JSON.stringify({ name, source }) });
      if (answer.status < 300) {
        result.unregisteredAccepted += 1;
        result.failures.unshift(`source ${JSON.stringify(source)} registered: ${answer.status}`);
      }
    }
  } finally {
    rmSync(other, { recursive: true, force: true });
  }
  // Methods no route has: 404 with a JSON error, never 5xx.
  for (const method of ['PUT', 'PATCH', 'OPTIONS']) await send(method, '/v1/tasks', { token: bob, body: '{}' });
  return result;
}
