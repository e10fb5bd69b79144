import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockhandError } from '../errors';
import { LocalForge } from './local-forge';
import { InMemoryPullRequestStore } from './memory-store';
import { buildPullRequestBody } from './pr-body';
import { pushChange } from './push';
import { redact } from './redact';
import { startHttpGitServer, type HttpGitServer } from './testing/http-git-server';
import { createSourceRepo, diffOf, git, PAGINATE_FIXED } from './testing/repo';

/** Every file under `dir` (dot-dirs included), read as bytes. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

function filesContaining(dir: string, needles: string[]): string[] {
  return filesUnder(dir).filter((path) => {
    const bytes = readFileSync(path);
    return needles.some((needle) => bytes.includes(needle));
  });
}

describe('push over authenticated smart HTTP', () => {
  // Random per run: a value that can only be on disk if this run put it there.
  const token = `tok_${randomBytes(24).toString('hex')}`;
  const tokenForms = [token, Buffer.from(`x-access-token:${token}`).toString('base64')];
  let root: string;
  let server: HttpGitServer;
  let source: { path: string; sha: string };
  let forge: LocalForge;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'dockhand-tokentest-'));
    forge = new LocalForge({ dataDir: join(root, 'forge'), store: new InMemoryPullRequestStore() });
    source = createSourceRepo();
    await forge.createRepository('sample', source.path);
    server = await startHttpGitServer(join(root, 'forge'), token);
  });

  afterAll(async () => {
    await server.close();
    rmSync(root, { recursive: true, force: true });
    rmSync(source.path, { recursive: true, force: true });
  });

  it('sends the token only through the credential helper and leaves it nowhere on disk or in output', async () => {
    const cloneDir = join(root, 'clone');
    const diff = diffOf(source.path, { 'src/paginate.js': PAGINATE_FIXED });
    const remoteUrl = `${server.baseUrl}sample.git`;

    const result = await pushChange({
      cloneDir,
      remoteUrl,
      token,
      baseSha: source.sha,
      diff,
      branch: 'dockhand/50-token-test',
      message: 'Fix paginate',
    });
    expect(result.pushed).toBe(true);
    // The remote really demanded credentials and really got them.
    expect(server.stats.refused).toBeGreaterThan(0);
    expect(server.stats.authorized).toBeGreaterThan(0);
    expect(git(forge.repositoryPath('sample'), 'rev-parse', 'refs/heads/dockhand/50-token-test')).toBe(result.headSha);

    // Not in the clone: config, logs, packed refs, FETCH_HEAD, worktree metadata — every file.
    expect(existsSync(join(cloneDir, '.git'))).toBe(true);
    expect(filesContaining(cloneDir, tokenForms)).toEqual([]);
    expect(readFileSync(join(cloneDir, '.git', 'config'), 'utf8')).not.toMatch(/credential|127\.0\.0\.1/);
    // Not in the remote either, and no credential store appeared in the home directory.
    expect(filesContaining(join(root, 'forge'), tokenForms)).toEqual([]);
    const store = join(homedir(), '.git-credentials');
    if (existsSync(store) && statSync(store).isFile()) expect(readFileSync(store, 'utf8')).not.toContain(token);
    // No scratch index or patch left behind.
    expect(readdirSync(join(cloneDir, '.git', 'dockhand-scratch'))).toEqual([]);

    // Not in the captured output, nor in a PR body whose test log echoed it.
    expect(result.output).not.toContain(token);
    const body = buildPullRequestBody(
      {
        ticket: { title: 'paginate' },
        summary: 'fixed',
        tests: { command: 'npm test', passed: 1, failed: 0, log: `env: DOCKHAND_PUSH_TOKEN=${token}\nok 1` },
        usage: { turns: 1, inputTokens: 1, outputTokens: 1, costUsd: 0 },
      },
      [token],
    );
    expect(body).not.toContain(token);
    expect(body).toContain('DOCKHAND_PUSH_TOKEN=[REDACTED]');

    // Retrying with the token finds the branch already there.
    const again = await pushChange({ cloneDir, remoteUrl, token, baseSha: source.sha, diff, branch: 'dockhand/50-token-test', message: 'Fix paginate' });
    expect(again).toMatchObject({ pushed: false, headSha: result.headSha });
    expect(filesContaining(cloneDir, tokenForms)).toEqual([]);
  });

  it('fails without the token (or with a wrong one), and the error carries no secret', async () => {
    const diff = diffOf(source.path, { 'README.md': '# sample, edited\n' });
    const base = { cloneDir: join(root, 'clone-2'), remoteUrl: `${server.baseUrl}sample.git`, baseSha: source.sha, diff, message: 'x' };
    await expect(pushChange({ ...base, branch: 'dockhand/51-no-token' })).rejects.toBeInstanceOf(DockhandError);
    const wrong = `tok_${randomBytes(24).toString('hex')}`;
    const failure = await pushChange({ ...base, branch: 'dockhand/52-wrong-token', token: wrong }).catch((error: unknown) => error);
    if (!(failure instanceof DockhandError)) throw new Error(`expected a DockhandError, got ${String(failure)}`);
    expect(failure.message).not.toContain(wrong);
    expect(git(forge.repositoryPath('sample'), 'branch', '--list', 'dockhand/5[12]-*')).toBe('');
  });

  it('rejects a remote URL with credentials in it', async () => {
    await expect(
      pushChange({
        cloneDir: join(root, 'clone-3'),
        remoteUrl: `http://x-access-token:${token}@127.0.0.1:1/sample.git`,
        baseSha: source.sha,
        diff: 'diff --git a/x b/x\n',
        branch: 'dockhand/53-x',
        message: 'x',
      }),
    ).rejects.toMatchObject({ code: 'bad_request', field: 'remoteUrl' });
    expect(redact(`http://x-access-token:${token}@host`, [token])).toBe('http://x-access-token:[REDACTED]@host');
  });
});
