import type { FastifyInstance } from 'fastify';
import { CreateTaskRequest, type Task } from '@dockhand/protocol';
import { buildApp } from '../app';
import { EventHub, EventLog } from '../store/hub';
import { SqliteStore } from '../store/sqlite';
import type { AppDeps, BaseFiles, TaskControl } from './deps';

export const SHA = 'a'.repeat(40);

export function taskBody(overrides: Record<string, unknown> = {}) {
  return {
    ticket: { kind: 'text', title: 'Fix the off-by-one in paginate()' },
    context: { repo: '/srv/repos/app.git', baseSha: SHA },
    ...overrides,
  };
}

export interface Harness {
  app: FastifyInstance;
  store: SqliteStore;
  hub: EventHub;
  events: EventLog;
  control: TaskControl & { wakes: number; interrupted: string[] };
  tokens: { alice: string; bob: string; admin: string };
  auth(who: 'alice' | 'bob' | 'admin'): { authorization: string };
  createTask(owner: 'alice' | 'bob', overrides?: Record<string, unknown>): Promise<Task>;
  close(): Promise<void>;
}

/** An app on an in-memory SQLite store with users alice, bob (users) and root (admin). */
export async function harness(options: { deps?: Partial<AppDeps>; path?: string } = {}): Promise<Harness> {
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
  await store.createUser('root', 'admin');
  const tokens = {
    alice: (await store.createToken('alice')).token,
    bob: (await store.createToken('bob')).token,
    admin: (await store.createToken('root')).token,
  };
  const baseFiles: BaseFiles = { read: async (_repo, _sha, path) => (path === 'src/a.ts' ? 'one\ntwo\nthree\n' : null) };
  const app = await buildApp({ store, hub, events, control, baseFiles, ...options.deps });
  return {
    app, store, hub, events, control, tokens,
    auth: (who) => ({ authorization: `Bearer ${tokens[who]}` }),
    async createTask(owner, overrides = {}) {
      const { task, events: created } = await store.createTask(owner, CreateTaskRequest.parse(taskBody(overrides)));
      events.published(created);
      return task;
    },
    async close() {
      await app.close();
      await store.close();
    },
  };
}
