import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { z } from 'zod';

/*
 * `/healthz` and `/metrics` timed while 1,000 concurrent requests hit a server (issue 31 item 6),
 * measured as a deployment would see it: the server in its own process (the test's, which does
 * nothing else meanwhile), the 1,000 clients in a second (`burst-load.mjs`) and the probe in a
 * third (`latency-probe.mjs`), so neither the clients' sockets nor the probe's share the server's
 * event loop and probes go out on time whatever the server is doing. Each path has its own
 * interval: `/metrics` is computed from the event log on every request, so probing it as often as
 * `/healthz` would make the probe part of the load.
 */

const HERE = import.meta.dirname;

export interface ProbeFigures {
  probes: number;
  maxMs: number;
  p50Ms: number;
  /** Probes answered other than 200 (0: no answer). */
  failed: number;
}

export interface BurstFigures {
  /** Per probed path, over the probes sent while the load ran and 2 s after. */
  paths: Record<string, ProbeFigures>;
  /** The same paths before the load (1 s), for comparison. */
  before: Record<string, ProbeFigures>;
  /** The load's answers by status (`gone`: abandoned or refused) and its duration. */
  load: Record<string, number>;
}

const Entries = z.record(z.string(), z.array(z.tuple([z.number(), z.number(), z.number()])));

function figures(entries: Array<[number, number, number]>): ProbeFigures {
  const sorted = entries.map(([, ms]) => ms).sort((a, b) => a - b);
  return {
    probes: sorted.length,
    maxMs: sorted.at(-1) ?? -1,
    p50Ms: sorted[Math.floor(sorted.length / 2)] ?? -1,
    failed: entries.filter(([, , status]) => status !== 200).length,
  };
}

function lines(child: ReturnType<typeof spawn>, onLine: (line: string) => void): void {
  let buffered = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const parts = buffered.split('\n');
    buffered = parts.pop() ?? '';
    for (const line of parts) if (line.trim()) onLine(line);
  });
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** Runs the probe 1 s alone, then beside the burst until the burst ends and 2 s after. */
export async function measureUnderBurst(options: { url: string; token: string; repo: string; paths: Record<string, number>; requests?: number }): Promise<BurstFigures> {
  const targets = Object.entries(options.paths).map(([path, everyMs]) => `${path}@${everyMs}`);
  const probe = spawn(process.execPath, [resolve(HERE, 'latency-probe.mjs'), options.url, options.token, ...targets], { stdio: ['pipe', 'pipe', 'inherit'] });
  const probeLines: string[] = [];
  let readySeen: () => void = () => {};
  const ready = new Promise<void>((done) => (readySeen = done));
  lines(probe, (line) => (line === '{"ready":true}' ? readySeen() : probeLines.push(line)));
  const probeDone = new Promise<void>((done) => probe.once('exit', () => done()));
  try {
    await ready;
    await sleep(1_000);
    const loadStarted = Date.now();
    const loader = spawn(process.execPath, [resolve(HERE, 'burst-load.mjs'), options.url, options.token, options.repo, String(options.requests ?? 1000)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let loadLine = '{}';
    lines(loader, (line) => (loadLine = line));
    await new Promise<void>((done) => loader.once('exit', () => done()));
    const loadMs = Date.now() - loadStarted;
    await sleep(2_000);
    probe.stdin?.end();
    await probeDone;
    const entries = Entries.parse(JSON.parse(probeLines.at(-1) ?? '{}'));
    const paths: Record<string, ProbeFigures> = {};
    const before: Record<string, ProbeFigures> = {};
    for (const path of Object.keys(options.paths)) {
      const all = entries[path] ?? [];
      before[path] = figures(all.filter(([sentAt]) => sentAt < loadStarted));
      paths[path] = figures(all.filter(([sentAt]) => sentAt >= loadStarted));
    }
    const load = z.record(z.string(), z.number()).parse(JSON.parse(loadLine));
    return { paths, before, load: { ...load, wallMs: loadMs } };
  } finally {
    if (probe.exitCode === null) probe.kill('SIGKILL');
  }
}
