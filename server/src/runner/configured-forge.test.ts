import { createPublicKey, createVerify, generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { temporaryDir } from '../../../test/support/temporary-dirs';
import { loadConfig } from '../config';
import { openApiProblems } from '../forge/testing/github-openapi';
import { configuredForge } from './configured-forge';
import { createFleet, type Fleet } from './fleet';
import { FakeSandboxProvider, ScriptedAgent } from './testing/fakes';

/*
 * DOCKHAND_FORGE=github makes the fleet's forge GitHub with the credentials the settings name; it
 * used to be read and ignored (the local forge served anyway). The requests go to the configured
 * API root (GitHub Enterprise's /api/v3 here, a listener of this test), each judged against
 * GitHub's OpenAPI description; the App's JWT is checked with the App's public key.
 */

interface Seen {
  method: string;
  path: string;
  authorization: string;
  body: unknown;
}

let server: Server | undefined;
let fleet: Fleet | undefined;
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
  await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
  server = undefined;
});

async function fakeGitHub(answer: (call: Seen) => { status: number; body: unknown }): Promise<{ api: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  server = createServer((request: IncomingMessage, response: ServerResponse) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString()));
    request.on('end', () => {
      const url = new URL(request.url ?? '/', 'http://x');
      const call: Seen = { method: request.method ?? 'GET', path: url.pathname.replace(/^\/api\/v3/, ''), authorization: request.headers.authorization ?? '', body: text ? JSON.parse(text) : undefined };
      seen.push(call);
      const problems = openApiProblems({ method: call.method, path: call.path, query: url.searchParams, body: call.body });
      const { status, body } = problems.length ? { status: 418, body: { message: problems.join('; ') } } : answer(call);
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
  });
  await new Promise<void>((done) => server!.listen(0, '127.0.0.1', () => done()));
  const address = server.address();
  return { api: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/api/v3`, seen };
}

describe('the forge DOCKHAND_FORGE names', () => {
  it('is the local forge by default, and GitHub without credentials is refused naming both ways to give them', () => {
    expect(configuredForge(loadConfig({ DOCKHAND_DATA_DIR: temporaryDir('dockhand-forge-') }))).toBeUndefined();
    expect(() => configuredForge(loadConfig({ DOCKHAND_DATA_DIR: temporaryDir('dockhand-forge-'), DOCKHAND_FORGE: 'github' }))).toThrow(/DOCKHAND_GITHUB_APP_ID and DOCKHAND_GITHUB_APP_KEY_FILE\) or a token \(DOCKHAND_PUSH_TOKEN\)/);
    expect(() => configuredForge(loadConfig({ DOCKHAND_DATA_DIR: temporaryDir('dockhand-forge-'), DOCKHAND_FORGE: 'github', DOCKHAND_GITHUB_APP_ID: '123' }))).toThrow(/^DOCKHAND_GITHUB_APP_KEY_FILE: a GitHub App needs both/);
    const dir = temporaryDir('dockhand-forge-');
    writeFileSync(join(dir, 'app.pem'), 'not a key\n');
    expect(() => configuredForge(loadConfig({ DOCKHAND_DATA_DIR: dir, DOCKHAND_FORGE: 'github', DOCKHAND_GITHUB_APP_ID: '123', DOCKHAND_GITHUB_APP_KEY_FILE: join(dir, 'app.pem') }))).toThrow(/holds no PEM private key/);
    expect(() => configuredForge(loadConfig({ DOCKHAND_DATA_DIR: dir, DOCKHAND_FORGE: 'github', DOCKHAND_GITHUB_APP_ID: '123', DOCKHAND_GITHUB_APP_KEY_FILE: join(dir, 'missing.pem') }))).toThrow(/cannot read .*missing\.pem/);
  });

  it("a GitHub App: the fleet's forge mints a token for the one repository with the App's JWT and pushes with it to the Enterprise host", async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const dir = temporaryDir('dockhand-forge-');
    writeFileSync(join(dir, 'app.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), { mode: 0o600 });
    const { api, seen } = await fakeGitHub((call) => {
      if (call.method === 'POST' && call.path === '/app/installations/42/access_tokens') {
        const jwt = call.authorization.replace(/^bearer /i, '');
        const [header = '', payload = '', signature = ''] = jwt.split('.');
        const valid = createVerify('RSA-SHA256').update(`${header}.${payload}`).verify(createPublicKey(publicKey.export({ type: 'spki', format: 'pem' })), Buffer.from(signature, 'base64url'));
        const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as { iss?: string };
        if (!valid || claims.iss !== '123') return { status: 401, body: { message: 'Bad credentials' } };
        return { status: 201, body: { token: 'ghs_minted_for_shop', expires_at: '2026-12-05T01:00:00Z' } };
      }
      if (call.method === 'GET' && call.path === '/repos/acme/shop') {
        return call.authorization === 'token ghs_minted_for_shop' ? { status: 200, body: { default_branch: 'trunk' } } : { status: 401, body: { message: 'Bad credentials' } };
      }
      return { status: 404, body: { message: 'Not Found' } };
    });
    const config = loadConfig({ DOCKHAND_DATA_DIR: join(dir, 'data'), DOCKHAND_FORGE: 'github', DOCKHAND_GITHUB_API_URL: api, DOCKHAND_GITHUB_APP_ID: '123', DOCKHAND_GITHUB_APP_KEY_FILE: join(dir, 'app.pem'), DOCKHAND_GITHUB_INSTALLATION_ID: '42' });
    fleet = await createFleet(config, { sandboxes: new FakeSandboxProvider(), agent: new ScriptedAgent(async () => ({ outcome: 'failed', summary: 'not run', diff: '' })) });
    expect(fleet.forge.kind).toBe('github');
    const target = await fleet.forge.pushTarget('acme/shop');
    expect(target).toMatchObject({ url: `${new URL(api).origin}/acme/shop.git`, token: 'ghs_minted_for_shop', username: 'x-access-token', defaultBranch: 'trunk' });
    expect(seen.map((call) => `${call.method} ${call.path}`)).toEqual(['POST /app/installations/42/access_tokens', 'GET /repos/acme/shop']);
    expect(seen[0]?.body).toMatchObject({ repositories: ['shop'] });
  });

  it('a static push token: the issues of a registered acme/shop are read from GitHub with it', async () => {
    const { api, seen } = await fakeGitHub((call) => (call.method === 'GET' && call.path === '/repos/acme/shop/issues' && call.authorization === 'token github_pat_static'
      ? { status: 200, body: [{ number: 7, title: 'Totals drop cents', body: 'x', html_url: 'https://github.com/acme/shop/issues/7', labels: [] }] }
      : { status: 401, body: { message: 'Bad credentials' } }));
    const forge = configuredForge(loadConfig({ DOCKHAND_DATA_DIR: temporaryDir('dockhand-forge-'), DOCKHAND_FORGE: 'github', DOCKHAND_GITHUB_API_URL: api, DOCKHAND_PUSH_TOKEN: 'github_pat_static' }));
    expect(await forge?.listOpenIssues('acme/shop')).toEqual([{ number: 7, title: 'Totals drop cents', body: 'x', url: 'https://github.com/acme/shop/issues/7', labels: [] }]);
    expect(seen).toHaveLength(1);
  });
});
