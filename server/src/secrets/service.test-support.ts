import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DockhandError } from '../errors';
import { RepositorySecrets } from './service';
import type { SecretRows } from './types';

/** The secrets' behaviour on a store's rows; run on SQLite (unit) and Postgres (integration). */
export function describeSecretStore(kind: string, open: () => Promise<{ rows: SecretRows; raw: () => Promise<string>; dispose: () => Promise<void> }>): void {
  describe(`repository secrets on ${kind}`, () => {
    const withStore = async (fn: (rows: SecretRows, raw: () => Promise<string>, dataDir: string) => Promise<void>) => {
      const opened = await open();
      const dataDir = mkdtempSync(join(tmpdir(), 'secrets-'));
      try {
        await fn(opened.rows, opened.raw, dataDir);
      } finally {
        await opened.dispose();
        rmSync(dataDir, { recursive: true, force: true });
      }
    };

    it('keeps values encrypted, lists names and use only, and resolves them for the server', async () => {
      await withStore(async (rows, raw, dataDir) => {
        const secrets = await RepositorySecrets.open(rows, { dataDir });
        const value = 'npm_TOKEN_value_4f1c2e';
        await secrets.set('acme/web', 'NPM_ACME', value, 'alice');
        // The key file is made on first use, the server's user's alone.
        expect(statSync(join(dataDir, 'secrets.key')).mode & 0o777).toBe(0o600);
        expect(await raw()).not.toContain(value);
        expect(await raw()).not.toContain(Buffer.from(value).toString('base64'));
        const listed = await secrets.list('acme/web');
        expect(listed).toEqual([{ name: 'NPM_ACME', setBy: 'alice', setAt: expect.any(String), lastUsedAt: null, lastUsedBy: null }]);
        expect(JSON.stringify(listed)).not.toContain(value);
        const resolved = await secrets.resolve('acme/web', ['NPM_ACME', 'SENTRY_AUTH'], 'snapshot build k1');
        expect(resolved.values.get('NPM_ACME')).toBe(value);
        expect(resolved.missing).toEqual(['SENTRY_AUTH']);
        expect((await secrets.list('acme/web'))[0]).toMatchObject({ lastUsedBy: 'snapshot build k1', lastUsedAt: expect.any(String) });
        // Another repository has none of them.
        expect((await secrets.resolve('acme/api', ['NPM_ACME'], 'x')).missing).toEqual(['NPM_ACME']);
        expect(await secrets.missing('acme/web', ['NPM_ACME', 'OTHER'])).toEqual(['OTHER']);
        // Every stored value, of every repository, for masking.
        const masked: string[] = [];
        await secrets.maskInto(masked);
        expect(masked).toEqual([value]);
        expect(await secrets.remove('acme/web', 'NPM_ACME')).toBe(true);
        expect(await secrets.remove('acme/web', 'NPM_ACME')).toBe(false);
        expect(await secrets.list('acme/web')).toEqual([]);
        await secrets.set('acme/web', 'A_ONE', 'value-a', 'alice');
        await secrets.set('acme/web', 'B_TWO', 'value-b', 'alice');
        await secrets.set('acme/api', 'A_ONE', 'value-c', 'alice');
        expect(await secrets.removeRepository('acme/web')).toBe(2);
        expect((await secrets.list('acme/api')).map((entry) => entry.name)).toEqual(['A_ONE']);
      });
    });

    it('refuses to start with another key or none where secrets exist, naming the variable', async () => {
      await withStore(async (rows, _raw, dataDir) => {
        const key = 'ab'.repeat(32);
        const first = await RepositorySecrets.open(rows, { dataDir, variable: key });
        await first.set('acme/web', 'NPM_ACME', 'token-1', 'alice');
        await expect(RepositorySecrets.open(rows, { dataDir, variable: 'cd'.repeat(32) })).rejects.toThrow(/1 stored repository secret\(s\) were encrypted with another key than DOCKHAND_SECRETS_KEY/);
        await expect(RepositorySecrets.open(rows, { dataDir })).rejects.toThrow(/neither DOCKHAND_SECRETS_KEY is set nor .*secrets\.key exists/);
        await expect(RepositorySecrets.open(rows, { dataDir, variable: 'short' })).rejects.toThrow(/DOCKHAND_SECRETS_KEY: the secrets key must be 32 bytes/);
        const again = await RepositorySecrets.open(rows, { dataDir, variable: Buffer.from(key, 'hex').toString('base64') });
        expect((await again.resolve('acme/web', ['NPM_ACME'], 'x')).values.get('NPM_ACME')).toBe('token-1');
      });
    });

    it('a value moved to another repository in the database does not decrypt', async () => {
      await withStore(async (rows, _raw, dataDir) => {
        const secrets = await RepositorySecrets.open(rows, { dataDir });
        await secrets.set('acme/web', 'NPM_ACME', 'token-web', 'alice');
        const stored = await rows.get('acme/web', 'NPM_ACME');
        if (!stored) throw new Error('not stored');
        await rows.put({ ...stored, repo: 'other/repo' });
        await expect(secrets.resolve('other/repo', ['NPM_ACME'], 'x')).rejects.toThrow(/does not authenticate/);
      });
    });

    it('refuses bad names and empty values with the field named; setting again replaces and clears the last use', async () => {
      await withStore(async (rows, _raw, dataDir) => {
        const secrets = await RepositorySecrets.open(rows, { dataDir });
        await expect(secrets.set('acme/web', 'npm-acme', 'x', 'alice')).rejects.toThrow(DockhandError);
        await expect(secrets.set('acme/web', 'NPM', '', 'alice')).rejects.toThrow(/value: secret NPM is empty/);
        await secrets.set('acme/web', 'NPM', 'one', 'alice');
        await secrets.resolve('acme/web', ['NPM'], 'build');
        await secrets.set('acme/web', 'NPM', 'two', 'bob');
        expect((await secrets.list('acme/web'))[0]).toMatchObject({ setBy: 'bob', lastUsedAt: null });
        expect((await secrets.resolve('acme/web', ['NPM'], 'build')).values.get('NPM')).toBe('two');
        // A key file from an earlier start is read again, not replaced.
        const keyText = readFileSync(join(dataDir, 'secrets.key'), 'utf8');
        const reopened = await RepositorySecrets.open(rows, { dataDir });
        expect(readFileSync(join(dataDir, 'secrets.key'), 'utf8')).toBe(keyText);
        expect((await reopened.resolve('acme/web', ['NPM'], 'build')).values.get('NPM')).toBe('two');
        writeFileSync(join(dataDir, 'secrets.key'), 'ff'.repeat(32));
        await expect(RepositorySecrets.open(rows, { dataDir })).rejects.toThrow(/encrypted with another key than .*secrets\.key/);
      });
    });
  });
}
