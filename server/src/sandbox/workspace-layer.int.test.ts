import type Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkspaceImage, type WorkspaceImage } from '../../../test/support/workspace-image';
import { type DockerSandboxDriver, LABELS } from './docker-driver';
import type { DockerSandbox } from './docker-sandbox';

/*
 * A sandbox of a snapshot whose workspace holds a large ignored tree (like node_modules) gets the
 * image's files in its own copy-on-write layer: nothing is copied into a volume at create, what
 * one sandbox writes (into the tree or a tracked file) no other sandbox of the same snapshot sees,
 * and outside /workspace only tmpfs directories are writable.
 */
const FILES = 20_000;
let workspace: WorkspaceImage;
let docker: Docker;
let driver: DockerSandboxDriver;
let image: string;
let sha: string;

/** FILES small files in an ignored node_modules, beside the workspace's one tracked file. */
const WRITE_TREE =
  `node -e "const fs = require('fs'); for (let d = 0; d < ${FILES / 100}; d++) { const dir = 'node_modules/pkg-' + d; ` +
  `fs.mkdirSync(dir, { recursive: true }); for (let f = 0; f < 100; f++) fs.writeFileSync(dir + '/file-' + f + '.js', 'module.exports = ' + f + ';\\n'); }"`;

async function shell(sandbox: DockerSandbox, script: string): Promise<string> {
  const result = await sandbox.raw(['sh', '-c', script]);
  expect(result.exitCode, result.stderr.toString('utf8')).toBe(0);
  return result.stdout.toString('utf8');
}

beforeAll(async () => {
  workspace = await startWorkspaceImage('big-workspace', { after: WRITE_TREE });
  ({ docker, driver, image, sha } = workspace);
}, 300_000);

afterAll(async () => {
  await workspace?.close();
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
