import { z } from 'zod';
import { asArgument, toWorkspacePath } from './paths';
import type { Sandbox } from '../../sandbox/types';
import { ToolError, defineTool, type ToolOutput } from './types';

const MAX_CANDIDATE_FILES = 200;

const CtagsTag = z.object({
  _type: z.literal('tag'),
  name: z.string(),
  path: z.string(),
  line: z.number().int().optional(),
  kind: z.string().optional(),
  signature: z.string().optional(),
  scope: z.string().optional(),
  scopeKind: z.string().optional(),
});
type CtagsTag = z.infer<typeof CtagsTag>;

const ListSymbolsInput = z
  .object({
    path: z.string().optional().describe('A file (or directory) whose definitions to list'),
    name: z.string().min(1).optional().describe('A symbol name: where is it defined?'),
    max_results: z.number().int().min(1).max(1000).default(200),
  })
  .refine((input) => input.path !== undefined || input.name !== undefined, {
    message: 'give path (list a file\'s definitions) or name (find where a symbol is defined)',
    path: ['path'],
  });

function parseTags(stdout: string): CtagsTag[] {
  const tags: CtagsTag[] = [];
  for (const raw of stdout.split('\n')) {
    if (!raw.startsWith('{')) continue;
    try {
      const tag = CtagsTag.safeParse(JSON.parse(raw));
      if (tag.success) tags.push(tag.data);
    } catch {
      // A line cut by the output cap; the rest still count.
    }
  }
  return tags;
}

function formatTag(tag: CtagsTag): string {
  const scope = tag.scope ? ` (in ${tag.scopeKind ?? 'scope'} ${tag.scope})` : '';
  return `${tag.path.replace(/^\.\//, '')}:${tag.line ?? '?'} ${tag.kind ?? 'symbol'} ${tag.name}${tag.signature ?? ''}${scope}`;
}

export const listSymbolsTool = defineTool({
  name: 'list_symbols',
  description:
    'List definitions (functions, classes, methods, constants) using universal-ctags. Give path to outline a file, ' +
    'or name to find where a symbol is defined across the repository.',
  input: ListSymbolsInput,
  async run(input, { sandbox, signal }) {
    let targets: string[];
    if (input.path !== undefined) {
      const path = toWorkspacePath(input.path);
      // A single file from the sandbox's resident ctags when it has one (no process start).
      const resident = await sandbox.symbolsOf?.(path);
      if (resident !== undefined) return symbolsResult(parseTags(resident), input, '');
      targets = [asArgument(path)];
    } else {
      // ctags over a whole tree is slow in big repos: find the files that mention the name first,
      // from the sandbox's resident search when the name is a plain word (\b...\b is then rg -w).
      const name = input.name ?? '';
      const resident = /^\w+$/.test(name)
        ? await sandbox.searchContent?.({ pattern: `\\b${name}\\b`, path: '.', fixedStrings: false, caseInsensitive: false, context: 0, maxCount: 1, limit: MAX_CANDIDATE_FILES })
        : undefined;
      if (resident) {
        if (resident.matches === 0) return { output: `No file mentions ${name}.`, isError: false };
        targets = [...new Set(resident.hits.map((hit) => asArgument(hit.path)))].sort();
      } else {
        const candidates = await sandbox.exec({
          cmd: ['rg', '-l', '-w', '-F', '--no-require-git', '--max-count', '1', '-e', name, '--', '.'],
          timeoutMs: 60_000,
          signal,
        });
        if (candidates.exitCode === 1) return { output: `No file mentions ${name}.`, isError: false };
        if (candidates.exitCode !== 0) throw new ToolError(`list_symbols failed: ${candidates.stderr.trim().slice(0, 1000)}`);
        // Sorted: ripgrep's file order varies from run to run, and the answer should not (nor the prompt cache's prefix).
        targets = candidates.stdout.split('\n').filter((line) => line.length > 0).sort().slice(0, MAX_CANDIDATE_FILES);
      }
    }
    const { tags, stderr } = await runCtags(sandbox, targets, signal);
    return symbolsResult(tags, input, stderr);
  },
});

/** One ctags process over the targets (recursing into directories). */
async function runCtags(sandbox: Sandbox, targets: string[], signal: AbortSignal): Promise<{ tags: CtagsTag[]; stderr: string }> {
  const result = await sandbox.exec({
    cmd: ['ctags', '--output-format=json', '--fields=+nKS', '--sort=no', '-R', '-f', '-', ...targets],
    timeoutMs: 60_000,
    outputCapBytes: 8 * 1024 * 1024,
    signal,
  });
  if (result.timedOut) throw new ToolError('list_symbols timed out after 60 s; narrow the path');
  if (result.exitCode !== 0) throw new ToolError(`list_symbols failed: ${(result.stderr || result.stdout).trim().slice(0, 1000)}`);
  return { tags: parseTags(result.stdout), stderr: result.stderr.trim() };
}

function symbolsResult(all: CtagsTag[], input: { path?: string | undefined; name?: string | undefined; max_results: number }, stderr: string): ToolOutput {
  const tags = input.name !== undefined ? all.filter((tag) => tag.name === input.name) : all;
  if (tags.length === 0) {
    const what = input.name !== undefined ? `definition of ${input.name}` : `symbols in ${input.path}`;
    return { output: `No ${what} found.${stderr ? `\n${stderr.slice(0, 500)}` : ''}`, isError: false };
  }
  const shown = tags.slice(0, input.max_results);
  const truncated = tags.length > shown.length;
  const header = truncated ? `${tags.length} definitions; showing ${shown.length}.` : `${tags.length} definitions.`;
  return { output: `${header}\n${shown.map(formatTag).join('\n')}`, isError: false, truncated };
}
