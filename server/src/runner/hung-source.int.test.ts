import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorBody } from '@dockhand/protocol';
import { makeGitRepo } from '../api/test-support';
import { loadConfig } from '../config';
import { registeredMirror, createFleet, type Fleet } from './fleet';
import { mirrorFirst } from './sandboxes';
import { FakeSandboxProvider, ScriptedAgent } from './testing/fakes';
import { SqliteStore } from '../store/sqlite';

/*
 * A repository source that never answers (a TCP port that accepts and says nothing, so git waits
 * in the TLS handshake forever): the git child is killed at its timeout, when the task is
 * cancelled and when the server shuts down; nothing waits on it and no git process is left.
 */

let dir: string;
let silent: Server;
let sockets: Socket[];
let hungUrl: string;
let fleet: Fleet | undefined;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dockhand-hung-'));
  sockets = [];
  silent = createServer((socket) => void sockets.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const address = silent.address();
  hungUrl = `https://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/never/answers.git`;
});
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => silent.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** git processes (and their remote helpers) still talking to the silent port. */
function gitProcessesFor(url: string): string[] {
  const port = new URL(url).port;
  const listing = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return listing.split('\n').filter((line) => line.includes(`127.0.0.1:${port}`) && /git/.test(line));
}

async function until(condition: () => boolean | Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function start(repoTimeoutMs: number) {
  // Fetches stop at no progress for the same short time as the short calls (a TLS handshake that never ends prints nothing).
  const config = loadConfig({ DOCKHAND_DATA_DIR: join(dir, 'data'), DOCKHAND_POLL_MS: '20', DOCKHAND_FETCH_INACTIVITY_SECONDS: String(Math.max(1, Math.round(repoTimeoutMs / 1000))) });
  const store = new SqliteStore(join(config.dataDir, 'dockhand.db'));
  const mirror = registeredMirror(config, store);
  const running = await createFleet(config, {
    store,
    mirror,
    repoTimeoutMs,
    sandboxes: mirrorFirst(new FakeSandboxProvider(), mirror),
    agent: new ScriptedAgent(async (input) => ({ outcome: 'finished', summary: 'nothing', diff: await input.sandbox.diff() })),
  });
  fleet = running;
  const admin = await store.createUser('root', 'admin');
  const token = (await store.createToken('root')).token;
  const inject = (method: 'GET' | 'POST', url: string, payload?: Record<string, unknown>) =>
    running.app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload === undefined ? {} : { payload }) });
  return { fleet: running, store, mirror, admin, inject };
}

const ticket = { kind: 'text', title: 'Fix it' };

describe('a source that never answers', () => {
  it('registration and submission give up at the timeout with 503 naming the field; nothing stored, no git left', async () => {
    const { store, mirror, admin, inject } = await start(1500);
    const registering = Date.now();
    const registered = await inject('POST', '/v1/repos', { name: 'hung', source: hungUrl });
    expect(Date.now() - registering).toBeLessThan(10_000);
    expect(registered.statusCode).toBe(503);
    expect(ErrorBody.parse(JSON.parse(registered.body)).error).toMatchObject({ code: 'repository_unavailable', field: 'source' });
    expect(await store.getRepo('hung')).toBeUndefined();
    // A registration whose source stopped answering later.
    await store.putRepo({ name: 'hung', source: hungUrl, defaultBranch: 'main', owners: [], submitters: [], createdAt: new Date().toISOString(), createdBy: admin.name });
    const submitted = await inject('POST', '/v1/tasks', { ticket, context: { repo: 'hung', baseSha: 'c'.repeat(40) } });
    expect(submitted.statusCode).toBe(503);
    const error = ErrorBody.parse(JSON.parse(submitted.body)).error;
    expect(error).toMatchObject({ code: 'repository_unavailable', field: 'context.repo' });
    expect(error.message).toMatch(/no progress for 2 s|the source does not answer \(did not finish within [12] s\)/);
    expect((await store.listTasks({})).tasks).toEqual([]);
    expect(mirror.children.running).toBe(0);
    await until(() => gitProcessesFor(hungUrl).length === 0, 'git to be gone');
  });

  it('shutdown kills a hung fetch at once and does not wait for it', async () => {
    const { store, mirror, admin, inject } = await start(600_000);
    await store.putRepo({ name: 'hung', source: hungUrl, defaultBranch: 'main', owners: [], submitters: [], createdAt: new Date().toISOString(), createdBy: admin.name });
    const pending = inject('POST', '/v1/tasks', { ticket, context: { repo: 'hung', baseSha: 'c'.repeat(40) } });
    await until(() => mirror.children.running === 1 && gitProcessesFor(hungUrl).length > 0, 'the fetch to hang');
    const closing = Date.now();
    await fleet?.close();
    fleet = undefined;
    expect(Date.now() - closing).toBeLessThan(5000);
    expect((await pending).statusCode).toBe(503);
    expect(mirror.children.running).toBe(0);
    await until(() => gitProcessesFor(hungUrl).length === 0, 'git to be gone');
  });

  it('cancelling a task kills the fetch its sandbox waits on and frees the scheduler slot', async () => {
    const { fleet: running, store, mirror, inject } = await start(600_000);
    // Registered and submitted while the source answered...
    const source = join(dir, 'app');
    const sha = makeGitRepo(source);
    expect((await inject('POST', '/v1/repos', { name: 'app', source })).statusCode).toBe(201);
    const submitted = await inject('POST', '/v1/tasks', { ticket, context: { repo: 'app', baseSha: sha } });
    expect(submitted.statusCode).toBe(202);
    const { id } = JSON.parse(submitted.body);
    // ...then the mirror is lost and the source moves to a host that never answers.
    rmSync(join(dir, 'data', 'mirrors'), { recursive: true, force: true });
    const registration = await store.getRepo('app');
    await store.putRepo({ ...registration!, source: hungUrl, mirrorSource: hungUrl });
    // The scheduler (not started by createFleet) starts only now.
    const scheduler = running.scheduler;
    scheduler.start();
    try {
      await until(() => scheduler.active.includes(id) && gitProcessesFor(hungUrl).length > 0, 'the task to wait on the fetch');
      expect((await store.getTask(id))?.state).toBe('provisioning');
      expect((await inject('POST', `/v1/tasks/${id}/interrupt`)).statusCode).toBe(202);
      await until(() => scheduler.active.length === 0, 'the scheduler slot to be free', 5000);
      expect((await store.getTask(id))?.state).toBe('cancelled');
      expect(mirror.children.running).toBe(0);
      await until(() => gitProcessesFor(hungUrl).length === 0, 'git to be gone', 5000);
    } finally {
      await scheduler.stop();
    }
  });
});
