import type { EnvironmentRecipe } from '@dockhand/protocol';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import Docker from 'dockerode';
import { DockerSandboxDriver } from '../../server/src/sandbox/docker-driver';
import type { DockerSandbox } from '../../server/src/sandbox/docker-sandbox';
import { checkSandboxHost } from '../../server/src/sandbox/host-check';
import { buildScript } from '../../server/src/sandbox/snapshot-build';
import { ensureBaseImage } from '../../server/src/sandbox/test-support';
import { createFixtureRepo, createRepoOfFiles } from './fixture-repo';

/*
 * What an integration test of the feedback engine in gVisor sets up: the sandbox base image, a
 * driver on runsc, and per test a repository as an image the way a snapshot holds it
 * (`dockhand/base` plus the checkout in /workspace, after the snapshot build's install step with
 * a no-op install, so its .git/info/exclude is a snapshot's) and a sandbox of that image. The
 * repository is a fixture folder or files the test writes; real runners from
 * .ci/needs/feedback.sh's caches go into its node_modules, uncommitted, as an installed repository
 * has them. No snapshot manager: nothing is installed and nothing reaches the network.
 */

const ROOT = resolve(import.meta.dirname, '../..');
const IMAGE = 'dockhand/base:latest';

/** Where .ci/needs/feedback.sh installs real runners from the npm registry, and the binaries it checks for (each its package's name). */
const RUNNER_CACHES = {
  /** tape, tap-spec and uvu. */
  runners: { dir: process.env.DOCKHAND_FEEDBACK_RUNNERS ?? join(homedir(), '.cache/dockhand/feedback-runners'), bins: ['tape', 'tap-spec', 'uvu'] },
  /** node-tap 16 alone: its 300-odd packages stay out of the other runners' node_modules. */
  tap16: { dir: process.env.DOCKHAND_FEEDBACK_TAP ?? join(homedir(), '.cache/dockhand/feedback-tap16'), bins: ['tap'] },
};

export interface RepositoryImage {
  /**
   * Tagged `dockhand-test/<name>:<first 12 of the SHA>-<12 of a hash of the base image's id, the
   * install step and the runner cache's installed versions>`; a build removes the name's other tags.
   */
  name: string;
  /** A folder of test/fixtures, or files written by the test and the message they are committed with. */
  repo: { fixture: string } | { files: Record<string, string>; message: string };
  /** The runner cache whose node_modules are copied in after the commit (the repository's .gitignore lists node_modules/). */
  nodeModules?: keyof typeof RUNNER_CACHES;
}

export interface SnapshotSandboxes {
  /**
   * A sandbox of the repository's image at its commit, labelled `dockhand.task: <task>`, with
   * `environment` as its recipe. An image of the same commit, base image, install step and runner
   * versions is reused, from an earlier run too; a change to any of them (a new pin in
   * .ci/needs/feedback.sh once it has run) builds anew and removes the images it replaces.
   */
  create(image: RepositoryImage, options: { task: string; environment?: EnvironmentRecipe }): Promise<DockerSandbox>;
  /** Destroys every sandbox `create` made. */
  close(): Promise<void>;
}

/**
 * The recipe these tests give an npm repository's sandbox: `npm test` from package.json, and an
 * install that never runs here (the image has its node_modules already).
 */
export function npmTestRecipe(repo: string, install = 'npm ci'): EnvironmentRecipe {
  return { repo, install: { command: install, source: 'default' }, lifecycleScripts: true, skipScripts: [], egressHosts: [], test: { command: 'npm test', source: 'package.json' } };
}

/** The base image built, gVisor checked (a host without runsc fails here), and a driver owned by `ownerId`. */
export async function startSnapshotSandboxes(ownerId: string): Promise<SnapshotSandboxes> {
  ensureBaseImage();
  const docker = new Docker();
  const host = await checkSandboxHost(docker);
  if (host.runtime !== 'runsc') throw new Error(`the sandbox runtime is ${host.runtime}, not runsc: these tests run in gVisor (scripts/test-env.sh registers it)`);
  const driver = new DockerSandboxDriver({ docker, ownerId, runtime: host.runtime });
  const built = new Map<string, { image: string; sha: string }>();
  const sandboxes: DockerSandbox[] = [];
  return {
    async create(image, { task, environment }) {
      const key = JSON.stringify(image);
      const snapshot = built.get(key) ?? buildImage(image);
      built.set(key, snapshot);
      const sandbox = await driver.create({ image: snapshot.image, baseSha: snapshot.sha, labels: { 'dockhand.task': task } });
      sandboxes.push(sandbox);
      if (environment) sandbox.environment = environment;
      return sandbox;
    },
    async close() {
      await Promise.all(sandboxes.map((sandbox) => sandbox.destroy()));
    },
  };
}

function buildImage({ name, repo, nodeModules }: RepositoryImage): { image: string; sha: string } {
  const cache = nodeModules ? RUNNER_CACHES[nodeModules] : undefined;
  if (cache && !cache.bins.every((bin) => existsSync(join(cache.dir, 'node_modules/.bin', bin)))) {
    execFileSync('bash', [join(ROOT, '.ci/needs/feedback.sh')], { stdio: 'inherit' });
  }
  const base = execFileSync('docker', ['image', 'inspect', '--format', '{{.Id}}', IMAGE], { encoding: 'utf8' }).trim();
  const install = buildScript({ repo: name, recipeHash: '0'.repeat(16), environment: { ...npmTestRecipe(name), install: { command: 'true', source: 'default' } }, toolchains: [] });
  const checkout = 'fixture' in repo ? createFixtureRepo(repo.fixture) : createRepoOfFiles(name, repo.files, repo.message);
  try {
    const key = [base, install, ...(cache ? [cache.bins.map((bin) => `${bin}@${installedVersion(cache.dir, bin)}`).join(' ')] : [])].join('\n');
    const image = `dockhand-test/${name}:${checkout.sha.slice(0, 12)}-${createHash('sha256').update(key).digest('hex').slice(0, 12)}`;
    if (!imageExists(image)) {
      execFileSync('bash', ['-c', install], { cwd: checkout.path, stdio: 'ignore' });
      if (cache) cpSync(join(cache.dir, 'node_modules'), join(checkout.path, 'node_modules'), { recursive: true, verbatimSymlinks: true });
      execFileSync('docker', ['build', '-q', '-t', image, '-f-', checkout.path], { input: `FROM ${IMAGE}\nCOPY --chown=1000:1000 . /workspace\n`, stdio: ['pipe', 'ignore', 'inherit'] });
      removeOtherTags(image);
    }
    return { image, sha: checkout.sha };
  } finally {
    rmSync(checkout.path, { recursive: true, force: true });
  }
}

/** The version in a runner cache's node_modules/<name>/package.json. */
function installedVersion(dir: string, name: string): string {
  const manifest: unknown = JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8'));
  const version = typeof manifest === 'object' && manifest !== null && 'version' in manifest ? manifest.version : undefined;
  if (typeof version !== 'string') throw new Error(`${join(dir, 'node_modules', name, 'package.json')} has no version: run .ci/needs/feedback.sh`);
  return version;
}

/**
 * Removes the repository name's other tags: images of an earlier commit, base image, install step
 * or runner version, which no run uses again. One a container still runs is left (no force).
 */
function removeOtherTags(image: string): void {
  const [repository] = image.split(':');
  const tags = execFileSync('docker', ['image', 'ls', '--format', '{{.Repository}}:{{.Tag}}', repository ?? image], { encoding: 'utf8' }).split('\n');
  for (const tag of tags.filter((line) => line && line !== image)) {
    try {
      execFileSync('docker', ['image', 'rm', tag], { stdio: 'ignore' });
    } catch {
      // In use by a container: the next build removes it.
    }
  }
}

function imageExists(image: string): boolean {
  try {
    execFileSync('docker', ['image', 'inspect', image], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
