import { z } from 'zod';
import { asArgument, toWorkspacePath } from './paths';
import { ToolError, defineTool } from './types';

const ListFilesInput = z.object({
  path: z.string().default('.').describe('Directory relative to the repository root'),
  glob: z.string().optional().describe('Only files matching this glob, e.g. "**/*.test.ts"'),
  max_results: z.number().int().min(1).max(2000).default(300),
});

export const listFilesTool = defineTool({
  name: 'list_files',
  description:
    'List files under a directory (recursively), respecting .gitignore. Hidden files are included, .git is not. ' +
    'Use a glob to narrow, e.g. "*.py".',
  input: ListFilesInput,
  async run(input, { sandbox, signal }) {
    const path = toWorkspacePath(input.path);
    const args = ['rg', '--files', '--no-require-git', '--hidden', '-g', '!.git', '--sort', 'path'];
    if (input.glob) args.push('-g', input.glob);
    args.push('--', asArgument(path));
    const result = await sandbox.exec({ cmd: args, timeoutMs: 60_000, outputCapBytes: 8 * 1024 * 1024, signal });
    if (result.timedOut) throw new ToolError('list_files timed out after 60 s; narrow the path');
    // ripgrep exits 1 when nothing matched the glob, 2 on errors such as a missing directory.
    if (result.exitCode === 1 && result.stdout.trim() === '') {
      return { output: `No files under ${path}${input.glob ? ` matching ${input.glob}` : ''}.`, isError: false };
    }
    if (result.exitCode !== 0) {
      throw new ToolError(`path: cannot list ${path}: ${(result.stderr || result.stdout).trim().slice(0, 1000)}`);
    }
    const files = result.stdout
      .split('\n')
      .filter((line) => line.length > 0)
      .map((line) => line.replace(/^\.\//, ''));
    const shown = files.slice(0, input.max_results);
    const truncated = files.length > shown.length;
    const header = truncated
      ? `${files.length} files under ${path}; showing the first ${shown.length} (use a glob or a subdirectory).`
      : `${files.length} files under ${path}.`;
    return { output: `${header}\n${shown.join('\n')}`, isError: false, truncated };
  },
});
