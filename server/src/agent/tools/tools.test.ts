import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { createFixtureRepo, type FixtureRepo } from '../../../../test/support/fixture-repo';
import { RecordingApprover, toolContext } from '../testing/context';
import { HostSandbox } from '../../sandbox/testing/host-sandbox';
import { SimpleFeedbackEngine } from '../simple-feedback';
import type { FeedbackEngine } from '../../feedback/types';
import { defaultTools, executeTool } from './index';

const tools = defaultTools();
let repo: FixtureRepo;
let sandbox: HostSandbox;

function run(name: string, input: unknown, context = toolContext(sandbox), cap = 20_000) {
  return executeTool(tools, name, input, context, cap);
}

beforeEach(() => {
  repo = createFixtureRepo('buggy-calc');
  sandbox = new HostSandbox(repo.path, repo.sha);
});

describe('tool definitions', () => {
  it('derives an object JSON schema from zod for every tool', () => {
    for (const tool of tools) {
      expect(tool.definition.input_schema.type).toBe('object');
      expect(tool.definition.input_schema).not.toHaveProperty('$schema');
      expect(tool.definition.description?.length).toBeGreaterThan(20);
    }
    const edit = tools.find((tool) => tool.name === 'edit_file');
    expect(edit?.definition.input_schema.required).toEqual(expect.arrayContaining(['path', 'command', 'new_text']));
  });

  it('turns an unknown tool and bad input into is_error results naming the field', async () => {
    const unknown = await run('delete_everything', {});
    expect(unknown.isError).toBe(true);
    expect(unknown.output).toMatch(/Unknown tool "delete_everything"/);
    const bad = await run('read_file', { path: 42 });
    expect(bad.isError).toBe(true);
    expect(bad.output).toMatch(/^path: /m);
    const missing = await run('edit_file', { path: 'src/calc.js', command: 'replace', new_text: 'x' });
    expect(missing.isError).toBe(true);
    expect(missing.output).toMatch(/old_text: required/);
  });
});

describe('search', () => {
  it('finds matches with file names and line numbers', async () => {
    const result = await run('search', { pattern: 'function average' });
    expect(result.isError).toBe(false);
    expect(result.output).toContain('src/calc.js');
    expect(result.output).toMatch(/^12:function average\(values\) \{$/m);
  });

  it('shows context lines and respects a glob', async () => {
    const result = await run('search', { pattern: 'average', glob: 'test/**', context_lines: 1 });
    expect(result.output).not.toContain('src/calc.js');
    expect(result.output).toContain('test/calc.test.js');
    expect(result.output).toMatch(/^\d+-/m);
  });

  it('says so when nothing matches, and reports a bad regex as an error', async () => {
    expect((await run('search', { pattern: 'no_such_identifier_xyz' })).output).toMatch(/No matches/);
    const bad = await run('search', { pattern: '(unclosed' });
    expect(bad.isError).toBe(true);
    expect(bad.output).toMatch(/search failed/);
  });

  it('caps the number of results and says how many there were', async () => {
    writeFileSync(join(repo.path, 'many.txt'), Array.from({ length: 300 }, (_, i) => `needle ${i}`).join('\n'));
    const result = await run('search', { pattern: 'needle', max_results: 10 });
    expect(result.truncated).toBe(true);
    expect(result.output).toMatch(/showing the first 10/);
    expect(result.output.match(/^\d+:needle/gm)).toHaveLength(10);
  });

  it('refuses a path outside the workspace', async () => {
    const result = await run('search', { pattern: 'root', path: '../../etc' });
    expect(result.isError).toBe(true);
    expect(result.output).toMatch(/path: .*escapes the workspace/);
  });
});

describe('read_file', () => {
  it('shows numbered lines and a range', async () => {
    const all = await run('read_file', { path: 'src/calc.js' });
    expect(all.output).toMatch(/^src\/calc.js \(21 lines\), lines 1-21:/);
    expect(all.output).toMatch(/^12\tfunction average/m);
    const range = await run('read_file', { path: '/workspace/src/calc.js', start_line: 14, end_line: 16 });
    expect(range.output.split('\n')).toHaveLength(4);
    expect(range.output).toMatch(/^15\t  for \(let index = 1/m);
  });

  it('refuses escapes, absolute paths, missing files and binaries with a clear reason', async () => {
    for (const path of ['../../../etc/passwd', '/etc/passwd', 'src/../../outside']) {
      const result = await run('read_file', { path });
      expect(result.isError, path).toBe(true);
      expect(result.output, path).toMatch(/^path: .*(outside|escapes) the workspace/);
    }
    expect((await run('read_file', { path: 'nope.js' })).output).toMatch(/path: cannot read nope.js/);
    writeFileSync(join(repo.path, 'blob.bin'), Buffer.from([0, 1, 2, 3, 0, 255]));
    expect((await run('read_file', { path: 'blob.bin' })).output).toMatch(/looks binary/);
  });

  it('pages long files and shortens huge lines', async () => {
    writeFileSync(join(repo.path, 'long.txt'), Array.from({ length: 1000 }, (_, i) => `line ${i + 1}`).join('\n'));
    const result = await run('read_file', { path: 'long.txt' });
    expect(result.output).toMatch(/lines 1-400:/);
    expect(result.output).toMatch(/\[600 more lines; continue with start_line=401\]/);
    writeFileSync(join(repo.path, 'wide.txt'), 'x'.repeat(50_000));
    const wide = await run('read_file', { path: 'wide.txt' });
    expect(wide.output.length).toBeLessThan(2000);
    expect(wide.output).toMatch(/49000 more characters on this line/);
  });
});

describe('list_files', () => {
  it('lists files recursively and respects .gitignore', async () => {
    mkdirSync(join(repo.path, 'node_modules/pkg'), { recursive: true });
    writeFileSync(join(repo.path, 'node_modules/pkg/index.js'), '');
    const result = await run('list_files', {});
    expect(result.output).toContain('src/calc.js');
    expect(result.output).toContain('.gitignore');
    expect(result.output).not.toContain('node_modules');
    const tests = await run('list_files', { glob: '*.test.js' });
    expect(tests.output).toMatch(/^2 files/);
  });
});

describe('list_symbols', () => {
  it("outlines a file's definitions", async () => {
    const result = await run('list_symbols', { path: 'src/calc.js' });
    expect(result.isError).toBe(false);
    expect(result.output).toMatch(/src\/calc.js:12 function average\(values\)/);
    expect(result.output).toMatch(/src\/calc.js:3 function add/);
  });

  it('finds where a name is defined across the repository', async () => {
    const result = await run('list_symbols', { name: 'formatAverage' });
    expect(result.output).toMatch(/^src\/format.js:6 function formatAverage\(values\)$/m);
    expect(result.output).not.toContain('calc.js');
  });

  it('requires path or name', async () => {
    const result = await run('list_symbols', {});
    expect(result.isError).toBe(true);
    expect(result.output).toMatch(/path: give path/);
  });
});

describe('edit_file', () => {
  it('replaces text that matches exactly once and returns the diff hunk', async () => {
    const context = toolContext(sandbox);
    const result = await run('edit_file', {
      path: 'src/calc.js', command: 'replace',
      old_text: 'for (let index = 1;', new_text: 'for (let index = 0;',
    }, context);
    expect(result.isError).toBe(false);
    expect(result.output).toMatch(/^-  for \(let index = 1;/m);
    expect(result.output).toMatch(/^\+  for \(let index = 0;/m);
    expect(readFileSync(join(repo.path, 'src/calc.js'), 'utf8')).toContain('let index = 0;');
    const changed = context.events.ofType('file.changed');
    expect(changed).toHaveLength(1);
    expect(changed[0]?.data).toMatchObject({ path: 'src/calc.js', change: 'modified' });
  });

  it('refuses zero matches (with a whitespace hint) and several matches (with line numbers)', async () => {
    const before = readFileSync(join(repo.path, 'src/calc.js'), 'utf8');
    const none = await run('edit_file', { path: 'src/calc.js', command: 'replace', old_text: 'return a * b;', new_text: 'x' });
    expect(none.isError).toBe(true);
    expect(none.output).toMatch(/old_text: not found in src\/calc.js; nothing was changed/);
    const indent = await run('edit_file', { path: 'src/calc.js', command: 'replace', old_text: 'return a + b;', new_text: 'return b + a;' });
    expect(indent.isError).toBe(false);
    const loose = await run('edit_file', { path: 'src/calc.js', command: 'replace', old_text: 'return   a - b;', new_text: 'x' });
    expect(loose.output).toMatch(/Line 8 matches if whitespace is ignored/);
    const many = await run('edit_file', { path: 'src/calc.js', command: 'replace', old_text: 'function', new_text: 'fn' });
    expect(many.isError).toBe(true);
    expect(many.output).toMatch(/matches 3 times in src\/calc.js \(at lines 3, 7, 12\)/);
    expect(readFileSync(join(repo.path, 'src/calc.js'), 'utf8')).toBe(before.replace('return a + b;', 'return b + a;'));
  });

  it('creates new files, refuses to overwrite, and inserts after a line', async () => {
    const created = await run('edit_file', { path: 'src/median.js', command: 'create', new_text: "'use strict';\n" });
    expect(created.output).toMatch(/^Created src\/median.js/);
    expect((await run('edit_file', { path: 'src/median.js', command: 'create', new_text: 'x' })).output).toMatch(/already exists/);
    const inserted = await run('edit_file', { path: 'src/median.js', command: 'insert', insert_line: 1, new_text: 'module.exports = {};' });
    expect(inserted.isError).toBe(false);
    expect(readFileSync(join(repo.path, 'src/median.js'), 'utf8')).toBe("'use strict';\nmodule.exports = {};\n");
    expect((await run('edit_file', { path: 'src/median.js', command: 'insert', insert_line: 9, new_text: 'x' })).output).toMatch(/insert_line: 9 is past the end/);
  });

  it('refuses test edits unless the ticket allows them, and CI config always', async () => {
    const refused = await run('edit_file', { path: 'test/calc.test.js', command: 'replace', old_text: '(1, 2, 3)', new_text: 'x' });
    expect(refused.isError).toBe(true);
    expect(refused.output).toMatch(/test file and this ticket does not allow test edits/);
    const allowed = await run('edit_file', {
      path: 'test/calc.test.js', command: 'replace', old_text: "test('add'", new_text: "test('adds'",
    }, toolContext(sandbox, { allowTestEdits: true }));
    expect(allowed.isError).toBe(false);
    const ci = await run('edit_file', { path: '.github/workflows/ci.yml', command: 'create', new_text: 'on: push' }, toolContext(sandbox, { allowTestEdits: true }));
    expect(ci.output).toMatch(/CI configuration/);
    const escape = await run('edit_file', { path: '../evil.js', command: 'create', new_text: 'x' });
    expect(escape.output).toMatch(/escapes the workspace/);
  });
});

describe('run_command', () => {
  it('returns exit code and output; a non-zero exit is an error result', async () => {
    const ok = await run('run_command', { command: 'echo hello && echo oops >&2' });
    expect(ok.isError).toBe(false);
    expect(ok.output).toMatch(/^Exit code 0/);
    expect(ok.output).toMatch(/stdout:\nhello/);
    expect(ok.output).toMatch(/stderr:\noops/);
    const failed = await run('run_command', { command: 'exit 3' });
    expect(failed.isError).toBe(true);
    expect(failed.output).toMatch(/Exit code 3/);
  });

  it('kills a command at its timeout', async () => {
    const started = Date.now();
    const result = await run('run_command', { command: 'sleep 30', timeout_seconds: 1 });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(result.isError).toBe(true);
    expect(result.output).toMatch(/Timed out after 1 s/);
  });

  it('caps huge output keeping head and tail with a note', async () => {
    const result = await run('run_command', { command: 'seq 1 200000' }, toolContext(sandbox), 5000);
    expect(result.truncated).toBe(true);
    expect(result.output.length).toBeLessThan(5300);
    expect(result.output).toMatch(/^1$/m);
    expect(result.output).toMatch(/^200000$/m);
    expect(result.output).toMatch(/characters \(\d+ lines\) cut from the middle/);
  });

  it('asks for approval before a destructive command; a denial reaches the model and nothing runs', async () => {
    const approver = new RecordingApprover('denied', 'not in this task');
    const result = await run('run_command', { command: `touch marker && git push origin main` }, toolContext(sandbox, { approver }));
    expect(approver.requests).toHaveLength(1);
    expect(approver.requests[0]).toMatchObject({ kind: 'command', toolUseId: 'toolu_test' });
    expect(approver.requests[0]?.reason).toMatch(/git push/);
    expect(result.isError).toBe(true);
    expect(result.output).toMatch(/^Denied by reviewer@example.com: .*not run\. Their comment: not in this task/);
    expect(() => readFileSync(join(repo.path, 'marker'))).toThrow();
  });

  it('runs a destructive command once approved', async () => {
    const approver = new RecordingApprover('approved');
    const result = await run('run_command', { command: 'git reset --hard && echo done' }, toolContext(sandbox, { approver }));
    expect(approver.requests).toHaveLength(1);
    expect(result.isError).toBe(false);
    expect(result.output).toContain('done');
  });
});

describe('run_tests', () => {
  it('a run the task cancelled (its runner killed, exit 137) is said as cancelled: no runner crash, no test result recorded', async () => {
    const cancel = new AbortController();
    const killed = {
      ...new SimpleFeedbackEngine(),
      runTests: async () => {
        cancel.abort();
        return {
          scope: 'selected' as const, command: 'npm test', runner: 'node-test', passed: 0, failed: 0, skipped: 0, ok: false, cases: [], quarantined: [], output: 'Killed', durationMs: 5,
          infrastructure: { kind: 'crash' as const, command: 'npm test', message: 'the test runner crashed: `npm test`: killed by a signal (exit 137: SIGKILL, often out of memory)', action: 'x', output: 'Killed' },
        };
      },
    };
    const context = toolContext(sandbox, { signal: cancel.signal, feedback: killed as unknown as FeedbackEngine });
    const result = await run('run_tests', {}, context);
    expect(result).toMatchObject({ isError: true, output: 'The test run was stopped: the task was cancelled.' });
    expect(context.events.ofType('tests.runner_failed')).toEqual([]);
    expect(context.events.ofType('tests.finished')).toEqual([]);
  });


  it('runs the repo suite through the feedback engine and records tests.finished', async () => {
    const context = toolContext(sandbox);
    const result = await run('run_tests', {}, context);
    expect(result.isError).toBe(false);
    expect(result.output).toMatch(/^Tests FAILED: 3 passed, 2 failed, 0 skipped/);
    expect(context.events.ofType('tests.finished')[0]?.data).toMatchObject({ passed: 3, failed: 2, ok: false });
  });
});
