import { join } from 'node:path';
import type { Config } from './config';
import { createLogger, type Logger } from './log';
import { createFleet, type Fleet, type FleetParts } from './runner/fleet';
import { registeredMirror } from './runner/fleet';
import { createSandboxProvider } from './runner/sandboxes';
import { SqliteStore } from './store/sqlite';

export interface RunningServer {
  fleet: Fleet;
  url: string;
  close(): Promise<void>;
}

/**
 * Composes the fleet from the configuration, starts the scheduler (which resumes tasks whose
 * lease expired while no server ran) and listens. SIGTERM/SIGINT close gracefully: no new work,
 * running tasks are aborted and stay resumable, the API closes, sandboxes are released.
 */
export async function startServer(config: Config, options: { logger?: Logger; parts?: Partial<FleetParts>; handleSignals?: boolean } = {}): Promise<RunningServer> {
  const logger = options.logger ?? createLogger({ level: config.logLevel, secrets: [config.forge.pushToken ?? '', config.forge.webhookSecret ?? '', config.model.apiKey ?? ''] });
  // The store and the mirror first: the sandbox service mirrors registered repositories only.
  const store = options.parts?.store ?? new SqliteStore(join(config.dataDir, 'dockhand.db'));
  const mirror = options.parts?.mirror ?? registeredMirror(config, store);
  const sandboxes = options.parts?.sandboxes
    ? { provider: options.parts.sandboxes, check: options.parts.sandboxCheck, close: async () => undefined }
    : await createSandboxProvider(config, logger, { mirror }).catch(async (error: unknown) => {
      await store.close();
      throw error;
    });
  const fleet = await createFleet(config, {
    ...options.parts,
    store,
    mirror,
    sandboxes: sandboxes.provider,
    ...(sandboxes.check ? { sandboxCheck: sandboxes.check } : {}),
    onClose: sandboxes.close,
    logger,
  });
  const address = await fleet.app.listen({ host: config.host, port: config.port });
  fleet.scheduler.start();
  fleet.outcomes.start();
  logger.info({ address, dataDir: config.dataDir, worker: fleet.scheduler.workerId }, 'dockhand server listening');

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= fleet.close().then(() => logger.info('dockhand server stopped'));
    return closing;
  };
  if (options.handleSignals !== false) {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => {
        logger.info({ signal }, 'shutting down');
        void close().then(
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
