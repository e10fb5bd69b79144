import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import type { Task, TaskEvent } from '@dockhand/protocol';
import { loadConfig } from '../../../server/src/config';
import { DockhandError } from '../../../server/src/errors';
import { createLogger } from '../../../server/src/log';
import { AnthropicModelClient } from '../../../server/src/model/anthropic-client';
import type { CassetteInput } from '../../../server/src/model/replay/cassette';
import { startReplayServer, type ReplayServer } from '../../../server/src/model/replay/server';
import { startServer, type RunningServer } from '../../../server/src/server';

/*
 * The fleet the attacks run against: `dockhand serve`'s own composition (`startServer`: SQLite
 * on disk, scheduler, runner, policy, snapshots, gVisor sandboxes, local forge) listening on a
 * real port, with the replay model server in this process. The only part the test adds is which
 * cassette a task plays: each hostile ticket's title names its own (`modelFor`), so one server
 * runs every case, several at once.
 */

const ROOT = resolve(import.meta.dirname, '../../..');

export interface Answer {
  status: number;
  body: string;
  json: unknown;
}

export interface AttackFleet {
  server: RunningServer;
  url: string;
  replay: ReplayServer;
  dataDir: string;
  /** The local forge's bare repository of a registered name. */
  barePath(repo: string): string;
  pushToken: string;
  modelKey: string;
  tokens: { root: string; alice: string; bob: string };
  /** Everything the server logged (level info and above). */
  logs(): string;
  /** Gives the tasks whose ticket title is `title` these cassettes. */
  script(title: string, agent: CassetteInput, review?: CassetteInput): void;
  /** The replay session of a title (its request log: `replay.requests(session)`). */
  sessionOf(title: string): string;
  request(method: string, path: string, token: string | undefined, body?: unknown, headers?: Record<string, string>): Promise<Answer>;
  /** Polls the store until the task is in one of `states` (default: settled) and returns it with its events. */
  waitFor(id: string, states?: string[], timeoutMs?: number): Promise<{ task: Task; events: TaskEvent[] }>;
  close(): Promise<void>;
  /** Deletes the data directory (after close). */
  remove(): void;
}

const SETTLED = ['awaiting_review', 'awaiting_approval', 'failed', 'pr_open', 'cancelled', 'budget_exhausted'];

export const APPROVE_ALL: CassetteInput = {
  description: 'a reviewer that approves whatever it is shown (the gates under test are the server\u2019s)',
  turns: [{ name: 'approve', content: [{ type: 'tool_use', name: 'submit_review', input: { approved: true, problems: [], summary: 'Looks right to me.' } }] }],
};

export async function startAttackFleet(options: { concurrency: number }): Promise<AttackFleet> {
  execFileSync('bash', ['sandbox-images/base/build.sh'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  const dataDir = mkdtempSync(join(tmpdir(), 'dockhand-attacks-real-'));
  const replay = await startReplayServer({});
  const random = () => Math.random().toString(36).slice(2);
  const pushToken = `ghs_${(random() + random() + random()).slice(0, 36).padEnd(36, 'x')}`;
  const modelKey = `sk-ant-api03-${random()}${random()}${random()}AA`;
  const sessions = new Map<string, string>();
  let logText = '';
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logText += chunk.toString();
      done();
    },
  });
  const config = loadConfig(process.env, {
    dataDir,
    host: '127.0.0.1',
    port: 0,
    logLevel: 'info',
    'model.apiKey': modelKey,
    'model.baseURL': replay.url,
    'scheduler.concurrency': options.concurrency,
    'scheduler.pollMs': 200,
    // The fuzzer sends thousands of requests a minute; the rate limit has its own unit test.
    'rateLimit.perMinute': 1_000_000,
    'forge.pushToken': pushToken,
  });
  const logger = createLogger({ level: 'info', secrets: [pushToken, modelKey], destination });
  const modelFor = (task: Task, purpose: 'agent' | 'review') => {
    const session = sessions.get(task.ticket.title);
    if (!session) throw new DockhandError('internal', `task ${task.id} (${task.ticket.title}) has no cassette in this run`);
    return new AnthropicModelClient({
      apiKey: `replay:${purpose === 'review' ? `${session}-review` : session}`,
      baseURL: replay.url,
      model: config.model.name,
      retry: { baseDelayMs: 50, maxDelayMs: 500, jitter: 0 },
    });
  };
  const server = await startServer(config, { logger, parts: { modelFor }, handleSignals: false });
  const store = server.fleet.store;
  const tokens = { root: '', alice: '', bob: '' };
  await store.createUser('root', 'admin');
  tokens.root = (await store.createToken('root', 'attacks: admin')).token;
  for (const name of ['alice', 'bob'] as const) {
    await store.createUser(name, 'user');
    tokens[name] = (await store.createToken(name, 'attacks')).token;
  }
  const url = server.url;

  const request: AttackFleet['request'] = async (method, path, token, body, headers = {}) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body) }),
    });
    const text = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: response.status, body: text, json };
  };

  return {
    server,
    url,
    replay,
    dataDir,
    barePath: (repo) => join(dataDir, 'forge', `${repo}.git`),
    pushToken,
    modelKey,
    tokens,
    logs: () => logText,
    script(title, agent, review = APPROVE_ALL) {
      const session = `attack-${sessions.size + 1}`;
      replay.addCassette(session, agent);
      replay.addCassette(`${session}-review`, review);
      sessions.set(title, session);
    },
    sessionOf(title) {
      const session = sessions.get(title);
      if (!session) throw new Error(`no cassette for ${title}`);
      return session;
    },
    request,
    async waitFor(id, states = SETTLED, timeoutMs = 600_000) {
      // The clock runs only while the task is out of the queue (cases wait their turn for a slot).
      let working = 0;
      let last = Date.now();
      for (;;) {
        const task = await store.getTask(id);
        if (!task) throw new Error(`task ${id} vanished`);
        if (states.includes(task.state)) return { task, events: await store.listEvents(id) };
        const now = Date.now();
        if (task.state !== 'queued') working += now - last;
        last = now;
        if (working > timeoutMs) throw new Error(`task ${id} still ${task.state} after ${timeoutMs / 1000} s of work`);
        await new Promise((done) => setTimeout(done, 250));
      }
    },
    async close() {
      await server.close();
      await replay.close();
    },
    remove() {
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
