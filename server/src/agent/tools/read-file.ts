import { z } from 'zod';
import { capLine } from './output';
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
    let content: Buffer;
    try {
      content = await sandbox.readFile(path);
    } catch (error) {
      throw new ToolError(`path: cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (content.length > MAX_FILE_BYTES) {
      throw new ToolError(
        `path: ${path} is ${(content.length / 1024 / 1024).toFixed(1)} MiB, over the ${MAX_FILE_BYTES / 1024 / 1024} MiB cap; use search or run_command (head, sed -n) instead`,
      );
    }
    if (content.subarray(0, 8000).includes(0)) {
      throw new ToolError(`path: ${path} looks binary (${content.length} bytes); it cannot be shown as text`);
    }
    const lines = content.toString('utf8').split('\n');
    if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
    const total = lines.length;
    if (total === 0) return { output: `${path} is empty.`, isError: false };
    if (input.start_line > total) {
      throw new ToolError(`start_line: ${input.start_line} is past the end of ${path} (${total} lines)`);
    }
    const requestedEnd = input.end_line ?? total;
    const end = Math.min(requestedEnd, total, input.start_line + DEFAULT_MAX_LINES - 1);
    const width = String(end).length;
    const shown = lines
      .slice(input.start_line - 1, end)
      .map((line, index) => `${String(input.start_line + index).padStart(width)}\t${capLine(line, MAX_LINE_CHARS)}`);
    const header = `${path} (${total} lines), lines ${input.start_line}-${end}:`;
    const more = end < Math.min(requestedEnd, total) || (input.end_line === undefined && end < total);
    const footer = more ? `\n[${total - end} more lines; continue with start_line=${end + 1}]` : '';
    return { output: `${header}\n${shown.join('\n')}${footer}`, isError: false, truncated: more };
  },
});
