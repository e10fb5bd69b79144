import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { contractRequest } from '../store/contract.test-support';
import { EventHub, EventLog } from '../store/hub';
import { SqliteSecretRows } from '../store/secret-rows';
import { SqliteStore } from '../store/sqlite';
import { RepositorySecrets } from './service';

/* Stored secrets are masked in what a task writes (events, its diff and summary), in any encoding. */

let dir: string;
let store: SqliteStore;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'secrets-masking-'));
  store = new SqliteStore(join(dir, 'dockhand.db'));
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('masking repositories\' secrets', () => {
  it('a value stored before start and one set after are masked in events and results, raw, URL-encoded and base64', async () => {
    const rows = new SqliteSecretRows(store.db);
    const before = await RepositorySecrets.open(rows, { dataDir: dir });
    await before.set('acme/web', 'NPM_ACME', 'npm_Stored/Token+value', 'alice');
    // A restarted server: the list is filled from the store.
    const secrets = await RepositorySecrets.open(rows, { dataDir: dir });
    const known: string[] = ['push-token-123456'];
    await secrets.maskInto(known);
    await secrets.set('acme/api', 'SENTRY_AUTH', 'sentry-later-value-42', 'bob');
    expect(known).toEqual(['push-token-123456', 'npm_Stored/Token+value', 'sentry-later-value-42']);

    const log = new EventLog(store, new EventHub(), known);
    const { task } = await store.createTask('alice', contractRequest);
    const text = [
      'raw npm_Stored/Token+value',
      `url ${encodeURIComponent('npm_Stored/Token+value')}`,
      `b64 ${Buffer.from('sentry-later-value-42').toString('base64')}`,
    ].join('\n');
    const written = await log.append(task.id, { type: 'assistant.text', data: { turn: 1, text } });
    const stored = JSON.stringify(written) + JSON.stringify(await store.listEvents(task.id));
    expect(stored).not.toContain('npm_Stored/Token+value');
    expect(stored).not.toContain(encodeURIComponent('npm_Stored/Token+value'));
    expect(stored).not.toContain(Buffer.from('sentry-later-value-42').toString('base64').replace(/=+$/, ''));
    const result = await log.maskResult({ diff: '+const token = "sentry-later-value-42";\n', summary: 'uses npm_Stored/Token+value' });
    expect(JSON.stringify(result)).not.toMatch(/sentry-later-value-42|npm_Stored/);
  });
});
