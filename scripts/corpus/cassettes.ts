/**
 * Generates two replay cassettes per corpus repository from its planted bug (test/corpus/repos.ts):
 *
 *   npx tsx scripts/corpus/cassettes.ts          # writes test/corpus/cassettes/*.yaml
 *   npx tsx scripts/corpus/cassettes.ts --check  # exits 1 when a committed cassette is stale
 *
 * - `<id>-oracle`: explores as a model would (search, read_file), runs the tests, applies the real
 *   fix through edit_file, runs the tests again and calls finish; `<id>-oracle-review` approves.
 * - `<id>-null`: looks, then claims the work is done without changing anything, and keeps
 *   claiming it; the verified stop must refuse every time (no PR). `<id>-null-review` rejects,
 *   in case a review is ever asked for an empty change.
 * Each turn's `expect` checks that the tool results it answers are the real ones.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { CORPUS } from '../../test/corpus/repos';
import type { CorpusRepo } from '../../test/corpus/types';

const ROOT = resolve(import.meta.dirname, '../..');
export const CASSETTE_DIR = join(ROOT, 'test/corpus/cassettes');

type Block = { type: 'text'; text: string } | { type: 'tool_use'; name: string; input: Record<string, unknown> };
interface Turn {
  name: string;
  expect?: Record<string, unknown>;
  content: Block[];
}
interface Cassette {
  description: string;
  turns: Turn[];
}

const text = (value: string): Block => ({ type: 'text', text: value });
const tool = (name: string, input: Record<string, unknown>): Block => ({ type: 'tool_use', name, input });
const firstLine = (value: string) => (value.split('\n').find((line) => line.trim() !== '') ?? value).trim();

const escapeRegex = (value: string) => value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * What the run after the fix must say: green, or red only with failures that already fail at
 * the base commit (a repository can have those) — and the planted bug's test not among them.
 */
export function greenAfterFix(repo: CorpusRepo): string {
  const { reproducer } = repo.bug;
  const stillFailing = `already fail at the base commit[^\\n]*${escapeRegex(reproducer.test ?? reproducer.file)}`;
  return `^(?![\\s\\S]*${stillFailing})[\\s\\S]*(Tests PASSED|All of the failing tests already fail at the base commit)`;
}

export function oracleCassette(repo: CorpusRepo): Cassette {
  const { bug } = repo;
  return {
    description: `${repo.id}: oracle: find the planted bug in ${bug.file} and apply the real fix through the tools`,
    turns: [
      {
        name: 'search',
        content: [text(`The ticket says: ${bug.ticket.title}. Let me find the code involved.`), tool('search', { pattern: bug.search.pattern, path: bug.search.path })],
      },
      { name: 'read', expect: { toolResultContains: basename(bug.file) }, content: [tool('read_file', { path: bug.file, ...(bug.readFrom ? { start_line: bug.readFrom } : {}) })] },
      {
        name: 'red run',
        expect: { toolResultContains: firstLine(bug.buggy) },
        content: [text(`This line looks responsible. First the current test results.`), tool('run_tests', { scope: repo.redRun ?? 'full' })],
      },
      {
        name: 'fix',
        content: [text('Fixing it at the cause.'), tool('edit_file', { path: bug.file, command: 'replace', old_text: bug.buggy, new_text: bug.correct })],
      },
      { name: 'green run', expect: { toolResultContains: firstLine(bug.correct) }, content: [tool('run_tests', { scope: 'selected' })] },
      { name: 'finish', expect: { toolResultMatches: greenAfterFix(repo) }, content: [tool('finish', { summary: bug.summary })] },
    ],
  };
}

export function nullCassette(repo: CorpusRepo): Cassette {
  const { bug } = repo;
  const claim = `I checked ${bug.file}: it already behaves as the ticket asks, so no change is needed.`;
  const finish = tool('finish', { summary: `No change needed: ${bug.file} already handles this correctly.` });
  return {
    description: `${repo.id}: null: claims the ticket is done without changing anything (the verified stop must refuse; no PR)`,
    turns: [
      { name: 'look', content: [text(`The ticket says: ${bug.ticket.title}. Let me look.`), tool('search', { pattern: bug.search.pattern, path: bug.search.path })] },
      { name: 'claim done', content: [text(claim), finish] },
      { name: 'claim again', content: [finish] },
      { name: 'claim a third time', content: [finish] },
      { name: 'insist (text)', content: [text(claim)] },
      { name: 'insist again (text)', content: [text(claim)] },
      { name: 'insist a last time (text)', content: [text(claim)] },
    ],
  };
}

function reviewCassette(repo: CorpusRepo, approved: boolean): Cassette {
  return {
    description: `${repo.id}: self-review: ${approved ? 'approves the fix' : 'rejects (there is no fix)'}`,
    turns: [
      {
        name: approved ? 'approve' : 'reject',
        expect: { toolChoice: { type: 'tool', name: 'submit_review' } },
        content: [
          tool('submit_review', approved
            ? { approved: true, problems: [], summary: 'Minimal fix at the cause; the failing test passes and no test was changed.' }
            : { approved: false, problems: ['The diff does not address the ticket.'], summary: 'Nothing in the change fixes the reported behaviour.' }),
        ],
      },
    ],
  };
}

/** Cassette sessions of one repository: name → cassette. */
export function cassettesFor(repo: CorpusRepo): Record<string, Cassette> {
  return {
    [`${repo.id}-oracle`]: oracleCassette(repo),
    [`${repo.id}-oracle-review`]: reviewCassette(repo, true),
    [`${repo.id}-null`]: nullCassette(repo),
    [`${repo.id}-null-review`]: reviewCassette(repo, false),
  };
}

export function render(session: string, cassette: Cassette): string {
  return `# Generated by scripts/corpus/cassettes.ts from test/corpus/repos.ts (${session}); do not edit.\n${stringify(cassette, { lineWidth: 0 })}`;
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const check = process.argv.includes('--check');
  mkdirSync(CASSETTE_DIR, { recursive: true });
  const stale: string[] = [];
  for (const repo of CORPUS) {
    for (const [session, cassette] of Object.entries(cassettesFor(repo))) {
      const file = join(CASSETTE_DIR, `${session}.yaml`);
      const wanted = render(session, cassette);
      if (check) {
        if (!existsSync(file) || readFileSync(file, 'utf8') !== wanted) stale.push(file);
      } else {
        writeFileSync(file, wanted);
      }
    }
  }
  if (stale.length > 0) {
    process.stderr.write(`stale cassettes (run npx tsx scripts/corpus/cassettes.ts):\n${stale.join('\n')}\n`);
    process.exitCode = 1;
  } else {
    process.stdout.write(`${CORPUS.length * 4} cassettes ${check ? 'up to date' : 'written'} in ${CASSETTE_DIR}\n`);
  }
}
