import Docker from 'dockerode';
import { DockerSandboxDriver } from '../../server/src/sandbox/docker-driver';
import { checkSandboxHost } from '../../server/src/sandbox/host-check';
import { ensureBaseImage } from '../../server/src/sandbox/test-support';

/*
 * What a test of the sandbox driver itself sets up: the base image, gVisor checked, a driver on
 * runsc, and a small image of `dockhand/base` whose /workspace is a git repository with one commit
 * (README.md "hello", a .gitignore of node_modules/), made by a shell in a container and committed
 * as an image. No snapshot build (snapshots.int.test.ts and snapshot-sandbox.ts cover those).
 */

const BASE_IMAGE = 'dockhand/base:latest';

export interface WorkspaceImage {
  docker: Docker;
  /** On runsc, owned by `test-<name>-<pid>`, limited to 1 GiB and 128 processes unless a create says otherwise. */
  driver: DockerSandboxDriver;
  /** `dockhand/test-<name>:<pid>`. */
  image: string;
  /** The workspace's one commit. */
  sha: string;
  /** Destroys every sandbox of the driver and removes the image. */
  close(): Promise<void>;
}

/**
 * Builds the image and starts the driver. `after` runs in /workspace after the commit (as uid
 * 1000, no network), for what the test needs beside the repository, such as a large ignored tree.
 * The image is built with the engine's default runtime: only the sandboxes under test need gVisor.
 */
export async function startWorkspaceImage(name: string, options: { after?: string } = {}): Promise<WorkspaceImage> {
  ensureBaseImage();
  const docker = new Docker();
  const host = await checkSandboxHost(docker);
  if (host.runtime !== 'runsc') throw new Error(`the sandbox runtime is ${host.runtime}, not runsc: these tests run in gVisor (scripts/test-env.sh registers it)`);
  const image = `dockhand/test-${name}:${process.pid}`;
  const sha = await buildWorkspaceImage(docker, image, options.after);
  const driver = new DockerSandboxDriver({ docker, ownerId: `test-${name}-${process.pid}`, runtime: host.runtime, limits: { memoryMiB: 1024, pids: 128 } });
  return {
    docker,
    driver,
    image,
    sha,
    async close() {
      await driver.destroyAll();
      await docker.getImage(image).remove({ force: true }).catch(() => undefined);
    },
  };
}

async function buildWorkspaceImage(docker: Docker, image: string, after: string | undefined): Promise<string> {
  const commit = 'cd /workspace && git init -q && printf "hello\\n" > README.md && printf "node_modules/\\n" > .gitignore && git add -A && git commit -qm init';
  const container = await docker.createContainer({
    Image: BASE_IMAGE,
    Cmd: ['sh', '-c', `${commit}${after ? ` && ${after}` : ''} && git rev-parse HEAD`],
    User: '1000:1000',
    HostConfig: { NetworkMode: 'none' },
  });
  try {
    await container.start();
    await container.wait();
    const logs = (await container.logs({ stdout: true, stderr: true })).toString('latin1');
    const head = /[0-9a-f]{40}/.exec(logs)?.[0];
    if (!head) throw new Error(`could not build the workspace image ${image}: ${logs}`);
    const [repo, tag] = image.split(':');
    await container.commit({ repo, tag, changes: 'CMD ["sleep", "infinity"]' });
    return head;
  } finally {
    await container.remove({ force: true });
  }
}
