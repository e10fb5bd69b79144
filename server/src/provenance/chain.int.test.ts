import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NewEvent } from '@dockhand/protocol';
import { contractRequest } from '../store/contract.test-support';
import { openTestStore } from '../store/postgres.test-support';
import { SqliteStore } from '../store/sqlite';
import type { Store } from '../store/types';
import { chainHead, verifyTaskChain } from './chain';

/*
 * Issue #33's proof for the event log: events appended through a real store (a SQLite file, a
 * real PostgreSQL), then rows changed behind the store's back with SQL, as someone with the
 * database in hand would; `verifyTaskChain` (what `dockhand verify task` prints) names the event.
 */

interface Subject {
  store: Store;
  /** Runs SQL on the store's database directly (`?` placeholders). */
  sql(statement: string, ...params: Array<string | number>): Promise<void>;
  close(): Promise<void>;
}

const text = (i: number): NewEvent => ({ type: 'assistant.text', data: { turn: 1, text: `line ${i}` } });
// A model.turn adds to the task's usage: on Postgres it takes the two-statement path, the others the one-statement one.
const turn: NewEvent = {
  type: 'model.turn',
  data: { turn: 1, model: 'm', costUsd: 0.01, stopReason: 'end_turn', contextTokens: 10, content: [], usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 } },
};

/** A task with events 1–2 (created, queued) and 3–8 appended: text, turn, text, turn, text, text. */
async function taskWithEvents(store: Store): Promise<string> {
  const { task } = await store.createTask('alice', contractRequest);
  for (const event of [text(3), turn, text(5), turn, text(7), text(8)]) await store.appendEvent(task.id, event);
  return task.id;
}

function describeChain(name: string, open: () => Promise<Subject>): void {
  describe(`hash chain of the event log: ${name}`, () => {
    let subject: Subject;
    beforeAll(async () => {
      subject = await open();
    });
    afterAll(async () => {
      await subject?.close();
    });

    it('an untouched log passes, and its head is the one the task row records', async () => {
      const id = await taskWithEvents(subject.store);
      const report = await verifyTaskChain(subject.store, id);
      expect(report.failure).toBeUndefined();
      expect(report).toMatchObject({ ok: true, lastSeq: 8, unchainedThrough: 0, checkedFrom: 1 });
      expect(report.checks.map((check) => [check.name, check.ok])).toEqual([['chain start', true], ['sequence', true], ['links', true], ['head', true]]);
      expect(report.head).toEqual(await chainHead(subject.store, id));
      expect(report.head?.seq).toBe(8);
    });

    it('concurrent appends to one task still chain in seq order', async () => {
      const { task } = await subject.store.createTask('alice', contractRequest);
      await Promise.all(Array.from({ length: 24 }, (_, i) => subject.store.appendEvent(task.id, i % 4 === 0 ? turn : text(i))));
      const report = await verifyTaskChain(subject.store, task.id);
      expect(report.failure).toBeUndefined();
      expect(report.head?.seq).toBe(26);
    });

    it("an edited row's data is named: seq, type, hash mismatch", async () => {
      const id = await taskWithEvents(subject.store);
      await subject.sql(`UPDATE events SET data = ? WHERE task_id = ? AND seq = 5`, JSON.stringify({ turn: 1, text: 'line 5, edited' }), id);
      const report = await verifyTaskChain(subject.store, id);
      expect(report.ok).toBe(false);
      expect(report.failure).toMatchObject({ seq: 5, type: 'assistant.text', kind: 'hash_mismatch' });
      expect(report.checks.at(-1)).toMatchObject({ name: 'links', ok: false });
      expect(report.checks.at(-1)?.detail).toMatch(/^seq 5 \(assistant\.text\): hash mismatch: /);
    });

    it('an edited type or time is named too, and so is a model turn (the other write path)', async () => {
      const id = await taskWithEvents(subject.store);
      await subject.sql(`UPDATE events SET ts = ? WHERE task_id = ? AND seq = 4`, '2020-01-01T00:00:00.000Z', id);
      expect((await verifyTaskChain(subject.store, id)).failure).toMatchObject({ seq: 4, type: 'model.turn', kind: 'hash_mismatch' });
    });

    it('a deleted row is named as missing, in the middle and at the end', async () => {
      const middle = await taskWithEvents(subject.store);
      await subject.sql('DELETE FROM events WHERE task_id = ? AND seq = 6', middle);
      expect((await verifyTaskChain(subject.store, middle)).failure).toMatchObject({ seq: 6, kind: 'missing' });
      const tail = await taskWithEvents(subject.store);
      await subject.sql('DELETE FROM events WHERE task_id = ? AND seq = 8', tail);
      const report = await verifyTaskChain(subject.store, tail);
      expect(report.failure).toMatchObject({ seq: 8, kind: 'missing' });
      expect(report.failure?.detail).toContain("the log ends at seq 7 but the task's last seq is 8");
    });

    it('two rows swapped are named as reordered, and a removed hash as missing', async () => {
      const id = await taskWithEvents(subject.store);
      // Through a free seq: both stores check the primary key row by row.
      await subject.sql('UPDATE events SET seq = 0 WHERE task_id = ? AND seq = 5', id);
      await subject.sql('UPDATE events SET seq = 5 WHERE task_id = ? AND seq = 6', id);
      await subject.sql('UPDATE events SET seq = 6 WHERE task_id = ? AND seq = 0', id);
      const report = await verifyTaskChain(subject.store, id);
      expect(report.failure).toMatchObject({ seq: 5, type: 'model.turn', kind: 'reordered' });
      expect(report.failure?.detail).toContain('written as seq 6');
      const other = await taskWithEvents(subject.store);
      await subject.sql('UPDATE events SET hash = NULL WHERE task_id = ? AND seq = 3', other);
      expect((await verifyTaskChain(subject.store, other)).failure).toMatchObject({ seq: 3, kind: 'missing' });
    });

    it('events from before the upgrade are reported as unchained; the chain is checked from the first one after it', async () => {
      const { task } = await subject.store.createTask('alice', contractRequest);
      for (let i = 3; i <= 4; i++) await subject.store.appendEvent(task.id, text(i));
      // What migration 9 leaves on rows written before it: no hash, no chain start, no head.
      await subject.sql('UPDATE events SET hash = NULL WHERE task_id = ?', task.id);
      await subject.sql('UPDATE tasks SET chain_from = NULL, chain_head = NULL WHERE id = ?', task.id);
      const before = await verifyTaskChain(subject.store, task.id);
      expect(before).toMatchObject({ ok: true, unchainedThrough: 4 });
      expect(before.checkedFrom).toBeUndefined();
      expect(await chainHead(subject.store, task.id)).toBeUndefined();
      for (let i = 5; i <= 7; i++) await subject.store.appendEvent(task.id, i === 6 ? turn : text(i));
      const after = await verifyTaskChain(subject.store, task.id);
      expect(after).toMatchObject({ ok: true, unchainedThrough: 4, checkedFrom: 5, head: { seq: 7 } });
      expect(after.checks[0]?.detail).toBe('events 1–4 predate the chain; checked from 5');
      await subject.sql(`UPDATE events SET data = ? WHERE task_id = ? AND seq = 6`, JSON.stringify({ ...turn.data, costUsd: 0 }), task.id);
      expect((await verifyTaskChain(subject.store, task.id)).failure).toMatchObject({ seq: 6, type: 'model.turn', kind: 'hash_mismatch' });
    });

    it('a task row moved to hide edits behind "predates the chain" is named', async () => {
      const id = await taskWithEvents(subject.store);
      await subject.sql('UPDATE tasks SET chain_from = 4 WHERE id = ?', id);
      expect((await verifyTaskChain(subject.store, id)).failure).toMatchObject({ seq: 1, kind: 'hash_mismatch' });
    });
  });
}

describeChain('SQLite file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'h-verify-chain-'));
  const store = new SqliteStore(join(dir, 'dockhand.db'));
  return {
    store,
    sql: async (statement, ...params) => void store.db.prepare(statement).run(...params),
    close: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describeChain('PostgreSQL', async () => {
  const { store, dispose } = await openTestStore();
  return {
    store,
    sql: async (statement, ...params) => {
      let index = 0;
      await store.pool.query(statement.replace(/\?/g, () => `$${++index}`), params);
    },
    close: async () => {
      await store.close();
      await dispose();
    },
  };
});
