import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerSandboxDriver, LABELS } from './docker-driver';
import type { DockerSandbox } from './docker-sandbox';
import { checkSandboxHost } from './host-check';
import { ensureBaseImage } from './test-support';

/*
 * A sandbox of a snapshot whose workspace holds a large ignored tree (like node_modules) gets the
 * image's files in its own copy-on-write layer: nothing is copied into a volume at create, what
 * one sandbox writes (into the tree or a tracked file) no other sandbox of the same snapshot sees,
 * and outside /workspace only tmpfs directories are writable.
 */
const docker = new Docker();
const ownerId = `test-workspace-layer-${process.pid}`;
const image = `dockhand/test-big-workspace:${process.pid}`;
const FILES = 20_000;
let sha: string;
let driver: DockerSandboxDriver;

/** /workspace: a git repo with one tracked file and FILES small files in an ignored node_modules. */
async function buildBigWorkspaceImage(): Promise<string> {
  const writeTree =
    `const fs = require('fs'); for (let d = 0; d < ${FILES / 100}; d++) { const dir = 'node_modules/pkg-' + d; ` +
    `fs.mkdirSync(dir, { recursive: true }); for (let f = 0; f < 100; f++) fs.writeFileSync(dir + '/file-' + f + '.js', 'module.exports = ' + f + ';\\n'); }`;
  // The fixture is built with the engine's default runtime: only the sandboxes under test need gVisor.
  const container = await docker.createContainer({
    Image: 'dockhand/base:latest',
    Cmd: ['sh', '-c', `cd /workspace && git init -q && printf "hello\\n" > README.md && printf "node_modules/\\n" > .gitignore && git add -A && git commit -qm init && node -e "${writeTree}" && git rev-parse HEAD`],
    User: '1000:1000',
    HostConfig: { NetworkMode: 'none' },
  });
  await container.start();
  await container.wait();
  const logs = await container.logs({ stdout: true, stderr: true });
  const head = /[0-9a-f]{40}/.exec(logs.toString('latin1'))?.[0];
  await container.commit({ repo: image.split(':')[0], tag: image.split(':')[1], changes: 'CMD ["sleep", "infinity"]' });
  await container.remove({ force: true });
  if (!head) throw new Error(`could not build the big-workspace fixture: ${logs.toString('latin1')}`);
  return head;
}

async function shell(sandbox: DockerSandbox, script: string): Promise<string> {
  const result = await sandbox.raw(['sh', '-c', script]);
  expect(result.exitCode, result.stderr.toString('utf8')).toBe(0);
  return result.stdout.toString('utf8');
}

beforeAll(async () => {
  ensureBaseImage();
  const host = await checkSandboxHost(docker);
  expect(host.runtime).toBe('runsc');
  sha = await buildBigWorkspaceImage();
  driver = new DockerSandboxDriver({ docker, ownerId, runtime: host.runtime, limits: { memoryMiB: 1024, pids: 128 } });
}, 300_000);

afterAll(async () => {
  await driver?.destroyAll();
  await docker.getImage(image).remove({ force: true }).catch(() => undefined);
});

describe('sandbox workspace from a snapshot with a large ignored tree (runsc)', () => {
  it('is ready with the snapshot files, copies nothing into a volume, and keeps each sandbox its own writes', async () => {
    const first = await driver.create({ image, baseSha: sha, labels: { [LABELS.task]: 'layer-a' } });
    const second = await driver.create({ image, baseSha: sha, labels: { [LABELS.task]: 'layer-b' } });
    expect(first.baseSha).toBe(sha);

    // No volume behind /workspace: Docker has nothing to seed at create.
    const mounts = (await docker.getContainer(first.id).inspect()).Mounts ?? [];
    expect(mounts.filter((mount) => mount.Destination === '/workspace')).toEqual([]);

    expect((await shell(first, 'find node_modules -type f | wc -l')).trim()).toBe(String(FILES));
    await shell(first, 'printf changed > node_modules/pkg-1/file-0.js && printf new > node_modules/pkg-0/added.js && printf edited > README.md');
    expect(await shell(first, 'cat node_modules/pkg-1/file-0.js node_modules/pkg-0/added.js')).toBe('changednew');

    // The second sandbox of the same snapshot sees the snapshot's files, not the first one's writes.
    expect((await shell(second, 'find node_modules -type f | wc -l')).trim()).toBe(String(FILES));
    expect(await shell(second, 'cat node_modules/pkg-1/file-0.js README.md; test -e node_modules/pkg-0/added.js && echo leaked || true')).toBe('module.exports = 0;\nhello\n');
    expect((await second.workspaceState()).clean).toBe(true);

    // Nor does a sandbox created after the first is gone.
    await first.destroy();
    const third = await driver.create({ image, baseSha: sha, labels: { [LABELS.task]: 'layer-c' } });
    expect(await shell(third, 'cat node_modules/pkg-1/file-0.js; test -e node_modules/pkg-0/added.js && echo leaked || true')).toBe('module.exports = 0;\n');
  }, 300_000);

  it('lets uid 1000 write outside the workspace only to tmpfs', async () => {
    const sandbox = await driver.create({ image, baseSha: sha, labels: { [LABELS.task]: 'layer-writable' } });
    const out = await shell(
      sandbox,
      'for dir in /etc /usr /usr/local/bin /var/tmp /run/lock /var/lock /tmp /home/dockhand /; do ' +
        'if touch "$dir/.dockhand-probe" 2>/dev/null; then echo "writable $dir $(stat -f -c %T "$dir" 2>/dev/null || echo unknown)"; fi; done',
    );
    const writable = out.trim().split('\n').filter(Boolean);
    expect(writable.map((line) => line.split(' ')[1]).sort()).toEqual(['/home/dockhand', '/run/lock', '/tmp', '/var/lock', '/var/tmp']);
    for (const line of writable) expect(line).toMatch(/ tmpfs$/);
  }, 120_000);
});
