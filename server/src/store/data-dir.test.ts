import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { secureDataDir } from './data-dir';

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);
let root: string | undefined;
afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('secureDataDir (issue #23: dockhand.db and snapshot logs were 0644 in a 0755 data dir)', () => {
  it('closes an existing data dir made with the default umask: dir 0700, database and logs 0600', async () => {
    root = mkdtempSync(join(tmpdir(), 'dockhand-data-dir-'));
    const data = join(root, 'data');
    mkdirSync(join(data, 'snapshot-logs'), { recursive: true, mode: 0o755 });
    chmodSync(data, 0o755);
    chmodSync(join(data, 'snapshot-logs'), 0o755);
    for (const file of ['dockhand.db', 'dockhand.db-wal', 'snapshot-logs/k.log', 'snapshot-logs/k.failed.json']) {
      writeFileSync(join(data, file), 'x');
      chmodSync(join(data, file), 0o644);
    }
    await secureDataDir(data, { database: true });
    expect(mode(data)).toBe('700');
    expect(mode(join(data, 'snapshot-logs'))).toBe('700');
    for (const file of ['dockhand.db', 'dockhand.db-wal', 'snapshot-logs/k.log', 'snapshot-logs/k.failed.json']) expect(mode(join(data, file)), file).toBe('600');
  });

  it('creates a new data dir 0700 with the database file 0600 before SQLite opens it', async () => {
    root = mkdtempSync(join(tmpdir(), 'dockhand-data-dir-'));
    const data = join(root, 'new');
    await secureDataDir(data, { database: true });
    expect(mode(data)).toBe('700');
    expect(mode(join(data, 'dockhand.db'))).toBe('600');
  });
});
