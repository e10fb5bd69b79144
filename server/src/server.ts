import type { Config } from './config';
import { DockhandError } from './errors';
import { createLogger, type Logger } from './log';
import { createFleet, type Fleet, type FleetParts } from './runner/fleet';
import { registeredMirror } from './runner/fleet';
import type { SandboxProvider } from './runner/ports';
import { createSandboxProvider, type SandboxSetup } from './runner/sandboxes';
import { EventHub } from './store/hub';
import { openSecrets } from './secrets/open';
import { openStore } from './store/open';
import { PostgresEventHub } from './store/postgres-hub';
import { LISTEN_BACKLOG } from './api/load';

/** An API replica's sandboxes: none; the runner never asks for one there (no scheduler runs). */
const NO_SANDBOXES: SandboxProvider = {
  async acquire() {
    throw new DockhandError('sandbox_unavailable', 'this process is an API replica (role api): sandboxes run on the workers');
  },
  async release() {},
};

/**
 * A worker on the Postgres store hears every task's state changes: it looks for work at once when
 * a task becomes runnable (submitted, approved for push, sent back to work) and stops a task it
 * runs when an API replica cancelled it — not only at its next heartbeat.
 */
function followStateNotices(hub: PostgresEventHub, fleet: Fleet): void {
  const { scheduler, runner } = fleet;
  hub.onNotice((notice) => {
    if (notice.type !== 'task.state') return;
    if (notice.state === 'cancelled') {
      scheduler.interrupt(notice.taskId);
      // A paused task cancelled through another process (an API replica) holds its sandbox here with no run to release it.
      if (!scheduler.active.includes(notice.taskId)) void runner.releaseSandbox(notice.taskId);
    }
    // A state written by the worker that holds the task (its own run moving on, a hand-back that
    // keeps the lease for its delay) leaves nothing to claim: only an API replica's write
    // (submitted, approved for push, sent back to work) wakes every worker.
    else if (!notice.held && (notice.state === 'queued' || notice.state === 'pushing' || notice.state === 'running')) scheduler.wake();
  });
}

export interface RunningServer {
  fleet: Fleet;
  url: string;
  close(): Promise<void>;
}

/**
 * Composes the fleet from the configuration, starts the scheduler (which resumes tasks whose
 * lease expired while no server ran) and listens — by role: `all` both, `api` only listens (no
 * scheduler, no sandboxes), `worker` only schedules (no API). SIGTERM drains, then closes: no new
 * work, running tasks get `scheduler.drainSeconds` to reach a waiting point, the rest are aborted
 * and handed back (resumable at once elsewhere), the API closes, sandboxes are released. SIGINT
 * closes at once (running tasks handed back).
 */
export async function startServer(config: Config, options: { logger?: Logger; parts?: Partial<FleetParts>; handleSignals?: boolean } = {}): Promise<RunningServer> {
  const logger = options.logger ?? createLogger({ level: config.logLevel, secrets: [config.forge.pushToken ?? '', config.forge.webhookSecret ?? '', config.model.apiKey ?? '', config.databaseUrl ?? '', config.secretsKey ?? ''] });
  // Seconds since the process started: module loading, the part of start-up nothing else can log.
  const loadedSeconds = Number(process.uptime().toFixed(2));
  logger.info({ role: config.role, dataDir: config.dataDir, loadedSeconds }, `starting (modules loaded ${loadedSeconds} s after launch): opening the store, then the sandbox host…`);
  // The store and the mirror first: the sandbox service mirrors registered repositories only.
  const { store, hub } = options.parts?.store
    ? { store: options.parts.store, hub: options.parts.hub ?? new EventHub() }
    : await openStore(config, logger);
  // The secrets' key is checked now: a server with another key (or none) where secrets are stored does not start.
  const secrets = options.parts?.secrets ?? (await openSecrets(config, store).catch(async (error: unknown) => {
    await store.close();
    throw error;
  }));
  const mirror = options.parts?.mirror ?? registeredMirror(config, store);
  const sandboxes: SandboxSetup = options.parts?.sandboxes
    ? { provider: options.parts.sandboxes, check: options.parts.sandboxCheck, dependencyCache: options.parts.dependencyCache, close: async () => undefined }
    : config.role === 'api'
      ? { provider: NO_SANDBOXES, check: undefined, close: async () => undefined }
      : await createSandboxProvider(config, logger, { mirror, registryCredentials: (repo, names, usedBy) => secrets.resolve(repo, names, usedBy) }).catch(async (error: unknown) => {
        await store.close();
        throw error;
      });
  logger.info('composing the fleet: API routes, scheduler, forge…');
  const fleet = await createFleet(config, {
    ...options.parts,
    store,
    hub,
    mirror,
    secrets,
    sandboxes: sandboxes.provider,
    ...(sandboxes.check ? { sandboxCheck: sandboxes.check } : {}),
    ...(sandboxes.dependencyCache ? { dependencyCache: sandboxes.dependencyCache } : {}),
    onClose: sandboxes.close,
    logger,
  });
  // Roles: api serves REST and WebSocket and runs no task; worker runs tasks and serves no API.
  const address = config.role === 'worker' ? '' : await fleet.app.listen({ host: config.host, port: config.port, backlog: LISTEN_BACKLOG });
  if (config.role !== 'api') {
    fleet.scheduler.start();
    fleet.outcomes.start();
    fleet.follower?.start();
    // Without webhooks, a GitHub forge's PRs are polled for comments, reviews and checks.
    if (!config.forge.webhookSecret) fleet.githubPoller?.start();
    if (hub instanceof PostgresEventHub) followStateNotices(hub, fleet);
  }
  const storeKind = config.databaseUrl === undefined ? 'sqlite' : 'postgres';
  logger.info({ address, role: config.role, store: storeKind, dataDir: config.dataDir, worker: fleet.scheduler.workerId }, config.role === 'worker' ? 'dockhand worker claiming tasks' : 'dockhand server listening');

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= fleet.close().then(() => logger.info('dockhand server stopped'));
    return closing;
  };
  // SIGTERM (a rolling deploy, Kubernetes) drains first: no new claims, running tasks get the grace period to reach a point
  // where they wait for a human or end; the rest are handed back (leases released) by close.
  const drain = async () => {
    if (config.role === 'api') return;
    const graceMs = config.scheduler.drainSeconds * 1000;
    logger.info({ running: fleet.scheduler.active.length, graceSeconds: config.scheduler.drainSeconds }, 'draining: no new tasks; running ones finish or are handed back');
    const { finished, handedBack } = await fleet.scheduler.drain(graceMs);
    logger.info({ finished: finished.length, handedBack }, 'drained');
  };
  if (options.handleSignals !== false) {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => {
        logger.info({ signal }, 'shutting down');
        void (signal === 'SIGTERM' ? drain() : Promise.resolve()).then(close).then(
          () => process.exit(0),
          (error: unknown) => {
            logger.error({ err: error }, 'shutdown failed');
            process.exit(1);
          },
        );
      });
    }
  }
  return { fleet, url: address, close };
}
