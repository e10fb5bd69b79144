import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Docker from 'dockerode';
import { LABELS } from '../sandbox/docker-driver';

/*
 * The containers an evaluation's fleet started, removed when it closes. Closing the fleet stops
 * its scheduler, which waits for every task it runs to stop; a task waiting for its snapshot
 * waits for the build, which the sandbox service does not stop (its container runs the install
 * for up to 15 minutes) and a stopped `eval run` left running. So while the fleet closes, this
 * process's build containers (`dockhand.pool=snapshot-build` with the service's owner id) are
 * removed: the build fails at once, the task's run ends as stopped (it stays resumable) and the
 * close finishes. The snapshot manager reads the killed install as the repository's own failure
 * and records it (`<key>.failed.json`: "not retried"); a record written while the close removed
 * builds is this stop's doing, and is taken back (`forgetInterruptedBuilds`), so the next run
 * builds the snapshot again. Whatever of this owner is still there once the fleet has closed
 * (nothing, normally) is removed too.
 */

const SWEEP_MS = 500;
/**
 * How long the close may go on once a build was removed: the removed container's exec does not
 * always end under gVisor (seen: the install's stream stayed open and the close waited the whole
 * install), and nothing of the run is running by then, so the close is left behind.
 */
const AFTER_REMOVAL_MS = 15_000;

/** Removes the containers of `ownerId` (only its snapshot builds with `buildsOnly`); the ids removed. */
export async function removeOwnedContainers(docker: Docker, ownerId: string, options: { buildsOnly?: boolean } = {}): Promise<string[]> {
  const label = [`${LABELS.owner}=${ownerId}`, ...(options.buildsOnly ? [`${LABELS.pool}=snapshot-build`] : [])];
  const containers = await docker.listContainers({ all: true, filters: { label } });
  const removed: string[] = [];
  for (const info of containers) {
    try {
      await docker.getContainer(info.Id).remove({ force: true, v: true });
      removed.push(info.Id);
    } catch {
      // Gone already, or being removed by its own owner's clean-up.
    }
  }
  return removed;
}

/**
 * Runs `close` while removing the owner's snapshot-build containers every half second (a build
 * may start its container while the fleet closes), then removes every container of the owner left.
 */
export async function closeRemovingContainers(ownerId: string, close: () => Promise<void>, docker: Docker = new Docker()): Promise<{ buildsRemoved: number; leftBehind: boolean }> {
  let closed = false;
  let buildsRemoved = 0;
  let leftBehind = false;
  let giveUp: () => void = () => undefined;
  const gaveUp = new Promise<void>((done) => (giveUp = done));
  let timer: NodeJS.Timeout | undefined;
  const closing = close().finally(() => {
    closed = true;
  });
  closing.catch(() => undefined);
  const sweeping = (async () => {
    while (!closed && !leftBehind) {
      const removed = (await removeOwnedContainers(docker, ownerId, { buildsOnly: true }).catch(() => [])).length;
      buildsRemoved += removed;
      if (removed > 0 && !timer) {
        timer = setTimeout(() => {
          leftBehind = true;
          giveUp();
        }, AFTER_REMOVAL_MS);
        timer.unref();
      }
      await Promise.race([closing.catch(() => undefined), gaveUp, new Promise((done) => setTimeout(done, SWEEP_MS).unref())]);
    }
  })();
  try {
    await Promise.race([closing, gaveUp]);
  } finally {
    if (timer) clearTimeout(timer);
    leftBehind = leftBehind || !closed;
    await sweeping;
    await removeOwnedContainers(docker, ownerId).catch(() => undefined);
  }
  return { buildsRemoved, leftBehind };
}

/**
 * Removes the failed-build records (`<key>.failed.json` in the snapshot logs) written since
 * `since`: builds this process's close cut short. A real failure in the same seconds is only
 * built (and reported) again.
 */
export function forgetInterruptedBuilds(logDir: string, since: number): string[] {
  if (!existsSync(logDir)) return [];
  const forgotten: string[] = [];
  for (const name of readdirSync(logDir)) {
    const file = join(logDir, name);
    if (!name.endsWith('.failed.json') || statSync(file).mtimeMs < since) continue;
    rmSync(file, { force: true });
    forgotten.push(name);
  }
  return forgotten;
}
