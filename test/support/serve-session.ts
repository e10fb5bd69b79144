import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startReplayServer, type ReplayServer } from '../../server/src/model/replay/server';
import { freePort, runCli, startDockhandServe, type DockhandServe } from './local-server';
import { createAdminToken } from './register-repo';

/*
 * What an end-to-end test of the CLI against `dockhand serve` sets up and takes down: the sandbox
 * base image (cached by its recipe), a replay model server, a fresh data directory with an admin
 * token, the server bundle serving on a free port with the replay model, and the CLI bundle bound
 * to that server and token. A test adds its cassettes to `replay` and its repositories itself.
 */

const ROOT = resolve(import.meta.dirname, '../..');

export interface ServeSession {
  url: string;
  dataDir: string;
  adminToken: string;
  replay: ReplayServer;
  /** The server's output so far (for a failed assertion's message). */
  serverOutput(): string;
  /** The CLI as it ships, as the admin, on this server and data directory. */
  cli(args: string[], env?: Record<string, string>): Promise<{ code: number; output: string; seconds: number }>;
  /** Stops the server (SIGTERM, then waits for it) and the replay server; removes the data directory. */
  stop(): Promise<void>;
}

export async function startServeSession(options: {
  /** Prefix of the data directory's name. */
  name: string;
  /** `DOCKHAND_REPLAY_SESSION`: the cassette the server's model plays. */
  replaySession: string;
  /** Each CLI call's limit (then SIGTERM). */
  cliTimeoutMs: number;
  /** More `DOCKHAND_*` for the server. */
  env?: Record<string, string>;
}): Promise<ServeSession> {
  execFileSync('bash', ['sandbox-images/base/build.sh'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  const replay = await startReplayServer({});
  const dataDir = mkdtempSync(join(tmpdir(), `dockhand-${options.name}-`));
  let server: DockhandServe | undefined;
  const stop = async () => {
    const child = server?.child;
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((done) => child.once('exit', done));
    }
    await replay.close();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const adminToken = await createAdminToken(dataDir);
    server = await startDockhandServe(await freePort(), {
      DOCKHAND_DATA_DIR: dataDir,
      DOCKHAND_MODEL_BASE_URL: replay.url,
      DOCKHAND_REPLAY_SESSION: options.replaySession,
      DOCKHAND_LOG_LEVEL: 'warn',
      ...options.env,
    });
    const { url, output } = server;
    return {
      url,
      dataDir,
      adminToken,
      replay,
      serverOutput: output,
      cli: (args, env = {}) => runCli(args, { env: { DOCKHAND_URL: url, DOCKHAND_TOKEN: adminToken, DOCKHAND_DATA_DIR: dataDir, ...env }, timeoutMs: options.cliTimeoutMs }),
      stop,
    };
  } catch (error) {
    // Nothing started here outlives a failed start (the server itself is stopped by startDockhandServe).
    await stop();
    throw error;
  }
}
