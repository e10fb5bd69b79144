/**
 * The internal evaluation set, on any machine: `npx tsx scripts/eval/internal-set.ts [--repos <dir>]
 * [--out <file>] [--make [--only <name>]]`.
 *
 * Repositories:
 * - the real-repository corpus (test/corpus: npm and Debian sources, each a git repository with
 *   fixed authors and dates, built by scripts/corpus/build.ts): bytes and negotiation (mocha),
 *   minimist (tape), toolz (pytest), yn (ava), arg (jest). Each is cloned into <repos>/<id> (the
 *   instances' branches and base commits go there, never into the corpus), and bugs are planted
 *   at its pristine commit (the corpus's commit 1, before the corpus's own planted bug).
 * - the project's own fixtures (test/fixtures: node:test), made into git repositories with fixed
 *   authors and dates; buggy-calc and buggy-ledger each get a real bug-fix commit on top (the fix
 *   of the bug the fixture ships, with the tests that catch it), which `eval make --history`
 *   collects the way SWE-bench does.
 * Every kept instance was verified fail → pass in a gVisor sandbox (`eval make`).
 *
 * Without --make it (re)builds the repositories and the instances' base commits from the
 * committed set (test/eval/internal/instances.jsonl): a planted base is its environment commit
 * with the instance's `patch` and `test_patch` taken back (git-tree.ts plantedBase), so it gets
 * the same SHA wherever the corpus build gives the same commits. Where the corpus build gave
 * other commits (its lockfiles are resolved at build time), the bases are rebuilt on this
 * machine's pristine commits and the set is written with those SHAs to <repos>/instances.jsonl
 * (`bench:eval` always runs a copy in its work directory).
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { readInstances, writeInstances, type EvalInstance } from '../../server/src/eval/formats';
import { hasCommit, plantedBase } from '../../server/src/eval/git-tree';
import { makeInstances } from '../../server/src/eval/make';
import { openEvalSession } from '../../server/src/eval/session';
import { z } from 'zod';
import { buildCorpus, corpusDir } from '../corpus/build';

/** What the set needs of a corpus repository. */
interface CorpusEntry {
  id: string;
  path: string;
  parentSha: string;
  runner: string;
}

const ROOT = resolve(import.meta.dirname, '../..');
const FIXTURES = join(ROOT, 'test/fixtures');
export const INTERNAL_SET = join(ROOT, 'test/eval/internal/instances.jsonl');

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'Fixture', GIT_AUTHOR_EMAIL: 'fixture@dockhand.invalid', GIT_COMMITTER_NAME: 'Fixture', GIT_COMMITTER_EMAIL: 'fixture@dockhand.invalid',
      GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z', GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z',
    },
  }).trim();
}

function commitAll(dir: string, message: string): string {
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', message);
  return git(dir, 'rev-parse', 'HEAD');
}

function replaceIn(file: string, from: string, to: string): void {
  const text = readFileSync(file, 'utf8');
  if (!text.includes(from)) throw new Error(`${file}: the text to replace is not there: ${from.slice(0, 60)}`);
  writeFileSync(file, text.replace(from, to));
}

export interface InternalRepo {
  name: string;
  repo: string;
  path: string;
  language: string;
  planted: number;
  history: number;
  /** Where bugs are planted and history is walked from (default HEAD). */
  sha?: string;
}

/** Corpus repositories of the set, and how many bugs each gets. */
const CORPUS_PLANTED: Record<string, number> = { bytes: 5, minimist: 8, toolz: 10, yn: 2, arg: 3, 'escape-string-regexp': 1 };

const LEDGER_TEST = "\ntest('balance counts debits and credits', () => {\n  const entries = [{ account: 'a', amount: 500 }, { account: 'a', amount: -200 }, { account: 'b', amount: 100 }];\n  assert.strictEqual(lib.balance(entries, 'a'), 300);\n});\n";

/** The fixture as a repository; `history` gives it a bug-fix commit (source + tests) on top. */
function build(reposDir: string, name: string, history?: (dir: string) => void): string {
  const dir = join(reposDir, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  cpSync(join(FIXTURES, name), dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  history?.(dir);
  return dir;
}

/** A clone of the corpus repository (kept between builds: branches for the instances are added to it). */
function cloneCorpus(reposDir: string, entry: CorpusEntry): string {
  const dir = join(reposDir, entry.id);
  if (existsSync(join(dir, '.git')) && hasCommit(dir, entry.parentSha)) return dir;
  rmSync(dir, { recursive: true, force: true });
  execFileSync('git', ['clone', '-q', entry.path, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  return dir;
}

/** The project's fixtures of the set (no download, no install: node:test), at fixed SHAs. */
export function buildFixtureRepos(reposDir: string): InternalRepo[] {
  mkdirSync(reposDir, { recursive: true });
  const calc = build(reposDir, 'buggy-calc', (dir) => {
    // Before: the bug, without the tests that show it. The fix commit adds them.
    const tests = ['test/calc.test.js', 'test/format.test.js'].map((file) => [file, readFileSync(join(dir, file), 'utf8')] as const);
    for (const [file] of tests) rmSync(join(dir, file));
    commitAll(dir, 'calc: add, subtract, average and formatAverage');
    for (const [file, text] of tests) writeFileSync(join(dir, file), text);
    replaceIn(join(dir, 'src/calc.js'), 'let index = 1;', 'let index = 0;');
    commitAll(dir, 'average() skipped the first value\n\naverage([1, 2, 3]) gave 5/3 instead of 2 because the loop started at index 1, so\nformatAverage() printed the wrong mean too. Start at the first value; tests for calc and format.');
  });
  const ledger = build(reposDir, 'buggy-ledger', (dir) => {
    replaceIn(join(dir, 'test/entries.test.js'), LEDGER_TEST, '');
    commitAll(dir, 'ledger: accounts, entries, reports');
    replaceIn(join(dir, 'test/entries.test.js'), "\ntest('validateMemo keeps items with a value'", `${LEDGER_TEST}\ntest('validateMemo keeps items with a value'`);
    replaceIn(join(dir, 'src/entries.js'), '    if (entry.amount > 0) total += entry.amount;', '    total += entry.amount;');
    commitAll(dir, 'balance() ignored debits\n\nbalance(entries, account) added only positive amounts, so an account with a\n-200 debit showed 500 instead of 300. Add every amount; a test with a debit.');
  });
  const tiaTs = build(reposDir, 'tia-ts', (dir) => void commitAll(dir, 'tia-ts'));
  const tiaPy = build(reposDir, 'tia-py', (dir) => void commitAll(dir, 'tia-py'));
  return [
    { name: 'buggy-calc', repo: 'dockhand-eval/buggy-calc', path: calc, language: 'javascript', planted: 3, history: 2 },
    { name: 'buggy-ledger', repo: 'dockhand-eval/buggy-ledger', path: ledger, language: 'javascript', planted: 0, history: 2 },
    { name: 'tia-ts', repo: 'dockhand-eval/tia-ts', path: tiaTs, language: 'javascript-esm', planted: 3, history: 0 },
    { name: 'tia-py', repo: 'dockhand-eval/tia-py', path: tiaPy, language: 'python', planted: 2, history: 0 },
  ];
}

/**
 * The corpus repositories of the set as the corpus's manifest records them; only those missing
 * are built (a built one is used as it is, never rebuilt under whoever is building it).
 */
function corpusEntries(say: (line: string) => void): CorpusEntry[] {
  const ids = Object.keys(CORPUS_PLANTED);
  const manifestFile = join(corpusDir(), 'manifest.json');
  const listed = existsSync(manifestFile) ? z.object({ repos: z.array(z.object({ id: z.string(), path: z.string(), parentSha: z.string() }).passthrough()) }).parse(JSON.parse(readFileSync(manifestFile, 'utf8'))).repos : [];
  const usable = (id: string) => listed.find((entry) => entry.id === id && existsSync(join(entry.path, '.git')) && hasCommit(entry.path, entry.parentSha));
  const missing = ids.filter((id) => !usable(id));
  let built: CorpusEntry[] = [];
  try {
    if (missing.length > 0) built = buildCorpus({ only: missing, say });
  } catch (error) {
    // A repository the corpus could not build leaves its instances out (materializeInstances says which); the rest run.
    say(`corpus: ${error instanceof Error ? error.message : String(error)}`);
  }
  return ids.flatMap((id) => {
    const entry = built.find((candidate) => candidate.id === id) ?? usable(id);
    return entry ? [{ id: entry.id, path: entry.path, parentSha: entry.parentSha, runner: typeof entry.runner === 'string' ? entry.runner : '' }] : [];
  });
}

/** Every repository of the set: the corpus's (built by scripts/corpus/build.ts when missing) and the fixtures. */
export function buildInternalRepos(reposDir: string, say: (line: string) => void = () => undefined): InternalRepo[] {
  mkdirSync(reposDir, { recursive: true });
  const corpus = corpusEntries(say);
  return [
    ...corpus.map((entry) => ({
      name: entry.id,
      repo: `dockhand-corpus/${entry.id}`,
      path: cloneCorpus(reposDir, entry),
      language: entry.runner === 'pytest' ? 'python' : 'javascript',
      planted: CORPUS_PLANTED[entry.id] ?? 0,
      history: 0,
      sha: entry.parentSha,
    })),
    ...buildFixtureRepos(reposDir),
  ];
}

/**
 * The committed set's base commits in the repositories at <reposDir> (and a branch `eval/<id>`
 * for each). Returns the instances file to run: the committed one when every base is the
 * committed SHA, else a copy with this machine's SHAs.
 */
export function materializeInstances(instancesFile: string, reposDir: string, repos: InternalRepo[], say: (line: string) => void = () => undefined, out?: string): string {
  const text = readFileSync(instancesFile, 'utf8');
  const read = readInstances(text);
  if (read.errors.length > 0) throw new Error(`${instancesFile}: ${read.errors.map((error) => `line ${error.line}: ${error.field}: ${error.message}`).join('; ')}`);
  const byRepo = new Map(repos.map((repo) => [repo.repo, repo]));
  let changed = 0;
  const instances = read.records.flatMap((instance): EvalInstance[] => {
    const repo = byRepo.get(instance.repo);
    if (!repo) {
      say(`${instance.instance_id}: left out: its repository ${instance.repo} is not on this machine (the corpus did not build it)`);
      return [];
    }
    let base = instance.base_commit;
    const committedEnvironment = instance.environment_setup_commit ?? base;
    let environment = committedEnvironment;
    if (!hasCommit(repo.path, base)) {
      if (instance.dockhand?.origin !== 'planted') throw new Error(`${instance.instance_id}: base_commit ${base} is not in ${repo.path} (a history instance's base is a commit of the repository)`);
      if (!hasCommit(repo.path, environment)) environment = repo.sha ?? git(repo.path, 'rev-parse', 'HEAD');
      base = plantedBase(repo.path, environment, instance.instance_id, instance.patch ?? '', instance.test_patch);
    }
    git(repo.path, 'branch', '-f', `eval/${instance.instance_id}`, base);
    if (base === instance.base_commit && environment === committedEnvironment) return [instance];
    changed++;
    return [{ ...instance, base_commit: base, environment_setup_commit: environment }];
  });
  changed += read.records.length - instances.length;
  if (changed === 0 && !out) return instancesFile;
  const local = out ?? join(reposDir, 'instances.jsonl');
  writeFileSync(local, changed === 0 ? text : writeInstances(instances));
  if (changed > 0) say(`${changed} of ${read.records.length} instances rebased on this machine's commits or left out (the corpus build gave other SHAs or no repository): ${local}`);
  return local;
}

async function inPool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++];
      if (item !== undefined) await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const option = (name: string): string | undefined => {
    const index = args.indexOf(name);
    return index >= 0 ? args[index + 1] : undefined;
  };
  const reposDir = resolve(option('--repos') ?? join(ROOT, '.dockhand-eval/repos'));
  const out = resolve(option('--out') ?? INTERNAL_SET);
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const repos = buildInternalRepos(reposDir, say);
  for (const repo of repos) say(`${repo.name}: ${(repo.sha ?? git(repo.path, 'rev-parse', 'HEAD')).slice(0, 12)}`);
  if (!args.includes('--make')) {
    if (existsSync(out)) say(`instances to run: ${materializeInstances(out, reposDir, repos, say)}`);
    return;
  }
  const only = option('--only')?.split(',');
  const session = await openEvalSession({ dataDir: resolve(option('--data-dir') ?? join(reposDir, '..', 'fleet-data')), scripted: false, runTasks: false, concurrency: Number(option('--concurrency') ?? 2) });
  const made = new Map<string, EvalInstance[]>();
  const selected = repos.filter((candidate) => !only || only.includes(candidate.name));
  try {
    await inPool(selected, Number(option('--concurrency') ?? 2), async (repo) => {
      // One repository's failure (its snapshot, its suite) is reported; the others' instances are still written.
      const result = await makeInstances({
        session, repoPath: repo.path, repo: repo.repo, repoPathField: repo.name, planted: repo.planted, history: repo.history, language: repo.language,
        ...(repo.sha ? { sha: repo.sha } : {}),
        onProgress: (line) => say(`[${repo.name}] ${line}`),
      }).catch((error: unknown) => {
        say(`${repo.name}: FAILED: ${error instanceof Error ? error.message : String(error)}`);
        return { instances: [], dropped: [] };
      });
      made.set(repo.name, result.instances);
      say(`${repo.name}: kept ${result.instances.length}, dropped ${result.dropped.length}`);
    });
  } finally {
    await session.close();
  }
  // Repository order, not finishing order: the file is the same however the pool ran.
  const fresh = selected.flatMap((repo) => made.get(repo.name) ?? []);
  const keep = only && existsSync(out) ? readInstances(readFileSync(out, 'utf8')).records.filter((instance) => !selected.some((repo) => repo.repo === instance.repo)) : [];
  mkdirSync(resolve(out, '..'), { recursive: true });
  const order = repos.map((repo) => repo.repo);
  const all = [...keep, ...fresh].sort((a, b) => order.indexOf(a.repo) - order.indexOf(b.repo) || a.instance_id.localeCompare(b.instance_id));
  writeFileSync(out, writeInstances(all));
  say(`${fresh.length} instances made, ${all.length} in ${out}`);
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) await main();
