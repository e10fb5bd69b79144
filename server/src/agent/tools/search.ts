import { z } from 'zod';
import { capLine } from './output';
import { asArgument, toWorkspacePath } from './paths';
import type { ContentHit, Sandbox } from '../../sandbox/types';
import { ToolError, defineTool, type ToolOutput } from './types';

const MAX_LINE_CHARS = 300;
/** Files past this are not searched: a single one is refused at once, a directory's are skipped. */
export const MAX_SEARCH_FILE_BYTES = 16 * 1024 * 1024;

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/**
 * The path as read_file takes it, before any search: resolved inside the sandbox with every
 * symlink followed, and refused when that leads outside the workspace (ripgrep follows a symlink
 * given as its path, and read_file refuses the same path); a single file over the cap is refused
 * at once with its size instead of a search that runs into its timeout. A line slice of no lines
 * and no bytes is a stat: nothing of the file is read.
 */
async function checkSearchPath(sandbox: Sandbox, path: string): Promise<void> {
  if (path === '.' || !sandbox.readLines) return;
  let bytes: number;
  try {
    bytes = (await sandbox.readLines(path, { start: 1, count: 0, maxLineChars: 0, maxBytes: 0 })).bytes;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const exitCode = typeof error === 'object' && error !== null && 'exitCode' in error ? error.exitCode : undefined;
    if (exitCode === 3 || /outside the workspace|escapes the workspace/i.test(message)) {
      throw new ToolError(`path: ${path} leads outside the workspace (through a symlink); search stays inside it, as read_file does`);
    }
    if (/no such file|does not exist/i.test(message)) throw new ToolError(`path: ${path} does not exist in the workspace`);
    // A directory (or anything else a slice cannot be cut of): ripgrep walks it without following symlinks.
    return;
  }
  if (bytes > MAX_SEARCH_FILE_BYTES) {
    throw new ToolError(`path: ${path} is ${mib(bytes)}, over search's ${mib(MAX_SEARCH_FILE_BYTES)} cap; search a smaller file, or use run_command (grep -c, head) on this one`);
  }
}

const RipgrepText = z.object({ text: z.string().optional(), bytes: z.string().optional() });
const RipgrepLine = z.discriminatedUnion('type', [
  z.object({
    type: z.enum(['match', 'context']),
    data: z.object({ path: RipgrepText, lines: RipgrepText, line_number: z.number().nullable() }),
  }),
  z.object({ type: z.enum(['begin', 'end', 'summary']), data: z.unknown() }),
]);

const SearchInput = z.object({
  pattern: z.string().min(1).describe('Regular expression (Rust regex syntax) or, with fixed_strings, a literal'),
  path: z.string().default('.').describe('File or directory to search, relative to the repository root'),
  glob: z.string().optional().describe('Only files matching this glob, e.g. "*.ts" or "src/**/*.py"; prefix ! to exclude'),
  context_lines: z.number().int().min(0).max(10).default(0).describe('Lines of context around each match'),
  max_results: z.number().int().min(1).max(500).default(100).describe('Cap on matching lines returned'),
  case_insensitive: z.boolean().default(false),
  fixed_strings: z.boolean().default(false).describe('Treat pattern as a literal string'),
});

interface Hit {
  line: number;
  text: string;
  isMatch: boolean;
}

function textOf(value: z.infer<typeof RipgrepText>): string {
  if (value.text !== undefined) return value.text;
  return value.bytes !== undefined ? Buffer.from(value.bytes, 'base64').toString('utf8') : '';
}

export const searchTool = defineTool({
  name: 'search',
  description:
    'Search file contents with ripgrep. Respects .gitignore. Returns matching lines grouped by file with line numbers ' +
    '(":" marks a match, "-" a context line). Use it to find definitions, call sites and error messages.',
  input: SearchInput,
  async run(input, { sandbox, signal }) {
    const path = toWorkspacePath(input.path);
    await checkSearchPath(sandbox, path);
    // The sandbox's resident search answers as ripgrep would, from memory, when it can.
    const resident = await sandbox.searchContent?.({
      pattern: input.pattern,
      path,
      fixedStrings: input.fixed_strings,
      caseInsensitive: input.case_insensitive,
      glob: input.glob,
      context: input.context_lines,
      maxCount: input.max_results + 1,
      limit: input.max_results,
    });
    if (resident) {
      if (resident.matches === 0) return { output: `No matches for ${JSON.stringify(input.pattern)} in ${path}.`, isError: false };
      return formatHits(resident.hits, resident.matches, input.max_results);
    }
    // No --follow: ripgrep does not walk into symlinks, so a link to outside the workspace is not searched.
    const args = ['rg', '--json', '--no-require-git', '--hidden', '-g', '!.git', '--max-filesize', String(MAX_SEARCH_FILE_BYTES), '--max-count', String(input.max_results + 1)];
    if (input.context_lines > 0) args.push('-C', String(input.context_lines));
    if (input.case_insensitive) args.push('-i');
    if (input.fixed_strings) args.push('-F');
    if (input.glob) args.push('-g', input.glob);
    args.push('-e', input.pattern, '--', asArgument(path));
    const result = await sandbox.exec({ cmd: args, timeoutMs: 60_000, outputCapBytes: 8 * 1024 * 1024, signal });
    if (result.timedOut) throw new ToolError('search timed out after 60 s; narrow the path or the glob');
    if (result.exitCode === 1) return { output: `No matches for ${JSON.stringify(input.pattern)} in ${path}.`, isError: false };
    if (result.exitCode !== 0) {
      throw new ToolError(`search failed: ${(result.stderr || result.stdout).trim().slice(0, 2000)}`);
    }

    const hits: ContentHit[] = [];
    for (const raw of result.stdout.split('\n')) {
      if (!raw.startsWith('{')) continue;
      let json: unknown;
      try {
        json = JSON.parse(raw);
      } catch {
        continue;
      }
      const line = RipgrepLine.safeParse(json);
      if (!line.success || (line.data.type !== 'match' && line.data.type !== 'context')) continue;
      const data = line.data.data;
      hits.push({ path: textOf(data.path), line: data.line_number ?? 0, text: textOf(data.lines).replace(/\r?\n$/, ''), isMatch: line.data.type === 'match' });
    }
    return formatHits(hits, hits.filter((hit) => hit.isMatch).length, input.max_results);
  },
});

/** Matching lines grouped by file, the first maxResults matches (and their context) shown. */
function formatHits(hits: ContentHit[], matches: number, maxResults: number): ToolOutput {
  const files = new Map<string, Hit[]>();
  let shownMatches = 0;
  for (const hit of hits) {
    if (shownMatches >= maxResults) break;
    if (hit.isMatch) shownMatches += 1;
    const shown = files.get(hit.path) ?? [];
    shown.push({ line: hit.line, text: capLine(hit.text, MAX_LINE_CHARS), isMatch: hit.isMatch });
    files.set(hit.path, shown);
  }
  const blocks: string[] = [];
  for (const [file, shown] of files) {
    const lines = [file.replace(/^\.\//, '')];
    let previous = -1;
    for (const hit of shown) {
      if (previous !== -1 && hit.line > previous + 1) lines.push('--');
      lines.push(`${hit.line}${hit.isMatch ? ':' : '-'}${hit.text}`);
      previous = hit.line;
    }
    blocks.push(lines.join('\n'));
  }
  const truncated = matches > shownMatches;
  const header = truncated
    ? `At least ${matches} matching lines; showing the first ${shownMatches} (raise max_results or narrow the search).`
    : `${matches} matching lines in ${files.size} files.`;
  return { output: `${header}\n\n${blocks.join('\n\n')}`, isError: false, truncated };
}
