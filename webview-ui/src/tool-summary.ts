/*
 * How a tool call reads in one line of the trajectory: what it was called on (a path, a pattern, a
 * command) instead of its raw JSON cut short, and how it ended. A call the server refused (a CI
 * file, a test file the ticket does not allow, a finish the checks turned down) is not a tool that
 * broke, and neither is like a call that did its work: each gets its own word and tone.
 */

export type ToolOutcome = 'running' | 'interrupted' | 'ok' | 'refused' | 'error';

/** Longest one-line summary of a call's input. */
export const TOOL_SUMMARY_CHARS = 120;

function clip(text: string, limit = TOOL_SUMMARY_CHARS): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > limit ? `${line.slice(0, limit - 1)}…` : line;
}

function field(input: Record<string, unknown>, name: string): string | undefined {
  const value = input[name];
  return typeof value === 'string' && value !== '' ? value : typeof value === 'number' ? String(value) : undefined;
}

/** One readable line per tool: `src/calc.js (replace)`, `/paginate/ in src (*.ts)`, `npm test`. */
export function summarizeToolInput(name: string, input: unknown): string {
  if (input === undefined || input === null) return '';
  if (typeof input !== 'object') return clip(String(input));
  const record = input as Record<string, unknown>;
  const path = field(record, 'path');
  switch (name) {
    case 'read_file': {
      const start = field(record, 'start_line');
      const end = field(record, 'end_line');
      const lines = start || end ? ` lines ${start ?? '1'}–${end ?? 'end'}` : '';
      return clip(`${path ?? ''}${lines}`);
    }
    case 'edit_file': {
      const command = field(record, 'command');
      return clip(`${path ?? ''}${command ? ` (${command})` : ''}`);
    }
    case 'list_files': {
      const glob = field(record, 'glob');
      return clip(`${path ?? '.'}${glob ? ` matching ${glob}` : ''}`);
    }
    case 'search': {
      const pattern = field(record, 'pattern') ?? '';
      const glob = field(record, 'glob');
      return clip(`“${pattern}” in ${path ?? '.'}${glob ? ` (${glob})` : ''}`);
    }
    case 'run_command': {
      const cwd = field(record, 'cwd');
      return clip(`${field(record, 'command') ?? ''}${cwd ? ` (in ${cwd})` : ''}`);
    }
    case 'run_tests':
      return clip(field(record, 'scope') ?? (Array.isArray(record.tests) ? `${record.tests.length} test(s)` : ''));
    case 'finish':
      return clip(field(record, 'summary') ?? '');
    case 'list_symbols':
      return clip([field(record, 'name'), path].filter(Boolean).join(' in '));
  }
  // An unknown tool: its string fields, in order, instead of JSON punctuation.
  const strings = Object.entries(record).flatMap(([key, value]) => (typeof value === 'string' ? [`${key}: ${value}`] : []));
  return clip(strings.length ? strings.join(', ') : JSON.stringify(record));
}

/** Outputs of calls the server turned down before doing anything (the tool's own refusals). */
const REFUSAL = /is CI configuration; Dockhand does not edit|is a test file and this ticket does not allow test edits|^Finish refused|^Denied by .+ was not run|is outside the workspace|escapes the workspace|^Repository policy/;

export function toolOutcome(result: { isError: boolean; output: string } | undefined, interrupted = false): ToolOutcome {
  if (interrupted) return 'interrupted';
  if (!result) return 'running';
  if (!result.isError) return 'ok';
  return REFUSAL.test(result.output) ? 'refused' : 'error';
}

/** The first line of a refused call's output, the reason to show beside it. */
export function refusalReason(output: string): string {
  return clip(output.split('\n').find((line) => line.trim()) ?? '', 200);
}
