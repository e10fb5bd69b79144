import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { harness, type Harness } from '../api/test-support';
import { buildCli } from './main';

/* `dockhand verify task` against a running server on a real SQLite file, rows changed with SQL. */

let h: Harness;
let dir: string;
let url: string;
let output: string[];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'h-verify-cli-'));
  h = await harness({ path: join(dir, 'dockhand.db') });
  url = await h.app.listen({ host: '127.0.0.1', port: 0 });
  output = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    output.push(chunk.toString());
    return true;
  });
});
afterEach(async () => {
  vi.restoreAllMocks();
  process.exitCode = undefined;
  await h.close();
  rmSync(dir, { recursive: true, force: true });
});

const verify = (id: string, who: 'alice' | 'bob' = 'alice') => buildCli().parseAsync(['node', 'dockhand', 'verify', 'task', id, '--server', url, '--token', h.tokens[who]]);

describe('dockhand verify task', () => {
  it("prints each check and passes on an untouched log; names the edited event and exits 1 after an UPDATE; another user's task is a 404", async () => {
    const task = await h.createTask('alice');
    for (let i = 0; i < 3; i++) await h.store.appendEvent(task.id, { type: 'assistant.text', data: { turn: 1, text: `line ${i}` } });
    await verify(task.id);
    const lines = output.join('').trimEnd().split('\n');
    expect(lines[0]).toBe(`task ${task.id}: event hash chain (last seq 5)`);
    expect(lines.slice(1, -1).map((line) => line.split(':')[0])).toEqual(['ok   chain start', 'ok   sequence', 'ok   links', 'ok   head']);
    expect(lines.at(-1)).toMatch(/^verified: head seq 5 [0-9a-f]{64}$/);
    expect(process.exitCode).toBeUndefined();

    h.store.db.prepare('UPDATE events SET data = ? WHERE task_id = ? AND seq = 4').run(JSON.stringify({ turn: 1, text: 'rewritten' }), task.id);
    output.length = 0;
    await verify(task.id);
    const failed = output.join('');
    expect(failed).toMatch(/^FAIL links: seq 4 \(assistant\.text\): hash mismatch: /m);
    expect(failed.trimEnd().split('\n').at(-1)).toBe('not verified: seq 4 (assistant.text) does not match (hash mismatch)');
    expect(process.exitCode).toBe(1);
    // Another user's task is not found, as on every task route.
    await expect(verify(task.id, 'bob')).rejects.toMatchObject({ code: 'not_found' });
  });

  it('--local recomputes it from the data dir\'s SQLite file, with no server or token', async () => {
    const task = await h.createTask('alice');
    await h.store.appendEvent(task.id, { type: 'assistant.text', data: { turn: 1, text: 'one' } });
    const previous = process.env.DOCKHAND_DATA_DIR;
    process.env.DOCKHAND_DATA_DIR = dir;
    try {
      await buildCli().parseAsync(['node', 'dockhand', 'verify', 'task', task.id, '--local']);
      expect(output.join('').trimEnd().split('\n').at(-1)).toMatch(/^verified: head seq 3 [0-9a-f]{64}$/);
      h.store.db.prepare('DELETE FROM events WHERE task_id = ? AND seq = 2').run(task.id);
      output.length = 0;
      await buildCli().parseAsync(['node', 'dockhand', 'verify', 'task', task.id, '--local']);
      expect(output.join('')).toMatch(/^FAIL sequence: seq 2: missing: no row \(the log goes from seq 1 to 3\)$/m);
      expect(process.exitCode).toBe(1);
      process.env.DOCKHAND_DATA_DIR = join(dir, 'elsewhere');
      await expect(buildCli().parseAsync(['node', 'dockhand', 'verify', 'task', task.id, '--local'])).rejects.toMatchObject({ field: '--local', message: expect.stringContaining('no database at') });
    } finally {
      if (previous === undefined) delete process.env.DOCKHAND_DATA_DIR;
      else process.env.DOCKHAND_DATA_DIR = previous;
    }
  });
});
