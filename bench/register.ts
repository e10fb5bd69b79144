/**
 * `npm run bench:register [-- MIRROR_DIR…] [--generated DIR] [--stress]` — registration at any
 * size (issue #32). For each source: `git clone --mirror` of it (through the pack protocol,
 * `--no-local`, as a registration fetches; the hard-linking local clone is timed too; both through
 * the server's spawner at its git children's priority, as the registration's git runs), then a
 * registration through `RepoRegistry` with the local forge on a fresh data dir (default branch
 * first, the other branches in batches), time ÷ clone-mirror; then a registration in a process of
 * its own, SIGKILLed mid-fetch (with its git children), the temporary packs it left counted, and
 * a second registration that continues and must leave none.
 *
 * Sources: mirror directories given as arguments (the search tool's `fetch` of public repositories,
 * e.g. /work/.mirror/vitejs+vite/repo; named here by owner/name and commit, their content never
 * committed) and the generated repository (`bench/register-fixture.ts`: 1 GiB of random blobs over
 * 300 commits, 5,000 branches; made once under /var/tmp). `--stress` runs `stress-ng --cpu 4` beside
 * it. Prints figures as it goes; the LAST line is one JSON object.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { LocalForge } from '../server/src/forge/local-forge';
import { registeredSource, RepoRegistry } from '../server/src/runner/registry';
import { RepoMirror } from '../server/src/sandbox/mirror';
import { runChild, spawner } from '../server/src/spawner';
import { SqliteStore } from '../server/src/store/sqlite';
import { generatedRepository } from './register-fixture';

const ADMIN = { name: 'root', role: 'admin' as const, createdAt: '' };
const out = (line: string) => process.stdout.write(`${line}\n`);
const round = (n: number) => Math.round(n * 100) / 100;
const WORK = process.env.BENCH_REGISTER_DIR ?? '/var/tmp/dockhand-bench-register-work';

function gitOut(dir: string, ...args: string[]): string {
  return spawnSync('git', args, { cwd: dir, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 }).stdout.trim();
}

/** A source's name: owner/name of a fetched mirror (`/work/.mirror/owner+name/repo`), else the directory's. */
function nameOf(path: string): string {
  const parent = basename(dirname(path));
  return parent.includes('+') ? parent.replace('+', '/') : basename(path).replace(/\.git$/, '');
}

async function timed<T>(work: () => Promise<T>): Promise<{ seconds: number; value: T }> {
  const started = performance.now();
  const value = await work();
  return { seconds: (performance.now() - started) / 1000, value };
}

/**
 * git through the server's spawner, at the priority the server gives its own git children
 * (CHILD_NICE, and their own session's autogroup): the clone it is compared with competes for the
 * CPU exactly as the registration's fetches do.
 */
async function run(command: string, args: string[]): Promise<void> {
  const result = await runChild(command, args, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' } });
  if (result.code !== 0) throw new Error(`${command} ${args.join(' ')}: ${result.code} ${result.stderr.slice(-2000)}`);
}

async function register(source: string, dataDir: string, name: string) {
  const store = new SqliteStore(':memory:');
  const mirror = new RepoMirror(join(dataDir, 'mirrors-root'), { sources: registeredSource(store) });
  const localForge = new LocalForge({ dataDir: join(dataDir, 'forge'), store: store.pullRequests });
  const registry = new RepoRegistry({ store, mirror, localForge });
  try {
    const job = await registry.start({ name, source }, ADMIN);
    let shown = '';
    const ticker = setInterval(() => {
      const status = job.status;
      const line = `    ${status.stage} ${status.refsDone}/${status.refsTotal}${status.git ? ` ${status.git.stage} ${status.git.percent ?? ''}%${status.git.bytes ? ` ${status.git.bytes}` : ''}` : ''}`;
      if (line !== shown && process.env.BENCH_DEBUG) out(line);
      shown = line;
    }, 2000);
    try {
      await job.finished;
    } finally {
      clearInterval(ticker);
    }
    return { forge: localForge.repositoryPath(name), status: job.status };
  } finally {
    mirror.close();
    store.close();
  }
}

function tmpPacks(repo: string): number {
  const pack = join(repo, 'objects', 'pack');
  return existsSync(pack) ? readdirSync(pack).filter((file) => file.startsWith('tmp_')).length : 0;
}

/** Processes (ours) whose working directory is under `dir`: the git children of a killed registration. */
function processesUnder(dir: string): number[] {
  const found: number[] = [];
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      if (readlinkSync(`/proc/${pid}/cwd`).startsWith(dir)) found.push(Number(pid));
    } catch {
      // gone, or not ours
    }
  }
  return found;
}

/**
 * A registration in a process of its own, SIGKILLed (with every git child working in its data dir)
 * once its fetch has written part of a pack, or after `maxWaitMs`.
 */
async function killedRegistration(source: string, dataDir: string, name: string, maxWaitMs: number): Promise<{ killedAfterS: number; tmpPacksLeft: number }> {
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1] ?? '', '--child', source, dataDir, name], { stdio: 'ignore', detached: true });
  const started = Date.now();
  const forge = join(dataDir, 'forge', `${name}.git`);
  while (Date.now() - started < maxWaitMs && tmpPacks(forge) === 0 && child.exitCode === null) await new Promise((done) => setTimeout(done, 100));
  // Let the pack grow a little: killed mid-transfer, not at its first byte.
  await new Promise((done) => setTimeout(done, 1500));
  const killedAfterS = (Date.now() - started) / 1000;
  try {
    process.kill(-(child.pid ?? 0), 'SIGKILL');
  } catch {
    // already ended
  }
  for (const pid of processesUnder(dataDir)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  await new Promise((done) => setTimeout(done, 500));
  return { killedAfterS, tmpPacksLeft: tmpPacks(forge) };
}

async function measure(source: string) {
  const name = nameOf(source).replace(/[^A-Za-z0-9._-]/g, '-');
  const work = join(WORK, name);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const branches = Number(gitOut(source, 'for-each-ref', '--format=x', 'refs/heads/').split('\n').filter(Boolean).length);
  const size = /size-pack: (\d+)/.exec(gitOut(source, 'count-objects', '-v'))?.[1] ?? '0';
  const commit = gitOut(source, 'rev-parse', 'HEAD');
  out(`${nameOf(source)} at ${commit.slice(0, 12)}: ${round(Number(size) / 1024)} MiB packed, ${branches} branches`);

  const cloneLocal = await timed(() => run('git', ['clone', '--mirror', '--quiet', source, join(work, 'clone-local.git')]));
  rmSync(join(work, 'clone-local.git'), { recursive: true, force: true });
  // A fetched public mirror is a partial clone whose side branches may lack objects: its mirror
  // clone fails as a whole, and the baseline is then the default branch alone (less than the
  // registration copies, so the ratio errs against the registration).
  let baseline = 'clone --mirror --no-local';
  const clone = await timed(() => run('git', ['clone', '--mirror', '--no-local', '--quiet', source, join(work, 'clone.git')])).catch(async () => {
    rmSync(join(work, 'clone.git'), { recursive: true, force: true });
    baseline = 'clone --bare --single-branch --no-local (the mirror clone fails: the source lacks objects of some branches)';
    return timed(() => run('git', ['clone', '--bare', '--single-branch', '--no-local', '--quiet', source, join(work, 'clone.git')]));
  });
  rmSync(join(work, 'clone.git'), { recursive: true, force: true });
  out(`  baseline ${baseline}: ${round(clone.seconds)} s through the pack protocol, ${round(cloneLocal.seconds)} s hard-linked (clone --mirror)`);
  const registered = await timed(() => register(source, join(work, 'data'), 'repo'));
  const copied = gitOut(registered.value.forge, 'for-each-ref', '--format=x', 'refs/heads/').split('\n').filter(Boolean).length;
  out(`  registration: ${round(registered.seconds)} s (${round(registered.seconds / clone.seconds)}x clone --mirror), ${copied} branches copied, ${tmpPacks(registered.value.forge)} tmp packs`);
  rmSync(join(work, 'data'), { recursive: true, force: true });

  const killed = await killedRegistration(source, join(work, 'killed'), 'repo', Math.max(30_000, clone.seconds * 1000));
  const resumed = await timed(() => register(source, join(work, 'killed'), 'repo'));
  const after = tmpPacks(resumed.value.forge);
  out(`  killed at ${round(killed.killedAfterS)} s: ${killed.tmpPacksLeft} tmp packs left by the killed git; the next registration ${round(resumed.seconds)} s, ${after} tmp packs after it`);
  rmSync(work, { recursive: true, force: true });
  return {
    name: nameOf(source),
    commit,
    size_mib: round(Number(size) / 1024),
    branches,
    baseline,
    clone_mirror_s: round(clone.seconds),
    clone_mirror_local_s: round(cloneLocal.seconds),
    register_s: round(registered.seconds),
    ratio: round(registered.seconds / clone.seconds),
    branches_copied: copied,
    killed_after_s: round(killed.killedAfterS),
    tmp_packs_after_kill: killed.tmpPacksLeft,
    resume_s: round(resumed.seconds),
    tmp_packs_after_resume: after,
  };
}

async function main() {
  const args = process.argv.slice(2);
  if (args[0] === '--child') {
    await register(args[1] ?? '', args[2] ?? '', args[3] ?? 'repo');
    return;
  }
  const stress = args.includes('--stress');
  const generatedAt = args.includes('--generated') ? args[args.indexOf('--generated') + 1] : '/var/tmp/dockhand-bench-register-1g.git';
  const mirrors = args.filter((arg, index) => !arg.startsWith('--') && args[index - 1] !== '--generated').map((arg) => resolve(arg));
  const sources = [...mirrors];
  if (generatedAt && generatedAt !== 'none') {
    const started = Date.now();
    const generated = await generatedRepository(generatedAt);
    out(`generated repository: ${generated.path} (${round((Date.now() - started) / 1000)} s to make or find)`);
    sources.unshift(generated.path);
  }
  let stressor: ReturnType<typeof spawn> | undefined;
  if (stress) {
    stressor = spawn('stress-ng', ['--cpu', '4', '--timeout', '3600s', '--quiet'], { stdio: 'ignore' });
    out('stress-ng --cpu 4 running beside the bench');
  }
  const load = loadavg()[0] ?? 0;
  const rows = [];
  try {
    for (const source of sources) rows.push(await measure(source));
  } finally {
    stressor?.kill('SIGTERM');
    spawner.close();
  }
  const worst = Math.max(...rows.map((row) => row.ratio));
  out(JSON.stringify({
    bench: 'register',
    stress: stress ? 'stress-ng --cpu 4' : 'none',
    load1_at_start: round(load),
    cores: Number(spawnSync('nproc', { encoding: 'utf8' }).stdout.trim()),
    repos: rows,
    max_ratio: round(worst),
    ratio_target: 1.5,
    tmp_packs_after_resume: rows.reduce((sum, row) => sum + row.tmp_packs_after_resume, 0),
  }));
}

main().then(() => process.exit(0), (error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
