import { z } from 'zod';
import { sliceLines, type LineSlice } from '../../sandbox/lines';
import { cappedLine } from './output';
import { toWorkspacePath } from './paths';
import { ToolError, defineTool } from './types';

const MAX_FILE_BYTES = 4 * 1024 * 1024;
const DEFAULT_MAX_LINES = 400;
const MAX_LINE_CHARS = 1000;

const ReadFileInput = z.object({
  path: z.string().min(1).describe('File path relative to the repository root'),
  start_line: z.number().int().min(1).default(1).describe('First line to show (1-based)'),
  end_line: z.number().int().min(1).optional().describe(`Last line to show (inclusive); at most ${DEFAULT_MAX_LINES} lines per call`),
});

export const readFileTool = defineTool({
  name: 'read_file',
  description:
    `Read a text file with line numbers. Shows at most ${DEFAULT_MAX_LINES} lines per call; use start_line/end_line ` +
    'for other ranges. Very long lines are shortened.',
  input: ReadFileInput,
  async run(input, { sandbox }) {
    const path = toWorkspacePath(input.path);
    if (input.end_line !== undefined && input.end_line < input.start_line) {
      throw new ToolError(`end_line: ${input.end_line} is before start_line ${input.start_line}`);
    }
    const request = { start: input.start_line, count: DEFAULT_MAX_LINES, maxLineChars: MAX_LINE_CHARS, maxBytes: MAX_FILE_BYTES };
    let slice: LineSlice;
    try {
      // Sandboxes that can cut the slice where the file is send only it.
      slice = sandbox.readLines ? await sandbox.readLines(path, request) : sliceLines(await sandbox.readFile(path), request);
    } catch (error) {
      throw new ToolError(`path: cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (slice.bytes > MAX_FILE_BYTES) {
      throw new ToolError(
        `path: ${path} is ${(slice.bytes / 1024 / 1024).toFixed(1)} MiB, over the ${MAX_FILE_BYTES / 1024 / 1024} MiB cap; use search or run_command (head, sed -n) instead`,
      );
    }
    if (slice.binary) {
      throw new ToolError(`path: ${path} looks binary (${slice.bytes} bytes); it cannot be shown as text`);
    }
    const total = slice.total;
    if (total === 0) return { output: `${path} is empty.`, isError: false };
    if (input.start_line > total) {
      throw new ToolError(`start_line: ${input.start_line} is past the end of ${path} (${total} lines)`);
    }
    const requestedEnd = input.end_line ?? total;
    const end = Math.min(requestedEnd, total, input.start_line + DEFAULT_MAX_LINES - 1);
    const width = String(end).length;
    const shown = slice.lines
      .slice(0, end - input.start_line + 1)
      .map(([head, length], index) => `${String(input.start_line + index).padStart(width)}\t${cappedLine(head, length, MAX_LINE_CHARS)}`);
    const header = `${path} (${total} lines), lines ${input.start_line}-${end}:`;
    const more = end < Math.min(requestedEnd, total) || (input.end_line === undefined && end < total);
    const footer = more ? `\n[${total - end} more lines; continue with start_line=${end + 1}]` : '';
    return { output: `${header}\n${shown.join('\n')}${footer}`, isError: false, truncated: more };
  },
});
