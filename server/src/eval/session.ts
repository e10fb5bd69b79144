import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { z } from 'zod';
import type { Task } from '@dockhand/protocol';
import { loadConfig, type Config } from '../config';
import { DockhandError } from '../errors';
import { LocalForge } from '../forge';
import { createLogger, type Logger } from '../log';
import { AnthropicModelClient } from '../model/anthropic-client';
import { startReplayServer, type ReplayServer } from '../model/replay/server';
import { createFleet, registeredMirror, type Fleet } from '../runner/fleet';
import { createSandboxProvider, type SandboxSetup } from '../runner/sandboxes';
import { SqliteStore } from '../store/sqlite';
import type { Cassettes } from './cassettes';

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
  replay?: ReplayServer;
  logger: Logger;
  /** A request to the API as the eval user (an admin of the run's own store). */
  request(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<{ status: number; body: string }>;
  /** `request`, with an error for a 4xx/5xx and the answer parsed by `schema`. */
  api<T>(method: 'GET' | 'POST' | 'DELETE', path: string, schema: z.ZodType<T>, body?: unknown): Promise<T>;
  /** Makes the instance's cassettes the ones its task plays (scripted modes). */
  script(instanceId: string, cassettes: Cassettes): void;
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
}

const sessionOf = (instanceId: string) => `eval-${instanceId}`;

export async function openEvalSession(options: EvalSessionOptions): Promise<EvalSession> {
  const overrides: Record<string, unknown> = { dataDir: options.dataDir };
  if (options.concurrency) overrides['scheduler.concurrency'] = options.concurrency;
  const config = loadConfig(process.env, overrides);
  const logger = createLogger({ level: options.logLevel ?? process.env.DOCKHAND_LOG_LEVEL ?? 'warn', secrets: [config.model.apiKey ?? ''] });
  const replay = options.scripted ? await startReplayServer({}) : undefined;
  const scripted = new Set<string>();
  // Composed as `dockhand serve` composes it (server.ts): the store and the mirror of registered
  // repositories first, the sandbox service on that mirror, then the fleet.
  const store = new SqliteStore(join(config.dataDir, 'dockhand.db'));
  const mirror = registeredMirror(config, store);
  const sandboxes = await createSandboxProvider(config, logger, { mirror }).catch(async (error: unknown) => {
    await store.close();
    throw error;
  });
  const modelFor = (task: Task, purpose: 'agent' | 'review') => {
    if (!replay) return undefined;
    const instanceId = task.ticket.kind === 'issue' ? task.ticket.id : undefined;
    if (!instanceId || !scripted.has(instanceId)) throw new DockhandError('internal', `task ${task.id} has no scripted model (not an instance of this run)`);
    const session = purpose === 'review' ? `${sessionOf(instanceId)}-review` : sessionOf(instanceId);
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
    config, fleet, sandboxes, logger,
    ...(replay ? { replay } : {}),
    request,
    async api(method, path, schema, body) {
      const response = await request(method, path, body);
      if (response.status >= 400) {
        throw new DockhandError(response.status === 404 ? 'not_found' : 'bad_request', `${method} ${path}: ${response.status} ${response.body}`);
      }
      return schema.parse(JSON.parse(response.body));
    },
    script(instanceId, cassettes) {
      if (!replay) return;
      replay.addCassette(sessionOf(instanceId), cassettes.agent);
      replay.addCassette(`${sessionOf(instanceId)}-review`, cassettes.review);
      scripted.add(instanceId);
    },
    async close() {
      await fleet.close();
      await replay?.close();
    },
  };
}

/** SWE-bench's `owner/name` as one name segment (`owner__name`, SWE-bench's own instance prefix). */
export function registeredName(repo: string): string {
  return repo.replace(/\//g, '__').replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 100) || 'repo';
}

/**
 * Registers the instance's repository on the run's fleet (`POST /v1/repos`) and returns what a
 * task names it by. A fleet without the registry route gets the repository on its local forge
 * and tasks name its bare repository.
 */
export async function ensureRepository(session: EvalSession, name: string, source: string): Promise<string> {
  if ((await session.request('GET', `/v1/repos/${encodeURIComponent(name)}`)).status === 200) return name;
  const created = await session.request('POST', '/v1/repos', { name, source });
  if (created.status < 300) return name;
  if (created.status !== 404 || !/no route/.test(created.body)) {
    throw new DockhandError('bad_request', `registering ${name} from ${source}: ${created.status} ${created.body}`);
  }
  const forge = new LocalForge({ dataDir: join(session.config.dataDir, 'forge'), store: session.fleet.store.pullRequests });
  const bare = forge.repositoryPath(name);
  return existsSync(bare) ? bare : forge.createRepository(name, source);
}
