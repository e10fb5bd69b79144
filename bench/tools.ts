/*
 * bench:tools — latency of the agent's read-only tools (search, read_file, list_symbols) inside
 * gVisor against the same tools on the host, on a large real source tree.
 *
 * The tree: a large part of the Linux kernel sources (SUBSET below, ~23k files) from Debian's
 * `linux-source` package, which ships the kernel tarball under /usr/src. The script installs it
 * when missing (`apt-get install -y linux-source`, about 150 MB; root needed) and extracts the
 * subset once into /var/tmp/dockhand-bench-tools/linux (cached between runs, keyed by the subset).
 *
 * gVisor side: a sandbox from DockerSandboxDriver (runsc, no network, dockhand/base:latest, 4 GiB)
 * with the subset streamed into /workspace. Host side: the same tools over the same tree, served
 * by the same channel program run as a host process (openLocalChannel) — the resident search and
 * ctags, and the same line-slice reads — with commands on the host (HostSandbox). Each measurement is a
 * whole tool call as the agent loop makes it (executeTool: validation, round trip, formatting); the
 * two sides alternate call by call so that load from elsewhere falls on both.
 *
 * Also printed, for reference: the tools as they ran before the resident tools (a ripgrep or ctags
 * process per call) in gVisor and on the host, and the one-off cost of the first search, which
 * reads the tree into memory (the sandbox's pool can pay it before a task starts).
 *
 * Not run by CI. LAST line: one JSON object.
 * Run: npm run bench:tools
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Docker from 'dockerode';
import { DockerSandboxDriver } from '../server/src/sandbox/docker-driver';
import type { DockerSandbox } from '../server/src/sandbox/docker-sandbox';
import type { Sandbox } from '../server/src/sandbox/types';
import { ResidentHostSandbox } from '../server/src/sandbox/testing/resident-host-sandbox';
import { HostSandbox } from '../server/src/sandbox/testing/host-sandbox';
import { defaultTools, executeTool } from '../server/src/agent/tools';
import { toolContext } from '../server/src/agent/testing/context';

const WORK_DIR = '/var/tmp/dockhand-bench-tools';
const TREE = join(WORK_DIR, 'linux');
const SUBSET = ['kernel', 'mm', 'fs', 'include', 'net', 'lib', 'sound', 'security', 'crypto', 'block', 'Documentation'];
const BUDGET_BYTES = 512 * 1024 * 1024;
const WARMUP = 2;
const RUNS = 10;
/** More calls for the millisecond-scale tools, whose medians a shared machine moves most. */
const CHEAP_RUNS = 40;
const BASELINE_RUNS = 3;

function ensureTree(): void {
  const marker = join(TREE, '.complete');
  if (existsSync(marker) && readFileSync(marker, 'utf8') === SUBSET.join(' ')) return;
  let tarball = readdirSync('/usr/src').find((name) => /^linux-source-.*\.tar\.xz$/.test(name));
  if (!tarball) {
    console.log('installing linux-source (Debian package with the kernel tarball)...');
    execFileSync('apt-get', ['install', '-y', '-q', 'linux-source'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    tarball = readdirSync('/usr/src').find((name) => /^linux-source-.*\.tar\.xz$/.test(name));
  }
  if (!tarball) throw new Error('linux-source did not install a tarball under /usr/src');
  const top = tarball.replace(/\.tar\.xz$/, '');
  console.log(`extracting ${SUBSET.join(', ')} from /usr/src/${tarball} (once)...`);
  rmSync(TREE, { recursive: true, force: true });
  mkdirSync(TREE, { recursive: true });
  execFileSync('tar', ['-xJf', join('/usr/src', tarball), '-C', TREE, '--strip-components=1', ...SUBSET.map((dir) => `${top}/${dir}`)], { stdio: 'inherit' });
  writeFileSync(marker, SUBSET.join(' '));
}

/** The same sandbox with the resident tools hidden: the tools run a process per call. */
function perProcess(sandbox: Sandbox): Sandbox {
  return new Proxy(sandbox, {
    get(target, property, receiver) {
      if (property === 'searchContent' || property === 'symbolsOf') return undefined;
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

interface Case {
  tool: 'search' | 'read' | 'symbols';
  label: string;
  name: string;
  input: Record<string, unknown>;
}

const CASES: Case[] = [
  { tool: 'search', label: 'search spin_lock_irqsave (all files)', name: 'search', input: { pattern: 'spin_lock_irqsave', max_results: 100 } },
  { tool: 'search', label: 'search EXPORT_SYMBOL_GPL\\( in *.c under kernel/', name: 'search', input: { pattern: 'EXPORT_SYMBOL_GPL\\(', path: 'kernel', glob: '*.c', max_results: 100 } },
  { tool: 'search', label: 'search \\bstruct \\w+_ops\\b, 2 lines context', name: 'search', input: { pattern: '\\bstruct \\w+_ops\\b', context_lines: 2, max_results: 100 } },
  { tool: 'read', label: 'read kernel/sched/core.c 1-400', name: 'read_file', input: { path: 'kernel/sched/core.c', start_line: 1, end_line: 400 } },
  { tool: 'read', label: 'read fs/namei.c 2000-2400', name: 'read_file', input: { path: 'fs/namei.c', start_line: 2000, end_line: 2400 } },
  { tool: 'symbols', label: 'list_symbols kernel/sched/core.c', name: 'list_symbols', input: { path: 'kernel/sched/core.c' } },
  { tool: 'symbols', label: 'list_symbols mm/mmap.c', name: 'list_symbols', input: { path: 'mm/mmap.c' } },
];

function percentile(sorted: number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, index)] ?? 0;
}

async function call(sandbox: Sandbox, testCase: Case): Promise<{ ms: number; output: string }> {
  const context = toolContext(new HostSandbox(TREE, 'bench'), { sandbox });
  const started = performance.now();
  const result = await executeTool(defaultTools(), testCase.name, testCase.input, context, 600_000);
  const ms = performance.now() - started;
  if (result.isError) throw new Error(`${testCase.label} failed on ${sandbox.image}: ${result.output.slice(0, 500)}`);
  return { ms, output: result.output };
}

interface Measured {
  p50: number;
  p95: number;
  output: string;
}

/**
 * The two sides call by call, alternating (host, gVisor, host, ...), so that load from elsewhere on
 * a shared machine falls on both alike; p50/p95 of each side over `runs` calls after `warmup`.
 */
async function measurePair(host: Sandbox, gvisor: Sandbox, testCase: Case, warmup: number, runs: number): Promise<[Measured, Measured]> {
  const times: [number[], number[]] = [[], []];
  const outputs = ['', ''];
  for (let run = 0; run < warmup + runs; run += 1) {
    for (const [side, sandbox] of [host, gvisor].entries()) {
      const result = await call(sandbox, testCase);
      outputs[side] = result.output;
      if (run >= warmup) times[side]?.push(result.ms);
    }
  }
  return times.map((sideTimes, side) => {
    sideTimes.sort((a, b) => a - b);
    return { p50: percentile(sideTimes, 50), p95: percentile(sideTimes, 95), output: outputs[side] ?? '' };
  }) as [Measured, Measured];
}

const fmt = (m: { p50: number; p95: number }): string => `${m.p50.toFixed(1)}/${m.p95.toFixed(1)}`;

async function main(): Promise<void> {
  ensureTree();
  execFileSync('bash', ['sandbox-images/base/build.sh'], { stdio: ['ignore', 'ignore', 'inherit'] });
  const files = Number(execFileSync('bash', ['-c', `find ${SUBSET.join(' ')} -type f | wc -l`], { cwd: TREE, encoding: 'utf8' }).trim());
  const driver = new DockerSandboxDriver({ docker: new Docker(), ownerId: `bench-tools-${process.pid}`, runtime: 'runsc' });
  const host = await ResidentHostSandbox.open(TREE, { budgetBytes: BUDGET_BYTES });
  try {
    const sandbox: DockerSandbox = await driver.start({ image: 'dockhand/base:latest', baseSha: 'bench', limits: { memoryMiB: 4096, cpus: 2 } });
    console.log('copying the tree into the gVisor sandbox...');
    const tar = execFileSync('tar', ['-c', '-C', TREE, ...SUBSET], { maxBuffer: 4 * 1024 * 1024 * 1024 });
    const copied = await sandbox.raw(['tar', '-x', '-C', '/workspace'], { stdin: tar, timeoutMs: 900_000 });
    if (copied.exitCode !== 0) throw new Error(`copy failed: ${copied.stderr.toString('utf8')}`);
    console.log(`tree: ${files} files, ${(tar.length / 1024 / 1024).toFixed(0)} MiB\n`);

    const plainHost = new HostSandbox(TREE, 'bench');
    // The channel starts on first use; wait until calls are served by it.
    for (let attempt = 0; attempt < 100 && sandbox.transport.channel === 0; attempt += 1) {
      await sandbox.readFile('kernel/sched/core.c');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }

    // The first search reads the tree into memory, on each side.
    const first = CASES[0] as Case;
    const hostFirst = await call(host, first);
    const gvisorFirst = await call(sandbox, first);
    console.log(`first search (reads the tree into memory): host ${(hostFirst.ms / 1000).toFixed(1)} s, gVisor ${(gvisorFirst.ms / 1000).toFixed(1)} s\n`);

    const ratios: Record<Case['tool'], number[]> = { search: [], read: [], symbols: [] };
    const baselineRatios: Record<Case['tool'], number[]> = { search: [], read: [], symbols: [] };
    console.log('case                                              host p50/p95 ms  gVisor p50/p95 ms  gVisor/host │ per process: host    gVisor   gVisor/host');
    for (const testCase of CASES) {
      const runs = testCase.tool === 'search' ? RUNS : CHEAP_RUNS;
      const servedBefore = sandbox.transport.residentServed;
      const [onHost, inGvisor] = await measurePair(host, sandbox, testCase, WARMUP, runs);
      if (host.declined.length > 0) throw new Error(`${testCase.label}: the host side declined: ${host.declined.join('; ')}`);
      const resident = sandbox.transport.residentServed - servedBefore;
      if (testCase.tool !== 'read' && resident !== WARMUP + runs) {
        throw new Error(`${testCase.label}: the gVisor side was not served by the resident tools (${resident} of ${WARMUP + runs}; last declined: ${sandbox.transport.lastDeclined})`);
      }
      if (inGvisor.output !== onHost.output) throw new Error(`${testCase.label}: gVisor and host answers differ`);
      const ratio = inGvisor.p50 / onHost.p50;
      ratios[testCase.tool].push(ratio);
      // Reference: a process per call (ripgrep / ctags), as before the resident tools.
      const [baseHost, baseGvisor] = await measurePair(plainHost, perProcess(sandbox), testCase, 1, BASELINE_RUNS);
      baselineRatios[testCase.tool].push(baseGvisor.p50 / baseHost.p50);
      console.log(
        `${testCase.label.padEnd(49)} ${fmt(onHost).padStart(15)} ${fmt(inGvisor).padStart(18)} ${ratio.toFixed(2).padStart(12)} │ ${baseHost.p50.toFixed(0).padStart(14)} ${baseGvisor.p50.toFixed(0).padStart(9)} ${(baseGvisor.p50 / baseHost.p50).toFixed(2).padStart(12)}`,
      );
    }
    const mean = (values: number[]) => Number((values.reduce((sum, value) => sum + value, 0) / values.length).toFixed(2));
    console.log('\n(ratios are of p50 latencies of whole tool calls, averaged over the cases of each tool; "per process" is p50 of');
    console.log(` ${BASELINE_RUNS} calls with a ripgrep/ctags process per call, the tools before the resident search and ctags)`);
    console.log(`gVisor transport: ${JSON.stringify(sandbox.transport)}`);
    console.log(
      JSON.stringify({
        files,
        search_gvisor_over_host: mean(ratios.search),
        read_gvisor_over_host: mean(ratios.read),
        symbols_gvisor_over_host: mean(ratios.symbols),
        per_process_search_gvisor_over_host: mean(baselineRatios.search),
        per_process_read_gvisor_over_host: mean(baselineRatios.read),
        per_process_symbols_gvisor_over_host: mean(baselineRatios.symbols),
        first_search_host_s: Number((hostFirst.ms / 1000).toFixed(1)),
        first_search_gvisor_s: Number((gvisorFirst.ms / 1000).toFixed(1)),
      }),
    );
  } finally {
    await host.destroy();
    await driver.destroyAll();
  }
}

await main();
