/**
 * The host reference: a repository's CI install and test steps run as the census lists them, in a
 * scratch clone on this machine, with the Node the workflow asks for (or Debian's Python in a
 * venv that sees Debian's python3-* packages), HOME in the scratch folder, CI=true as on GitHub.
 * Like a CI job, the first failing step ends the run; each step has a time limit.
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { CensusRepo, CiStep } from './repos';
import { countsIn, type Counts } from './summary';
import { shims } from './toolchain';

const STEP_LIMIT_MS = 10 * 60_000;
const CA_FILE = '/etc/ssl/certs/ca-certificates.crt';
const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface HostStep {
  phase: 'install' | 'test';
  run: string;
  exitCode: number;
  seconds: number;
  timedOut: boolean;
  /** The output's last lines. */
  tail: string;
}

export interface HostResult {
  kind: 'host';
  repo: string;
  commit: string;
  at: string;
  /** Every install and test step passed. */
  green: boolean;
  /** The tests ran (a test step started) and the output named counts, or the step passed. */
  ranTests: boolean;
  counts: Counts;
  toolchain: string;
  steps: HostStep[];
  seconds: number;
  error?: string;
}

/** Runs `step` with bash as a workflow's `run:` does (`bash -e`), in its own process group, killed at the limit. */
function runStep(step: CiStep, cwd: string, env: Record<string, string>, scratch: string, index: number): Promise<{ exitCode: number; output: string; timedOut: boolean; seconds: number }> {
  const script = join(scratch, `step-${index}.sh`);
  writeFileSync(script, `${step.run}\n`);
  const started = Date.now();
  return new Promise((done) => {
    const child = spawn('bash', ['--noprofile', '--norc', '-e', script], { cwd: step.workingDirectory ? join(cwd, step.workingDirectory) : cwd, env: { ...env, ...step.env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const take = (chunk: Buffer) => {
      output += chunk.toString();
      // Keep the end: counts and failures are printed last.
      if (output.length > 400_000) output = output.slice(-200_000);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    }, STEP_LIMIT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ exitCode: code ?? 1, output, timedOut, seconds: (Date.now() - started) / 1000 });
    });
  });
}

/** The host reference of `entry`, from the census clone at `clone` (scratch under `scratchRoot`, removed after). */
export async function hostReference(entry: CensusRepo, clone: string, dataDir: string, scratchRoot: string): Promise<HostResult> {
  const started = Date.now();
  const result: HostResult = { kind: 'host', repo: entry.repo, commit: entry.commit, at: new Date().toISOString(), green: false, ranTests: false, counts: {}, toolchain: '', steps: [], seconds: 0 };
  rmSync(scratchRoot, { recursive: true, force: true });
  const work = join(scratchRoot, 'work');
  const home = join(scratchRoot, 'home');
  mkdirSync(home, { recursive: true });
  try {
    execFileSync('git', ['clone', '--quiet', '--branch', entry.branch, clone, work], { stdio: 'ignore' });
    const cache = join(dataDir, 'cache');
    const env: Record<string, string> = {
      HOME: home,
      CI: 'true',
      LANG: 'C.UTF-8',
      TERM: 'dumb',
      TMPDIR: join(scratchRoot, 'tmp'),
      npm_config_cache: join(cache, 'npm'),
      npm_config_prefix: join(scratchRoot, 'global'),
      npm_config_store_dir: join(cache, 'pnpm-store'),
      YARN_CACHE_FOLDER: join(cache, 'yarn'),
      COREPACK_HOME: join(cache, 'corepack'),
      COREPACK_ENABLE_DOWNLOAD_PROMPT: '0',
      // This machine's registry access goes through a CA of its own (the host's npmrc names it).
      npm_config_cafile: CA_FILE,
      NODE_EXTRA_CA_CERTS: CA_FILE,
      npm_config_fund: 'false',
      npm_config_audit: 'false',
      npm_config_update_notifier: 'false',
      PIP_NO_INDEX: '1',
      PIP_DISABLE_PIP_VERSION_CHECK: '1',
    };
    mkdirSync(env.TMPDIR ?? '', { recursive: true });
    let install = entry.ci.install;
    let test = entry.ci.test;
    if (entry.language === 'python') {
      // Debian's Python (the sandbox's family), a venv that sees Debian's python3-* packages.
      const venv = join(scratchRoot, 'venv');
      execFileSync('/usr/bin/python3', ['-m', 'venv', '--system-site-packages', venv]);
      // Debian's /usr/bin/pytest and python3-coverage run /usr/bin/python3, which does not see the venv: launchers in the venv.
      for (const name of ['pytest', 'coverage']) {
        writeFileSync(join(venv, 'bin', name), `#!/bin/sh\nexec "${join(venv, 'bin', 'python')}" -m ${name} "$@"\n`);
        chmodSync(join(venv, 'bin', name), 0o755);
      }
      env.VIRTUAL_ENV = venv;
      env.PATH = `${join(venv, 'bin')}:${SYSTEM_PATH}`;
      result.toolchain = `Debian python3 ${execFileSync('/usr/bin/python3', ['--version'], { encoding: 'utf8' }).trim().split(' ')[1]} + ${entry.host?.debianPackages.join(', ') || 'no Debian package'}`;
      install = entry.host?.install ?? [];
      test = entry.host?.test ?? test;
    } else {
      const manager = entry.packageManager === 'pnpm' ? 'pnpm' : entry.packageManager.startsWith('yarn') ? 'yarn' : 'npm';
      const tools = shims(dataDir, entry.ci.node ?? '', manager, entry.ci.tool);
      env.PATH = `${tools.bin}:${tools.corepackBin}:${join(scratchRoot, 'global', 'bin')}:${SYSTEM_PATH}`;
      // node-gyp builds against the headers in the Node package instead of downloading them.
      env.npm_config_nodedir = dirname(dirname(tools.node));
      result.toolchain = tools.describe;
    }
    // Yarn classic has its own CA setting; berry refuses unknown YARN_* settings and takes Node's NODE_EXTRA_CA_CERTS.
    if (entry.packageManager === 'yarn-classic') env.YARN_CAFILE = CA_FILE;
    Object.assign(env, entry.ci.env);
    const all = [...install.map((step) => ({ phase: 'install' as const, step })), ...test.map((step) => ({ phase: 'test' as const, step }))];
    let outputs = '';
    for (const [index, { phase, step }] of all.entries()) {
      const ran = await runStep(step, work, env, scratchRoot, index);
      result.steps.push({ phase, run: step.run, exitCode: ran.exitCode, seconds: ran.seconds, timedOut: ran.timedOut, tail: ran.output.trim().split('\n').slice(-25).join('\n') });
      if (phase === 'test') {
        outputs += `${ran.output}\n`;
        result.ranTests = true;
      }
      if (ran.exitCode !== 0) break;
    }
    result.counts = countsIn(outputs);
    result.green = result.steps.length === all.length && result.steps.every((step) => step.exitCode === 0);
  } catch (error) {
    result.error = error instanceof Error ? error.message.split('\n').slice(0, 5).join(' | ') : String(error);
  } finally {
    result.seconds = (Date.now() - started) / 1000;
    rmSync(scratchRoot, { recursive: true, force: true });
  }
  return result;
}
