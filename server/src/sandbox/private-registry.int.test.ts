import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqliteStore } from '../store/sqlite';
import type { RepositorySecrets } from '../secrets/service';
import type { DockerSandboxDriver } from './docker-driver';
import { registryHarness, type RegistryHarness } from './private-registry-harness.test-support';
import { PRIVATE_PACKAGE, testRegistry, type TestRegistry } from './private-registry.test-support';
import type { SnapshotProgress } from './snapshot-build';
import type { Snapshot, SnapshotManager } from './snapshots';
import { TEST_TOOLCHAIN_DIR } from './test-support';
import { ToolchainStore } from './toolchains';

/*
 * Issue 25's proof on real parts: Verdaccio (htpasswd, `$authenticated`, no uplink) holds
 * @acme/private-utils; a repository's secret holds its token in the server's SQLite (encrypted);
 * npm, pnpm, yarn classic and yarn berry snapshot builds under runsc-egress install it and a
 * public package through the registry front, and then an attacker's leak hunt in a sandbox of that snapshot, the image's
 * bytes, the build log and the database find neither the token nor its base64 form.
 */

const CA = '/etc/ssl/certs/ca-certificates.crt';
let registry: TestRegistry;
let harness: RegistryHarness;
let dataDir: string;
let store: SqliteStore;
let secrets: RepositorySecrets;
let toolchains: ToolchainStore;
let snapshots: SnapshotManager;
let driver: DockerSandboxDriver;
let cleanup: string[];

const environmentFile = (url: string) => `registries: [{ scope: "@acme", url: "${url}", token: NPM_ACME }]\n`;
const TEST_SCRIPT = `node -e "const u = require('${PRIVATE_PACKAGE}'); if (u.shout('ok') !== 'OK!' || !require('is-number')(1)) process.exit(1)"`;

beforeAll(async () => {
  registry = await testRegistry();
  toolchains = new ToolchainStore({ dataDir: TEST_TOOLCHAIN_DIR, caBundle: CA });
  harness = await registryHarness('private-registry', { privateRegistries: [registry.url], caBundle: CA, toolchains });
  ({ dataDir, store, secrets, snapshots, driver, cleanup } = harness);
});

afterAll(async () => {
  await harness?.close();
});

const YARN_CLASSIC = '1.22.22';
/** A berry without the age gate of 4.10+ (the test registry's package is published minutes before). */
const YARN_BERRY = '4.9.2';
/**
 * The company's own .yarnrc.yml for berry: its scope's registry, and the token read from each
 * developer's NPM_TOKEN, a variable the build does not have (berry refuses to start on an unset
 * one unless the front drops that line: dep-cache-yarn.ts dropFrontCredentials).
 */
const berryProjectRc = (url: string) => `nodeLinker: node-modules\nnpmScopes:\n  acme:\n    npmRegistryServer: "${url.replace(/\/$/, '')}"\n    npmAuthToken: "\${NPM_TOKEN}"\nunsafeHttpWhitelist:\n  - "${new URL(url).hostname}"\n`;
/** Yarn classic's committed .npmrc, the same way: yarn 1 stops on 'Failed to replace env in config: ${NPM_TOKEN}' without the drop. */
const classicProjectNpmrc = (url: string) => `@acme:registry=${url}\n//${new URL(url).host}/:_authToken=\${NPM_TOKEN}\n`;

/** A fixture repository whose lockfile was made on the host against the registry with the token (as a developer's would be). */
async function fixture(name: string, manager: 'npm' | 'pnpm' | 'yarn' | 'yarn-berry', environment: string | undefined): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'dockhand-private-fixture-'));
  cleanup.push(dir);
  const pinned = manager === 'yarn' ? { packageManager: `yarn@${YARN_CLASSIC}` } : manager === 'yarn-berry' ? { packageManager: `yarn@${YARN_BERRY}` } : {};
  const manifest = { name: name.replace('/', '-'), version: '1.0.0', private: true, ...pinned, dependencies: { [PRIVATE_PACKAGE]: '1.0.0', 'is-number': '7.0.0' }, scripts: { test: TEST_SCRIPT } };
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  const host = new URL(registry.url).host;
  const developer = mkdtempSync(join(tmpdir(), 'dockhand-private-developer-'));
  cleanup.push(developer);
  const npmrc = join(developer, 'developer.npmrc');
  writeFileSync(npmrc, `@acme:registry=${registry.url}\n//${host}/:_authToken=${registry.token}\n`);
  // A developer has NPM_TOKEN set: the committed rc files read it.
  const env = { ...process.env, npm_config_userconfig: npmrc, NODE_EXTRA_CA_CERTS: CA, NPM_TOKEN: registry.token };
  if (manager === 'npm') await promisify(execFile)('npm', ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir, env });
  else if (manager === 'pnpm') {
    const pnpm = await toolchains.ensure('pnpm', '9.15.9');
    await promisify(execFile)(process.execPath, [join(pnpm.hostPath, 'bin/pnpm.cjs'), 'install', '--lockfile-only', '--no-frozen-lockfile'], { cwd: dir, env });
  } else if (manager === 'yarn') {
    writeFileSync(join(dir, '.npmrc'), classicProjectNpmrc(registry.url));
    const yarn = await toolchains.ensure('yarn', YARN_CLASSIC);
    await promisify(execFile)(process.execPath, [join(yarn.hostPath, 'bin/yarn.js'), 'install', '--ignore-scripts', '--non-interactive'], { cwd: dir, env: { ...env, YARN_CACHE_FOLDER: join(developer, 'cache') } });
  } else {
    // The registry and the token's variable in the project's rc file, the token in the developer's environment.
    writeFileSync(join(dir, '.yarnrc.yml'), berryProjectRc(registry.url));
    const berry = await toolchains.ensure('yarn-berry', YARN_BERRY);
    await promisify(execFile)(process.execPath, [join(berry.hostPath, 'bin/yarn.js'), 'install', '--mode=update-lockfile'], {
      cwd: dir,
      env: { ...process.env, NPM_TOKEN: registry.token, HOME: developer, YARN_ENABLE_GLOBAL_CACHE: 'false', YARN_ENABLE_TELEMETRY: '0', YARN_HTTPS_CA_FILE_PATH: CA, NODE_EXTRA_CA_CERTS: CA },
    });
  }
  const lockfile = manager === 'npm' ? 'package-lock.json' : manager === 'pnpm' ? 'pnpm-lock.yaml' : 'yarn.lock';
  const files: Record<string, string> = { 'package.json': readFileSync(join(dir, 'package.json'), 'utf8'), [lockfile]: readFileSync(join(dir, lockfile), 'utf8'), '.gitignore': 'node_modules/\n.yarn/\n' };
  if (manager === 'yarn-berry') files['.yarnrc.yml'] = readFileSync(join(dir, '.yarnrc.yml'), 'utf8');
  if (manager === 'yarn') files['.npmrc'] = readFileSync(join(dir, '.npmrc'), 'utf8');
  if (environment !== undefined) files['.dockhand/environment.yml'] = environment;
  return harness.repo(name, files);
}

const build = (name: string, sha: string, onProgress?: (progress: SnapshotProgress) => void): Promise<Snapshot> => harness.build(name, sha, onProgress);

/** The build log's audit line: each secret by name with its step (and, at the front, its requests upstream). */
const auditLine = (log: string): string => /^# repository secrets used \(names only\): (.*)$/m.exec(log)?.[1] ?? '';

const base64 = () => Buffer.from(registry.token).toString('base64');
/** Both forms of the token, as grep patterns. */
const tokenForms = () => [registry.token, base64()];

describe('private registries through the registry front (runsc-egress)', () => {
  let npmSnapshot: Snapshot;

  it('npm: the snapshot installs the private package and a public one; the build\'s sandbox held no credential', async () => {
    await secrets.set('acme/web', 'NPM_ACME', registry.token, 'alice');
    const sha = await fixture('acme/web', 'npm', environmentFile(registry.url));
    const progress: SnapshotProgress[] = [];
    npmSnapshot = await build('acme/web', sha, (event) => progress.push(event));
    expect(npmSnapshot.environment.registries).toEqual([{ scope: '@acme', url: registry.url, token: 'NPM_ACME' }]);
    const log = readFileSync(join(dataDir, 'snapshot-logs', `${npmSnapshot.key}.log`), 'utf8');
    for (const form of tokenForms()) expect(log).not.toContain(form);
    // The audit: secret list's last use names the build and the step; the build log and the build's last progress event name the secret and its requests.
    expect((await secrets.list('acme/web'))[0]?.lastUsedBy).toBe(`snapshot build ${npmSnapshot.key} registry front`);
    expect(auditLine(log)).toMatch(/^NPM_ACME \(registry front for @acme: [1-9]\d* requests? upstream\)$/);
    const done = progress.find((event) => event.stage === 'done');
    expect(done?.line).toBe(`repository secrets used: ${auditLine(log)}`);
  });

  it('the leak hunt in a sandbox of that snapshot finds no token: env, ~/.npmrc, npm config, /proc/*/environ, the whole file system', async () => {
    const sandbox = await driver.create({ image: npmSnapshot.image, baseSha: npmSnapshot.sha, snapshot: npmSnapshot.identity });
    try {
      const tests = await sandbox.exec({ cmd: ['sh', '-c', TEST_SCRIPT] });
      expect(tests.exitCode, tests.stderr).toBe(0);
      const [plain, encoded] = tokenForms();
      const hunt = [
        'env',
        'cat ~/.npmrc 2>&1',
        'npm config list 2>&1',
        "find / -name '*npmrc*' -not -path '/proc/*' 2>/dev/null",
        "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'",
      ].join('; echo ----; ');
      const seen = await sandbox.exec({ cmd: ['sh', '-c', hunt] });
      for (const form of tokenForms()) expect(seen.stdout + seen.stderr).not.toContain(form);
      expect(seen.stdout).not.toContain('_authToken');
      // The whole file system, as the agent (the attacker here) can read it: not /proc and /sys (kernel
      // views, not files). A control file proves the grep reaches files; what the agent cannot read
      // is in the image, which `docker save` below covers.
      const control = `dockhand-control-${process.pid}`;
      const grep = await sandbox.exec({ cmd: ['sh', '-c', `printf %s '${control}' > /tmp/control.txt; grep -rIl -F -e '${plain}' -e '${encoded}' -e '${control}' / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev 2>/dev/null; true`], timeoutMs: 600_000 });
      expect(grep.stdout.trim().split('\n')).toEqual(['/tmp/control.txt']);
    } finally {
      await sandbox.destroy();
    }
  }, 900_000);

  it('docker save of the snapshot image and the SQLite file hold neither form of the token', async () => {
    const count = (await promisify(execFile)('bash', ['-c', `docker save '${npmSnapshot.image}' | grep -a -c -F -e "$0" -e "$1" || true`, ...tokenForms()], { maxBuffer: 1024 * 1024 })).stdout.trim();
    expect(count).toBe('0');
    store.db.pragma('wal_checkpoint(TRUNCATE)');
    const database = readFileSync(join(dataDir, 'dockhand.db')).toString('latin1');
    for (const form of tokenForms()) expect(database).not.toContain(form);
  }, 600_000);

  it('pnpm: the same private package through the same front', async () => {
    await secrets.set('acme/pnpm', 'NPM_ACME', registry.token, 'alice');
    const sha = await fixture('acme/pnpm', 'pnpm', environmentFile(registry.url));
    const snapshot = await build('acme/pnpm', sha);
    expect(snapshot.environment.packageManager?.name).toBe('pnpm');
    const sandbox = await driver.create({ image: snapshot.image, baseSha: snapshot.sha, snapshot: snapshot.identity });
    try {
      const tests = await sandbox.exec({ cmd: ['sh', '-c', TEST_SCRIPT] });
      expect(tests.exitCode, tests.stderr).toBe(0);
    } finally {
      await sandbox.destroy();
    }
  });

  for (const manager of ['yarn', 'yarn-berry'] as const) {
    it(`${manager === 'yarn' ? 'yarn classic' : 'yarn berry'}: the private package through the front (the committed rc file's \${NPM_TOKEN} line dropped for the install); the build's rc file held only the front's URL, the repository's files are the commit's, no form of the token anywhere`, async () => {
      const name = `acme/${manager}`;
      await secrets.set(name, 'NPM_ACME', registry.token, 'alice');
      const sha = await fixture(name, manager, environmentFile(registry.url));
      const snapshot = await build(name, sha);
      expect(snapshot.environment.packageManager?.name).toBe(manager);
      expect((await secrets.list(name))[0]?.lastUsedBy).toBe(`snapshot build ${snapshot.key} registry front`);
      const log = readFileSync(join(dataDir, 'snapshot-logs', `${snapshot.key}.log`), 'utf8');
      expect(auditLine(log)).toMatch(/^NPM_ACME \(registry front for @acme: [1-9]\d* requests? upstream\)$/);
      for (const form of tokenForms()) expect(log).not.toContain(form);
      // What the build wrote for yarn, as the log shows it: the front (the build network's gateway) for @acme, nothing of the registry.
      const rcPath = manager === 'yarn' ? '/tmp/dockhand/registries.npmrc' : '/home/dockhand/.yarnrc.yml';
      const written = new RegExp(`# yarn through the registry front: ${rcPath.replace(/\./g, '\\.')} holds:\\n((?:#   .*\\n)+)`).exec(log)?.[1] ?? '';
      const rcLines = written.split('\n').filter(Boolean).map((line) => line.slice(4));
      expect(rcLines.join('\n')).toMatch(manager === 'yarn' ? /^@acme:registry=http:\/\/\d+\.\d+\.\d+\.\d+:\d+\/$/ : /^npmScopes:\n  "acme":\n    npmRegistryServer: "http:\/\/\d+\.\d+\.\d+\.\d+:\d+\/"$/);
      expect(written).not.toContain(new URL(registry.url).host);
      expect(log).toContain(manager === 'yarn' ? 'yarn.lock, .npmrc pointed at the front for the install' : '.yarnrc.yml pointed at the front for the install');
      const sandbox = await driver.create({ image: snapshot.image, baseSha: snapshot.sha, snapshot: snapshot.identity });
      try {
        const tests = await sandbox.exec({ cmd: ['sh', '-c', TEST_SCRIPT] });
        expect(tests.exitCode, tests.stderr).toBe(0);
        // The lockfile and .yarnrc.yml are the commit's again; the build rc file is gone.
        const state = await sandbox.exec({ cmd: ['sh', '-c', `git status --porcelain; for f in ${rcPath} ~/.yarnrc.yml ~/.yarnrc ~/.npmrc; do [ ! -e "$f" ] || echo "$f"; done`] });
        expect(state.stdout.trim()).toBe('');
        const [plain, encoded] = tokenForms();
        const grep = await sandbox.exec({ cmd: ['sh', '-c', `env; grep -rIl -F -e '${plain}' -e '${encoded}' /workspace /home /tmp /etc 2>/dev/null; true`], timeoutMs: 300_000 });
        for (const form of tokenForms()) expect(grep.stdout).not.toContain(form);
        expect(grep.stdout).not.toMatch(/^\/(workspace|home|tmp|etc)\//m);
      } finally {
        await sandbox.destroy();
      }
      const count = (await promisify(execFile)('bash', ['-c', `docker save '${snapshot.image}' | grep -a -c -F -e "$0" -e "$1" || true`, ...tokenForms()], { maxBuffer: 1024 * 1024 })).stdout.trim();
      expect(count).toBe('0');
    }, 900_000);
  }

  it('a repository without the registry configured cannot get the private package (not from the cache either)', async () => {
    const sha = await fixture('acme/other', 'npm', undefined);
    const before = snapshots.dependencyCache?.stats.hits ?? 0;
    await expect(build('acme/other', sha)).rejects.toThrow(/install|npm/i);
    expect((snapshots.dependencyCache?.stats.hits ?? 0) - before).toBeLessThanOrEqual(1); // is-number at most
  });

  it('a missing secret and a wrong token fail naming the secret, the registry\'s answer and the command; the fix builds', async () => {
    const sha = await fixture('acme/wrong', 'npm', environmentFile(registry.url));
    await expect(build('acme/wrong', sha)).rejects.toMatchObject({
      message: expect.stringContaining('acme/wrong has no secret NPM_ACME, which .dockhand/environment.yml names for @acme'),
      hint: 'dockhand secret set acme/wrong NPM_ACME --from-file <token file>',
    });
    await secrets.set('acme/wrong', 'NPM_ACME', 'not-a-valid-token', 'alice');
    const refused = await build('acme/wrong', sha).then(() => undefined, (error: unknown) => error);
    expect(refused).toMatchObject({
      message: expect.stringContaining(`registry ${registry.url} answered 401 (not authenticated) for @acme with the token of secret NPM_ACME`),
      hint: 'set a token that registry accepts: dockhand secret set acme/wrong NPM_ACME --from-file <token file>',
    });
    expect(String((refused as Error).message)).not.toContain('not-a-valid-token');
    // Not remembered as the key's failure: with the right token the same commit builds.
    await secrets.set('acme/wrong', 'NPM_ACME', registry.token, 'alice');
    expect((await build('acme/wrong', sha)).built).toBe(true);
  });
});
