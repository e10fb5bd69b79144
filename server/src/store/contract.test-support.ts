import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CreateTaskRequest, type NewEvent } from '@dockhand/protocol';
import type { BaselineStore } from '../feedback/types';
import type { RepoStore, Store } from './types';

/*
 * The `Store` contract: what every store must answer alike (SQLite embedded, Postgres for a fleet).
 * `contract-sqlite.test.ts` and `postgres.int.test.ts` run it. A store-specific behaviour (WAL,
 * reopening a file, fencing, NOTIFY) is tested beside that store, not here.
 */

/** What the fleet composes on: the `Store` port and test baselines (and registered repositories). */
export type ContractStore = Store & { readonly baselines: BaselineStore };

function keepsRepos(store: Store): store is Store & RepoStore {
  return ['putRepo', 'getRepo', 'listRepos', 'deleteRepo'].every((method) => method in store);
}

function repoStoreOf(store: Store): Store & RepoStore {
  if (keepsRepos(store)) return store;
  throw new Error('this store keeps no registered repositories (RepoStore), which the fleet needs');
}

export interface StoreUnderTest {
  store: ContractStore;
  /** Drops whatever the store left behind (a file, a schema). */
  dispose(): Promise<void>;
}

export const contractRequest = CreateTaskRequest.parse({
  ticket: { kind: 'text', title: 'Fix paginate' },
  context: { repo: '/srv/app.git', baseSha: 'a'.repeat(40) },
});

const turn = (costUsd: number, inputTokens: number): NewEvent => ({
  type: 'model.turn',
  data: {
    turn: 1, model: 'm', costUsd, stopReason: 'end_turn', contextTokens: 10, content: [],
    usage: { inputTokens, outputTokens: 5, cacheReadTokens: 100, cacheWriteTokens: 0 },
  },
});

export function describeStoreContract(name: string, open: () => Promise<StoreUnderTest>): void {
  describe(`Store contract: ${name}`, () => {
    let subject: StoreUnderTest;
    let store: ContractStore;
    beforeEach(async () => {
      subject = await open();
      store = subject.store;
    });
    afterEach(async () => {
      await store.close();
      await subject.dispose();
    });

    it('users: created, role updated on re-create, listed by name; a bad name is refused naming the field', async () => {
      await store.createUser('bob', 'user');
      await store.createUser('alice', 'user');
      await store.createUser('Zed', 'user');
      expect((await store.createUser('alice', 'admin')).role).toBe('admin');
      expect((await store.listUsers()).map((u) => u.name)).toEqual(['Zed', 'alice', 'bob']);
      expect(await store.getUser('nobody')).toBeUndefined();
      await expect(store.createUser('no spaces', 'user')).rejects.toMatchObject({ code: 'bad_request', field: 'name' });
    });

    it('tokens: authenticate by the plain token, never stored; revoked once; listed per user', async () => {
      await store.createUser('alice', 'user');
      await store.createUser('bob', 'user');
      const { token, info } = await store.createToken('alice', 'laptop');
      await store.createToken('bob');
      expect(info).toMatchObject({ user: 'alice', label: 'laptop' });
      expect((await store.authenticate(token))?.user.name).toBe('alice');
      expect(await store.authenticate(`${token}x`)).toBeUndefined();
      expect((await store.listTokens('alice')).map((t) => t.id)).toEqual([info.id]);
      expect(await store.listTokens()).toHaveLength(2);
      expect(await store.revokeToken(info.id)).toBe(true);
      expect(await store.revokeToken(info.id)).toBe(false);
      expect(await store.authenticate(token)).toBeUndefined();
      expect((await store.listTokens('alice'))[0]?.revokedAt).toBeDefined();
      await expect(store.createToken('nobody')).rejects.toMatchObject({ code: 'not_found' });
    });

    it('tokens: expiry and scopes are kept and come back on authenticate; none given means no expiry and every scope of the role', async () => {
      await store.createUser('alice', 'user');
      const plain = await store.createToken('alice', 'old style');
      expect(plain.info.expiresAt).toBeUndefined();
      expect(plain.info.scopes).toBeUndefined();
      const expiresAt = '2031-05-04T03:02:01.000Z';
      const scoped = await store.createToken('alice', { label: 'ci', expiresAt, scopes: ['submit', 'read'] });
      // Kept in the canonical order, whatever order they were given in.
      expect(scoped.info).toMatchObject({ label: 'ci', expiresAt, scopes: ['read', 'submit'] });
      const auth = await store.authenticate(scoped.token);
      expect(auth?.user.name).toBe('alice');
      expect(auth?.token).toMatchObject({ id: scoped.info.id, expiresAt, scopes: ['read', 'submit'] });
      expect((await store.authenticate(plain.token))?.token.scopes).toBeUndefined();
      expect(await store.getToken(scoped.info.id)).toEqual(scoped.info);
      expect(await store.getToken('tok_nothing')).toBeUndefined();
      await expect(store.createToken('alice', { expiresAt: 'soon' })).rejects.toMatchObject({ code: 'bad_request', field: 'expiresAt' });
      await expect(store.createToken('alice', { scopes: [] })).rejects.toMatchObject({ code: 'bad_request', field: 'scopes' });
    });

    it('tasks: created queued with task.created + task.state; the log has gap-free seqs and the row follows it', async () => {
      const { task, events } = await store.createTask('alice', contractRequest);
      expect(task).toMatchObject({ state: 'queued', owner: 'alice', lastSeq: 2, priority: 'normal' });
      expect(events.map((e) => [e.seq, e.type])).toEqual([[1, 'task.created'], [2, 'task.state']]);
      await store.appendEvent(task.id, { type: 'task.state', data: { state: 'running' } });
      await store.appendEvent(task.id, turn(0.5, 10));
      await store.appendEvent(task.id, turn(0.25, 20));
      await store.appendEvent(task.id, { type: 'pr.opened', data: { number: 3, url: 'https://forge/pr/3', branch: 'b', headSha: 'c'.repeat(40) } });
      await store.appendEvent(task.id, { type: 'task.failed', data: { code: 'internal', message: 'boom' } });
      expect((await store.listEvents(task.id)).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect((await store.listEvents(task.id, 2, 2)).map((e) => e.seq)).toEqual([3, 4]);
      const after = await store.getTask(task.id);
      expect(after).toMatchObject({ state: 'running', lastSeq: 7, prUrl: 'https://forge/pr/3', error: 'boom' });
      expect(after?.usage).toEqual({ turns: 2, inputTokens: 30, outputTokens: 10, cacheReadTokens: 200, cacheWriteTokens: 0, costUsd: 0.75 });
      await store.appendEvent(task.id, { type: 'task.state', data: { state: 'cancelled', reason: 'stopped by alice' } });
      expect(await store.getTask(task.id)).toMatchObject({ state: 'cancelled', error: 'stopped by alice' });
      expect(await store.getTask('t_missing')).toBeUndefined();
    });

    it('concurrent appends to one task get distinct, gap-free seqs in one order', async () => {
      const { task } = await store.createTask('alice', contractRequest);
      const appended = await Promise.all(
        Array.from({ length: 25 }, (_, i) => store.appendEvent(task.id, { type: 'assistant.text', data: { turn: 1, text: `line ${i}` } })),
      );
      expect(appended.map((e) => e.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 25 }, (_, i) => i + 3));
      const log = await store.listEvents(task.id);
      expect(log.map((e) => e.seq)).toEqual(Array.from({ length: 27 }, (_, i) => i + 1));
      expect((await store.getTask(task.id))?.lastSeq).toBe(27);
    });

    it('refuses an invalid event or an unknown task and keeps nothing of it', async () => {
      const { task } = await store.createTask('alice', contractRequest);
      await expect(
        // @ts-expect-error deliberately wrong payload
        store.appendEvent(task.id, { type: 'task.state', data: { state: 'sleeping' } }),
      ).rejects.toThrow(/data\.state/);
      await expect(store.appendEvent('t_missing', { type: 'task.state', data: { state: 'running' } })).rejects.toMatchObject({ code: 'not_found' });
      expect((await store.getTask(task.id))?.lastSeq).toBe(2);
      expect(await store.listEvents(task.id)).toHaveLength(2);
      expect(await store.listEvents('t_missing')).toEqual([]);
    });

    it('eventsOfTypes returns every task\'s events of those types in (task, seq) order', async () => {
      const a = await store.createTask('alice', contractRequest, 't_a');
      const b = await store.createTask('alice', contractRequest, 't_B');
      await store.appendEvent(b.task.id, turn(1, 1));
      await store.appendEvent(a.task.id, turn(2, 2));
      await store.appendEvent(a.task.id, { type: 'task.state', data: { state: 'running' } });
      const found = await store.eventsOfTypes(['model.turn', 'task.created']);
      expect(found.map((e) => [e.taskId, e.seq, e.type])).toEqual([
        ['t_B', 1, 'task.created'], ['t_B', 3, 'model.turn'], ['t_a', 1, 'task.created'], ['t_a', 3, 'model.turn'],
      ]);
      expect(await store.eventsOfTypes([])).toEqual([]);
    });

    it('pages tasks newest first by cursor and filters by owner, state and repo', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await store.createTask(i % 2 ? 'bob' : 'alice', i === 4 ? { ...contractRequest, context: { ...contractRequest.context, repo: 'other' } } : contractRequest)).task.id);
      const first = await store.listTasks({ limit: 2 });
      const second = await store.listTasks({ limit: 2, cursor: first.nextCursor });
      const third = await store.listTasks({ limit: 2, cursor: second.nextCursor });
      expect([...first.tasks, ...second.tasks, ...third.tasks].map((t) => t.id)).toEqual([...ids].reverse());
      expect(third.nextCursor).toBeUndefined();
      expect((await store.listTasks({ owner: 'bob' })).tasks).toHaveLength(2);
      expect((await store.listTasks({ repo: 'other' })).tasks.map((t) => t.id)).toEqual([ids[4]]);
      await store.appendEvent(ids[1] ?? '', { type: 'task.state', data: { state: 'running' } });
      expect((await store.listTasks({ state: 'running', owner: 'bob' })).tasks.map((t) => t.id)).toEqual([ids[1]]);
      await expect(store.listTasks({ cursor: 'bm9wZQ' })).rejects.toMatchObject({ code: 'bad_request', field: 'cursor' });
    });

    it('keeps a result (diff and summary) per task', async () => {
      const { task } = await store.createTask('alice', contractRequest);
      expect(await store.getResult(task.id)).toBeUndefined();
      await store.setResult(task.id, { diff: 'diff --git a/x b/x', summary: 'fixed' });
      expect(await store.getResult(task.id)).toEqual({ diff: 'diff --git a/x b/x', summary: 'fixed' });
    });

    it('approvals: requested with an event, resolved once, listed per task and state', async () => {
      const { task } = await store.createTask('alice', contractRequest);
      const first = await store.requestApproval(task.id, { kind: 'command', reason: 'rm -rf', command: 'rm -rf build', toolUseId: 'tu1' });
      expect(first.event).toMatchObject({ type: 'approval.requested', seq: 3, data: { approvalId: first.approval.id, command: 'rm -rf build', toolUseId: 'tu1' } });
      const second = await store.requestApproval(task.id, { kind: 'policy_override', reason: 'secret', diffDigest: 'd'.repeat(64) });
      expect(second.event.data).toMatchObject({ diffDigest: 'd'.repeat(64) });
      expect((await store.listApprovals(task.id, 'pending')).map((a) => a.id)).toEqual([first.approval.id, second.approval.id]);
      const resolved = await store.resolveApproval(task.id, first.approval.id, { decision: 'approved', by: 'alice', comment: 'ok' });
      expect(resolved?.approval).toMatchObject({ state: 'approved', decidedBy: 'alice', comment: 'ok' });
      expect(resolved?.event).toMatchObject({ type: 'approval.resolved', seq: 5, data: { decision: 'approved', by: 'alice', comment: 'ok' } });
      expect(await store.resolveApproval(task.id, first.approval.id, { decision: 'denied', by: 'alice' })).toBeUndefined();
      expect(await store.resolveApproval('t_other', second.approval.id, { decision: 'denied', by: 'alice' })).toBeUndefined();
      expect((await store.listApprovals(task.id)).map((a) => a.state)).toEqual(['approved', 'pending']);
      expect((await store.getApproval(first.approval.id))?.resolvedAt).toBeDefined();
      expect(await store.getApproval('apr_missing')).toBeUndefined();
      await expect(store.requestApproval('t_missing', { kind: 'push', reason: 'x' })).rejects.toMatchObject({ code: 'not_found' });
    });

    it('the approvals inbox: own command/push approvals, overrides on request, newest first, paged', async () => {
      const mine = await store.createTask('alice', contractRequest);
      const theirs = await store.createTask('bob', contractRequest);
      const queued = await store.createTask('alice', contractRequest);
      for (const t of [mine, theirs]) await store.appendEvent(t.task.id, { type: 'task.state', data: { state: 'awaiting_review' } });
      const push = await store.requestApproval(mine.task.id, { kind: 'push', reason: 'review' });
      const override = await store.requestApproval(theirs.task.id, { kind: 'policy_override', reason: 'ci edit' });
      await store.requestApproval(theirs.task.id, { kind: 'push', reason: 'review' });
      await store.requestApproval(queued.task.id, { kind: 'push', reason: 'not waiting yet' });
      const own = await store.listPendingApprovals({ owner: 'alice', overrides: false, limit: 10 });
      expect(own.map((p) => p.approval.id)).toEqual([push.approval.id]);
      expect(own[0]?.task).toMatchObject({ id: mine.task.id, state: 'awaiting_review' });
      const withOverrides = await store.listPendingApprovals({ owner: 'alice', overrides: true, limit: 10 });
      expect(withOverrides.map((p) => p.approval.id)).toEqual([override.approval.id, push.approval.id]);
      const page = await store.listPendingApprovals({ owner: 'alice', overrides: true, limit: 1 });
      expect(page.map((p) => p.approval.id)).toEqual([override.approval.id]);
      const next = await store.listPendingApprovals({ owner: 'alice', overrides: true, limit: 1, before: page[0]?.position ?? 0 });
      expect(next.map((p) => p.approval.id)).toEqual([push.approval.id]);
      await store.resolveApproval(mine.task.id, push.approval.id, { decision: 'approved', by: 'alice' });
      expect(await store.listPendingApprovals({ owner: 'alice', overrides: false, limit: 10 })).toEqual([]);
    });

    it('leases: one holder until expiry, renewed only by it, released; runnable is normal before routine, oldest first', async () => {
      const routine = await store.createTask('alice', { ...contractRequest, priority: 'routine' });
      const normal = await store.createTask('alice', contractRequest);
      const later = await store.createTask('alice', contractRequest);
      await store.appendEvent(later.task.id, { type: 'task.state', data: { state: 'running' } });
      const done = await store.createTask('alice', contractRequest);
      await store.appendEvent(done.task.id, { type: 'task.state', data: { state: 'failed' } });
      const at = 1_000;
      expect((await store.listRunnable(10, at)).map((t) => t.id)).toEqual([normal.task.id, later.task.id, routine.task.id]);
      expect(await store.acquireLease(normal.task.id, 'w1', 1000, at)).toBe(true);
      expect(await store.acquireLease(normal.task.id, 'w2', 1000, at + 500)).toBe(false);
      expect(await store.acquireLease(normal.task.id, 'w1', 1000, at + 500)).toBe(true);
      expect(await store.getLease(normal.task.id)).toMatchObject({ taskId: normal.task.id, workerId: 'w1', expiresAt: at + 1500 });
      expect((await store.listRunnable(10, at + 600)).map((t) => t.id)).toEqual([later.task.id, routine.task.id]);
      expect(await store.renewLease(normal.task.id, 'w2', 1000, at + 600)).toBe(false);
      expect(await store.renewLease(normal.task.id, 'w1', 1000, at + 1400)).toBe(true);
      expect(await store.acquireLease(normal.task.id, 'w2', 1000, at + 2000)).toBe(false);
      expect(await store.acquireLease(normal.task.id, 'w2', 1000, at + 2400)).toBe(true);
      expect(await store.renewLease(normal.task.id, 'w1', 1000, at + 2500)).toBe(false);
      await store.releaseLease(normal.task.id, 'w1');
      expect((await store.getLease(normal.task.id))?.workerId).toBe('w2');
      await store.releaseLease(normal.task.id, 'w2');
      expect(await store.getLease(normal.task.id)).toBeUndefined();
      expect((await store.listRunnable(1, at + 2500)).map((t) => t.id)).toEqual([normal.task.id]);
    });

    it('pull requests: numbered per repo, found by branch, updated, listed by state', async () => {
      const base = { title: 'Fix', body: 'b', branch: 'dockhand/1-fix', base: 'main', headSha: 'c'.repeat(40), draft: true, state: 'open' as const, createdAt: new Date().toISOString() };
      const one = await store.pullRequests.insert({ ...base, repo: 'r' });
      const two = await store.pullRequests.insert({ ...base, repo: 'r', branch: 'dockhand/2-other' });
      const elsewhere = await store.pullRequests.insert({ ...base, repo: 's' });
      expect([one.number, two.number, elsewhere.number]).toEqual([1, 2, 1]);
      expect((await store.pullRequests.findByBranch('r', 'dockhand/2-other'))?.number).toBe(2);
      expect(await store.pullRequests.get('r', 9)).toBeUndefined();
      const merged = await store.pullRequests.update('r', 1, { state: 'merged', mergedAt: new Date().toISOString(), mergeSha: 'e'.repeat(40) });
      expect(merged).toMatchObject({ number: 1, state: 'merged', title: 'Fix' });
      expect((await store.pullRequests.list('r', { state: 'open' })).map((p) => p.number)).toEqual([2]);
      expect((await store.pullRequests.list('r')).map((p) => p.number)).toEqual([1, 2]);
      await expect(store.pullRequests.update('r', 9, { state: 'closed' })).rejects.toMatchObject({ code: 'not_found' });
    });

    it('pull requests: inserted at once, each gets its own number; a branch finds its latest', async () => {
      const base = { title: 'Fix', body: 'b', base: 'main', headSha: 'c'.repeat(40), draft: false, state: 'open' as const, createdAt: new Date().toISOString() };
      const inserted = await Promise.all(Array.from({ length: 20 }, (_, i) => store.pullRequests.insert({ ...base, repo: 'many', branch: `dockhand/${i % 5}-fix` })));
      expect(inserted.map((p) => p.number).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      for (const pr of inserted) expect(await store.pullRequests.get('many', pr.number)).toEqual(pr);
      const latest = Math.max(...inserted.filter((p) => p.branch === 'dockhand/3-fix').map((p) => p.number));
      expect(await store.pullRequests.findByBranch('many', 'dockhand/3-fix')).toMatchObject({ number: latest, branch: 'dockhand/3-fix' });
      expect(await store.pullRequests.findByBranch('many', 'dockhand/9-none')).toBeUndefined();
      expect((await store.pullRequests.insert({ ...base, repo: 'many', branch: 'dockhand/x' })).number).toBe(21);
    });

    it('flaky tests: quarantined per repo with their history, cleared by id or all', async () => {
      const seen = (outcome: 'passed' | 'failed') => ({ testId: 'a.test > x', diffHash: 'h', outcome, at: 'now' });
      await store.flaky.quarantine('r', 'a.test > x', [seen('failed')]);
      await store.flaky.quarantine('r', 'a.test > x', [seen('passed')]);
      await store.flaky.quarantine('r', 'B.test > y', [seen('failed')]);
      await store.flaky.quarantine('s', 'a.test > x', [seen('failed')]);
      const listed = await store.flaky.list('r');
      expect(listed.map((t) => t.testId)).toEqual(['B.test > y', 'a.test > x']);
      expect(listed[1]?.history.map((h) => h.outcome)).toEqual(['failed', 'passed']);
      expect(await store.flaky.clear('r', ['a.test > x', 'missing'])).toBe(1);
      expect(await store.flaky.clear('r')).toBe(1);
      expect((await store.flaky.list('s')).map((t) => t.testId)).toEqual(['a.test > x']);
    });

    it('registered repositories: put (replaced by name, creation kept), got, listed by name, deleted once', async () => {
      const repos = repoStoreOf(store);
      const shop = { name: 'acme/shop', source: '/srv/shop', defaultBranch: 'main', owners: ['olive'], submitters: [], createdAt: '2026-01-01T00:00:00.000Z', createdBy: 'root' };
      await repos.putRepo(shop);
      await repos.putRepo({ ...shop, name: 'Zeta', mirrorSource: '/data/forge/Zeta.git' });
      const replaced = await repos.putRepo({ ...shop, defaultBranch: 'trunk', submitters: ['alice'], createdAt: '2027-01-01T00:00:00.000Z' });
      expect(replaced).toEqual({ ...shop, defaultBranch: 'trunk', submitters: ['alice'] });
      expect((await repos.getRepo('Zeta'))?.mirrorSource).toBe('/data/forge/Zeta.git');
      expect(await repos.getRepo('nope')).toBeUndefined();
      expect((await repos.listRepos()).map((r) => r.name)).toEqual(['Zeta', 'acme/shop']);
      expect(await repos.deleteRepo('Zeta')).toBe(true);
      expect(await repos.deleteRepo('Zeta')).toBe(false);
    });

    it('test baselines: kept per (repo, recipe, base SHA), replaced, infrastructure never stored', async () => {
      const key = { repo: 'r', recipe: 'detected', baseSha: 'a'.repeat(40) };
      const result = { command: 'npm test', runner: 'vitest' as const, passed: 3, failed: 1, flaky: ['x'], preExistingFailures: ['y'], seconds: 2 };
      expect(await store.baselines.get(key)).toBeUndefined();
      await store.baselines.put(key, { ...result, infrastructure: { kind: 'crash', message: 'the test runner crashed', action: 'run it by hand', command: 'npm test', output: '' } });
      expect(await store.baselines.get(key)).toEqual(result);
      await store.baselines.put(key, { ...result, passed: 4, failed: 0 });
      expect(await store.baselines.get(key)).toMatchObject({ passed: 4, failed: 0 });
      expect(await store.baselines.get({ ...key, recipe: 'other' })).toBeUndefined();
    });

    it('answers ping', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });
  });
}
