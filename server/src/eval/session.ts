import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { z } from 'zod';
import { RepoRegistration, type Task } from '@dockhand/protocol';
import { loadConfig, type Config } from '../config';
import { DockhandError } from '../errors';
import { checkGitSource } from '../git-child';
import { LocalForge } from '../forge';
import { createLogger, type Logger } from '../log';
import { AnthropicModelClient } from '../model/anthropic-client';
import { startReplayServer, type ReplayServer } from '../model/replay/server';
import { createFleet, registeredMirror, type Fleet } from '../runner/fleet';
import type { AgentPort, SandboxProvider } from '../runner/ports';
import type { RepoMirror } from '../sandbox/mirror';
import { createSandboxProvider, mirrorFirst, type SandboxSetup } from '../runner/sandboxes';
import { SqliteStore } from '../store/sqlite';
import { attemptOfUrl } from './attempts';
import type { Cassettes } from './cassettes';
import { closeRemovingContainers, forgetInterruptedBuilds } from './containers';
import { hasCommit } from './git-tree';
import { RunScopedStore } from './run-scope';

/*
 * The fleet an evaluation runs on: the same composition `dockhand serve` uses (SQLite store,
 * scheduler with the configured concurrency, task runner, policy gate, snapshots, gVisor
 * sandboxes, warm pool, local forge), in this process, on the run's own data directory, talked
 * to through its HTTP API (`inject`, no port). A scripted mode adds an in-process replay model
 * server and gives each task the cassettes of its instance; otherwise the configured model
 * (Claude with ANTHROPIC_API_KEY) runs every task unchanged.
 */

export interface EvalSession {
  config: Config;
  fleet: Fleet;
  sandboxes: SandboxSetup;
  /** The mirror of registered repositories the sandboxes are made from. */
  mirror: RepoMirror;
  replay?: ReplayServer;
  logger: Logger;
  /** A request to the API as the eval user (an admin of the run's own store). */
  request(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<{ status: number; body: string }>;
  /** `request`, with an error for a 4xx/5xx and the answer parsed by `schema`. */
  api<T>(method: 'GET' | 'POST' | 'DELETE', path: string, schema: z.ZodType<T>, body?: unknown): Promise<T>;
  /** Makes the instance's cassettes the ones the task of its attempt plays (scripted modes). */
  script(instanceId: string, cassettes: Cassettes, attempt?: number): void;
  close(): Promise<void>;
}

export interface EvalSessionOptions {
  dataDir: string;
  /** Scripted (replay) or the configured model. */
  scripted: boolean;
  concurrency?: number;
  logLevel?: string;
  /** Start the scheduler (false for grading and making, which run no tasks). */
  runTasks?: boolean;
  /**
   * The tasks this session's scheduler may run (a run's own, `run-scope.ts`); default every task
   * in the store. Asked at each claim, so it may accept more once the run knows its id.
   */
  claims?: (task: Task) => boolean;
  /**
   * For unit tests of the harness only: the in-memory sandbox and a scripted agent in place of
   * gVisor and the loop (the end-to-end test and the bench run the real ones).
   */
  parts?: { sandboxes?: SandboxSetup; agent?: AgentPort };
}

/** A provider's methods as own properties (`mirrorFirst` spreads it; a class keeps them on its prototype). */
function methodsOf(provider: SandboxProvider): SandboxProvider {
  return {
    acquire: (input) => provider.acquire(input),
    release: (sandbox) => provider.release(sandbox),
    ...(provider.reattach ? { reattach: provider.reattach.bind(provider) } : {}),
  };
}

/** The replay session an attempt of an instance plays (each attempt its own: they run side by side). */
const sessionOf = (instanceId: string, attempt: number) => (attempt === 1 ? `eval-${instanceId}` : `eval-${instanceId}-a${attempt}`);
const scriptedKey = (instanceId: string, attempt: number) => `${attempt}\u0000${instanceId}`;

export async function openEvalSession(options: EvalSessionOptions): Promise<EvalSession> {
  const overrides: Record<string, unknown> = { dataDir: options.dataDir };
  if (options.concurrency) overrides['scheduler.concurrency'] = options.concurrency;
  const config = loadConfig(process.env, overrides);
  const logger = createLogger({ level: options.logLevel ?? process.env.DOCKHAND_LOG_LEVEL ?? 'warn', secrets: [config.model.apiKey ?? ''] });
  const replay = options.scripted ? await startReplayServer({}) : undefined;
  const scripted = new Set<string>();
  // Composed as `dockhand serve` composes it (server.ts): the store and the mirror of registered
  // repositories first, the sandbox service on that mirror, then the fleet.
  const storePath = join(config.dataDir, 'dockhand.db');
  const store = options.claims ? new RunScopedStore(storePath, options.claims) : new SqliteStore(storePath);
  const mirror = registeredMirror(config, store);
  // A test's sandboxes are made from the mirror first, as the real service's are.
  const given = options.parts?.sandboxes;
  const sandboxes = given ? { ...given, provider: mirrorFirst(methodsOf(given.provider), mirror) } : await createSandboxProvider(config, logger, { mirror }).catch(async (error: unknown) => {
    await store.close();
    throw error;
  });
  const modelFor = (task: Task, purpose: 'agent' | 'review') => {
    if (!replay) return undefined;
    const instanceId = task.ticket.kind === 'issue' ? task.ticket.id : undefined;
    const attempt = attemptOfUrl(task.ticket.kind === 'issue' ? task.ticket.url : undefined);
    if (!instanceId || !scripted.has(scriptedKey(instanceId, attempt))) throw new DockhandError('internal', `task ${task.id} has no scripted model (not an instance of this run)`);
    const session = purpose === 'review' ? `${sessionOf(instanceId, attempt)}-review` : sessionOf(instanceId, attempt);
    return new AnthropicModelClient({ apiKey: `replay:${session}`, baseURL: replay.url, model: config.model.name, retry: { baseDelayMs: 50, maxDelayMs: 500, jitter: 0 } });
  };
  const fleet = await createFleet(config, {
    store,
    mirror,
    sandboxes: sandboxes.provider,
    ...(sandboxes.check ? { sandboxCheck: sandboxes.check } : {}),
    onClose: sandboxes.close,
    logger,
    ...(replay ? { modelFor } : {}),
    ...(options.parts?.agent ? { agent: options.parts.agent } : {}),
  });
  if (options.runTasks !== false) fleet.scheduler.start();
  const user = 'eval';
  if ((await fleet.store.getUser(user))?.role !== 'admin') await fleet.store.createUser(user, 'admin');
  const { token } = await fleet.store.createToken(user, 'dockhand eval');
  const request: EvalSession['request'] = async (method, path, body) => {
    const response = await fleet.app.inject({
      method,
      url: path,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    return { status: response.statusCode, body: response.body };
  };
  return {
    config, fleet, sandboxes, mirror, logger,
    ...(replay ? { replay } : {}),
    request,
    async api(method, path, schema, body) {
      const response = await request(method, path, body);
      if (response.status >= 400) {
        throw new DockhandError(response.status === 404 ? 'not_found' : 'bad_request', `${method} ${path}: ${response.status} ${response.body}`);
      }
      return schema.parse(JSON.parse(response.body));
    },
    script(instanceId, cassettes, attempt = 1) {
      if (!replay) return;
      replay.addCassette(sessionOf(instanceId, attempt), cassettes.agent);
      replay.addCassette(`${sessionOf(instanceId, attempt)}-review`, cassettes.review);
      scripted.add(scriptedKey(instanceId, attempt));
    },
    async close() {
      // Snapshot builds in flight would hold the close for as long as they run (containers.ts).
      if (sandboxes.ownerId) {
        const since = Date.now();
        const { buildsRemoved, leftBehind } = await closeRemovingContainers(sandboxes.ownerId, () => fleet.close());
        if (leftBehind) logger.warn({ buildsRemoved }, 'the fleet did not finish closing after its snapshot builds were removed; left behind');
        if (buildsRemoved > 0) {
          const forgotten = forgetInterruptedBuilds(join(config.dataDir, 'snapshot-logs'), since);
          if (forgotten.length > 0) logger.info({ forgotten }, 'snapshot builds cut short by the close are not remembered as failed');
        }
      } else await fleet.close();
      await replay?.close();
    },
  };
}

export { registeredName } from './names';

/** Per session: one registration (or refresh) of a name at a time (grading runs instances in parallel). */
const registering = new WeakMap<EvalSession, Map<string, Promise<unknown>>>();

/**
 * Registers the instance's repository on the run's fleet (`POST /v1/repos`) and makes sure
 * `baseSha` is in the registration's mirror; returns what a task or a sandbox names it by.
 *
 * With the local forge a registration is a copy of the source's branches taken when it was
 * registered: a base committed to the source later (a rebuilt corpus repository, a new instance's
 * `eval/<id>` branch) is not in it, and a grading or making sandbox, which asks the mirror
 * directly, would not find it (a task's submission does this check itself). The registry's
 * `ensureCommit` moves the copy forward from the source and fetches the commit into the mirror.
 *
 * A fleet without the registry route gets the repository on its local forge and tasks name its
 * bare repository.
 */
export async function ensureRepository(session: EvalSession, name: string, source: string, baseSha: string): Promise<string> {
  const queues = registering.get(session) ?? new Map<string, Promise<unknown>>();
  registering.set(session, queues);
  const previous = queues.get(name) ?? Promise.resolve();
  const work = previous.catch(() => undefined).then(() => registerAndFetch(session, name, source, baseSha));
  queues.set(name, work);
  return work;
}

async function registerAndFetch(session: EvalSession, name: string, source: string, baseSha: string): Promise<string> {
  let found = await session.request('GET', `/v1/repos/${encodeURIComponent(name)}`);
  if (found.status !== 200) {
    const created = await session.request('POST', '/v1/repos', { name, source });
    if (created.status === 404 && /no route/.test(created.body)) return onLocalForge(session, name, source, baseSha);
    if (created.status >= 300) throw new DockhandError('bad_request', `registering ${name} from ${source}: ${created.status} ${created.body}`);
    found = created;
  }
  const registration = RepoRegistration.parse(JSON.parse(found.body));
  if (registration.source !== checkGitSource(source, 'source').source) {
    throw new DockhandError('conflict', `${name} is registered on this fleet from ${registration.source}, not ${source}`, {
      hint: 'give the run another --data-dir, or put the instances\' repositories back where they were',
    });
  }
  await session.fleet.repos.ensureCommit(registration, baseSha);
  return name;
}

async function onLocalForge(session: EvalSession, name: string, source: string, baseSha: string): Promise<string> {
  const forge = new LocalForge({ dataDir: join(session.config.dataDir, 'forge'), store: session.fleet.store.pullRequests });
  const bare = forge.repositoryPath(name);
  // createRepository copies every branch again when the copy lacks the base (it is idempotent).
  return existsSync(bare) && hasCommit(bare, baseSha) ? bare : forge.createRepository(name, source);
}
