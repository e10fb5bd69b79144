/*
 * bench:tools — latency of the agent's read-only tools inside gVisor against the same tools on the
 * host, on a large real source tree.
 *
 * The tree: part of the Linux kernel sources (kernel/, mm/, fs/, include/, about 25k files) from
 * Debian's `linux-source` package, which ships the kernel tarball under /usr/src. The script
 * installs it when missing (`apt-get install -y linux-source`, about 150 MB; root needed) and
 * extracts the subset once into /var/tmp/dockhand-bench-tools/linux (cached between runs).
 *
 * gVisor side: a sandbox from DockerSandboxDriver (runsc, no network, dockhand/base:latest) with
 * the subset streamed into /workspace as a tar. Host side: the same tool implementations through
 * the host-directory Sandbox used by the agent's unit tests. Each measurement is the whole tool
 * call as the agent loop makes it (executeTool: input validation, exec round trip, parsing,
 * formatting), 2 warm-up calls then 10 measured, per case.
 *
 * Not run by CI. LAST line: one JSON object with the p50 ratios.
 * Run: npm run bench:tools
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Docker from 'dockerode';
import { DockerSandboxDriver } from '../server/src/sandbox/docker-driver';
import type { Sandbox } from '../server/src/sandbox/types';
import { defaultTools, executeTool } from '../server/src/agent/tools';
import { toolContext } from '../server/src/agent/testing/context';
import { HostSandbox } from '../server/src/sandbox/testing/host-sandbox';

const WORK_DIR = '/var/tmp/dockhand-bench-tools';
const TREE = join(WORK_DIR, 'linux');
const SUBSET = ['kernel', 'mm', 'fs', 'include'];
const WARMUP = 2;
const RUNS = 10;

function ensureTree(): void {
  if (existsSync(join(TREE, '.complete'))) return;
  let tarball = readdirSync('/usr/src').find((name) => /^linux-source-.*\.tar\.xz$/.test(name));
  if (!tarball) {
    console.log('installing linux-source (Debian package with the kernel tarball)...');
    execFileSync('apt-get', ['install', '-y', '-q', 'linux-source'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    tarball = readdirSync('/usr/src').find((name) => /^linux-source-.*\.tar\.xz$/.test(name));
  }
  if (!tarball) throw new Error('linux-source did not install a tarball under /usr/src');
  const top = tarball.replace(/\.tar\.xz$/, '');
  console.log(`extracting ${SUBSET.join(', ')} from /usr/src/${tarball} (once)...`);
  mkdirSync(TREE, { recursive: true });
  execFileSync('tar', ['-xJf', join('/usr/src', tarball), '-C', TREE, '--strip-components=1', ...SUBSET.map((dir) => `${top}/${dir}`)], { stdio: 'inherit' });
  writeFileSync(join(TREE, '.complete'), '');
}

interface Case {
  tool: 'search' | 'read' | 'symbols';
  label: string;
  name: string;
  input: Record<string, unknown>;
}

const CASES: Case[] = [
  { tool: 'search', label: 'search spin_lock_irqsave (all files)', name: 'search', input: { pattern: 'spin_lock_irqsave', max_results: 100 } },
  { tool: 'search', label: 'search EXPORT_SYMBOL_GPL in *.c under kernel/', name: 'search', input: { pattern: 'EXPORT_SYMBOL_GPL\\(', path: 'kernel', glob: '*.c', max_results: 100 } },
  { tool: 'read', label: 'read kernel/sched/core.c 1-400', name: 'read_file', input: { path: 'kernel/sched/core.c', start_line: 1, end_line: 400 } },
  { tool: 'read', label: 'read fs/namei.c 2000-2400', name: 'read_file', input: { path: 'fs/namei.c', start_line: 2000, end_line: 2400 } },
  { tool: 'symbols', label: 'list_symbols kernel/sched/core.c', name: 'list_symbols', input: { path: 'kernel/sched/core.c' } },
  { tool: 'symbols', label: 'list_symbols mm/mmap.c', name: 'list_symbols', input: { path: 'mm/mmap.c' } },
];

function percentile(sorted: number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, index)] ?? 0;
}

async function measure(sandbox: Sandbox, testCase: Case): Promise<{ p50: number; p95: number }> {
  const tools = defaultTools();
  const context = toolContext(new HostSandbox(TREE, 'bench'), { sandbox });
  const times: number[] = [];
  for (let run = 0; run < WARMUP + RUNS; run += 1) {
    const started = performance.now();
    const result = await executeTool(tools, testCase.name, testCase.input, context, 20_000);
    const elapsed = performance.now() - started;
    if (result.isError) throw new Error(`${testCase.label} failed on ${sandbox.image}: ${result.output.slice(0, 500)}`);
    if (run >= WARMUP) times.push(elapsed);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p95: percentile(times, 95) };
}

async function main(): Promise<void> {
  ensureTree();
  execFileSync('bash', ['sandbox-images/base/build.sh'], { stdio: ['ignore', 'ignore', 'inherit'] });
  const driver = new DockerSandboxDriver({ docker: new Docker(), ownerId: `bench-tools-${process.pid}`, runtime: 'runsc' });
  try {
    const sandbox = await driver.start({ image: 'dockhand/base:latest', baseSha: 'bench', limits: { memoryMiB: 2048, cpus: 2 } });
    console.log('copying the tree into the gVisor sandbox...');
    const tar = execFileSync('tar', ['-c', '-C', TREE, ...SUBSET], { maxBuffer: 2 * 1024 * 1024 * 1024 });
    const copied = await sandbox.raw(['tar', '-x', '-C', '/workspace'], { stdin: tar, timeoutMs: 600_000 });
    if (copied.exitCode !== 0) throw new Error(`copy failed: ${copied.stderr.toString('utf8')}`);
    const files = execFileSync('bash', ['-c', `find ${SUBSET.join(' ')} -type f | wc -l`], { cwd: TREE, encoding: 'utf8' }).trim();
    console.log(`tree: ${files} files, ${(tar.length / 1024 / 1024).toFixed(0)} MiB\n`);

    const host = new HostSandbox(TREE, 'bench');
    const ratios: Record<Case['tool'], number[]> = { search: [], read: [], symbols: [] };
    console.log('case                                             host p50/p95 ms   gVisor p50/p95 ms   gVisor/host');
    for (const testCase of CASES) {
      const onHost = await measure(host, testCase);
      const inGvisor = await measure(sandbox, testCase);
      const ratio = inGvisor.p50 / onHost.p50;
      ratios[testCase.tool].push(ratio);
      console.log(
        `${testCase.label.padEnd(48)} ${`${onHost.p50.toFixed(0)}/${onHost.p95.toFixed(0)}`.padStart(15)} ${`${inGvisor.p50.toFixed(0)}/${inGvisor.p95.toFixed(0)}`.padStart(19)} ${ratio.toFixed(2).padStart(12)}`,
      );
    }
    const mean = (values: number[]) => Number((values.reduce((sum, value) => sum + value, 0) / values.length).toFixed(2));
    console.log('\n(ratios are of p50 latencies of whole tool calls, averaged over the cases of each tool)');
    console.log(
      JSON.stringify({
        files: Number(files),
        search_gvisor_over_host: mean(ratios.search),
        read_gvisor_over_host: mean(ratios.read),
        symbols_gvisor_over_host: mean(ratios.symbols),
      }),
    );
  } finally {
    await driver.destroyAll();
  }
}

await main();
