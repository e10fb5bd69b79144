import { createTwoFilesPatch } from 'diff';
import { z } from 'zod';
import type { Sandbox } from '../../sandbox/types';
import { capOutput } from './output';
import { isCiConfigPath, isTestPath, toWorkspacePath } from './paths';
import { ToolError, defineTool } from './types';

const MAX_PATCH_CHARS = 8000;

const EditFileInput = z
  .object({
    path: z.string().min(1).describe('File path relative to the repository root'),
    command: z
      .enum(['replace', 'create', 'insert'])
      .describe('replace: swap old_text (must match exactly once) for new_text; create: new file with new_text; insert: new_text after insert_line'),
    old_text: z.string().optional().describe('replace: the exact text to replace, including whitespace; include enough lines to be unique'),
    new_text: z.string().describe('replace: the replacement; create: the whole file; insert: the lines to insert'),
    insert_line: z.number().int().min(0).optional().describe('insert: insert after this line (0 = at the top)'),
  })
  .superRefine((input, context) => {
    if (input.command === 'replace' && (input.old_text === undefined || input.old_text === '')) {
      context.addIssue({ code: 'custom', path: ['old_text'], message: 'required (non-empty) for command "replace"' });
    }
    if (input.command === 'insert' && input.insert_line === undefined) {
      context.addIssue({ code: 'custom', path: ['insert_line'], message: 'required for command "insert"' });
    }
  });

async function readExisting(sandbox: Sandbox, path: string): Promise<string | undefined> {
  try {
    return (await sandbox.readFile(path)).toString('utf8');
  } catch {
    return undefined;
  }
}

/** All start offsets of `needle` in `haystack`, overlapping ones included (they are ambiguous too). */
function occurrences(haystack: string, needle: string): number[] {
  const found: number[] = [];
  let from = haystack.indexOf(needle);
  while (from !== -1) {
    found.push(from);
    from = haystack.indexOf(needle, from + 1);
  }
  return found;
}

function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let index = 0; index < offset; index += 1) if (text.charCodeAt(index) === 10) line += 1;
  return line;
}

/** For a refusal: a line where the text matches once whitespace is ignored, so the model knows to re-read. */
function looseMatchLine(content: string, oldText: string): number | undefined {
  const firstLine = oldText.split('\n').find((line) => line.trim() !== '')?.trim();
  if (!firstLine) return undefined;
  const lines = content.split('\n');
  const index = lines.findIndex((line) => line.trim() === firstLine || line.replace(/\s+/g, '') === firstLine.replace(/\s+/g, ''));
  return index === -1 ? undefined : index + 1;
}

function applyReplace(path: string, content: string, oldText: string, newText: string): string {
  let search = oldText;
  let replacement = newText;
  let positions = occurrences(content, search);
  if (positions.length === 0 && content.includes('\r\n') && !oldText.includes('\r\n')) {
    search = oldText.replace(/\n/g, '\r\n');
    replacement = newText.replace(/\n/g, '\r\n');
    positions = occurrences(content, search);
  }
  if (positions.length === 0) {
    const near = looseMatchLine(content, oldText);
    const hint = near
      ? ` Line ${near} matches if whitespace is ignored: read the file again and copy the text exactly, indentation included.`
      : ' Read the file again (read_file) and copy the exact text, including whitespace.';
    throw new ToolError(`old_text: not found in ${path}; nothing was changed.${hint}`);
  }
  if (positions.length > 1) {
    const lines = positions.map((offset) => lineAt(content, offset));
    throw new ToolError(
      `old_text: matches ${positions.length} times in ${path} (at lines ${lines.join(', ')}); nothing was changed. ` +
        'Include more surrounding lines so it matches exactly once.',
    );
  }
  const at = positions[0] ?? 0;
  return content.slice(0, at) + replacement + content.slice(at + search.length);
}

function applyInsert(path: string, content: string, afterLine: number, text: string): string {
  const lines = content.split('\n');
  const hasFinalNewline = content.endsWith('\n');
  if (hasFinalNewline) lines.pop();
  if (afterLine > lines.length) {
    throw new ToolError(`insert_line: ${afterLine} is past the end of ${path} (${lines.length} lines)`);
  }
  const inserted = text.endsWith('\n') ? text.slice(0, -1) : text;
  lines.splice(afterLine, 0, ...inserted.split('\n'));
  return lines.join('\n') + (hasFinalNewline || content === '' ? '\n' : '');
}

export const editFileTool = defineTool({
  name: 'edit_file',
  description:
    'Change a file. "replace" swaps old_text for new_text and refuses when old_text matches zero or several times ' +
    '(copy it exactly from read_file). "create" writes a new file. "insert" adds lines after insert_line. ' +
    'Returns the resulting diff.',
  input: EditFileInput,
  async run(input, { sandbox, events, allowTestEdits }) {
    const path = toWorkspacePath(input.path);
    if (path === '.') throw new ToolError('path: give a file, not the repository root');
    if (isCiConfigPath(path)) {
      throw new ToolError(`path: ${path} is CI configuration; Dockhand does not edit CI config. Leave it unchanged.`);
    }
    if (isTestPath(path) && !allowTestEdits) {
      throw new ToolError(
        `path: ${path} is a test file and this ticket does not allow test edits; nothing was changed. ` +
          'Fix the code under test instead; if you believe the test itself is wrong, say so in the finish summary.',
      );
    }
    const existing = await readExisting(sandbox, path);
    let updated: string;
    if (input.command === 'create') {
      if (existing !== undefined) {
        throw new ToolError(`path: ${path} already exists; use command "replace" to change it`);
      }
      updated = input.new_text;
    } else {
      if (existing === undefined) {
        throw new ToolError(`path: ${path} does not exist; use command "create" for a new file`);
      }
      updated =
        input.command === 'replace'
          ? applyReplace(path, existing, input.old_text ?? '', input.new_text)
          : applyInsert(path, existing, input.insert_line ?? 0, input.new_text);
    }
    if (existing === updated) throw new ToolError('new_text: the edit changes nothing');
    await sandbox.writeFile(path, updated);
    const patch = createTwoFilesPatch(
      existing === undefined ? '/dev/null' : `a/${path}`,
      `b/${path}`,
      existing ?? '',
      updated,
      undefined,
      undefined,
      { context: 3 },
    );
    await events.append({
      type: 'file.changed',
      data: { path, change: existing === undefined ? 'added' : 'modified', patch },
    });
    const shown = capOutput(patch.replace(/^=+\n/m, ''), MAX_PATCH_CHARS);
    const verb = existing === undefined ? 'Created' : 'Edited';
    return { output: `${verb} ${path}.\n${shown.text}`, isError: false };
  },
});
