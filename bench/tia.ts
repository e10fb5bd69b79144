/**
 * Test-impact analysis benchmark: `npm run bench:tia`.
 *
 * Two real open-source code bases a fresh machine obtains by itself:
 *  - networkx 2.8.8 from Debian (python3-networkx, 250+ pytest modules; apt-get installs it if missing),
 *  - zod 4.6.7 from the npm registry (`npm pack`: its tarball ships src/ with 196 vitest files).
 * Each gets a git repo with the pristine sources, then a set of single-function mutations (a
 * `return <expr>` becomes `return None` / `return undefined`). Per change the engine selects and
 * runs tests (SmartFeedbackEngine over a HostSandbox: the bench runs on the host, because a
 * several-minute baseline suite under gVisor on 2 shared cores would dominate the run).
 *
 * Ground truth without running the whole suite per mutation: one instrumented baseline run (also
 * the full-suite timing) records which tests execute each candidate function. A body mutation can
 * only fail tests that execute the function, so running those tests with the mutation applied gives
 * every failing test; any failing test outside the selection is a missed failure. Functions that
 * run at import time are not candidates (their changes take the engine's import-time path).
 *
 * Last line: {"changes", "median_selected_share", "missed_failures", "median_time_saved_share", ...}
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { SmartFeedbackEngine } from '../server/src/feedback/engine';
import { HostSandbox } from '../server/src/sandbox/testing/host-sandbox';

const ROOT = resolve(import.meta.dirname, '..');
const PER_CODEBASE = Number(process.env.TIA_CHANGES ?? 8);
const WORK = mkdtempSync(join(tmpdir(), 'dockhand-bench-tia-'));

interface Candidate {
  id: string;
  file: string;
  /** Line index after which the hit probe goes. */
  probeAfter: number;
  probe: string;
  returnLine: number;
  mutated: string;
}

interface Codebase {
  name: string;
  repo: string;
  sha: string;
  language: 'python' | 'typescript';
  candidates: Candidate[];
  extraPath: string[];
  /** Runs the whole suite with probes on; returns test file → candidate ids it executed. */
  instrumentedRun: () => { durationMs: number; hits: Map<string, Set<string>>; importHits: Set<string> };
  /** Runs some test files; returns the failing test ids. */
  runFiles: (files: string[]) => string[];
}

function sh(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}): string {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8', env: { ...process.env, ...env }, maxBuffer: 256 * 1024 * 1024 });
}

function gitInit(dir: string): string {
  const env = { GIT_AUTHOR_NAME: 'bench', GIT_AUTHOR_EMAIL: 'b@x', GIT_COMMITTER_NAME: 'bench', GIT_COMMITTER_EMAIL: 'b@x' };
  sh('git', ['init', '-q', '-b', 'main'], dir);
  sh('git', ['add', '-A'], dir);
  sh('git', ['commit', '-q', '-m', 'base'], dir, env);
  return sh('git', ['rev-parse', 'HEAD'], dir).trim();
}

function walk(dir: string, base = dir): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === '.git' || entry.name === '__pycache__') continue;
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...walk(full, base));
    else out.push(relative(base, full));
  }
  return out;
}

/** Module-level functions with a direct `return <expr>` (Python: def at column 0, body at 4 spaces). */
function pythonCandidates(repo: string): Candidate[] {
  const result: Candidate[] = [];
  for (const file of walk(repo).filter((f) => f.endsWith('.py') && !/(^|\/)(tests?|testing)\//.test(f) && !/(__init__|conftest)\.py$/.test(f)).sort()) {
    const lines = readFileSync(join(repo, file), 'utf8').split('\n');
    for (let index = 0; index < lines.length; index++) {
      const name = /^def (\w+)\(/.exec(lines[index] ?? '')?.[1];
      if (!name) continue;
      let signatureEnd = index;
      while (signatureEnd < lines.length && !/\)\s*(->[^:]+)?:\s*(#.*)?$/.test(lines[signatureEnd] ?? '')) signatureEnd++;
      let end = signatureEnd + 1;
      while (end < lines.length && (lines[end] === '' || /^\s/.test(lines[end] ?? ''))) end++;
      const body = lines.slice(signatureEnd + 1, end);
      if (body.some((line) => /\byield\b/.test(line))) continue;
      const offset = body.findIndex((line) => /^ {4}return \S/.test(line) && !/^ {4}return None\s*$/.test(line) && !/[([{,\\]\s*$/.test(line));
      if (offset < 0) continue;
      const id = `${file}:${name}`;
      result.push({
        id,
        file,
        probeAfter: signatureEnd,
        probe: `    __import__("builtins").__dict__.get("_dockhand_hits", set()).add(${JSON.stringify(id)})`,
        returnLine: signatureEnd + 1 + offset,
        mutated: '    return None',
      });
    }
  }
  return result;
}

/** `export function` at column 0 with a single-line `return …;` at two spaces. */
function typescriptCandidates(repo: string): Candidate[] {
  const result: Candidate[] = [];
  for (const file of walk(repo).filter((f) => f.endsWith('.ts') && !f.includes('/tests/') && !f.endsWith('.test.ts')).sort()) {
    const lines = readFileSync(join(repo, file), 'utf8').split('\n');
    for (let index = 0; index < lines.length; index++) {
      const name = /^export function (\w+)/.exec(lines[index] ?? '')?.[1];
      if (!name) continue;
      let signatureEnd = index;
      while (signatureEnd < lines.length && !/\{\s*$/.test(lines[signatureEnd] ?? '') && !/;\s*$/.test(lines[signatureEnd] ?? '')) signatureEnd++;
      if (!/\{\s*$/.test(lines[signatureEnd] ?? '')) continue;
      let end = signatureEnd + 1;
      while (end < lines.length && !/^\}/.test(lines[end] ?? '')) end++;
      const offset = lines.slice(signatureEnd + 1, end).findIndex((line) => /^ {2}return \S.*;\s*$/.test(line) && !/^ {2}return undefined;/.test(line));
      if (offset < 0) continue;
      const id = `${file}:${name}`;
      result.push({
        id,
        file,
        probeAfter: signatureEnd,
        probe: `  (globalThis as any).__dockhandHits?.add(${JSON.stringify(id)});`,
        returnLine: signatureEnd + 1 + offset,
        mutated: '  return undefined as any;',
      });
    }
  }
  return result;
}

/** Writes the probes (bottom-up per file so line numbers stay valid), runs, restores. */
function withProbes<T>(repo: string, candidates: Candidate[], run: () => T): T {
  const byFile = new Map<string, Candidate[]>();
  for (const candidate of candidates) byFile.set(candidate.file, [...(byFile.get(candidate.file) ?? []), candidate]);
  const originals = new Map<string, string>();
  for (const [file, list] of byFile) {
    const text = readFileSync(join(repo, file), 'utf8');
    originals.set(file, text);
    const lines = text.split('\n');
    for (const candidate of [...list].sort((a, b) => b.probeAfter - a.probeAfter)) lines.splice(candidate.probeAfter + 1, 0, candidate.probe);
    writeFileSync(join(repo, file), lines.join('\n'));
  }
  try {
    return run();
  } finally {
    for (const [file, text] of originals) writeFileSync(join(repo, file), text);
  }
}

function networkx(): Codebase {
  const source = '/usr/lib/python3/dist-packages/networkx';
  if (!existsSync(join(source, '__init__.py')) || spawnSync('/usr/bin/python3', ['-c', 'import pytest']).status !== 0) {
    console.log('installing python3-networkx and python3-pytest from Debian…');
    sh('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'python3-networkx', 'python3-pytest'], '/', { DEBIAN_FRONTEND: 'noninteractive' });
  }
  const repo = join(WORK, 'networkx');
  mkdirSync(repo, { recursive: true });
  cpSync(source, join(repo, 'networkx'), { recursive: true, filter: (path) => !path.includes('__pycache__') });
  const sha = gitInit(repo);
  const bin = join(WORK, 'bin');
  mkdirSync(bin, { recursive: true });
  if (!existsSync(join(bin, 'python3'))) symlinkSync('/usr/bin/python3', join(bin, 'python3'));
  const plugin = join(WORK, 'plugin');
  mkdirSync(plugin, { recursive: true });
  writeFileSync(
    join(plugin, 'dockhand_hits.py'),
    `import builtins, json, os, pytest
builtins._dockhand_hits = set()
records = {}
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if builtins._dockhand_hits:
        records.setdefault("<import>", set()).update(builtins._dockhand_hits)
        builtins._dockhand_hits.clear()
    yield
    records.setdefault(item.nodeid.split("::")[0], set()).update(builtins._dockhand_hits)
    builtins._dockhand_hits.clear()
def pytest_sessionfinish(session, exitstatus):
    with open(os.environ["DOCKHAND_HITS_OUT"], "w") as out:
        json.dump({key: sorted(value) for key, value in records.items()}, out)
`,
  );
  const env = { PYTHONDONTWRITEBYTECODE: '1' };
  return {
    name: 'networkx',
    repo,
    sha,
    language: 'python',
    candidates: pythonCandidates(repo),
    extraPath: [bin],
    instrumentedRun() {
      const out = join(WORK, 'nx-hits.json');
      const started = Date.now();
      spawnSync('/usr/bin/python3', ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', '-p', 'dockhand_hits', 'networkx'], {
        cwd: repo,
        env: { ...process.env, ...env, PYTHONPATH: plugin, DOCKHAND_HITS_OUT: out },
        stdio: 'ignore',
      });
      const durationMs = Date.now() - started;
      const parsed: unknown = JSON.parse(readFileSync(out, 'utf8'));
      return { durationMs, ...toHits(parsed) };
    },
    runFiles(files) {
      const run = spawnSync('/usr/bin/python3', ['-m', 'pytest', '-q', '-rA', '-p', 'no:cacheprovider', ...files], { cwd: repo, env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
      return [...run.stdout.matchAll(/^(?:FAILED|ERROR) (\S+)/gm)].map((match) => match[1] ?? '');
    },
  };
}

function zod(): Codebase {
  const version = '4.6.7';
  const pack = join(WORK, 'zod-pack');
  mkdirSync(pack, { recursive: true });
  sh('npm', ['pack', `zod@${version}`, '--silent'], pack);
  sh('tar', ['xzf', `zod-${version}.tgz`], pack);
  const repo = join(WORK, 'zod');
  mkdirSync(repo, { recursive: true });
  cpSync(join(pack, 'package', 'src'), join(repo, 'src'), { recursive: true });
  cpSync(join(pack, 'package', 'package.json'), join(repo, 'package.json'));
  // Test files that need the zod repo's own dev tooling (esbuild, fixtures) cannot run from the tarball.
  for (const file of walk(repo).filter((f) => f.endsWith('.test.ts'))) {
    const imports = [...readFileSync(join(repo, file), 'utf8').matchAll(/^import .* from ["']([^"']+)["']/gm)].map((m) => m[1] ?? '');
    if (imports.some((spec) => !/^(\.|vitest$|zod|node:|@standard-schema)/.test(spec))) rmSync(join(repo, file));
  }
  writeFileSync(
    join(repo, 'vitest.config.mjs'),
    `export default {
  resolve: { conditions: ['@zod/source'] },
  ssr: { resolve: { conditions: ['@zod/source'] } },
  test: { include: ['src/**/*.test.ts'], setupFiles: ['./.dockhand-hits.mjs'] },
};
`,
  );
  const sha = gitInit(repo);
  // Tooling outside the snapshot: the workspace's vitest, and the probe recorder (both git-excluded).
  symlinkSync(join(ROOT, 'node_modules'), join(repo, 'node_modules'));
  writeFileSync(join(repo, '.git', 'info', 'exclude'), 'node_modules\n.dockhand-hits.mjs\n');
  writeFileSync(
    join(repo, '.dockhand-hits.mjs'),
    `import { appendFileSync } from 'node:fs';
import { afterEach, beforeEach, expect } from 'vitest';
globalThis.__dockhandHits = new Set();
const out = process.env.DOCKHAND_HITS_OUT;
const flush = (file) => {
  if (out && globalThis.__dockhandHits.size) appendFileSync(out, JSON.stringify({ file, hits: [...globalThis.__dockhandHits] }) + '\\n');
  globalThis.__dockhandHits.clear();
};
beforeEach(() => flush('<import>'));
afterEach(() => flush(expect.getState().testPath));
`,
  );
  const vitest = join(ROOT, 'node_modules', '.bin', 'vitest');
  return {
    name: 'zod',
    repo,
    sha,
    language: 'typescript',
    candidates: typescriptCandidates(repo),
    extraPath: [],
    instrumentedRun() {
      const out = join(WORK, 'zod-hits.jsonl');
      writeFileSync(out, '');
      const started = Date.now();
      spawnSync(vitest, ['run', '--reporter=dot'], { cwd: repo, env: { ...process.env, DOCKHAND_HITS_OUT: out, CI: '1' }, stdio: 'ignore' });
      const durationMs = Date.now() - started;
      const records: Record<string, string[]> = {};
      for (const line of readFileSync(out, 'utf8').split('\n').filter(Boolean)) {
        const entry: unknown = JSON.parse(line);
        if (typeof entry !== 'object' || entry === null || !('file' in entry) || !('hits' in entry)) continue;
        const file = typeof entry.file === 'string' ? (entry.file === '<import>' ? entry.file : relative(repo, entry.file)) : '';
        const hits = Array.isArray(entry.hits) ? entry.hits.filter((hit): hit is string => typeof hit === 'string') : [];
        records[file] = [...(records[file] ?? []), ...hits];
      }
      return { durationMs, ...toHits(records) };
    },
    runFiles(files) {
      const report = join(WORK, 'zod-run.json');
      spawnSync(vitest, ['run', '--reporter=json', `--outputFile=${report}`, ...files], { cwd: repo, env: { ...process.env, CI: '1' }, stdio: 'ignore' });
      const parsed: unknown = JSON.parse(readFileSync(report, 'utf8'));
      const failed: string[] = [];
      const results = typeof parsed === 'object' && parsed !== null && 'testResults' in parsed && Array.isArray(parsed.testResults) ? parsed.testResults : [];
      for (const suite of results) {
        if (typeof suite !== 'object' || suite === null || !('assertionResults' in suite) || !Array.isArray(suite.assertionResults)) continue;
        const name = 'name' in suite && typeof suite.name === 'string' ? relative(repo, suite.name) : '?';
        if ('status' in suite && suite.status === 'failed' && suite.assertionResults.length === 0) failed.push(name);
        for (const test of suite.assertionResults) {
          if (typeof test === 'object' && test !== null && 'status' in test && test.status === 'failed') {
            failed.push(`${name} > ${'fullName' in test ? String(test.fullName) : '?'}`);
          }
        }
      }
      return failed;
    },
  };
}

function toHits(records: unknown): { hits: Map<string, Set<string>>; importHits: Set<string> } {
  const hits = new Map<string, Set<string>>();
  let importHits = new Set<string>();
  if (typeof records !== 'object' || records === null) return { hits, importHits };
  for (const [file, ids] of Object.entries(records)) {
    const list = Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [];
    if (file === '<import>') importHits = new Set(list);
    else hits.set(file, new Set([...(hits.get(file) ?? []), ...list]));
  }
  return { hits, importHits };
}

interface ChangeResult {
  codebase: string;
  change: string;
  selectedShare: number;
  timeSavedShare: number;
  failing: number;
  missed: number;
  reason: string;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return 0;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

async function benchCodebase(codebase: Codebase): Promise<ChangeResult[]> {
  console.log(`\n== ${codebase.name}: ${codebase.candidates.length} candidate functions; instrumented full suite…`);
  // Probe a spread of candidates (every k-th), keep those some test executes and import does not.
  const stride = Math.max(1, Math.floor(codebase.candidates.length / (PER_CODEBASE * 6)));
  const probed = codebase.candidates.filter((_, index) => index % stride === 0);
  const baseline = withProbes(codebase.repo, probed, () => codebase.instrumentedRun());
  console.log(`full suite (instrumented baseline): ${(baseline.durationMs / 1000).toFixed(1)} s`);
  const testsOf = new Map<string, string[]>();
  for (const [file, ids] of baseline.hits) for (const id of ids) testsOf.set(id, [...(testsOf.get(id) ?? []), file]);
  const usable = probed.filter((candidate) => testsOf.has(candidate.id) && !baseline.importHits.has(candidate.id));
  const step = Math.max(1, Math.floor(usable.length / PER_CODEBASE));
  const chosen = usable.filter((_, index) => index % step === 0).slice(0, PER_CODEBASE);

  const engine = new SmartFeedbackEngine({ repo: codebase.name, checks: codebase.language === 'typescript' ? { runner: 'vitest' } : { python: '/usr/bin/python3' } });
  const sandbox = new HostSandbox(codebase.repo, codebase.sha, codebase.extraPath);
  const results: ChangeResult[] = [];
  for (const candidate of chosen) {
    const path = join(codebase.repo, candidate.file);
    const original = readFileSync(path, 'utf8');
    const lines = original.split('\n');
    lines[candidate.returnLine] = candidate.mutated;
    writeFileSync(path, lines.join('\n'));
    try {
      const analysis = await engine.analyze(sandbox);
      const report = await engine.runTests(sandbox, { scope: 'selected' });
      const totalTests = analysis.graph.tests.size;
      const selected = analysis.selection.mode === 'selected' ? analysis.selection.tests : [...analysis.graph.tests];
      const truthFiles = testsOf.get(candidate.id) ?? [];
      const outside = truthFiles.filter((file) => !selected.includes(file));
      const missedTests = outside.length > 0 ? codebase.runFiles(outside) : [];
      const result: ChangeResult = {
        codebase: codebase.name,
        change: `${candidate.id} returns ${codebase.language === 'python' ? 'None' : 'undefined'}`,
        selectedShare: selected.length / totalTests,
        timeSavedShare: 1 - report.durationMs / baseline.durationMs,
        failing: report.failed,
        missed: missedTests.length,
        reason: report.selectionReason.slice(0, 160),
      };
      results.push(result);
      console.log(
        `${result.change}: selected ${selected.length}/${totalTests} test files (${(result.selectedShare * 100).toFixed(1)}%), ` +
          `${(report.durationMs / 1000).toFixed(1)} s vs ${(baseline.durationMs / 1000).toFixed(1)} s full (saved ${(result.timeSavedShare * 100).toFixed(0)}%), ` +
          `${report.failed} failing in selection, missed ${missedTests.length}${missedTests.length ? `: ${missedTests.slice(0, 3).join(', ')}` : ''} ` +
          `(${truthFiles.length} test file(s) execute it)`,
      );
    } finally {
      writeFileSync(path, original);
    }
  }
  return results;
}

const results = [...(await benchCodebase(networkx())), ...(await benchCodebase(zod()))];
rmSync(WORK, { recursive: true, force: true });
const byCodebase = Object.fromEntries(
  [...new Set(results.map((result) => result.codebase))].map((name) => {
    const subset = results.filter((result) => result.codebase === name);
    return [name, { changes: subset.length, median_selected_share: median(subset.map((r) => r.selectedShare)), missed_failures: subset.reduce((sum, r) => sum + r.missed, 0) }];
  }),
);
console.log(
  JSON.stringify({
    changes: results.length,
    breaking_changes: results.filter((result) => result.failing + result.missed > 0).length,
    median_selected_share: Number(median(results.map((result) => result.selectedShare)).toFixed(4)),
    missed_failures: results.reduce((sum, result) => sum + result.missed, 0),
    median_time_saved_share: Number(median(results.map((result) => result.timeSavedShare)).toFixed(4)),
    by_codebase: byCodebase,
  }),
);
