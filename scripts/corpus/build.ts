/**
 * Builds the corpus of real repositories (test/corpus/repos.ts) as git repositories:
 *
 *   npx tsx scripts/corpus/build.ts [--only minimist,bytes] [--force]
 *
 * Each lands in `<corpus>/<id>/repo` (`<corpus>` = $DOCKHAND_CORPUS_DIR or `.dockhand-corpus/`,
 * gitignored): commit 1 imports the pristine sources as they come, plus only what upstream's own
 * repository has and the package dropped (listed as the repository's `adjustments`; no lockfile,
 * .nvmrc or packageManager of the build's own: the product adapts to the repository), commit 2
 * (the base, on the default branch) plants the bug. While building, the tests run on the host
 * (installed there after the import commit, so nothing the install writes is committed):
 * it must pass on commit 1 and fail on the base with the bug's failing test in its output.
 * A repository whose recipe hash is unchanged since its last successful build is skipped.
 * `<corpus>/manifest.json` records every repository's provenance, commits and verification.
 */
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CORPUS, corpusRepo } from '../../test/corpus/repos';
import type { CorpusRepo } from '../../test/corpus/types';
import { obtain, type Provenance } from './obtain';
import { NODE_VERSIONS, toolchain, type Toolchain } from './toolchains';

const ROOT = resolve(import.meta.dirname, '../..');
/** Bumped when the build steps change in a way that changes what a recipe produces. */
const BUILD_FORMAT = 4;
const AUTHOR = { name: 'Corpus Import', email: 'corpus@dockhand.invalid' };
const LOCKFILES = ['package-lock.json', 'npm-shrinkwrap.json', 'pnpm-lock.yaml', 'yarn.lock'];
const LOCKFILE_OF: Record<string, string | undefined> = { npm: 'package-lock.json', pnpm: 'pnpm-lock.yaml', yarn: 'yarn.lock', 'yarn-berry': 'yarn.lock' };
const EXCLUDE = ['node_modules/', '.yarn/install-state.gz', '.pnpm-store/', 'coverage/', '.nyc_output/', '__pycache__/', '.pytest_cache/', '*.egg-info/'];

export interface CorpusEntry {
  id: string;
  covers: string;
  provenance: Provenance[];
  runner: string;
  lockfile: string;
  packageManager?: string;
  node?: string;
  nodeVersion: string;
  defaultBranch: string;
  test: string;
  adjustments: string[];
  recipeHash: string;
  /** The repository to register (`dockhand repo add <id> --from <path>`). */
  path: string;
  parentSha: string;
  baseSha: string;
  verify: { pristine: { exitCode: number; seconds: number }; base: { exitCode: number; seconds: number; failingTest: string } };
  builtAt: string;
}

export function corpusDir(): string {
  return resolve(process.env.DOCKHAND_CORPUS_DIR ?? join(ROOT, '.dockhand-corpus'));
}

/**
 * The hash of what shapes the built repository. The ticket (and the test it names), the oracle's summary and reading
 * hints, `covers`, `small` and `redRun` are for the tasks and cassettes, not the build: editing
 * them does not rebuild (a rebuild is minutes per repository).
 */
export function recipeHash(repo: CorpusRepo): string {
  const { ticket: _ticket, reproducer: _reproducer, summary: _summary, search: _search, readFrom: _readFrom, ...bug } = repo.bug;
  const { covers: _covers, small: _small, redRun: _redRun, ...built } = repo;
  const text = JSON.stringify({ repo: { ...built, bug }, BUILD_FORMAT, NODE_VERSIONS }, (_key, value: unknown) => (value instanceof RegExp ? value.toString() : value));
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

interface Run {
  code: number;
  output: string;
  seconds: number;
}

function run(command: string, cwd: string, tools: Toolchain, log: string, env: Record<string, string> = {}): Run {
  const started = Date.now();
  appendFileSync(log, `\n$ (${cwd}) ${command}\n`);
  const result = spawnSync('bash', ['--noprofile', '--norc', '-c', command], {
    cwd,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    timeout: 20 * 60_000,
    env: {
      ...process.env,
      PATH: `${tools.bin}:${join(cwd, 'node_modules', '.bin')}:${process.env.PATH ?? ''}`,
      CI: 'true',
      FORCE_COLOR: '0',
      NO_COLOR: '1',
      npm_config_omit_lockfile_registry_resolved: 'false',
      npm_config_update_notifier: 'false',
      npm_config_fund: 'false',
      npm_config_audit: 'false',
      YARN_ENABLE_TELEMETRY: '0',
      YARN_HTTPS_CA_FILE_PATH: '/etc/ssl/certs/ca-certificates.crt',
      YARN_ENABLE_IMMUTABLE_INSTALLS: '0',
      // Yarn berry's default of 50 parallel requests gets connections reset by the proxy here.
      YARN_NETWORK_CONCURRENCY: '4',
      YARN_HTTP_RETRY: '6',
      PYTHONDONTWRITEBYTECODE: '1',
      PYTHONNOUSERSITE: '1',
      ...env,
    },
  });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
  appendFileSync(log, output);
  return { code: result.status ?? 1, output, seconds: (Date.now() - started) / 1000 };
}

function must(result: Run, what: string, log: string): Run {
  if (result.code !== 0) throw new Error(`${what} exited with ${result.code} (log: ${log}):\n${result.output.split('\n').slice(-25).join('\n')}`);
  return result;
}

function git(cwd: string, args: string[], log: string, date = '2026-01-01T12:00:00Z'): string {
  const result = spawnSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, GIT_AUTHOR_NAME: AUTHOR.name, GIT_AUTHOR_EMAIL: AUTHOR.email, GIT_COMMITTER_NAME: AUTHOR.name, GIT_COMMITTER_EMAIL: AUTHOR.email, GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date },
  });
  if (result.status !== 0) throw new Error(`git ${args.join(' ')} failed (log: ${log}): ${result.stderr}`);
  return result.stdout.trim();
}

function walkFiles(dir: string, base = dir): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === '.git') continue;
    const full = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...walkFiles(full, base));
    else found.push(full.slice(base.length + 1));
  }
  return found;
}

/** Sources, adjustments and lockfile in `work`; returns the provenance and the extra adjustment notes. */
function assemble(repo: CorpusRepo, root: string, work: string, tools: Toolchain, log: string): { provenance: Provenance[]; notes: string[] } {
  const provenance: Provenance[] = [];
  const notes: string[] = [];
  if (repo.source.kind === 'workspace') {
    for (const member of repo.source.members) provenance.push(obtain(root, member.source, join(work, member.dir)));
    writeFileSync(join(work, 'package.json'), `${JSON.stringify({ name: repo.id, private: true, workspaces: ['packages/*'], scripts: { test: 'npm test --workspaces' } }, null, 2)}\n`);
  } else {
    provenance.push(obtain(root, repo.source, work));
  }
  if (repo.generatedLockfile) {
    for (const file of walkFiles(work)) {
      if (LOCKFILES.includes(file.split('/').at(-1) ?? '')) {
        rmSync(join(work, file));
        notes.push(`${file} from the source removed (upstream's lockfile is made anew with ${repo.packageManager ?? 'npm'})`);
      }
    }
  }
  if (repo.pruneTestsImporting) {
    const { glob, keep } = repo.pruneTestsImporting;
    let removed = 0;
    for (const file of walkFiles(work).filter((name) => glob.test(name))) {
      const imports = [...readFileSync(join(work, file), 'utf8').matchAll(/^import .* from ["']([^"']+)["']/gm)].map((match) => match[1] ?? '');
      if (imports.some((spec) => !keep.test(spec))) {
        rmSync(join(work, file));
        removed += 1;
      }
    }
    notes.push(`${removed} test files removed (imports outside ${keep})`);
  }
  const packagePath = join(work, 'package.json');
  // Only a definition that edits package.json rewrites it: otherwise it stays byte for byte upstream's.
  if (repo.packageJson && existsSync(packagePath)) {
    const pkg: Record<string, unknown> = JSON.parse(readFileSync(packagePath, 'utf8'));
    const scripts: Record<string, unknown> = { ...(typeof pkg.scripts === 'object' && pkg.scripts ? pkg.scripts : {}) };
    for (const [name, value] of Object.entries(repo.packageJson?.scripts ?? {})) {
      if (value === null) delete scripts[name];
      else scripts[name] = value;
    }
    pkg.scripts = scripts;
    if (repo.packageJson?.devDependencies) pkg.devDependencies = { ...(typeof pkg.devDependencies === 'object' ? pkg.devDependencies : {}), ...repo.packageJson.devDependencies };
    if (repo.packageJson?.removeDevDependencies && typeof pkg.devDependencies === 'object' && pkg.devDependencies) {
      const kept = Object.entries(pkg.devDependencies).filter(([name]) => !repo.packageJson?.removeDevDependencies?.includes(name));
      pkg.devDependencies = Object.fromEntries(kept);
    }
    Object.assign(pkg, repo.packageJson?.set ?? {});
    writeFileSync(packagePath, `${JSON.stringify(pkg, null, 2)}\n`);
  }
  for (const [path, text] of Object.entries(repo.files ?? {})) {
    mkdirSync(dirname(join(work, path)), { recursive: true });
    writeFileSync(join(work, path), text);
  }
  if (!existsSync(join(work, '.gitignore'))) {
    writeFileSync(join(work, '.gitignore'), 'node_modules/\ncoverage/\n.nyc_output/\n__pycache__/\n.pytest_cache/\n');
    notes.push('.gitignore added (upstream has one; the package drops it)');
  }
  if (repo.generatedLockfile) must(hostInstall(repo, work, tools, log), `${repo.id}: the lockfile install`, log);
  return { provenance, notes };
}

/**
 * Installs on the host for the verification. Without `generatedLockfile` this runs after the
 * import commit: whatever the install writes (a lockfile, a converted one) stays out of the
 * repository, as on a developer's machine.
 */
function hostInstall(repo: CorpusRepo, work: string, tools: Toolchain, log: string): Run {
  const manager = (repo.packageManager ?? 'npm').split('@')[0];
  const installs: Record<string, string> = {
    npm: 'npm install --no-audit --no-fund',
    pnpm: 'pnpm install --no-frozen-lockfile',
    yarn: 'yarn install --non-interactive --no-progress',
  };
  const install = existsSync(join(work, 'package.json')) ? installs[manager ?? 'npm'] : undefined;
  return install ? run(install, work, tools, log) : { code: 0, output: '', seconds: 0 };
}

const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return typeof error === 'object' && error !== null && 'code' in error && error.code === 'EPERM';
  }
}

/**
 * One build of a repository at a time on this machine: a second builder (a bench run and the CI
 * check, say) waits for the first and then finds its build up to date, instead of deleting the
 * tree the first one is committing in (seen: "git commit … failed" with the other's files).
 */
export function withBuildLock<T>(home: string, say: (line: string) => void, work: () => T): T {
  const lock = `${home}.lock`;
  const deadline = Date.now() + 60 * 60_000;
  for (let announced = false; ; ) {
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (error) {
      if (!(typeof error === 'object' && error !== null && 'code' in error && error.code === 'EEXIST')) throw error;
      const holder = Number(readFileSync(lock, 'utf8'));
      if (!Number.isInteger(holder) || !alive(holder)) {
        rmSync(lock, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`${lock}: another build (pid ${holder}) has held it for an hour; remove the file if that process is stuck`);
      if (!announced) say(`${home}: waiting for the build in process ${holder}`);
      announced = true;
      sleep(2000);
    }
  }
  try {
    return work();
  } finally {
    rmSync(lock, { force: true });
  }
}

/** Builds one repository (or returns its last build when the recipe is unchanged). */
export function buildRepo(repo: CorpusRepo, options: { force?: boolean; say?: (line: string) => void } = {}): CorpusEntry {
  const say = options.say ?? ((line: string) => process.stdout.write(`${line}\n`));
  mkdirSync(corpusDir(), { recursive: true });
  return withBuildLock(join(corpusDir(), repo.id), say, () => buildUnlocked(repo, options.force === true, say));
}

function buildUnlocked(repo: CorpusRepo, force: boolean, say: (line: string) => void): CorpusEntry {
  const root = corpusDir();
  const home = join(root, repo.id);
  const record = join(home, 'build.json');
  const hash = recipeHash(repo);
  if (!force && existsSync(record)) {
    const previous: CorpusEntry = JSON.parse(readFileSync(record, 'utf8'));
    if (previous.recipeHash === hash && existsSync(join(previous.path, '.git'))) {
      say(`${repo.id}: up to date (recipe ${hash}, base ${previous.baseSha.slice(0, 12)})`);
      return previous;
    }
  }
  rmSync(home, { recursive: true, force: true });
  const work = join(home, 'work');
  mkdirSync(work, { recursive: true });
  const log = join(home, 'build.log');
  const tools = toolchain(root, repo.node, repo.packageManager);
  say(`${repo.id}: building with ${tools.describe} (log ${log})`);
  const { provenance, notes } = assemble(repo, root, work, tools, log);

  git(work, ['init', '-q', '-b', repo.defaultBranch], log);
  writeFileSync(join(work, '.git', 'info', 'exclude'), `${EXCLUDE.join('\n')}\n`);
  git(work, ['add', '-A'], log);
  const what = provenance.map((entry) => entry.source).join('; ');
  git(work, ['commit', '-q', '-m', `Import ${repo.id}\n\n${what}\n\nAdjustments for a developer checkout:\n${[...repo.adjustments, ...notes].map((line) => `- ${line}`).join('\n')}`], log);
  const parentSha = git(work, ['rev-parse', 'HEAD'], log);
  const lockfile = LOCKFILE_OF[repo.lockfile];
  if (lockfile && !git(work, ['ls-files', lockfile], log)) throw new Error(`${repo.id}: ${lockfile} (lockfile ${repo.lockfile}) is not in the import commit; log ${log}`);
  if (!repo.generatedLockfile) must(hostInstall(repo, work, tools, log), `${repo.id}: the host install for the verification`, log);

  const pristine = run(repo.test, work, tools, log);
  if (pristine.code !== 0) must(pristine, `${repo.id}: the test command on the pristine sources (${repo.test})`, log);
  say(`${repo.id}: pristine sources pass (${pristine.seconds.toFixed(1)} s)`);

  const bugPath = join(work, repo.bug.file);
  const text = readFileSync(bugPath, 'utf8');
  const occurrences = text.split(repo.bug.correct).length - 1;
  if (occurrences !== 1) throw new Error(`${repo.id}: bug.correct occurs ${occurrences} times in ${repo.bug.file} (must be once)`);
  writeFileSync(bugPath, text.replace(repo.bug.correct, () => repo.bug.buggy));
  git(work, ['add', repo.bug.file], log);
  git(work, ['commit', '-q', '-m', repo.bug.commitMessage], log, '2026-01-02T12:00:00Z');
  const baseSha = git(work, ['rev-parse', 'HEAD'], log);

  const base = run(repo.test, work, tools, log);
  if (base.code === 0) throw new Error(`${repo.id}: the planted bug does not fail the test command (${repo.test}); log ${log}`);
  if (!base.output.includes(repo.bug.failingTest)) throw new Error(`${repo.id}: the test command fails at the base but its output does not show "${repo.bug.failingTest}"; log ${log}`);
  say(`${repo.id}: base fails as planted (exit ${base.code}, "${repo.bug.failingTest}" seen, ${base.seconds.toFixed(1)} s)`);

  const path = join(home, 'repo');
  git(home, ['clone', '-q', '--branch', repo.defaultBranch, work, path], log);
  git(path, ['remote', 'remove', 'origin'], log);

  const entry: CorpusEntry = {
    id: repo.id,
    covers: repo.covers,
    provenance,
    runner: repo.runner,
    lockfile: repo.lockfile,
    ...(repo.packageManager ? { packageManager: repo.packageManager } : {}),
    ...(repo.node ? { node: repo.node } : {}),
    nodeVersion: tools.nodeVersion,
    defaultBranch: repo.defaultBranch,
    test: repo.test,
    adjustments: [...repo.adjustments, ...notes],
    recipeHash: hash,
    path,
    parentSha,
    baseSha,
    verify: { pristine: { exitCode: pristine.code, seconds: pristine.seconds }, base: { exitCode: base.code, seconds: base.seconds, failingTest: repo.bug.failingTest } },
    builtAt: new Date().toISOString(),
  };
  writeFileSync(record, `${JSON.stringify(entry, null, 2)}\n`);
  return entry;
}

/** Rewrites `<corpus>/manifest.json` from every repository built so far. */
export function writeManifest(): string {
  const root = corpusDir();
  const entries = CORPUS.map((repo) => join(root, repo.id, 'build.json')).filter((file) => existsSync(file)).map((file): CorpusEntry => JSON.parse(readFileSync(file, 'utf8')));
  const manifest = join(root, 'manifest.json');
  writeFileSync(manifest, `${JSON.stringify({ generatedAt: new Date().toISOString(), repos: entries }, null, 2)}\n`);
  return manifest;
}

export function buildCorpus(options: { only?: string[]; force?: boolean; say?: (line: string) => void } = {}): CorpusEntry[] {
  const selection = options.only && options.only.length > 0 ? options.only.map(corpusRepo) : CORPUS;
  mkdirSync(corpusDir(), { recursive: true });
  const built: CorpusEntry[] = [];
  const failures: string[] = [];
  for (const repo of selection) {
    try {
      built.push(buildRepo(repo, options));
    } catch (error) {
      failures.push(`${repo.id}: ${error instanceof Error ? error.message : String(error)}`);
      (options.say ?? console.error)(`${repo.id}: FAILED: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  writeManifest();
  if (failures.length > 0) throw new Error(`corpus build failed for ${failures.length} of ${selection.length}:\n${failures.join('\n')}`);
  return built;
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const { values } = parseArgs({ options: { only: { type: 'string' }, force: { type: 'boolean', default: false } }, strict: true });
  try {
    const built = buildCorpus({ ...(values.only ? { only: values.only.split(',').map((id) => id.trim()).filter(Boolean) } : {}), force: values.force });
    process.stdout.write(`${built.length} repositories in ${corpusDir()} (manifest.json)\n`);
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
