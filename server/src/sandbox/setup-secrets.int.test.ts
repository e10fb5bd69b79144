import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerSandboxDriver } from './docker-driver';
import { RepoMirror } from './mirror';
import { secretForms } from './setup-secrets';
import { SnapshotManager, type Snapshot } from './snapshots';
import { createRepoFromFiles, ensureBaseImage, TEST_TOOLCHAIN_DIR } from './test-support';
import { ToolchainStore } from './toolchains';

/*
 * Setup secrets in real gVisor builds: setup.sh reads $NAME_FILE from the tmpfs; the install step
 * before it sees neither the files nor the values; a setup.sh that writes the value (here base64)
 * into the workspace fails the build naming the file; one that only uses it builds an image where
 * `docker save` holds no form of the value, and the build log holds none either.
 */
const docker = new Docker();
const ownerId = `test-setup-secrets-${process.pid}`;
const repository = `dockhand/setup-secrets-test-${process.pid}`;
const CA = '/etc/ssl/certs/ca-certificates.crt';
const VALUE = `sntrys_${createHash('sha256').update(String(process.pid)).digest('hex').slice(0, 40)}`;
const sources = new Map<string, string>();
const cleanup: string[] = [];
let dataDir: string;
let mirror: RepoMirror;
let snapshots: SnapshotManager;
let driver: DockerSandboxDriver;

beforeAll(() => {
  ensureBaseImage();
  dataDir = mkdtempSync(join(tmpdir(), 'dockhand-setup-secrets-'));
  mirror = new RepoMirror(dataDir, { sources: (name) => sources.get(name) ?? name });
  const stored = new Map([['SENTRY_AUTH', VALUE]]);
  snapshots = new SnapshotManager({
    docker,
    mirror,
    dataDir,
    ownerId,
    repository,
    egress: 'none',
    extraCaBundle: CA,
    toolchains: new ToolchainStore({ dataDir: TEST_TOOLCHAIN_DIR, caBundle: CA }),
    registryCredentials: async (_repo, names) => ({ values: new Map(names.filter((name) => stored.has(name)).map((name) => [name, stored.get(name) ?? ''])), missing: names.filter((name) => !stored.has(name)) }),
  });
  driver = new DockerSandboxDriver({ docker, ownerId, runtime: 'runsc' });
});

afterAll(async () => {
  await driver?.destroyAll();
  for (const image of await docker.listImages({ filters: { reference: [repository] } })) {
    await docker.getImage(image.Id).remove({ force: true }).catch(() => undefined);
  }
  for (const path of [dataDir, ...cleanup]) rmSync(path, { recursive: true, force: true });
});

async function build(name: string, setup: string, secrets = '[SENTRY_AUTH]'): Promise<Snapshot> {
  const repo = createRepoFromFiles({
    'README.md': '# setup secrets\n',
    // The install step records what it can see of the secrets: nothing.
    '.dockhand/environment.yml': `secrets: ${secrets}\ninstall: "(env; ls -A /run/dockhand-secrets) > .install-saw 2>&1 || true"\n`,
    '.dockhand/setup.sh': `set -eu\n${setup}\n`,
  });
  sources.set(name, repo.path);
  cleanup.push(repo.path);
  const mirrorPath = await mirror.ensure(name, repo.sha);
  return snapshots.resolve({ repo: name, mirrorPath, sha: repo.sha });
}

function buildLogs(): string {
  const dir = join(dataDir, 'snapshot-logs');
  return readdirSync(dir).map((file) => readFileSync(join(dir, file), 'utf8')).join('\n');
}

describe('setup secrets (gVisor)', () => {
  it('fails the build naming each file and the form when setup.sh writes the value in any form, and masks it in the log', async () => {
    // Each form in its own file, written with the base image's own tools.
    const setup = [
      'cat "$SENTRY_AUTH_FILE"; echo',
      'v=$(cat "$SENTRY_AUTH_FILE")',
      'base64 "$SENTRY_AUTH_FILE" > deploy.b64',
      'printf %s "$v" | od -An -tx1 | tr -d " \\n" > deploy.hex',
      'printf "%s\\n" "$v" | gzip -c > deploy.gz',
      'python3 -c "import sys; print(sys.argv[1][::-1])" "$v" > deploy.rev',
      'printf %s "$v" | tr A-Za-z N-ZA-Mn-za-m > deploy.rot13',
      'printf "%s\\n%s\\n" "${v:0:20}" "${v:20}" > deploy.split',
      'printf "//registry.acme.example/:_auth=%s\\n" "$(printf "deploy:%s" "$v" | base64 -w0)" > "$HOME/.npmrc"',
    ].join('\n');
    const error = await build('acme/leaks', setup).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    for (const [file, form] of [
      ['/workspace/deploy.b64', 'base64'],
      ['/workspace/deploy.hex', 'hex'],
      ['/workspace/deploy.gz', 'raw, in a gzip'],
      ['/workspace/deploy.rev', 'reversed'],
      ['/workspace/deploy.rot13', 'rot13'],
      ['/workspace/deploy.split', 'raw, split across lines'],
      ['/home/dockhand/.npmrc', 'base64 (inside a longer text)'],
    ]) {
      expect(message).toContain(`${file} (SENTRY_AUTH, ${form})`);
    }
    for (const form of secretForms(VALUE)) expect(message).not.toContain(form);
    const log = buildLogs();
    expect(log).toContain('[secret SENTRY_AUTH]');
    expect(log).toMatch(/# setup secrets: searched \d+ files/);
    for (const form of secretForms(VALUE)) expect(log).not.toContain(form);
    // Nothing was committed.
    expect(await docker.listImages({ filters: { reference: [repository] } })).toEqual([]);
  }, 300_000);

  it('gives the value to setup.sh only; the image holds no form of it', async () => {
    const snapshot = await build('acme/uses', 'sha256sum < "$SENTRY_AUTH_FILE" | cut -d" " -f1 > .setup-used');
    const sandbox = await driver.create({ image: snapshot.image, baseSha: snapshot.sha, snapshot: snapshot.identity });
    const used = await sandbox.exec({ cmd: ['cat', '.setup-used'] });
    expect(used.stdout.trim()).toBe(createHash('sha256').update(VALUE).digest('hex'));
    const installSaw = await sandbox.exec({ cmd: ['cat', '.install-saw'] });
    expect(installSaw.stdout).not.toContain('dockhand_setup_secrets');
    expect(installSaw.stdout).not.toContain('SENTRY_AUTH');
    const secretsDir = await sandbox.exec({ cmd: ['sh', '-c', 'ls -A /run/dockhand-secrets 2>/dev/null; env'] });
    expect(secretsDir.stdout).not.toContain('SENTRY_AUTH');
    const patterns = join(dataDir, 'patterns');
    writeFileSync(patterns, `${secretForms(VALUE).join('\n')}\n`);
    const saved = spawnSync('bash', ['-c', 'set -o pipefail; docker save "$1" | grep -caF -f "$2"', '_', snapshot.image, patterns], { encoding: 'utf8' });
    // grep: 1 is "no line matched"; the save itself must have worked (pipefail would give docker's code).
    expect(saved.stdout.trim()).toBe('0');
    expect(saved.status).toBe(1);
    for (const form of secretForms(VALUE)) expect(buildLogs()).not.toContain(form);
    // The audit: the build log names the secret and its step.
    expect(readFileSync(join(dataDir, 'snapshot-logs', `${snapshot.key}.log`), 'utf8')).toContain('# repository secrets used (names only): SENTRY_AUTH (given to setup.sh)\n');
    execFileSync('docker', ['image', 'inspect', snapshot.image], { stdio: 'ignore' });
  }, 300_000);

  it('names a missing secret and the command that sets it', async () => {
    await expect(build('acme/missing', 'true', '[SENTRY_AUTH, MISSING_ONE]')).rejects.toThrow(/acme\/missing has no secret MISSING_ONE/);
  }, 300_000);
});
