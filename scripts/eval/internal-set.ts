/**
 * Builds the internal evaluation set on any machine: `npx tsx scripts/eval/internal-set.ts
 * [--repos <dir>] [--out <file>] [--make]`.
 *
 * Repositories: the project's own fixtures (test/fixtures: node:test in CommonJS and ESM, pytest),
 * made into git repositories with fixed authors and dates so their SHAs are the same everywhere.
 * buggy-calc and buggy-ledger each get a real bug-fix commit on top (the fix of the bug the
 * fixture ships, with the tests that catch it), which `eval make --history` collects the way
 * SWE-bench does; their heads and the other fixtures are green, and `eval make --planted` plants
 * bugs there. Every kept instance was verified fail → pass in a gVisor sandbox.
 *
 * Without --make it only (re)builds the repositories at <repos>, which is all `bench:eval` needs
 * to run the committed set (test/eval/internal/instances.jsonl) on a fresh machine.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { writeInstances, type EvalInstance } from '../../server/src/eval/formats';
import { makeInstances } from '../../server/src/eval/make';
import { openEvalSession } from '../../server/src/eval/session';

const ROOT = resolve(import.meta.dirname, '../..');
const FIXTURES = join(ROOT, 'test/fixtures');

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
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
}

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

export function buildInternalRepos(reposDir: string): InternalRepo[] {
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
    { name: 'buggy-ledger', repo: 'dockhand-eval/buggy-ledger', path: ledger, language: 'javascript', planted: 16, history: 2 },
    { name: 'tia-ts', repo: 'dockhand-eval/tia-ts', path: tiaTs, language: 'javascript-esm', planted: 8, history: 0 },
    { name: 'tia-py', repo: 'dockhand-eval/tia-py', path: tiaPy, language: 'python', planted: 5, history: 0 },
  ];
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const option = (name: string, fallback: string) => {
    const index = args.indexOf(name);
    return index >= 0 && args[index + 1] ? resolve(args[index + 1] ?? fallback) : fallback;
  };
  const reposDir = option('--repos', join(ROOT, '.dockhand-eval/repos'));
  const out = option('--out', join(ROOT, 'test/eval/internal/instances.jsonl'));
  const repos = buildInternalRepos(reposDir);
  for (const repo of repos) process.stdout.write(`${repo.name}: ${git(repo.path, 'rev-parse', 'HEAD')}\n`);
  if (!args.includes('--make')) return;
  const only = args.includes('--only') ? option('--only', '').split('/').pop() : undefined;
  const session = await openEvalSession({ dataDir: join(reposDir, '..', 'make-data'), scripted: false, runTasks: false });
  const made: EvalInstance[] = [];
  try {
    for (const repo of repos.filter((candidate) => !only || candidate.name === only)) {
      const result = await makeInstances({
        session, repoPath: repo.path, repo: repo.repo, repoPathField: repo.name, planted: repo.planted, history: repo.history, language: repo.language,
        onProgress: (line) => process.stdout.write(`${line}\n`),
      });
      made.push(...result.instances);
      process.stdout.write(`${repo.name}: kept ${result.instances.length}, dropped ${result.dropped.length}\n`);
    }
  } finally {
    await session.close();
  }
  mkdirSync(resolve(out, '..'), { recursive: true });
  const previous = existsSync(out) && only ? readFileSync(out, 'utf8') : '';
  writeFileSync(out, previous + writeInstances(made));
  process.stdout.write(`${made.length} instances: ${out}\n`);
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) await main();
