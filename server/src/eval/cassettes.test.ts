import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { temporaryDir } from '../../../test/support/temporary-dirs';
import { parseCassette } from '../model/replay/cassette';
import { exactOnceReplacement, InvalidInstanceError, synthesizeCassettes } from './cassettes';
import type { EvalInstance } from './formats';
import { commitPatches, diffCommits, git } from './git-tree';

function repoWith(files: Record<string, string>): { path: string; sha: string } {
  const path = temporaryDir('dockhand-eval-cassette-');
  git(path, ['init', '-q', '-b', 'main']);
  for (const [name, text] of Object.entries(files)) {
    const target = join(path, name);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, text);
  }
  git(path, ['add', '-A']);
  git(path, ['commit', '-q', '-m', 'base']);
  return { path, sha: git(path, ['rev-parse', 'HEAD']).trim() };
}

const SOURCE = 'export function total(items) {\n  let sum = 0;\n  for (const item of items) sum += item;\n  return sum;\n}\n\nexport function mean(items) {\n  let sum = 0;\n  for (const item of items) sum += item;\n  return sum / (items.length + 1);\n}\n';

function instance(sha: string, patch: string): EvalInstance {
  return { repo: 'eval/calc', instance_id: 'calc-1', base_commit: sha, patch, test_patch: '', problem_statement: 'mean() is wrong', FAIL_TO_PASS: ['mean'], PASS_TO_PASS: [] };
}

describe('gold cassettes', () => {
  it('widens a replacement until it matches exactly once', () => {
    const after = SOURCE.replace('items.length + 1', 'items.length');
    const { oldText, newText } = exactOnceReplacement(SOURCE, after);
    expect(SOURCE.split(oldText)).toHaveLength(2);
    expect(SOURCE.replace(oldText, newText)).toBe(after);
    // The repeated `let sum = 0;` line alone would match twice.
    const second = SOURCE.replace('  let sum = 0;\n  for (const item of items) sum += item;\n  return sum / (items.length + 1);', '  let sum = 0.0;\n  for (const item of items) sum += item;\n  return sum / (items.length + 1);');
    const widened = exactOnceReplacement(SOURCE, second);
    expect(SOURCE.split(widened.oldText)).toHaveLength(2);
    expect(SOURCE.replace(widened.oldText, widened.newText)).toBe(second);
  });

  it('explores, applies the gold patch with edit_file and finishes; edits are checked', () => {
    const repo = repoWith({ 'src/calc.js': SOURCE, 'README.md': 'calc\n' });
    const fixed = commitPatches(repo.path, repo.sha, [], 'noop');
    expect(fixed).toMatch(/^[0-9a-f]{40}$/);
    writeFileSync(join(repo.path, 'src/calc.js'), SOURCE.replace('items.length + 1', 'items.length'));
    writeFileSync(join(repo.path, 'src/new.js'), 'export const answer = 42;\n');
    git(repo.path, ['add', '-A']);
    git(repo.path, ['commit', '-q', '-m', 'fix']);
    const patch = diffCommits(repo.path, repo.sha, 'HEAD');
    const { agent, review } = synthesizeCassettes('gold', instance(repo.sha, patch), repo.path);
    const cassette = parseCassette(agent);
    const calls = cassette.turns.flatMap((step) => ('content' in step ? step.content : [])).flatMap((block) => (block.type === 'tool_use' ? [block.name] : []));
    expect(calls.slice(0, 5)).toEqual(['search', 'read_file', 'edit_file', 'edit_file', 'run_tests']);
    expect(calls.at(5)).toBe('finish');
    const edit = cassette.turns.flatMap((step) => ('content' in step ? step.content : [])).find((block) => block.type === 'tool_use' && block.name === 'edit_file' && block.input.command === 'replace');
    expect(edit?.type === 'tool_use' ? SOURCE.replace(String(edit.input.old_text), String(edit.input.new_text)) : '').toBe(SOURCE.replace('items.length + 1', 'items.length'));
    expect(parseCassette(review).turns).toHaveLength(1);
  });

  it('refuses an instance whose patch does not apply at its base, naming it', () => {
    const repo = repoWith({ 'src/calc.js': SOURCE });
    const patch = 'diff --git a/src/calc.js b/src/calc.js\n--- a/src/calc.js\n+++ b/src/calc.js\n@@ -1,1 +1,1 @@\n-nothing like this\n+x\n';
    expect(() => synthesizeCassettes('gold', instance(repo.sha, patch), repo.path)).toThrow(InvalidInstanceError);
    expect(() => synthesizeCassettes('gold', instance(repo.sha, patch), repo.path)).toThrow(/calc-1: patch does not apply/);
  });

  it('null claims done without a change; cheat goes for a test file', () => {
    const repo = repoWith({ 'src/calc.js': SOURCE, 'test/calc.test.js': "import test from 'node:test';\ntest('mean', () => {});\n" });
    const nul = parseCassette(synthesizeCassettes('null', instance(repo.sha, ''), repo.path).agent);
    expect(nul.turns.flatMap((step) => ('content' in step ? step.content : [])).some((block) => block.type === 'tool_use' && block.name === 'edit_file')).toBe(false);
    const cheat = parseCassette(synthesizeCassettes('cheat', instance(repo.sha, ''), repo.path).agent);
    const shell = cheat.turns.flatMap((step) => ('content' in step ? step.content : [])).find((block) => block.type === 'tool_use' && block.name === 'run_command');
    expect(shell?.type === 'tool_use' ? shell.input.command : '').toContain('test/calc.test.js');
  });
});
