import { spawn, type ChildProcess } from 'node:child_process';
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

/**
 * `dockhand serve` as it ships (the CLI under tsx, from the repository root) on `port`, with `env`
 * over this process's environment; resolves once /healthz answers, fails with the server's output
 * if it exits first or does not answer within 60 s (then it is killed). Stopping it is the caller's.
 */
export async function startDockhandServe(port: number, env: Record<string, string>): Promise<DockhandServe> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/src/cli/bin.ts', 'serve'], {
    cwd: ROOT,
    env: { ...process.env, DOCKHAND_PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  for (let attempt = 0; attempt < 600; attempt += 1) {
    if (child.exitCode !== null) throw new Error(`dockhand serve exited early:\n${output}`);
    if (await fetch(`${url}/healthz`).then((response) => response.ok, () => false)) return { child, url, output: () => output };
    await new Promise((done) => setTimeout(done, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`dockhand serve did not answer /healthz within 60 s:\n${output}`);
}
