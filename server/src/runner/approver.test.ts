import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CreateTaskRequest } from '@dockhand/protocol';
import { EventHub, EventLog } from '../store/hub';
import { SqliteStore } from '../store/sqlite';
import { StoreApprover } from './approver';

const request = CreateTaskRequest.parse({ ticket: { kind: 'text', title: 't' }, context: { repo: 'r', baseSha: 'a'.repeat(40) } });
let store: SqliteStore;
let log: EventLog;
beforeEach(async () => {
  store = new SqliteStore(':memory:');
  log = new EventLog(store, new EventHub());
});
afterEach(async () => { await store.close(); });

async function runningTask() {
  const { task } = await store.createTask('alice', request);
  await log.append(task.id, { type: 'task.state', data: { state: 'running' } });
  return task;
}

describe('StoreApprover', () => {
  it('records the request, waits in awaiting_approval, and returns the decision given through the store', async () => {
    const task = await runningTask();
    const approver = new StoreApprover(log, task.id);
    const decision = approver.request({ kind: 'command', command: 'rm -rf /', reason: 'destructive', toolUseId: 'tu1' });
    await new Promise((r) => setTimeout(r, 10));
    expect((await store.getTask(task.id))?.state).toBe('awaiting_approval');
    const [pending] = await store.listApprovals(task.id, 'pending');
    const resolved = await store.resolveApproval(task.id, pending!.id, { decision: 'denied', by: 'alice', comment: 'never' });
    log.published([resolved!.event]);
    expect(await decision).toEqual({ decision: 'denied', by: 'alice', comment: 'never' });
    expect((await store.getTask(task.id))?.state).toBe('running');
  });

  it('a resumed task asking again for the same tool call reuses the approval (decided while down)', async () => {
    const task = await runningTask();
    const first = new StoreApprover(log, task.id);
    const controller = new AbortController();
    const waiting = first.request({ kind: 'command', command: 'dropdb prod', reason: 'db drop', toolUseId: 'tu9' }, controller.signal);
    await new Promise((r) => setTimeout(r, 10));
    controller.abort(); // the process died
    await expect(waiting).rejects.toThrow(/interrupted/);
    const [pending] = await store.listApprovals(task.id, 'pending');
    await store.resolveApproval(task.id, pending!.id, { decision: 'approved', by: 'alice' });
    const again = await new StoreApprover(log, task.id).request({ kind: 'command', command: 'dropdb prod', reason: 'db drop', toolUseId: 'tu9' });
    expect(again.decision).toBe('approved');
    expect(await store.listApprovals(task.id)).toHaveLength(1);
  });
});
