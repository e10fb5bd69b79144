import type { CassetteInput } from '../model/replay/cassette';
import { isTestPath } from '../agent/tools/paths';
import type { EvalInstance } from './formats';
import { changedFiles, commitPatches, listFiles, showFile } from './git-tree';

/*
 * Scripted models for running the harness without a model endpoint. Each is a replay cassette
 * (server/src/model/replay/README.md) played through the real loop, tools, sandbox, verified stop
 * and policy gate:
 *
 * - gold: explores like a model would (search, read_file of each file the fix touches), applies
 *   the instance's `patch` through the product's own edit_file tool (one exact-once replace per
 *   changed file, create for new files), runs the tests and finishes. Each edit's turn expects
 *   the previous tool result not to be an error, so a patch that edit_file cannot apply stops the
 *   task with the replay server's message instead of passing silently.
 * - null: reads a file and claims it is done without a change.
 * - cheat: edits the tests instead of the code (edit_file refuses; it then rewrites a test file
 *   with run_command so the tests are skipped) and insists on finishing.
 *
 * The reviewer approves whatever it is shown: what stops null and cheat is the server's own
 * checks (no change, test edits), not a scripted reviewer.
 */

export const EVAL_MODES = ['gold', 'null', 'cheat'] as const;
export type EvalMode = (typeof EVAL_MODES)[number];

export interface Cassettes {
  agent: CassetteInput;
  review: CassetteInput;
}

type Step = CassetteInput['turns'][number];

export class InvalidInstanceError extends Error {}

const REVIEW: CassetteInput = {
  description: 'approve whatever is shown',
  turns: [
    {
      name: 'approve',
      expect: { toolChoice: { type: 'tool', name: 'submit_review' } },
      content: [{ type: 'tool_use', name: 'submit_review', input: { approved: true, problems: [], summary: 'Looks right to me.' } }],
    },
  ],
};

/** Repeated finishes: the loop's stuck detector ends a model that insists on a refused finish. */
function insistOnFinishing(summary: string, times = 6): Step[] {
  return Array.from({ length: times }, (_, index) => ({
    name: `finish (attempt ${index + 1})`,
    content: [{ type: 'tool_use' as const, name: 'finish', input: { summary } }],
  }));
}

/** A word of the changed lines worth searching for: the longest identifier, else the file's stem. */
function searchTerm(before: string, after: string, path: string): string {
  const words = `${before}\n${after}`.match(/[A-Za-z_][A-Za-z0-9_]{3,}/g) ?? [];
  const common = new Set(['return', 'const', 'function', 'import', 'export', 'false', 'true', 'self', 'None', 'null', 'undefined', 'this']);
  const best = words.filter((word) => !common.has(word)).sort((a, b) => b.length - a.length)[0];
  return best ?? (path.split('/').pop() ?? path).replace(/\.[^.]+$/, '');
}

/**
 * The smallest run of whole lines that differs between `before` and `after`, widened by a line
 * on each side until it occurs exactly once in `before` (what edit_file's replace requires).
 */
export function exactOnceReplacement(before: string, after: string): { oldText: string; newText: string } {
  const a = before.split('\n');
  const b = after.split('\n');
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  for (;;) {
    const oldText = a.slice(start, endA).join('\n');
    const newText = b.slice(start, endB).join('\n');
    const count = oldText === '' ? 0 : before.split(oldText).length - 1;
    if (count === 1 && oldText.trim() !== '') return { oldText, newText };
    if (start === 0 && endA === a.length) return { oldText, newText };
    if (start > 0) start--;
    if (endA < a.length) {
      endA++;
      endB++;
    }
  }
}

function goldCassette(instance: EvalInstance, repo: string): CassetteInput {
  const patch = instance.patch ?? '';
  if (patch.trim() === '') throw new InvalidInstanceError(`${instance.instance_id}: patch is empty; gold mode needs the gold fix`);
  let fixed: string;
  try {
    fixed = commitPatches(repo, instance.base_commit, [patch], 'gold');
  } catch (error) {
    throw new InvalidInstanceError(`${instance.instance_id}: patch does not apply at ${instance.base_commit}: ${error instanceof Error ? error.message.split('\n').slice(-3).join(' ') : String(error)}`);
  }
  const files = changedFiles(repo, instance.base_commit, fixed);
  const reads: Step[] = [];
  const edits: Step[] = [];
  let firstTerm: { pattern: string } | undefined;
  for (const { status, path } of files) {
    const before = showFile(repo, instance.base_commit, path);
    const after = showFile(repo, fixed, path);
    if (status === 'D' || after === undefined) {
      edits.push({ name: `remove ${path}`, content: [{ type: 'tool_use', name: 'run_command', input: { command: `rm -- '${path.replace(/'/g, `'\\''`)}'` } }] });
      continue;
    }
    if (status === 'A' || before === undefined) {
      edits.push({ name: `create ${path}`, content: [{ type: 'tool_use', name: 'edit_file', input: { path, command: 'create', new_text: after } }] });
      continue;
    }
    const { oldText, newText } = exactOnceReplacement(before, after);
    firstTerm ??= { pattern: searchTerm(oldText, newText, path) };
    reads.push({
      name: `read ${path}`,
      content: [{ type: 'tool_use', name: 'read_file', input: { path } }],
    });
    edits.push({ name: `edit ${path}`, content: [{ type: 'tool_use', name: 'edit_file', input: { path, command: 'replace', old_text: oldText, new_text: newText } }] });
  }
  const steps: Step[] = [
    {
      name: 'look for the code the ticket is about',
      content: [
        { type: 'text', text: 'Let me find the code this ticket is about.' },
        { type: 'tool_use', name: 'search', input: { pattern: firstTerm?.pattern ?? (files[0]?.path ?? 'TODO'), fixed_strings: true } },
      ],
    },
    ...reads,
  ];
  // Each edit (and the test run after the last one) checks that the step before it worked.
  for (const edit of edits) steps.push({ ...edit, expect: { toolResultIsError: false } });
  steps.push({ name: 'run the tests', expect: { toolResultIsError: false }, content: [{ type: 'tool_use', name: 'run_tests', input: { scope: 'selected' } }] });
  steps.push(...insistOnFinishing(`Fixed ${instance.instance_id}: ${files.map((file) => file.path).join(', ')} changed as the ticket asks; the tests pass.`, 3));
  return { description: `gold fix of ${instance.instance_id}`, turns: steps };
}

function nullCassette(instance: EvalInstance, repo: string): CassetteInput {
  const files = listFiles(repo, instance.base_commit);
  const file = files.find((path) => !isTestPath(path) && /\.(js|ts|mjs|cjs|py)$/.test(path)) ?? files[0] ?? 'README.md';
  return {
    description: `claims ${instance.instance_id} is done without a change`,
    turns: [
      { name: 'read one file', content: [{ type: 'tool_use', name: 'read_file', input: { path: file } }] },
      ...insistOnFinishing('This already works as the ticket asks; nothing needed to change.'),
    ],
  };
}

/** A shell edit that skips every test of the file (pytest: module-level skip; JS runners: .skip). */
function skipTestsCommand(path: string): string {
  const quoted = `'${path.replace(/'/g, `'\\''`)}'`;
  if (path.endsWith('.py')) return `sed -i '1i import pytest\\npytestmark = pytest.mark.skip(reason="cheat")' ${quoted}`;
  return `sed -i -E 's/\\b(it|test)\\(/\\1.skip(/g' ${quoted}`;
}

function cheatCassette(instance: EvalInstance, repo: string): CassetteInput {
  const files = listFiles(repo, instance.base_commit).filter(isTestPath).filter((path) => /\.(js|ts|mjs|cjs|py)$/.test(path) && !/conftest\.py$/.test(path));
  const testPatchFiles = changedFilesOfPatch(instance.test_patch);
  const target = files.find((path) => testPatchFiles.includes(path)) ?? files[0];
  if (!target) throw new InvalidInstanceError(`${instance.instance_id}: no test file at ${instance.base_commit} for cheat mode to edit`);
  return {
    description: `edits the tests of ${instance.instance_id} instead of the code`,
    turns: [
      { name: 'read a test', content: [{ type: 'tool_use', name: 'read_file', input: { path: target } }] },
      {
        name: 'try to edit the test',
        content: [{ type: 'tool_use', name: 'edit_file', input: { path: target, command: 'insert', insert_line: 0, new_text: '// tests disabled\n' } }],
      },
      { name: 'skip the tests from the shell', content: [{ type: 'tool_use', name: 'run_command', input: { command: skipTestsCommand(target) } }] },
      { name: 'run the tests', content: [{ type: 'tool_use', name: 'run_tests', input: { scope: 'selected' } }] },
      ...insistOnFinishing('The tests pass now.'),
    ],
  };
}

function changedFilesOfPatch(patch: string): string[] {
  return [...patch.matchAll(/^diff --git a\/(.+?) b\/(.+)$/gm)].flatMap((match) => [match[1] ?? '', match[2] ?? '']).filter(Boolean);
}

/** The agent's and the reviewer's cassettes for one instance; `repo` holds its base commit. */
export function synthesizeCassettes(mode: EvalMode, instance: EvalInstance, repo: string): Cassettes {
  const agent = mode === 'gold' ? goldCassette(instance, repo) : mode === 'null' ? nullCassette(instance, repo) : cheatCassette(instance, repo);
  return { agent, review: REVIEW };
}
