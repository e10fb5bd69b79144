import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import type { TaskEvent } from '@dockhand/protocol';
import { contractRequest, describeStoreContract } from './contract.test-support';
import { EventLog } from './hub';
import { withLeaseFence } from './lease-fence';
import { PostgresStore } from './postgres';
import { hashToken } from './sqlite';
import { POSTGRES_MIGRATIONS } from './postgres-migrations';
import { PostgresEventHub, type EventNotice } from './postgres-hub';
import { dropSchema, openTestStore, testDatabaseUrl, testSchema } from './postgres.test-support';

// The same contract as SQLite, on a real PostgreSQL 15 (.ci/needs/postgres.sh).
describeStoreContract('Postgres', async () => {
  const { store, dispose } = await openTestStore();
  return { store, dispose };
});

const text = (i: number) => ({ type: 'assistant.text' as const, data: { turn: 1, text: `line ${i}` } });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/**
 * Several "processes" on one schema: each has its own store (its own pool of connections), as an
 * API replica and workers would.
 */
describe('Postgres store shared by several processes', () => {
  let url: string;
  let schema: string;
  let stores: PostgresStore[];
  let hubs: PostgresEventHub[];
  const open = async () => {
    const store = await PostgresStore.open({ url, schema, poolSize: 4 });
    stores.push(store);
    return store;
  };
  const hubOf = async (store: PostgresStore, reconnectMs = 100, heldEvents = true) => {
    const hub = new PostgresEventHub(store, { reconnectMs, pingMs: 500, heldEvents });
    hubs.push(hub);
    await hub.start();
    return hub;
  };
  beforeEach(async () => {
    url = await testDatabaseUrl();
    schema = testSchema();
    stores = [];
    hubs = [];
  });
  afterEach(async () => {
    for (const hub of hubs) await hub.close();
    for (const store of stores) await store.close();
    await dropSchema(url, schema);
  });

  /** The test's schema as a database made before migration `id` had it, then `fill` writes its rows. */
  async function databaseBefore(id: number, fill: (client: pg.Client) => Promise<void>): Promise<void> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`CREATE SCHEMA ${schema}`);
      await client.query(`SET search_path TO ${schema}`);
      await client.query('CREATE TABLE migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
      for (const migration of POSTGRES_MIGRATIONS.filter((m) => m.id < id)) {
        await client.query(migration.sql);
        await client.query('INSERT INTO migrations (id, name, applied_at) VALUES ($1, $2, $3)', [migration.id, migration.name, '2026-01-01T00:00:00.000Z']);
      }
      await fill(client);
    } finally {
      await client.end();
    }
  }

  it('a token from a database made before expiry and scopes keeps working: no expiry, every scope of its role', async () => {
    await databaseBefore(5, async (client) => {
      await client.query("INSERT INTO users (name, role, created_at) VALUES ('root', 'admin', '2026-01-01T00:00:00.000Z')");
      await client.query("INSERT INTO tokens (id, user_name, hash, label, created_at) VALUES ('tok_old', 'root', $1, '', '2026-01-01T00:00:00.000Z')", [hashToken('dh_from_before')]);
    });
    const store = await open();
    const auth = await store.authenticate('dh_from_before');
    expect(auth?.user).toMatchObject({ name: 'root', role: 'admin' });
    expect(auth?.token).toEqual({ id: 'tok_old', user: 'root', label: '', createdAt: '2026-01-01T00:00:00.000Z' });
  });

  it('pull requests made before the counter: found by branch, and the next number follows them', async () => {
    const record = (number: number, branch: string) => JSON.stringify({
      repo: 'r', number, title: 'Fix', body: 'b', branch, base: 'main', headSha: 'c'.repeat(40), draft: false, state: 'open', createdAt: '2026-01-01T00:00:00.000Z',
    });
    await databaseBefore(6, async (client) => {
      for (const [number, branch] of [[1, 'dockhand/1-a'], [2, 'dockhand/2-b'], [3, 'dockhand/1-a']] as const) {
        await client.query('INSERT INTO pull_requests (repo, number, record) VALUES ($1, $2, $3)', ['r', number, record(number, branch)]);
      }
    });
    const store = await open();
    expect(await store.pullRequests.findByBranch('r', 'dockhand/1-a')).toMatchObject({ number: 3, branch: 'dockhand/1-a' });
    expect(await store.pullRequests.findByBranch('r', 'dockhand/2-b')).toMatchObject({ number: 2 });
    const next = await store.pullRequests.insert({ repo: 'r', title: 'Next', body: 'b', branch: 'dockhand/4-c', base: 'main', headSha: 'c'.repeat(40), draft: false, state: 'open', createdAt: '2026-01-02T00:00:00.000Z' });
    expect(next.number).toBe(4);
    expect(await store.pullRequests.get('r', 4)).toEqual(next);
  });

  it('migrates once when several processes start at the same moment', async () => {
    const [first] = await Promise.all([open(), open(), open(), open(), open()]);
    const { rows } = await first!.pool.query('SELECT id FROM migrations ORDER BY id');
    expect(rows.map((row: { id: number }) => row.id)).toEqual(POSTGRES_MIGRATIONS.map((m) => m.id));
  });

  it('claims: one transaction per worker, normal before routine and oldest first, no task claimed twice', async () => {
    const api = await open();
    const ids: { routine: string[]; normal: string[] } = { routine: [], normal: [] };
    for (let i = 0; i < 4; i++) ids.routine.push((await api.createTask('alice', { ...contractRequest, priority: 'routine' })).task.id);
    for (let i = 0; i < 8; i++) ids.normal.push((await api.createTask('alice', contractRequest)).task.id);
    const workers = [await open(), await open(), await open()];
    const first = await workers[0]!.claimRunnable('w0', 3, 30_000);
    expect(first.map((claim) => claim.task.id)).toEqual(ids.normal.slice(0, 3));
    expect(new Set(first.map((claim) => claim.epoch)).size).toBe(3);
    // The rest, claimed by three workers at once until nothing is left.
    const claimed = new Map<string, string>();
    await Promise.all(workers.map(async (worker, index) => {
      for (;;) {
        const claims = await worker.claimRunnable(`w${index}`, 2, 30_000);
        if (claims.length === 0) return;
        for (const claim of claims) {
          expect(claimed.has(claim.task.id)).toBe(false);
          claimed.set(claim.task.id, `w${index}`);
        }
      }
    }));
    expect([...claimed.keys()].sort()).toEqual([...ids.normal.slice(3), ...ids.routine].sort());
    expect((await api.getLease(ids.routine[0]!))?.workerId).toBe(claimed.get(ids.routine[0]!));
    expect(await api.listRunnable(10)).toEqual([]);
  });

  it('an expired lease is claimed by another worker with a new epoch; a worker never re-claims what it runs', async () => {
    const api = await open();
    const { task } = await api.createTask('alice', contractRequest);
    const w1 = await open();
    const w2 = await open();
    const [held] = await w1.claimRunnable('w1', 1, 300);
    expect(held?.task.id).toBe(task.id);
    expect(await w2.claimRunnable('w2', 1, 300)).toEqual([]);
    expect(await w1.claimRunnable('w1', 1, 300, { exclude: [task.id] })).toEqual([]);
    await sleep(350);
    const [taken] = await w2.claimRunnable('w2', 1, 30_000);
    expect(taken?.task.id).toBe(task.id);
    expect(taken!.epoch).toBeGreaterThan(held!.epoch);
    // The first claim moved the queued task to provisioning in its own transaction; a takeover of
    // an active task adds no state of its own.
    expect(held?.task.state).toBe('provisioning');
    expect(taken?.task.state).toBe('provisioning');
    const states = (await api.listEvents(task.id)).filter((e) => e.type === 'task.state').map((e) => e.type === 'task.state' && e.data.state);
    expect(states).toEqual(['queued', 'provisioning']);
    expect((await api.getTask(task.id))?.lastSeq).toBe(held?.task.lastSeq);
    expect(await w1.renewLease(task.id, 'w1', 30_000)).toBe(false);
    expect(await api.getLease(task.id)).toMatchObject({ workerId: 'w2', epoch: taken!.epoch });
  });

  it('the fence: a worker whose lease expired or was taken over can write nothing for the task; the holder and the API can', async () => {
    const api = await open();
    const { task } = await api.createTask('alice', contractRequest);
    const { approval } = await api.requestApproval(task.id, { kind: 'command', reason: 'rm', command: 'rm -rf build' });
    const stale = await open();
    const fresh = await open();
    const [old] = await stale.claimRunnable('w1', 1, 400);
    const oldFence = { taskId: task.id, workerId: 'w1', epoch: old!.epoch };
    await withLeaseFence(oldFence, () => stale.appendEvent(task.id, text(1)));
    await sleep(450);
    // Expired, not yet taken over: already refused.
    await expect(withLeaseFence(oldFence, () => stale.appendEvent(task.id, text(2)))).rejects.toThrow(/lease lost: .*has expired/);
    const [now] = await fresh.claimRunnable('w2', 1, 30_000);
    const newFence = { taskId: task.id, workerId: 'w2', epoch: now!.epoch };
    const before = await api.getTask(task.id);
    await expect(withLeaseFence(oldFence, () => stale.appendEvent(task.id, text(3)))).rejects.toMatchObject({ code: 'conflict', message: expect.stringMatching(/held by w2/) });
    await expect(withLeaseFence(oldFence, () => stale.setResult(task.id, { diff: 'stale', summary: 'stale' }))).rejects.toThrow(/lease lost/);
    await expect(withLeaseFence(oldFence, () => stale.requestApproval(task.id, { kind: 'push', reason: 'stale' }))).rejects.toThrow(/lease lost/);
    await expect(withLeaseFence(oldFence, () => stale.resolveApproval(task.id, approval.id, { decision: 'denied', by: 'dockhand' }))).rejects.toThrow(/lease lost/);
    expect(await withLeaseFence(oldFence, () => stale.renewLease(task.id, 'w1', 30_000))).toBe(false);
    // Nothing of the stale writes was kept.
    expect(await api.getTask(task.id)).toMatchObject({ lastSeq: before!.lastSeq });
    expect(await api.getResult(task.id)).toBeUndefined();
    expect((await api.listApprovals(task.id)).map((a) => [a.kind, a.state])).toEqual([['command', 'pending']]);
    // The holder writes under its fence; the API writes without one.
    await withLeaseFence(newFence, () => fresh.appendEvent(task.id, text(4)));
    await api.resolveApproval(task.id, approval.id, { decision: 'approved', by: 'alice' });
    expect((await api.listEvents(task.id)).map((e) => e.type).slice(-3)).toEqual(['assistant.text', 'assistant.text', 'approval.resolved']);
    // The same worker claiming again after expiry gets a new epoch: its older run stays fenced out.
    await fresh.releaseLease(task.id, 'w2');
    await expect(withLeaseFence(newFence, () => fresh.appendEvent(task.id, text(5)))).rejects.toThrow(/was released/);
    const [again] = await fresh.claimRunnable('w2', 1, 30_000);
    expect(again!.epoch).toBeGreaterThan(newFence.epoch);
    await expect(withLeaseFence(newFence, () => fresh.appendEvent(task.id, text(6)))).rejects.toThrow(/lease lost/);
  });

  it('live events: a subscriber on another process gets every event after it subscribed, in order, once', async () => {
    const worker = await open();
    const replica = await open();
    const hub = await hubOf(replica);
    const { task } = await worker.createTask('alice', contractRequest);
    const workerLog = new EventLog(worker, await hubOf(worker));
    const writing = (async () => {
      for (let i = 0; i < 120; i++) await workerLog.append(task.id, text(i));
    })();
    await until(async () => ((await replica.getTask(task.id))?.lastSeq ?? 0) > 40, 'the worker to be mid-way');
    // The WebSocket route's protocol: subscribe, read the store, then drop by seq what was read.
    const live: TaskEvent[] = [];
    hub.subscribe(task.id, (event) => live.push(event));
    const read = await replica.listEvents(task.id);
    await writing;
    const total = 122;
    await until(() => (live.at(-1)?.seq ?? 0) >= total, 'the last event to arrive live');
    const lastRead = read.at(-1)?.seq ?? 0;
    const seen = [...read.map((e) => e.seq), ...live.map((e) => e.seq).filter((seq) => seq > lastRead)];
    expect(seen).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    // Live events are consecutive from the first one on: no gap and no repeat.
    const liveSeqs = live.map((e) => e.seq);
    expect(liveSeqs).toEqual(Array.from({ length: liveSeqs.length }, (_, i) => (liveSeqs[0] ?? 0) + i));
  });

  it('live events: writes from two processes reach subscribers on both in the same order', async () => {
    const a = await open();
    const b = await open();
    const logA = new EventLog(a, await hubOf(a));
    const logB = new EventLog(b, await hubOf(b));
    const { task } = await a.createTask('alice', contractRequest);
    const onA: number[] = [];
    const onB: number[] = [];
    logA.hub.subscribe(task.id, (event) => onA.push(event.seq));
    logB.hub.subscribe(task.id, (event) => onB.push(event.seq));
    await Promise.all([
      (async () => { for (let i = 0; i < 40; i++) await logA.append(task.id, text(i)); })(),
      (async () => { for (let i = 0; i < 40; i++) await logB.append(task.id, { type: 'user.message', data: { from: 'alice', text: `note ${i}` } }); })(),
    ]);
    await until(() => onA.at(-1) === 82 && onB.at(-1) === 82, 'both hubs to reach seq 82');
    for (const seen of [onA, onB]) expect(seen).toEqual(Array.from({ length: seen.length }, (_, i) => (seen[0] ?? 0) + i));
  });

  it('live events: the notice carries the event, so a replica publishes it without reading the store; a big one is read', async () => {
    const worker = await open();
    const replica = await open();
    const hub = await hubOf(replica);
    const { task } = await worker.createTask('alice', contractRequest);
    const live: TaskEvent[] = [];
    hub.subscribe(task.id, (event) => live.push(event));
    const reads: number[] = [];
    const listEvents = replica.listEvents.bind(replica);
    replica.listEvents = (taskId, after, limit) => {
      reads.push(after ?? 0);
      return listEvents(taskId, after, limit);
    };
    for (let i = 0; i < 20; i++) await worker.appendEvent(task.id, text(i));
    await until(() => live.at(-1)?.seq === 22, 'seq 22 live');
    expect(reads).toEqual([]);
    expect(live.at(-1)).toEqual((await worker.listEvents(task.id)).at(-1));
    // 20 000 characters do not fit NOTIFY's 8000 bytes: the notice names it, the hub reads it.
    await worker.appendEvent(task.id, { type: 'user.message', data: { from: 'alice', text: 'x'.repeat(20_000) } });
    await until(() => live.at(-1)?.seq === 23, 'the big event live');
    expect(reads).toEqual([22]);
    expect(live.at(-1)?.type === 'user.message' && live.at(-1)?.data).toMatchObject({ text: 'x'.repeat(20_000) });
    expect(live.map((e) => e.seq)).toEqual(Array.from({ length: live.length }, (_, i) => (live[0]?.seq ?? 0) + i));
  });

  it('a connection killed mid-transaction fails that transaction only: no crash of the process, and the next write works', async () => {
    const store = await open();
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await expect(store.transaction(async (client) => {
        const { rows } = await client.query('SELECT pg_backend_pid() AS pid');
        await admin.query('SELECT pg_terminate_backend($1)', [(rows[0] as { pid: number }).pid]);
        // The reset reaches the client while it is checked out, between two statements.
        await sleep(300);
        await client.query('SELECT 1');
      })).rejects.toThrow();
    } finally {
      await admin.end();
    }
    const { task } = await store.createTask('alice', contractRequest);
    expect(task.state).toBe('queued');
  });

  it("live events on a worker: it does not hear other lease holders' writes, yet its subscribers get every event of the task it runs, in order", async () => {
    const api = await open();
    const worker = await open();
    const other = await open();
    const replicaHub = await hubOf(api);
    const workerHub = await hubOf(worker, 100, false);
    const workerNotices: EventNotice[] = [];
    workerHub.onNotice((notice) => workerNotices.push(notice));
    const { task } = await api.createTask('alice', contractRequest);
    const { task: elsewhere } = await api.createTask('alice', contractRequest);
    const [mine, theirs] = [await worker.claimRunnable('w1', 1, 30_000), await other.claimRunnable('w2', 1, 30_000)].map((claims) => claims[0]!);
    expect([mine?.task.id, theirs?.task.id]).toEqual([task.id, elsewhere.id]);
    const workerLog = new EventLog(worker, workerHub);
    const onWorker: number[] = [];
    const onReplica: number[] = [];
    workerHub.subscribe(task.id, (event) => onWorker.push(event.seq));
    replicaHub.subscribe(task.id, (event) => onReplica.push(event.seq));
    // Another worker's turns on its own task: the API replica hears them, this worker does not.
    await withLeaseFence({ taskId: elsewhere.id, workerId: 'w2', epoch: theirs!.epoch }, async () => {
      for (let i = 0; i < 3; i++) await other.appendEvent(elsewhere.id, text(i));
    });
    // This worker's own turns, a developer's message through the API between them, more turns.
    await withLeaseFence({ taskId: task.id, workerId: 'w1', epoch: mine!.epoch }, async () => {
      for (let i = 0; i < 3; i++) await workerLog.append(task.id, text(i));
    });
    await api.appendEvent(task.id, { type: 'user.message', data: { from: 'alice', text: 'also handle []' } });
    await withLeaseFence({ taskId: task.id, workerId: 'w1', epoch: mine!.epoch }, async () => {
      for (let i = 3; i < 6; i++) await workerLog.append(task.id, text(i));
    });
    const last = (await api.getTask(task.id))!.lastSeq;
    await until(() => onReplica.at(-1) === last && onWorker.at(-1) === last, 'every event on both hubs');
    expect(onReplica).toEqual(Array.from({ length: onReplica.length }, (_, i) => (onReplica[0] ?? 0) + i));
    // From the first notice it heard on: gap-free, each once (the message's notice set the start).
    expect(onWorker).toEqual(Array.from({ length: onWorker.length }, (_, i) => last - onWorker.length + 1 + i));
    expect(onWorker.length).toBeGreaterThanOrEqual(4);
    expect(workerNotices.some((n) => n.taskId === elsewhere.id && n.type === 'assistant.text')).toBe(false);
    expect(workerNotices.every((n) => !n.held)).toBe(true);
    expect(workerNotices.some((n) => n.taskId === task.id && n.type === 'user.message')).toBe(true);
  });

  it('live events: after the LISTEN connection is cut, what was written meanwhile still arrives, in order', async () => {
    const worker = await open();
    const replica = await open();
    // Reconnects only after the writes below are done: no later notice can mend the gap.
    const hub = await hubOf(replica, 3_000);
    const notices: EventNotice[] = [];
    hub.onNotice((notice) => notices.push(notice));
    const { task } = await worker.createTask('alice', contractRequest);
    const live: number[] = [];
    hub.subscribe(task.id, (event) => live.push(event.seq));
    await worker.appendEvent(task.id, { type: 'task.state', data: { state: 'running' } });
    await until(() => live.includes(3), 'seq 3');
    expect(notices.at(-1)).toMatchObject({ taskId: task.id, seq: 3, type: 'task.state', state: 'running' });
    // Written by no lease holder (an API replica's approval, say): the notice wakes the workers.
    expect(notices.at(-1)?.held).toBeUndefined();
    // Written under the lease's fence (the worker's own run): `held`, nothing to claim. (A claim
    // of an active task appends nothing.)
    const [claim] = await worker.claimRunnable('w1', 1, 30_000);
    await withLeaseFence({ taskId: task.id, workerId: 'w1', epoch: claim!.epoch }, () => worker.appendEvent(task.id, { type: 'task.state', data: { state: 'running' } }));
    await until(() => live.includes(4), 'seq 4');
    expect(notices.filter((n) => n.seq >= 3).map((n) => [n.seq, n.held])).toEqual([[3, undefined], [4, true]]);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const killed = await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [`dockhand-listen:${replica.channel}`]);
      expect(killed.rowCount).toBeGreaterThan(0);
    } finally {
      await admin.end();
    }
    // Written once the hub has seen its connection go (an append is quicker than that news).
    await until(() => !hub.listening, 'the hub to notice the cut');
    for (let i = 0; i < 10; i++) await worker.appendEvent(task.id, text(i));
    expect(hub.listening).toBe(false);
    await until(() => live.at(-1) === 14, 'the events written while the connection was down', 15_000);
    // Consecutive, each once (the creation's notices may still have been on their way when it
    // subscribed: seq 1 and 2 can come first, as the subscriber protocol allows).
    expect(live).toEqual(Array.from({ length: live.length }, (_, i) => (live[0] ?? 0) + i));
    expect(live.slice(-12)).toEqual(Array.from({ length: 12 }, (_, i) => i + 3));
    expect(hub.listening).toBe(true);
  });
});
