import { execFileSync, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { z } from 'zod';
import { apiJson } from '../support/api-json';
import { ServerFrame, Task, TaskEvent } from '@dockhand/protocol';
import { InMemoryPullRequestStore, LocalForge } from '../../server/src/forge';
import { startReplayServer, type ReplayServer } from '../../server/src/model/replay/server';
import { createSandboxService } from '../../server/src/sandbox/create';
import { RepoMirror } from '../../server/src/sandbox/mirror';
import { PostgresStore } from '../../server/src/store/postgres';
import { createFixtureRepo, type FixtureRepo } from '../support/fixture-repo';
import { freePort, startDockhandServe, type DockhandServe } from '../support/local-server';
import { createNamespaces, NAMESPACE_NETWORK, type Namespace } from '../support/netns';
import { startPrivatePostgres, type PrivatePostgres } from '../support/private-postgres';
import { registerRepo } from '../support/register-repo';

/*
 * The fleet as separate processes on a real Postgres: two API replicas (`serve --role api`) and
 * two workers (`serve --role worker`), each worker in a network namespace of its own that reaches
 * Postgres and the replay model only over its veth address (its loopback is its own). A task goes
 * in through one replica, runs on a worker in a real gVisor sandbox, and its events reach a
 * WebSocket client on a replica through LISTEN/NOTIFY. Then the failures:
 *  - `kill -9` of the worker in the middle of a tool call: the other worker resumes the task once
 *    the lease expires, and after approval there is exactly one push and one PR;
 *  - `kill -9` of the replica the client watches: the client reconnects to the other replica from
 *    its last seq and ends with every event exactly once;
 *  - the network of the worker that runs the next task is cut during a tool call: it stops before
 *    its lease can be taken over, the other worker resumes the task, and when the link comes back
 *    the cut-off worker's late write is refused by the lease fence (its log says so, and the log
 *    holds no result of the interrupted call).
 * Shared between the processes besides Postgres: the filesystem, for the fixture repository (the
 * registered source) and the local forge's bare repository (standing in for GitHub), and the
 * node's Docker engine. Nothing goes over a shared loopback.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const SESSION = 'scale-out';
const LEASE_SECONDS = 15;

let postgres: PrivatePostgres;
let namespaces: Namespace[] = [];
let replay: ReplayServer;
let root: string;
let fixture: FixtureRepo;
let bare: string;
let token: string;
const apis: DockhandServe[] = [];
const workers = new Map<string, { child: ChildProcess; output: () => string; namespace: Namespace }>();
const taskIds: string[] = [];

/** Progress with timestamps, for a run that times out on a loaded machine (DOCKHAND_TEST_PROGRESS=file). */
function step(what: string): void {
  if (process.env.DOCKHAND_TEST_PROGRESS) appendFileSync(process.env.DOCKHAND_TEST_PROGRESS, `${new Date().toISOString()} ${what}\n`);
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((done) => {
    if (child.exitCode !== null || child.signalCode !== null) done();
    else child.once('exit', () => done());
  });
}

function dataDir(name: string): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  // The local forge is the one GitHub would be: the same repository for every process.
  try {
    symlinkSync(join(root, 'forge'), join(dir, 'forge'));
  } catch {
    // Already linked (a restarted worker).
  }
  return dir;
}

function fleetEnv(name: string, databaseHost: string, modelHost: string): Record<string, string> {
  return {
    DOCKHAND_DATA_DIR: dataDir(name),
    DOCKHAND_DATABASE_URL: postgres.url(databaseHost),
    DOCKHAND_MODEL_BASE_URL: `http://${modelHost}:${new URL(replay.url).port}`,
    DOCKHAND_REPLAY_SESSION: SESSION,
    DOCKHAND_LEASE_SECONDS: String(LEASE_SECONDS),
    DOCKHAND_POLL_MS: '200',
    DOCKHAND_LOG_LEVEL: 'info',
    // The test polls the REST API; the per-user request limit is not what is under test here.
    DOCKHAND_RATE_LIMIT_PER_MINUTE: '100000',
  };
}

async function startApi(name: string): Promise<DockhandServe> {
  const api = await startDockhandServe(await freePort(), { ...fleetEnv(name, '127.0.0.1', '127.0.0.1'), DOCKHAND_ROLE: 'api' });
  apis.push(api);
  return api;
}

/** A worker inside `namespace`: Postgres and the model at the host end of its veth pair. */
async function startWorker(name: string, namespace: Namespace): Promise<void> {
  const env = { ...process.env, ...fleetEnv(name, namespace.hostAddress, namespace.hostAddress), DOCKHAND_ROLE: 'worker' };
  const child = namespace.spawn(process.execPath, ['--import', 'tsx', 'server/src/cli/bin.ts', 'serve'], { env, cwd: ROOT });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  workers.set(name, { child, output: () => output, namespace });
  const end = Date.now() + 240_000;
  while (!output.includes('dockhand worker claiming tasks')) {
    if (child.exitCode !== null) throw new Error(`worker ${name} exited early:\n${output}`);
    if (Date.now() > end) throw new Error(`worker ${name} did not start within 240 s:\n${output}`);
    await new Promise((done) => setTimeout(done, 100));
  }
}

/** Worker names are their store ids: the log line that says it is claiming names it. */
function workerId(name: string): string {
  const match = /"worker":"([^"]+)"/.exec(workers.get(name)?.output() ?? '');
  if (!match?.[1]) throw new Error(`no worker id in ${name}'s log`);
  return match[1];
}

function api<T>(replica: DockhandServe, method: string, path: string, schema: z.ZodType<T>, body?: unknown): Promise<T> {
  return apiJson(replica.url, token, method, path, schema, body);
}

const Events = z.object({ events: z.array(TaskEvent) });
const eventsOf = (replica: DockhandServe, id: string) => api(replica, 'GET', `/v1/tasks/${id}/events?after=0&limit=10000`, Events).then((r) => r.events);

function diagnostics(): string {
  return [...workers.entries()].map(([name, worker]) => `--- ${name}\n${worker.output().slice(-3000)}`).join('\n');
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, ms = 420_000): Promise<T> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}\n${diagnostics()}`);
}

/**
 * A client of the event stream as the extension is one: it keeps every event it was sent and,
 * when its replica goes away, connects to another from the last seq it holds.
 */
class EventWatcher {
  readonly events: Array<{ event: TaskEvent; replica: string }> = [];
  private socket: WebSocket | undefined;
  closed: Promise<void> = Promise.resolve();

  constructor(private readonly taskId: string) {}

  get lastSeq(): number {
    return this.events.at(-1)?.event.seq ?? 0;
  }

  connect(replica: DockhandServe, name: string): Promise<void> {
    const url = `${replica.url.replace('http', 'ws')}/v1/tasks/${this.taskId}/events?after=${this.lastSeq}&token=${token}`;
    const socket = new WebSocket(url);
    this.socket = socket;
    this.closed = new Promise((done) => socket.once('close', () => done()));
    socket.on('error', () => undefined);
    socket.on('message', (data: Buffer) => {
      const frame = ServerFrame.parse(JSON.parse(data.toString()));
      if (frame.kind === 'event') this.events.push({ event: frame.event, replica: name });
    });
    return new Promise((done, fail) => {
      socket.once('open', () => done());
      socket.once('error', fail);
    });
  }

  find(predicate: (event: TaskEvent) => boolean): TaskEvent | undefined {
    return this.events.map((e) => e.event).find(predicate);
  }

  close(): void {
    this.socket?.close();
  }
}

async function leaseHolder(store: PostgresStore, taskId: string): Promise<string | undefined> {
  const lease = await store.getLease(taskId);
  return lease && lease.expiresAt > Date.now() ? lease.workerId : undefined;
}

function nameOf(id: string): string {
  const name = [...workers.keys()].find((key) => workerId(key) === id);
  if (!name) throw new Error(`worker ${id} is not one of ours`);
  return name;
}

const isSleep = (event: TaskEvent) => event.type === 'tool.called' && event.data.name === 'run_command';

let probe: PostgresStore;

beforeAll(async () => {
  execFileSync('bash', ['sandbox-images/base/build.sh'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  step('beforeAll');
  namespaces = createNamespaces(2);
  postgres = await startPrivatePostgres({ listen: namespaces.map((n) => n.hostAddress), trustNetwork: NAMESPACE_NETWORK });
  replay = await startReplayServer({ host: '0.0.0.0' });
  replay.addCassette(SESSION, {
    turns: [
      { name: 'fix', content: [{ type: 'tool_use', name: 'edit_file', input: { path: 'src/calc.js', command: 'replace', old_text: 'let index = 1;', new_text: 'let index = 0;' } }] },
      { name: 'a tool call the worker dies or is cut off during', content: [{ type: 'tool_use', name: 'run_command', input: { command: 'sleep 2' } }] },
      {
        name: 'finish on the other worker',
        expect: { toolResultContains: 'Interrupted: the server stopped while this tool call was running' },
        content: [{ type: 'tool_use', name: 'finish', input: { summary: 'average() now starts summing at index 0.' } }],
      },
    ],
  });
  replay.addCassette(`${SESSION}-review`, { turns: [{ content: [{ type: 'tool_use', name: 'submit_review', input: { approved: true, problems: [], summary: 'Minimal, correct fix.' } }] }] });
  root = mkdtempSync(join(tmpdir(), 'dockhand-scale-out-'));
  fixture = createFixtureRepo('buggy-calc');
  fixture.commit({
    'package-lock.json': `${JSON.stringify({ name: 'buggy-calc', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'buggy-calc', version: '1.0.0' } } }, null, 2)}\n`,
  }, 'lockfile');
  bare = await new LocalForge({ dataDir: join(root, 'forge'), store: new InMemoryPullRequestStore() }).createRepository('calc', fixture.path);
  // The snapshot is built here, in the host's network namespace: a build's egress proxy listens on
  // the Docker network's gateway, which a worker inside its own namespace cannot bind (EADDRNOTAVAIL)
  // although it shares the host's engine. In a real deployment worker and engine share a host
  // network; the workers then find this snapshot by its key (repository name, root commits, recipe).
  await prebuildSnapshot('calc', fixture.path, fixture.sha);
  step('snapshot built');
  probe = await PostgresStore.open({ url: postgres.url('127.0.0.1'), poolSize: 2 });
  await probe.createUser('alice', 'user');
  token = (await probe.createToken('alice')).token;
  await probe.createUser('root', 'admin');
  const adminToken = (await probe.createToken('root', 'tests: repo registration')).token;
  const [first] = await Promise.all([startApi('api-1'), startApi('api-2')]);
  step('api replicas up');
  await registerRepo(first!.url, adminToken, 'calc', fixture.path);
  step('registered');
  await Promise.all([startWorker('worker-a', namespaces[0]!), startWorker('worker-b', namespaces[1]!)]);
  step('workers up');
}, 600_000);

async function prebuildSnapshot(repo: string, source: string, sha: string): Promise<void> {
  const dataDir = join(root, 'prebuild');
  const service = await createSandboxService({ dataDir, ownerId: `scale-out-prebuild-${process.pid}`, mirror: new RepoMirror(dataDir, { sources: () => source }) });
  try {
    const acquired = await service.acquire({ repo, baseSha: sha, taskId: 'scale-out-prebuild' });
    await service.release(acquired.sandbox);
  } finally {
    await service.shutdown();
  }
}

afterAll(async () => {
  for (const worker of workers.values()) {
    worker.child.kill('SIGKILL');
    await exited(worker.child);
  }
  for (const replica of apis) {
    replica.child.kill('SIGKILL');
    await exited(replica.child);
  }
  // Sandboxes the killed workers left. One may be in removal already (a worker released it as it
  // was killed): `docker rm` then fails for it, so what is still listed afterwards is what counts.
  const leftOf = (id: string) => execFileSync('docker', ['ps', '-aq', '--filter', `label=dockhand.task=${id}`], { encoding: 'utf8' }).trim();
  for (const id of taskIds) {
    const left = leftOf(id);
    if (left) spawnSync('docker', ['rm', '-f', ...left.split('\n')], { stdio: 'ignore' });
  }
  await waitFor('the tasks\' sandboxes to be gone', () => (taskIds.every((id) => leftOf(id) === '') ? true : undefined), 30_000).catch(() => undefined);
  await probe?.close();
  await replay?.close();
  postgres?.stop();
  for (const namespace of namespaces) namespace.remove();
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('scale-out: API replicas and workers as separate processes in their own network namespaces', () => {
  it('a task survives kill -9 of its worker and of the replica a client watches, and is pushed once', async () => {
    const [api1, api2] = apis as [DockhandServe, DockhandServe];
    const { id } = await api(api1, 'POST', '/v1/tasks', z.object({ id: z.string() }), {
      ticket: { kind: 'text', title: 'average() returns the wrong value', body: 'average([1, 2, 3]) should be 2.' },
      context: { repo: 'calc', baseSha: fixture.sha },
    });
    taskIds.push(id);
    const watcher = new EventWatcher(id);
    await watcher.connect(api1, 'api-1');

    // Live on api-1 from a worker: the tool call starts; kill its worker, then the replica.
    const called = await waitFor('the tool call to start', () => {
      const failed = watcher.find((e) => e.type === 'task.failed');
      if (failed) throw new Error(`task failed: ${JSON.stringify(failed.data)}\n${diagnostics()}`);
      return watcher.find(isSleep);
    });
    const holder = await leaseHolder(probe, id);
    step(`task 1 tool call on ${holder}`);
    expect(holder).toBeDefined();
    const victim = workers.get(nameOf(holder!))!;
    victim.child.kill('SIGKILL');
    apis[0]!.child.kill('SIGKILL');
    await Promise.all([exited(victim.child), exited(api1.child), watcher.closed]);
    const seenBeforeKill = watcher.events.length;
    expect(watcher.find((e) => e.type === 'tool.finished' && called.type === 'tool.called' && e.data.toolUseId === called.data.toolUseId)).toBeUndefined();

    // The client carries on from api-2; the other worker takes the task once the lease expires.
    await watcher.connect(api2, 'api-2');
    step('killed; watching on api-2');
    const resumedBy = await waitFor('another worker to take the task', async () => {
      const now = await leaseHolder(probe, id);
      return now && now !== holder ? now : undefined;
    });
    step('task 1 taken over');
    await waitFor('awaiting_review', () => {
      const state = [...watcher.events].reverse().find((e) => e.event.type === 'task.state')?.event;
      if (state?.type === 'task.state' && ['failed', 'cancelled', 'budget_exhausted'].includes(state.data.state)) throw new Error(`task ended ${state.data.state}\n${diagnostics()}`);
      return state?.type === 'task.state' && state.data.state === 'awaiting_review' ? true : undefined;
    });
    step('task 1 in review');
    await api(api2, 'POST', `/v1/tasks/${id}/review`, Task, { action: 'approve', comments: [] });
    const done = await waitFor('pr_open', async () => {
      const task = await api(api2, 'GET', `/v1/tasks/${id}`, Task);
      if (task.state === 'failed') throw new Error(`push failed: ${task.error}\n${diagnostics()}`);
      return task.state === 'pr_open' ? task : undefined;
    });
    expect(done.prUrl).toBe('dockhand-local://calc/pulls/1');
    await waitFor('the last event on the client', () => (watcher.lastSeq === done.lastSeq ? true : undefined), 10_000).catch(() => undefined);

    // The client holds every event exactly once, in order, across the two replicas.
    const log = await eventsOf(api2, id);
    expect(watcher.events.map((e) => e.event.seq)).toEqual(log.map((e) => e.seq));
    expect(log.map((e) => e.seq)).toEqual(Array.from({ length: log.length }, (_, i) => i + 1));
    expect(seenBeforeKill).toBeGreaterThan(0);
    expect(watcher.events.slice(seenBeforeKill).every((e) => e.replica === 'api-2')).toBe(true);
    expect(watcher.events.length).toBeGreaterThan(seenBeforeKill);
    // Resumed on the other worker (a second sandbox), one push, one PR, one commit.
    expect(resumedBy).not.toBe(holder);
    // At least two: the victim's and the taker's. A worker whose lease renewal runs late (load) aborts
    // its run, releases the sandbox and starts another when it claims the task again, so more is legal.
    expect(log.filter((e) => e.type === 'sandbox.ready').length).toBeGreaterThanOrEqual(2);
    expect(log.filter((e) => e.type === 'file.changed')).toHaveLength(1);
    expect(log.filter((e) => e.type === 'pr.opened')).toHaveLength(1);
    const opened = log.find((e) => e.type === 'pr.opened');
    const branch = opened?.type === 'pr.opened' ? opened.data.branch : '';
    const commits = execFileSync('git', ['-C', bare, 'rev-list', `${fixture.sha}..${branch}`], { encoding: 'utf8' }).trim().split('\n');
    expect(commits).toHaveLength(1);
    watcher.close();

    // The killed worker comes back (same node, same data directory) for the next test.
    await startWorker(nameOf(holder!) === 'worker-a' ? 'worker-a' : 'worker-b', victim.namespace);
    // Two sandbox starts, a verified stop in gVisor and a push: ~2 min on a quiet machine, more at load 30+.
  }, 900_000);

  it('a worker cut off from Postgres stops; the other resumes the task and the late write is refused by the fence', async () => {
    const replica = apis[1]!;
    const { id } = await api(replica, 'POST', '/v1/tasks', z.object({ id: z.string() }), {
      ticket: { kind: 'text', title: 'average() is off by one', body: 'average([1, 2, 3]) should be 2.' },
      context: { repo: 'calc', baseSha: fixture.sha },
    });
    taskIds.push(id);
    const watcher = new EventWatcher(id);
    await watcher.connect(replica, 'api-2');
    const called = await waitFor('the tool call to start', () => {
      const failed = watcher.find((e) => e.type === 'task.failed');
      if (failed) throw new Error(`task failed: ${JSON.stringify(failed.data)}\n${diagnostics()}`);
      return watcher.find(isSleep);
    });
    const holder = await leaseHolder(probe, id);
    const cutOff = workers.get(nameOf(holder!))!;
    // The tool call (2 s) ends while the link is down (the worker stops itself only at 60% of its
    // 15 s lease): its result is written into a dead link.
    cutOff.namespace.cut();
    step(`task 2: cut ${holder}`);
    const resumedBy = await waitFor('another worker to take the task', async () => {
      const now = await leaseHolder(probe, id);
      return now && now !== holder ? now : undefined;
    }, 60_000);
    cutOff.namespace.restore();
    step(`task 2 resumed by ${resumedBy}; link restored`);
    // Either the late write reaches Postgres once the link is back and the fence refuses it, or (a new connection
    // fails fast with EHOSTUNREACH while the link is down) the worker gives the run up on the dead link. Which one
    // depends on whether the pool had a connection open; in neither case may the result land (checked below).
    const outcome = await waitFor('the cut-off worker to hear its write was refused, or to give the run up on the dead link', () => {
      const output = cutOff.output();
      if (output.includes('the write was refused')) return 'refused' as const;
      return output.includes('"msg":"task run failed"') && output.includes('EHOSTUNREACH') ? ('unreachable' as const) : undefined;
    }, 60_000);
    step(`task 2: the cut-off worker's late write was ${outcome}`);
    await waitFor('awaiting_review', async () => ((await api(replica, 'GET', `/v1/tasks/${id}`, Task)).state === 'awaiting_review' ? true : undefined));
    const log = await eventsOf(replica, id);
    expect(resumedBy).not.toBe(holder);
    expect(log.map((e) => e.seq)).toEqual(Array.from({ length: log.length }, (_, i) => i + 1));
    // Nothing of the interrupted call's result landed; the resumed model was told it was interrupted.
    const callId = called.type === 'tool.called' ? called.data.toolUseId : '';
    expect(log.some((e) => e.type === 'tool.finished' && e.data.toolUseId === callId)).toBe(false);
    if (outcome === 'refused') expect(cutOff.output()).toMatch(new RegExp(`lease lost: ${holder}'s lease on task ${id} \\(epoch \\d+\\) is now held by ${resumedBy}`));
    await api(replica, 'POST', `/v1/tasks/${id}/review`, Task, { action: 'reject', comments: [] });
    watcher.close();
  }, 600_000);
});
