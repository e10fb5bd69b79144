import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { newestSatisfying } from './versions';
import { DEFAULT_NODE_MAJOR, TOOLCHAIN_PACKAGES } from './recipe';
import { ensureBaseImage, TEST_TOOLCHAIN_DIR } from './test-support';
import { ToolchainStore } from './toolchains';

/*
 * The base image runs the Node toolchains detection can pick: the registry's newest release (a
 * repository whose CI tests on `26.x` gets it) and the default line, mounted read-only as a
 * sandbox mounts them, under runsc with no network. Node 26's linux-x64 binary needs
 * libatomic.so.1, which a minbase Debian lacks: without libatomic1 in the image every build of
 * such a repository failed with exit 127 before the install began (found on npm/ini).
 */

const CA = '/etc/ssl/certs/ca-certificates.crt';

describe('Node toolchains in the base image', { timeout: 600_000 }, () => {
  it('the newest published Node and the default line start in gVisor', async () => {
    ensureBaseImage();
    const toolchains = new ToolchainStore({ dataDir: TEST_TOOLCHAIN_DIR, caBundle: CA });
    const published = await toolchains.versions(TOOLCHAIN_PACKAGES.node);
    const newest = newestSatisfying(published, '*');
    const defaultLine = newestSatisfying(published, String(DEFAULT_NODE_MAJOR));
    expect(newest).toBeDefined();
    for (const version of new Set([newest, defaultLine].filter((value): value is string => value !== undefined))) {
      const node = await toolchains.ensure('node', version);
      const run = (): string =>
        execFileSync(
          'docker',
          ['run', '--rm', '--runtime', 'runsc', '--network', 'none', '--user', '1000:1000', '-v', `${node.hostPath}:${node.target}:ro`, 'dockhand/base:latest', `${node.binDir}/node`, '-p', 'process.version'],
          { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 },
        ).trim();
      expect(run(), `node ${version}`).toBe(`v${version}`);
    }
  });
});
