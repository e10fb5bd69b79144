import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readinessLines } from '../cli/repo-commands';
import { RepoMirror } from '../sandbox/mirror';
import { resolveBuildRegistries, type BuildRegistriesInput } from '../sandbox/private-registries';
import { SqliteStore } from '../store/sqlite';
import type { SandboxProvider } from './ports';
import { ReadinessChecks } from './readiness';
import { registeredSource, RepoRegistry } from './registry';

/*
 * `repo check` of a repository whose environment.yml names registries it has no secrets for:
 * NOT READY, naming each missing secret and the command that sets it (the snapshot build's own
 * error, from `resolveBuildRegistries`, reaching the report as the build does in a real check).
 */

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const gitEnv = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };

/** The readiness report's lines for acme/web when its snapshot build needs `input`'s secrets and it has none. */
async function checkWithoutSecrets(input: Pick<BuildRegistriesInput, 'registries' | 'pythonIndex' | 'allowed'>): Promise<{ ready: boolean | undefined; lines: string }> {
  const root = mkdtempSync(join(tmpdir(), 'dockhand-readiness-secrets-'));
  dirs.push(root);
  const source = join(root, 'web');
  mkdirSync(source);
  writeFileSync(join(source, 'package.json'), '{"name":"web"}\n');
  execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: source, env: gitEnv });
  execFileSync('git', ['add', '-A'], { cwd: source, env: gitEnv });
  execFileSync('git', ['commit', '-q', '-m', 'one'], { cwd: source, env: gitEnv });
  const store = new SqliteStore(':memory:');
  const mirror = new RepoMirror(join(root, 'data'), { sources: registeredSource(store) });
  const registry = new RepoRegistry({ store, mirror });
  const { registration } = await registry.register({ name: 'acme/web', source }, { name: 'root', role: 'admin', createdAt: '' });
  // What the snapshot manager throws for this recipe when the repository has none of its secrets.
  const sandboxes: SandboxProvider = {
    acquire: () => resolveBuildRegistries({
      repo: 'acme/web',
      usedBy: 'snapshot build k',
      ...input,
      credentials: async (_repo, names) => ({ values: new Map(), missing: [...names] }),
      frontMissing: undefined,
    }).then(() => { throw new Error('not reached'); }),
    release: async () => undefined,
  };
  const checks = new ReadinessChecks({ registry, sandboxes, feedback: () => { throw new Error('not reached'); } });
  try {
    let status = await checks.start(registration);
    for (let i = 0; status.state === 'running' && i < 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      status = checks.status('acme/web') ?? status;
    }
    const report = status.report;
    return { ready: report?.ready, lines: readinessLines(report ?? (() => { throw new Error('no report'); })()).join('\n') };
  } finally {
    checks.close();
    mirror.close();
    await store.close();
  }
}

describe('repo check with registries that need secrets', () => {
  it('is NOT READY with each missing secret named and its command as the action', async () => {
    const { ready, lines } = await checkWithoutSecrets({
      registries: [{ scope: '@acme', url: 'https://npm.acme.internal/', token: 'NPM_ACME' }, { scope: '@tools', url: 'https://npm.acme.internal/', token: 'NPM_TOOLS' }],
      allowed: ['https://npm.acme.internal/'],
    });
    expect(ready).toBe(false);
    expect(lines).toContain('NOT READY');
    expect(lines).toContain('blocking: the snapshot could not be built: acme/web has no secret NPM_ACME, NPM_TOOLS, which .dockhand/environment.yml names for @acme, @tools');
    expect(lines).toContain('what to do: dockhand secret set acme/web NPM_ACME --from-file <token file>; dockhand secret set acme/web NPM_TOOLS --from-file <token file>');
  });

  it('names a missing Python index secret the same way', async () => {
    const { ready, lines } = await checkWithoutSecrets({ registries: [], pythonIndex: { url: 'https://pypi.acme.internal/simple/', token: 'PYPI_ACME' }, allowed: ['https://pypi.acme.internal/'] });
    expect(ready).toBe(false);
    expect(lines).toContain('blocking: the snapshot could not be built: acme/web has no secret PYPI_ACME, which .dockhand/environment.yml names for the Python index');
    expect(lines).toContain('what to do: dockhand secret set acme/web PYPI_ACME --from-file <token file>');
  });
});
