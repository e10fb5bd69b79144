import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, open, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import { DockhandError } from '../errors';
import { processAlive } from '../process-alive';
import { runChild } from '../spawner';

/*
 * A disk limit for each sandbox's /workspace. The engine here stores containers with overlay2 on
 * ext4, where Docker's `--storage-opt size=` is refused (it needs xfs with project quotas), and a
 * sized volume would have to be seeded with a copy of the snapshot's workspace at every create
 * (40-90 s for a 532-package tree, README: Decisions). So each sandbox gets its own small file
 * system: a sparse ext4 image of the limit's size, loop-mounted on the host, holding the upper
 * layer of an overlay whose lower layers are the snapshot image's own `workspace` directories
 * (read-only, shared, never copied). The overlay is bind-mounted at /workspace. Writes past the
 * limit fail inside with ENOSPC, `df /workspace` shows the limit, and the image file goes with the
 * sandbox. Setting one up takes about 0.15 s (truncate, mkfs.ext4 with lazy init, two mounts).
 *
 * Needs: the server as root on the engine's host (mount), overlay2 image layers readable at the
 * paths the engine reports. Without them, sandboxes keep the unlimited container layer and the
 * server says so once at start-up.
 */

/** mkfs and mount run at normal priority: a sandbox start waits for them. */
const CHILD = { env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', LC_ALL: 'C' }, nice: 0 };

export interface WorkspaceDisk {
  /** The merged workspace on the host: the bind mount's source. */
  path: string;
  release(): Promise<void>;
}

const GraphDriver = z.object({ Name: z.string(), Data: z.record(z.string(), z.string()).nullable() });

/** An image's overlay2 layers, top first (`docker image inspect`'s GraphDriver); undefined on other storage drivers. */
export function imageLayers(graphDriver: unknown): string[] | undefined {
  const parsed = GraphDriver.safeParse(graphDriver);
  if (!parsed.success || parsed.data.Name !== 'overlay2' || !parsed.data.Data) return undefined;
  const upper = parsed.data.Data['UpperDir'];
  const lower = parsed.data.Data['LowerDir'];
  return [...(upper ? [upper] : []), ...(lower ? lower.split(':') : [])].filter((layer) => layer !== '');
}

export class WorkspaceDisks {
  private checked: Promise<string | undefined> | undefined;

  constructor(
    /** Where the image files and mounts live (`<dataDir>/sandbox-disks`). */
    readonly dir: string,
    /** The limit in MiB. */
    readonly sizeMiB: number,
    private readonly logger?: Logger,
  ) {}

  /** Why disks cannot be made on this host, or undefined when they can (checked once). */
  unavailable(): Promise<string | undefined> {
    this.checked ??= (async () => {
      if (process.getuid?.() !== 0) return 'the server is not root (mounting a sandbox disk needs it)';
      // A mount made here is seen by the Docker engine only when both share a mount namespace
      // (`ip netns exec`, a worker in a container of its own: they do not); otherwise the sandbox
      // would get the empty directory under it as its /workspace.
      const own = await readlink('/proc/self/ns/mnt').catch(() => undefined);
      const engine = (await readFile('/var/run/docker.pid', 'utf8').catch(() => '')).trim();
      const host = /^\d+$/.test(engine) ? await readlink(`/proc/${engine}/ns/mnt`).catch(() => undefined) : undefined;
      if (own && host && own !== host) return `the server runs in a mount namespace (${own}) other than the Docker engine's (${host}), where the engine would not see a sandbox's disk`;
      const mkfs = await runChild('mkfs.ext4', ['-V'], { ...CHILD, timeoutMs: 10_000 });
      if (mkfs.code !== 0) return `mkfs.ext4 is not available (${mkfs.error?.message ?? mkfs.stderr.trim()}); install e2fsprogs`;
      return undefined;
    })();
    return this.checked;
  }

  /** A fresh disk for container `name` over the image layers given (top first). */
  async mount(name: string, layers: string[]): Promise<WorkspaceDisk> {
    const home = join(this.dir, name);
    const image = join(home, 'disk.img');
    const store = join(home, 'store');
    const merged = join(home, 'workspace');
    const lowers = layers.map((layer) => join(layer, 'workspace')).filter((path) => existsSync(path));
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await mkdir(home, { mode: 0o700 });
    // Who made it: a sweep removes the disks of a server process that is gone at once.
    await writeFile(join(home, 'owner'), `${hostname()} ${process.pid}\n`);
    const release = () => this.release(home);
    try {
      await mkdir(store);
      await mkdir(merged);
      const file = await open(image, 'w', 0o600);
      await file.truncate(this.sizeMiB * 1024 * 1024);
      await file.close();
      // No reserved blocks (the sandbox is the only user); lazy init keeps mkfs at ~0.1 s for any size.
      await this.run('mkfs.ext4', ['-q', '-F', '-m', '0', '-E', 'lazy_itable_init=1,lazy_journal_init=1', image]);
      await this.run('mount', ['-o', 'loop,nosuid,nodev', image, store]);
      await mkdir(join(store, 'upper'));
      await mkdir(join(store, 'work'));
      // The merged root takes the upper directory's owner and mode: the image's /workspace's.
      const top = lowers[0] ? await stat(lowers[0]) : undefined;
      await chown(join(store, 'upper'), top?.uid ?? 1000, top?.gid ?? 1000);
      await chmod(join(store, 'upper'), top ? top.mode & 0o7777 : 0o755);
      if (lowers.length === 0) await mkdir(join(store, 'empty'));
      const lowerdir = lowers.length > 0 ? lowers.join(':') : join(store, 'empty');
      await this.run('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${lowerdir},upperdir=${join(store, 'upper')},workdir=${join(store, 'work')}`, merged]);
      return { path: merged, release };
    } catch (error) {
      await release().catch(() => undefined);
      throw new DockhandError('sandbox_unavailable', `could not make the sandbox's ${this.sizeMiB} MiB workspace disk under ${this.dir}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  }

  /**
   * Removes disks whose container is gone: at once when the server process that made them is gone
   * (a crash), else once older than a minute (a live server makes a disk just before its
   * container). `exists` answers whether a container of that name exists.
   */
  async sweep(exists: (name: string) => Promise<boolean>): Promise<string[]> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    const removed: string[] = [];
    for (const name of names) {
      const home = join(this.dir, name);
      const age = Date.now() - (await stat(home).then((info) => info.mtimeMs, () => Date.now()));
      const [host, pid] = (await readFile(join(home, 'owner'), 'utf8').catch(() => '')).trim().split(' ');
      const ownerGone = host === hostname() && pid !== undefined && !processAlive(Number(pid));
      if ((!ownerGone && age < 60_000) || (await exists(name))) continue;
      await this.release(home).then(() => removed.push(name), (error: unknown) => this.logger?.warn({ err: error, disk: home }, 'leftover sandbox disk not removed'));
    }
    return removed;
  }

  private async release(home: string): Promise<void> {
    for (const mountPoint of [join(home, 'workspace'), join(home, 'store')]) {
      const result = await runChild('umount', [mountPoint], { ...CHILD, timeoutMs: 30_000 });
      // Not mounted (a half-made disk) is fine; busy is unmounted lazily so the file can go.
      if (result.code !== 0 && !/not mounted|no mount point|not found/i.test(result.stderr)) {
        await runChild('umount', ['-l', mountPoint], { ...CHILD, timeoutMs: 30_000 });
      }
    }
    await rm(home, { recursive: true, force: true });
  }

  private async run(command: string, args: string[]): Promise<void> {
    const result = await runChild(command, args, { ...CHILD, timeoutMs: 60_000 });
    if (result.code !== 0) throw new Error(`${command} ${args.join(' ')}: ${result.error?.message ?? result.killed ?? result.stderr.trim()}`);
  }
}

/** The note a command's output gets when it ran out of the workspace disk. */
export function diskFullNote(sizeMiB: number): string {
  const size = sizeMiB % 1024 === 0 ? `${sizeMiB / 1024} GiB` : `${sizeMiB} MiB`;
  return `\n[dockhand: the sandbox's disk limit is reached: /workspace holds at most ${size} (DOCKHAND_SANDBOX_DISK). Remove files this task made (build output, downloads) or ask an admin to raise DOCKHAND_SANDBOX_DISK]\n`;
}
