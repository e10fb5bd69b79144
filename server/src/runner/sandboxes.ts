import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import type { Config } from '../config';
import { DockhandError } from '../errors';
import type { Logger } from '../log';
import { DockerSandboxDriver } from '../sandbox/docker-driver';
import { checkSandboxHost } from '../sandbox/host-check';
import type { SandboxProvider } from './ports';

const execFileAsync = promisify(execFile);

export interface SandboxSetup {
  provider: SandboxProvider;
  check?: () => Promise<void>;
  close: () => Promise<void>;
}

/** A git bundle of one commit of a repo the server can read, under the ref the sandbox fetches. */
async function bundleOf(repoPath: string, sha: string): Promise<Buffer> {
  const ref = `refs/dockhand/${sha}`;
  await execFileAsync('git', ['-C', repoPath, 'update-ref', ref, sha]);
  try {
    const { stdout } = await execFileAsync('git', ['-C', repoPath, 'bundle', 'create', '-', ref], { encoding: 'buffer', maxBuffer: 1024 * 1024 * 1024 });
    return stdout;
  } finally {
    await execFileAsync('git', ['-C', repoPath, 'update-ref', '-d', ref]).catch(() => undefined);
  }
}

/**
 * Sandboxes for tasks: gVisor containers from the configured image, workspace moved to the base
 * SHA from a bundle of the repo (no network). Interim until the sandbox service (snapshots, warm
 * pool, mirrors) is wired in here; the runner only sees `SandboxProvider`.
 */
export async function createSandboxProvider(config: Config, logger: Logger): Promise<SandboxSetup> {
  const docker = new Docker();
  const host = await checkSandboxHost(docker, { unsafeRunc: config.sandbox.unsafeRunc, logger });
  const driver = new DockerSandboxDriver({ docker, ownerId: `server-${randomBytes(4).toString('hex')}`, runtime: host.runtime, logger });
  await driver.reconcile();
  const provider: SandboxProvider = {
    async acquire({ repo, baseSha, taskId }) {
      if (!repo.startsWith('/')) throw new DockhandError('sandbox_unavailable', `repo ${repo} is not a local path; remote repos need the mirror`);
      const started = performance.now();
      const sandbox = await driver.create({
        image: config.sandbox.image,
        baseSha,
        labels: { 'dockhand.task': taskId },
        bundle: () => bundleOf(repo, baseSha),
      });
      return { sandbox, source: 'cold', startMs: Math.round(performance.now() - started) };
    },
    async reattach({ sandboxId }) {
      return driver.liveSandboxes.get(sandboxId);
    },
    async release(sandbox) {
      await sandbox.destroy();
    },
  };
  return {
    provider,
    check: async () => {
      await checkSandboxHost(docker, { unsafeRunc: config.sandbox.unsafeRunc });
    },
    close: () => driver.destroyAll(),
  };
}
