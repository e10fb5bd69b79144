import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { harness, type Harness } from '../api/test-support';
import { SqliteStore } from '../store/sqlite';
import { buildCli } from './main';

let h: Harness;
let url: string;
let output: string[];

beforeEach(async () => {
  h = await harness();
  url = await h.app.listen({ host: '127.0.0.1', port: 0 });
  output = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    output.push(chunk.toString());
    return true;
  });
});
afterEach(async () => {
  vi.restoreAllMocks();
  await h.close();
});

const cli = (...args: string[]) => buildCli().parseAsync(['node', 'dockhand', 'token', ...args]);
const secretIn = (text: string) => /^(dh_\S+)$/m.exec(text)?.[1];

describe('dockhand token over the API (--server and an admin --token)', () => {
  it('create (scopes, lifetime), list (no secrets), revoke: the created token works, then is refused', async () => {
    const admin = ['--server', url, '--token', h.tokens.admin];
    await cli('create', 'carol', '--scope', 'read', '--expires-in', '12h', '--label', 'laptop', ...admin);
    const text = output.join('');
    expect(text).toMatch(/^token tok_\w+ for carol \(shown once; scopes read; expires 20\d\d-/m);
    const secret = secretIn(text);
    if (!secret) throw new Error(`no token in ${text}`);
    const id = /token (tok_\w+)/.exec(text)?.[1] ?? '';
    const me = await fetch(`${url}/v1/me`, { headers: { authorization: `Bearer ${secret}` } });
    expect(await me.json()).toMatchObject({ name: 'carol', role: 'user' });
    const submit = await fetch(`${url}/v1/tasks`, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: JSON.stringify(h.submitBody()) });
    expect(submit.status).toBe(403);

    output.length = 0;
    await cli('list', '--user', 'carol', ...admin);
    expect(output.join('')).toMatch(new RegExp(`^${id}\\s+carol\\s+read\\s+expires 20\\S+\\s+laptop$`, 'm'));
    expect(output.join('')).not.toContain(secret);

    output.length = 0;
    await cli('revoke', id, ...admin);
    expect(output.join('')).toBe(`token ${id} revoked\n`);
    expect((await fetch(`${url}/v1/me`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(401);
  });

  it("a non-admin's token is refused naming the admin scope; a bad lifetime is refused naming --expires-in", async () => {
    await expect(cli('create', 'dave', '--server', url, '--token', h.tokens.alice)).rejects.toMatchObject({ code: 'forbidden', message: expect.stringContaining('"admin" scope') });
    await expect(cli('create', 'dave', '--expires-in', '1y', '--server', url, '--token', h.tokens.admin))
      .rejects.toMatchObject({ field: '--expires-in', message: expect.stringMatching(/^--expires-in: "1y" is not a lifetime/) });
    expect(await h.store.getUser('dave')).toBeUndefined();
    const saved = process.env.DOCKHAND_TOKEN;
    delete process.env.DOCKHAND_TOKEN;
    try {
      await expect(cli('list', '--server', url)).rejects.toMatchObject({ field: '--token', message: expect.stringContaining('needs an admin token') });
    } finally {
      if (saved !== undefined) process.env.DOCKHAND_TOKEN = saved;
    }
  });
});

describe('dockhand token on the data dir (bootstrap, no server)', () => {
  it('makes the first admin token with --local, a 90-day default and every admin scope, even with DOCKHAND_URL and DOCKHAND_TOKEN set; list shows it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dockhand-token-cli-'));
    const saved = { data: process.env.DOCKHAND_DATA_DIR, url: process.env.DOCKHAND_URL, token: process.env.DOCKHAND_TOKEN, db: process.env.DOCKHAND_DATABASE_URL };
    process.env.DOCKHAND_DATA_DIR = dir;
    delete process.env.DOCKHAND_DATABASE_URL;
    // --local: a caller's environment pointing at some server does not turn the bootstrap into an API call.
    process.env.DOCKHAND_URL = url;
    process.env.DOCKHAND_TOKEN = h.tokens.alice;
    try {
      await cli('create', 'root', '--role', 'admin', '--local');
      const text = output.join('');
      expect(text).toContain(`stored in ${join(dir, 'dockhand.db')}`);
      expect(text).toMatch(/^token tok_\w+ for root \(shown once; scopes read, submit, review, admin; expires 20\S+\):$/m);
      const store = new SqliteStore(join(dir, 'dockhand.db'));
      const auth = await store.authenticate(secretIn(text) ?? '');
      await store.close();
      expect(auth?.user.role).toBe('admin');
      const days = (Date.parse(auth?.token.expiresAt ?? '') - Date.now()) / 86_400_000;
      expect(days).toBeGreaterThan(89.9);
      expect(days).toBeLessThanOrEqual(90);
      output.length = 0;
      await cli('list', '--local');
      expect(output.join('')).toMatch(/^tok_\w+\s+root\s+read,submit,review,admin\s+expires/m);
    } finally {
      for (const [name, value] of [['DOCKHAND_DATA_DIR', saved.data], ['DOCKHAND_URL', saved.url], ['DOCKHAND_TOKEN', saved.token], ['DOCKHAND_DATABASE_URL', saved.db]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('dockhand token follows DOCKHAND_URL and never makes a data dir as a side effect', () => {
  const names = ['DOCKHAND_DATA_DIR', 'DOCKHAND_URL', 'DOCKHAND_TOKEN', 'DOCKHAND_DATABASE_URL'] as const;
  let saved: Record<string, string | undefined>;
  let dir: string;
  beforeEach(() => {
    saved = Object.fromEntries(names.map((name) => [name, process.env[name]]));
    dir = join(mkdtempSync(join(tmpdir(), 'dockhand-token-env-')), 'data');
    process.env.DOCKHAND_DATA_DIR = dir;
    delete process.env.DOCKHAND_DATABASE_URL;
  });
  afterEach(() => {
    for (const name of names) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
    rmSync(join(dir, '..'), { recursive: true, force: true });
  });

  it('with DOCKHAND_URL and an admin DOCKHAND_TOKEN and no --server, creates the token on that server (which accepts it) and no data dir', async () => {
    process.env.DOCKHAND_URL = url;
    process.env.DOCKHAND_TOKEN = h.tokens.admin;
    await cli('create', 'erin', '--scope', 'read');
    const secret = secretIn(output.join(''));
    expect(secret).toBeDefined();
    expect(await h.store.authenticate(secret ?? '')).toMatchObject({ user: { name: 'erin' } });
    expect(existsSync(dir)).toBe(false);
  });

  it('with DOCKHAND_URL but no token and no database, refuses naming the database and the server instead of making a data dir', async () => {
    process.env.DOCKHAND_URL = url;
    delete process.env.DOCKHAND_TOKEN;
    await expect(cli('create', 'erin')).rejects.toMatchObject({ code: 'not_found', message: expect.stringContaining(`no Dockhand database at ${join(dir, 'dockhand.db')} (DOCKHAND_URL names ${url}`) });
    expect(existsSync(dir)).toBe(false);
  });

  it('list and revoke on a data dir with no database refuse without making one', async () => {
    delete process.env.DOCKHAND_URL;
    delete process.env.DOCKHAND_TOKEN;
    await expect(cli('list')).rejects.toMatchObject({ code: 'not_found', field: 'DOCKHAND_DATA_DIR' });
    await expect(cli('revoke', 'tok_x')).rejects.toMatchObject({ code: 'not_found', field: 'DOCKHAND_DATA_DIR' });
    expect(existsSync(dir)).toBe(false);
  });
});
