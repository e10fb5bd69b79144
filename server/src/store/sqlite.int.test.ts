import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CreateTaskRequest } from '@dockhand/protocol';
import Database from 'better-sqlite3';
import { SqliteStore, hashToken } from './sqlite';
import { MIGRATIONS } from './migrations';

const request = CreateTaskRequest.parse({
  ticket: { kind: 'text', title: 'Fix paginate' },
  context: { repo: '/srv/app.git', baseSha: 'a'.repeat(40) },
});

describe('SqliteStore on a real file', () => {
  let dir: string;
  let store: SqliteStore;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'dockhand-store-'));
    store = new SqliteStore(join(dir, 'dockhand.db'));
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs migrations once and uses WAL', async () => {
    expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
    await store.close();
    store = new SqliteStore(join(dir, 'dockhand.db'));
    const ids = store.db.prepare('SELECT id FROM migrations').pluck().all();
    expect(ids).toEqual(MIGRATIONS.map((m) => m.id));
  });

  it('stores tokens as hashes and authenticates by token', async () => {
    await store.createUser('alice', 'user');
    const { token, info } = await store.createToken('alice', 'laptop');
    const raw = store.db.prepare('SELECT hash FROM tokens').pluck().all();
    expect(raw).toEqual([hashToken(token)]);
    expect(JSON.stringify(store.db.prepare('SELECT * FROM tokens').all())).not.toContain(token);
    expect((await store.authenticate(token))?.user.name).toBe('alice');
    expect(await store.authenticate(`${token}x`)).toBeUndefined();
    expect(await store.revokeToken(info.id)).toBe(true);
    expect(await store.authenticate(token)).toBeUndefined();
  });

  it('a token from a database made before expiry and scopes keeps working: no expiry, every scope of its role', async () => {
    await store.close();
    const file = join(dir, 'old.db');
    // The schema as it was before migration 5, with a token in it.
    const old = new Database(file);
    old.exec('CREATE TABLE migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
    for (const migration of MIGRATIONS.filter((m) => m.id < 5)) {
      old.exec(migration.sql);
      old.prepare('INSERT INTO migrations (id, name, applied_at) VALUES (?, ?, ?)').run(migration.id, migration.name, '2026-01-01T00:00:00.000Z');
    }
    old.prepare("INSERT INTO users (name, role, created_at) VALUES ('root', 'admin', '2026-01-01T00:00:00.000Z')").run();
    old.prepare("INSERT INTO tokens (id, user_name, hash, label, created_at) VALUES ('tok_old', 'root', ?, '', '2026-01-01T00:00:00.000Z')").run(hashToken('dh_from_before'));
    old.close();
    store = new SqliteStore(file);
    const auth = await store.authenticate('dh_from_before');
    expect(auth?.user).toMatchObject({ name: 'root', role: 'admin' });
    expect(auth?.token).toEqual({ id: 'tok_old', user: 'root', label: '', createdAt: '2026-01-01T00:00:00.000Z' });
  });

  it('appends events with gap-free seq and projects state and usage', async () => {
    const { task, events } = await store.createTask('alice', request);
    expect(events.map((e) => e.seq)).toEqual([1, 2]);
    expect(task.state).toBe('queued');
    await store.appendEvent(task.id, { type: 'task.state', data: { state: 'running' } });
    await store.appendEvent(task.id, {
      type: 'model.turn',
      data: {
        turn: 1, model: 'm', costUsd: 0.5, stopReason: 'end_turn', contextTokens: 10, content: [],
        usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 100, cacheWriteTokens: 0 },
      },
    });
    const all = await store.listEvents(task.id);
    expect(all.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect((await store.listEvents(task.id, 2)).map((e) => e.seq)).toEqual([3, 4]);
    const after = await store.getTask(task.id);
    expect(after?.state).toBe('running');
    expect(after?.lastSeq).toBe(4);
    expect(after?.usage).toMatchObject({ turns: 1, cacheReadTokens: 100, costUsd: 0.5 });
  });

  it('refuses an invalid event and keeps nothing of it', async () => {
    const { task } = await store.createTask('alice', request);
    await expect(
      // @ts-expect-error deliberately wrong payload
      store.appendEvent(task.id, { type: 'task.state', data: { state: 'sleeping' } }),
    ).rejects.toThrow(/data\.state/);
    expect((await store.getTask(task.id))?.lastSeq).toBe(2);
  });

  it('rejects a duplicate (task_id, seq)', async () => {
    const { task } = await store.createTask('alice', request);
    expect(() => store.db.prepare("INSERT INTO events (task_id, seq, type, data, ts) VALUES (?, 1, 'x', '{}', 'now')").run(task.id)).toThrow(/UNIQUE/);
  });

  it('keeps pending approvals across a reopen and resolves them once', async () => {
    const { task } = await store.createTask('alice', request);
    const { approval } = await store.requestApproval(task.id, { kind: 'command', reason: 'rm -rf', command: 'rm -rf build', toolUseId: 'tu1' });
    await store.close();
    store = new SqliteStore(join(dir, 'dockhand.db'));
    expect((await store.listApprovals(task.id, 'pending')).map((a) => a.id)).toEqual([approval.id]);
    const first = await store.resolveApproval(task.id, approval.id, { decision: 'approved', by: 'alice' });
    expect(first?.event.type).toBe('approval.resolved');
    expect(await store.resolveApproval(task.id, approval.id, { decision: 'denied', by: 'alice' })).toBeUndefined();
  });

  it('leases: one holder until expiry; runnable excludes leased tasks; normal before routine', async () => {
    const routine = await store.createTask('alice', { ...request, priority: 'routine' });
    const normal = await store.createTask('alice', request);
    expect((await store.listRunnable(10, 1000)).map((t) => t.id)).toEqual([normal.task.id, routine.task.id]);
    expect(await store.acquireLease(normal.task.id, 'w1', 1000, 1000)).toBe(true);
    expect(await store.acquireLease(normal.task.id, 'w2', 1000, 1500)).toBe(false);
    expect((await store.listRunnable(10, 1500)).map((t) => t.id)).toEqual([routine.task.id]);
    expect(await store.acquireLease(normal.task.id, 'w2', 1000, 2001)).toBe(true);
    expect(await store.renewLease(normal.task.id, 'w1', 1000, 2002)).toBe(false);
  });

  it('pages tasks by cursor and filters by owner/state/repo', async () => {
    for (let i = 0; i < 5; i++) await store.createTask(i % 2 ? 'bob' : 'alice', request);
    const first = await store.listTasks({ limit: 2 });
    expect(first.tasks).toHaveLength(2);
    const second = await store.listTasks({ limit: 2, cursor: first.nextCursor });
    const third = await store.listTasks({ limit: 2, cursor: second.nextCursor });
    expect(third.tasks).toHaveLength(1);
    expect(third.nextCursor).toBeUndefined();
    const ids = [...first.tasks, ...second.tasks, ...third.tasks].map((t) => t.id);
    expect(new Set(ids).size).toBe(5);
    expect((await store.listTasks({ owner: 'bob' })).tasks).toHaveLength(2);
    expect((await store.listTasks({ repo: 'nope' })).tasks).toHaveLength(0);
  });

  it('keeps flaky test quarantine per repo', async () => {
    await store.flaky.quarantine('r', 'a.test > x', [{ testId: 'a.test > x', diffHash: 'h', outcome: 'failed', at: 'now' }]);
    expect((await store.flaky.list('r')).map((t) => t.testId)).toEqual(['a.test > x']);
    expect(await store.flaky.clear('r')).toBe(1);
  });
});
