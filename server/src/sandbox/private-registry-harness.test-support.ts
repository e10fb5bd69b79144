import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { RepositorySecrets } from '../secrets/service';
import { SqliteSecretRows } from '../store/secret-rows';
import { SqliteStore } from '../store/sqlite';
import { DependencyCache } from './dep-cache';
import { DockerSandboxDriver } from './docker-driver';
import { RepoMirror } from './mirror';
import type { SnapshotProgress } from './snapshot-build';
import { SnapshotManager, type Snapshot } from './snapshots';
import { createRepoFromFiles, ensureBaseImage } from './test-support';
import type { ToolchainStore } from './toolchains';

/*
 * The real parts the private-registry integration tests build snapshots with: a SQLite store with
 * the repositories' secrets (encrypted, as the server keeps them), a mirror of fixture
 * repositories, a snapshot manager under runsc-egress whose registry front reads those secrets,
 * and a runsc sandbox driver. One per test file; `close` removes what it made.
 */

export interface RegistryHarness {
  dataDir: string;
  store: SqliteStore;
  secrets: RepositorySecrets;
  snapshots: SnapshotManager;
  driver: DockerSandboxDriver;
  /** Paths removed by `close` (fixture and scratch directories). */
  cleanup: string[];
  /** A fixture repository `name` holding `files` (one commit on main); its HEAD. */
  repo(name: string, files: Record<string, string>): string;
  build(name: string, sha: string, onProgress?: (progress: SnapshotProgress) => void): Promise<Snapshot>;
  buildLog(snapshot: Snapshot): string;
  close(): Promise<void>;
}

export async function registryHarness(label: string, options: { privateRegistries: string[]; caBundle?: string; toolchains?: ToolchainStore }): Promise<RegistryHarness> {
  ensureBaseImage();
  const docker = new Docker();
  const ownerId = `test-${label}-${process.pid}`;
  const repository = `dockhand/${label}-test-${process.pid}`;
  const sources = new Map<string, string>();
  const cleanup: string[] = [];
  const dataDir = mkdtempSync(join(tmpdir(), `dockhand-${label}-`));
  const store = new SqliteStore(join(dataDir, 'dockhand.db'));
  const secrets = await RepositorySecrets.open(new SqliteSecretRows(store.db), { dataDir });
  const mirror = new RepoMirror(dataDir, { sources: (name) => sources.get(name) ?? name });
  const ca = options.caBundle ? { caBundle: options.caBundle } : {};
  const snapshots = new SnapshotManager({
    docker, mirror, dataDir, ownerId, repository, egress: 'proxy',
    ...(options.caBundle ? { extraCaBundle: options.caBundle } : {}),
    ...(options.toolchains ? { toolchains: options.toolchains } : {}),
    dependencyCache: new DependencyCache({ dir: join(dataDir, 'dep-cache'), ...ca }),
    registryCredentials: (repo, names, usedBy) => secrets.resolve(repo, names, usedBy),
    privateRegistries: options.privateRegistries,
  });
  const driver = new DockerSandboxDriver({ docker, ownerId, runtime: 'runsc' });
  return {
    dataDir, store, secrets, snapshots, driver, cleanup,
    repo(name, files) {
      const made = createRepoFromFiles(files);
      cleanup.push(made.path);
      sources.set(name, made.path);
      return made.sha;
    },
    async build(name, sha, onProgress) {
      return snapshots.resolve({ repo: name, mirrorPath: await mirror.ensure(name, sha), sha, ...(onProgress ? { onProgress } : {}) });
    },
    buildLog: (snapshot) => readFileSync(join(dataDir, 'snapshot-logs', `${snapshot.key}.log`), 'utf8'),
    async close() {
      await driver.destroyAll();
      await snapshots.dependencyCache?.close();
      for (const image of await docker.listImages({ filters: { reference: [repository] } })) await docker.getImage(image.Id).remove({ force: true }).catch(() => undefined);
      await store.close();
      for (const path of [dataDir, ...cleanup]) rmSync(path, { recursive: true, force: true });
    },
  };
}
