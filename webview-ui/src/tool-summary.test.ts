import { describe, expect, it } from 'vitest';
import { refusalReason, summarizeToolInput, toolOutcome, TOOL_SUMMARY_CHARS } from './tool-summary';

describe('one-line tool summaries', () => {
  it('names what each tool was called on instead of raw JSON', () => {
    expect(summarizeToolInput('read_file', { path: 'src/calc.js', start_line: 10, end_line: 40 })).toBe('src/calc.js lines 10–40');
    expect(summarizeToolInput('read_file', { path: 'src/calc.js' })).toBe('src/calc.js');
    expect(summarizeToolInput('edit_file', { path: 'src/calc.js', command: 'replace', old_text: 'a', new_text: 'b' })).toBe('src/calc.js (replace)');
    expect(summarizeToolInput('search', { pattern: 'paginate\\(', path: 'src', glob: '*.ts' })).toBe('“paginate\\(” in src (*.ts)');
    expect(summarizeToolInput('run_command', { command: 'npm test -- --grep calc', cwd: 'pkg' })).toBe('npm test -- --grep calc (in pkg)');
    expect(summarizeToolInput('list_files', { glob: '**/*.test.js' })).toBe('. matching **/*.test.js');
    expect(summarizeToolInput('run_tests', { scope: 'full' })).toBe('full');
    expect(summarizeToolInput('some_new_tool', { query: 'x', limit: 3 })).toBe('query: x');
    expect(summarizeToolInput('read_file', undefined)).toBe('');
  });

  it('keeps a long command on one line, cut at the limit', () => {
    const line = summarizeToolInput('run_command', { command: `echo ${'a'.repeat(300)}\necho b` });
    expect(line).not.toContain('\n');
    expect(line.length).toBe(TOOL_SUMMARY_CHARS);
    expect(line.endsWith('…')).toBe(true);
  });
});

describe('how a tool call ended', () => {
  it('tells a refused call from a failed one and from a successful one', () => {
    expect(toolOutcome({ isError: true, output: 'path: .github/workflows/ci.yml is CI configuration; Dockhand does not edit CI config. Leave it unchanged.' })).toBe('refused');
    expect(toolOutcome({ isError: true, output: 'path: test/calc.test.js is a test file and this ticket does not allow test edits; nothing was changed.' })).toBe('refused');
    expect(toolOutcome({ isError: true, output: 'Denied by olive: this command needs approval (network) and was not run. Do not retry it.' })).toBe('refused');
    expect(toolOutcome({ isError: true, output: 'Finish refused: the full suite ran 2 test(s), fewer than at the base.' })).toBe('refused');
    expect(toolOutcome({ isError: true, output: 'old_text: not found in src/calc.js; nothing was changed.' })).toBe('error');
    expect(toolOutcome({ isError: true, output: 'exit code 1' })).toBe('error');
    expect(toolOutcome({ isError: false, output: 'Edited src/calc.js.' })).toBe('ok');
    expect(toolOutcome(undefined)).toBe('running');
    expect(toolOutcome(undefined, true)).toBe('interrupted');
  });

  it('gives the refusal its first line', () => {
    expect(refusalReason('\npath: x is CI configuration; Dockhand does not edit CI config.\nmore')).toBe('path: x is CI configuration; Dockhand does not edit CI config.');
  });
});
