/*
 * `serve` says it is alive before the server's modules load: loading them (Fastify, the Anthropic
 * SDK, dockerode, zod schemas) takes 2–3 s on a quiet machine and up to a minute on a loaded one,
 * and nothing else could be logged meanwhile. The line has pino's shape, like every later one.
 * (Under the esbuild bundle the external packages load before any of this code runs.)
 */
import { isMainThread, workerData } from 'node:worker_threads';

// The bundle is also the policy worker's code (policy/pool.ts starts it with this flag): then it
// serves policy jobs instead of running the CLI.
if (!isMainThread && (workerData as Record<string, unknown> | null)?.['dockhandPolicyWorker'] === true) {
  await import('../policy/worker');
} else {
  if (process.argv[2] === 'serve') {
    process.stdout.write(`${JSON.stringify({ level: 30, time: Date.now(), pid: process.pid, msg: 'dockhand serve: loading the server…' })}\n`);
  }
  const { main } = await import('./main');
  void main(process.argv);
}

