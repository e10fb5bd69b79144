import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { CreateTaskRequest, type Task } from '@dockhand/protocol';
import { buildApp } from '../app';
import { registeredSource, RepoRegistry } from '../runner/registry';
import { RepoMirror } from '../sandbox/mirror';
import { EventHub, EventLog } from '../store/hub';
import { SqliteStore } from '../store/sqlite';
import type { AppDeps, BaseFiles, TaskControl } from './deps';
import { RepositorySecrets } from '../secrets/service';
import { SqliteSecretRows } from '../store/secret-rows';

export const SHA = 'a'.repeat(40);

/** A task body for tasks stored directly (`createTask`): its repo is not checked. */
export function taskBody(overrides: Record<string, unknown> = {}) {
  return {
    ticket: { kind: 'text', title: 'Fix the off-by-one in paginate()' },
    context: { repo: '/srv/repos/app.git', baseSha: SHA },
    ...overrides,
  };
}

const gitEnv = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };

/** A one-commit git repository (`src/a.ts`) in `dir`; returns its HEAD. */
export function makeGitRepo(dir: string, files: Record<string, string> = { 'src/a.ts': 'one\ntwo\nthree\n' }, branch = 'main'): string {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, env: gitEnv, encoding: 'utf8' }).trim();
  git('init', '-q', '-b', branch);
  git('add', '-A');
  git('commit', '-q', '-m', 'base');
  return git('rev-parse', 'HEAD');
}

export interface Harness {
  app: FastifyInstance;
  store: SqliteStore;
  hub: EventHub;
  events: EventLog;
  control: TaskControl & { wakes: number; interrupted: string[] };
  tokens: { alice: string; bob: string; admin: string };
  /** The registered repository `app` (a real git repository) and its one commit. */
  repo: { name: string; path: string; sha: string };
  mirror: RepoMirror;
  auth(who: 'alice' | 'bob' | 'admin'): { authorization: string };
  /** A body `POST /v1/tasks` accepts: the registered `app` at its commit. */
  submitBody(overrides?: Record<string, unknown>): Record<string, unknown>;
  createTask(owner: 'alice' | 'bob', overrides?: Record<string, unknown>): Promise<Task>;
  close(): Promise<void>;
}

/**
 * An app on an in-memory SQLite store with users alice, bob (users) and root (admin), and the
 * repository `app` registered from a real git repository in a temporary directory (no forge:
 * the mirror is made from the path itself).
 */
export async function harness(options: { deps?: Partial<AppDeps>; path?: string; registryTimeoutMs?: number } = {}): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'dockhand-api-'));
  const store = new SqliteStore(options.path ?? ':memory:');
  const hub = new EventHub();
  const events = new EventLog(store, hub);
  const control = {
    wakes: 0,
    interrupted: [] as string[],
    wake() { control.wakes += 1; },
    interrupt(taskId: string) { control.interrupted.push(taskId); },
  };
  await store.createUser('alice', 'user');
  await store.createUser('bob', 'user');
  const root = await store.createUser('root', 'admin');
  const tokens = {
    alice: (await store.createToken('alice')).token,
    bob: (await store.createToken('bob')).token,
    admin: (await store.createToken('root')).token,
  };
  const path = join(dir, 'app');
  const sha = makeGitRepo(path);
  const mirror = new RepoMirror(join(dir, 'data'), { sources: registeredSource(store) });
  const repos = new RepoRegistry({ store, mirror, ...(options.registryTimeoutMs ? { timeoutMs: options.registryTimeoutMs } : {}) });
  await repos.register({ name: 'app', source: path }, root);
  const baseFiles: BaseFiles = { read: async (_repo, _sha, file) => (file === 'src/a.ts' ? 'one\ntwo\nthree\n' : null) };
  const secrets = await RepositorySecrets.open(new SqliteSecretRows(store.db), { dataDir: dir });
  const app = await buildApp({ store, repos, hub, events, control, baseFiles, secrets, ...options.deps });
  return {
    app, store, hub, events, control, tokens, mirror,
    repo: { name: 'app', path, sha },
    auth: (who) => ({ authorization: `Bearer ${tokens[who]}` }),
    submitBody: (overrides = {}) => taskBody({ context: { repo: 'app', baseSha: sha }, ...overrides }),
    async createTask(owner, overrides = {}) {
      const { task, events: created } = await store.createTask(owner, CreateTaskRequest.parse(taskBody(overrides)));
      events.published(created);
      return task;
    },
    async close() {
      mirror.close();
      await app.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
