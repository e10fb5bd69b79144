import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');

/** A port free on 127.0.0.1 a moment ago (bound, read and released; another process may take it). */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const found = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolvePort(found));
    });
  });
}

export interface DockhandServe {
  child: ChildProcess;
  url: string;
  /** Everything the process has written to stdout and stderr so far. */
  output(): string;
}

let bundle: string | undefined;

/**
 * The server bundle as `npm start` and the README run it (esbuild, `scripts/build-server.mjs`),
 * built once per test process into its own file so parallel test files never read a half-written
 * one. Under tsx the same start took twice as long (quiet: 5–9 s against 2.7 s; load ≈ 30:
 * 39–112 s against 17–60 s), all of it transpiling and loading modules.
 */
export function serverBundle(): string {
  if (bundle) return bundle;
  const outfile = `server/dist/cli-test-${process.pid}.js`;
  execFileSync(process.execPath, ['scripts/build-server.mjs', '--outfile', outfile], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  process.once('exit', () => {
    for (const file of [outfile, `${outfile}.map`]) rmSync(resolve(ROOT, file), { force: true });
  });
  bundle = outfile;
  return outfile;
}

/**
 * The CLI as it ships (the bundle, from the repository root) with `env` over this process's
 * environment: its exit code (1 when it was killed), stdout and stderr as one text, and how long
 * it took. SIGTERM after `timeoutMs`.
 */
export function runCli(args: string[], options: { env?: Record<string, string>; timeoutMs?: number } = {}): Promise<{ code: number; output: string; seconds: number }> {
  const started = Date.now();
  return new Promise((done, reject) => {
    const child = spawn(process.execPath, [serverBundle(), ...args], { cwd: ROOT, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGTERM'), options.timeoutMs ?? 10 * 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code: code ?? 1, output, seconds: (Date.now() - started) / 1000 });
    });
  });
}

/** Without a new line of output for this long, a start is taken as hung (module loading alone printed nothing for ~50 s at load 30). */
const QUIET_LIMIT_MS = 180_000;
/** However much it prints, a start that takes longer than this is a failure. */
const START_LIMIT_MS = 600_000;

/**
 * `dockhand serve` as it ships (the CLI bundle, from the repository root) on `port`, with `env`
 * over this process's environment; resolves once /healthz answers. It waits as long as the server
 * makes progress (a new output line within 3 minutes, each start-up stage logs one), and fails with
 * the server's output if it exits first, goes quiet, or takes over 10 minutes (then it is killed).
 * Stopping it is the caller's. `nodeArgs` go to node before the bundle (a bench's `--cpu-prof`);
 * `ownSession` starts it in a session of its own (`setsid`), as a service of its own would be: where
 * the kernel schedules by session (autogroup), processes of one session share one group's CPU.
 */
export async function startDockhandServe(port: number, env: Record<string, string>, options: { nodeArgs?: string[]; ownSession?: boolean } = {}): Promise<DockhandServe> {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), serverBundle(), 'serve'], {
    cwd: ROOT,
    env: { ...process.env, DOCKHAND_PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.ownSession === true,
  });
  const started = Date.now();
  let output = '';
  let lastOutput = started;
  const take = (chunk: Buffer) => {
    output += chunk.toString();
    lastOutput = Date.now();
  };
  child.stdout?.on('data', take);
  child.stderr?.on('data', take);
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`dockhand serve exited early:\n${output}`);
    if (await fetch(`${url}/healthz`).then((response) => response.ok, () => false)) return { child, url, output: () => output };
    const now = Date.now();
    if (now - lastOutput > QUIET_LIMIT_MS || now - started > START_LIMIT_MS) break;
    await new Promise((done) => setTimeout(done, 100));
  }
  child.kill('SIGKILL');
  const waited = ((Date.now() - started) / 1000).toFixed(0);
  throw new Error(`dockhand serve did not answer /healthz after ${waited} s (no output for ${((Date.now() - lastOutput) / 1000).toFixed(0)} s):\n${output}`);
}

/** The child's exit code once it has exited (at once when it already has; null after a signal). */
export function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((done) => {
    if (child.exitCode !== null || child.signalCode !== null) done(child.exitCode);
    else child.once('exit', (code) => done(code));
  });
}

/**
 * Polls `probe` every 250 ms until it gives a value. A probe error whose message matches `fatal`
 * ends the wait at once; any other (the server restarting, a refused connection) is tried again.
 * On timeout the error carries the last 4,000 characters of `output()` (the server's own log).
 */
export async function pollUntil<T>(what: string, probe: () => Promise<T | undefined>, options: { ms?: number; fatal: RegExp; output: () => string }): Promise<T> {
  const end = Date.now() + (options.ms ?? 240_000);
  while (Date.now() < end) {
    let value: T | undefined;
    try {
      value = await probe();
    } catch (error) {
      if (error instanceof Error && options.fatal.test(error.message)) throw error;
    }
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what}\n${options.output().slice(-4000)}`);
}
