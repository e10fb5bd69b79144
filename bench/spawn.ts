/**
 * `npm run bench:spawn` — how long starting a child process blocks the server's event loop, by
 * the server's memory: Node's own `spawn` (a fork of the caller, nodejs/node#14917) against the
 * spawner (`server/src/spawner.ts`: the fork happens in a small process of its own). For each
 * heap size it grows this process's resident memory, then starts `git --version` ROUNDS times
 * each way and measures the synchronous part of the call (the event loop's stall) and the
 * whole run to exit. The LAST line is one JSON object.
 */
import { spawn } from 'node:child_process';
import { runChild, spawner } from '../server/src/spawner';

const ROUNDS = Number(process.env.ROUNDS ?? 30);
const SIZES_MB = (process.env.SIZES_MB ?? '0,256,1024').split(',').map(Number);
const out = (line: string) => process.stdout.write(`${line}\n`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const round = (n: number) => Math.round(n * 100) / 100;

async function direct(): Promise<{ stallMs: number; totalMs: number }> {
  const started = performance.now();
  const child = spawn('git', ['--version'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const stallMs = performance.now() - started;
  await new Promise((resolve) => child.once('close', resolve));
  return { stallMs, totalMs: performance.now() - started };
}

async function brokered(): Promise<{ stallMs: number; totalMs: number }> {
  const started = performance.now();
  const run = runChild('git', ['--version'], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
  const stallMs = performance.now() - started;
  await run;
  return { stallMs, totalMs: performance.now() - started };
}

async function main() {
  const ballast: Buffer[] = [];
  const rows: Record<string, number>[] = [];
  await brokered(); // the spawner process starts once, before anything is measured
  for (const size of SIZES_MB) {
    while (ballast.length < size) ballast.push(Buffer.alloc(1024 * 1024, ballast.length % 255));
    const rss = Math.round(process.memoryUsage().rss / 1e6);
    const a = { stall: [] as number[], total: [] as number[] };
    const b = { stall: [] as number[], total: [] as number[] };
    for (let i = 0; i < ROUNDS; i++) {
      // Alternated, so the machine's load drifts over both alike.
      const x = await direct();
      a.stall.push(x.stallMs);
      a.total.push(x.totalMs);
      const y = await brokered();
      b.stall.push(y.stallMs);
      b.total.push(y.totalMs);
    }
    const row = {
      rss_mb: rss,
      direct_stall_ms: round(median(a.stall)),
      spawner_stall_ms: round(median(b.stall)),
      direct_total_ms: round(median(a.total)),
      spawner_total_ms: round(median(b.total)),
      stall_ratio: round(median(a.stall) / Math.max(median(b.stall), 0.01)),
    };
    rows.push(row);
    out(`rss ${rss} MB: event-loop stall per child ${row.direct_stall_ms} ms direct, ${row.spawner_stall_ms} ms through the spawner (${row.stall_ratio}x); run to exit ${row.direct_total_ms} vs ${row.spawner_total_ms} ms`);
  }
  spawner.close();
  out(JSON.stringify({ bench: 'spawn', rounds: ROUNDS, rows }));
}

main().then(() => process.exit(0), (error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
