import { DockhandError } from '../errors';

/**
 * Where a line comment sits on a PR's diff: the file must be one the PR changes and the line one
 * of the new file's lines shown in a hunk of it (as on GitHub, where a review comment can only be
 * made on the diff). The hunk is kept with the comment, ending at the commented line, so the model
 * later sees the code the reviewer saw even after the branch moved on.
 */

export interface DiffHunk {
  /** The `@@ -a,b +c,d @@` line. */
  header: string;
  /** First line of the new file in the hunk and how many of the new file's lines it shows. */
  newStart: number;
  newLines: number;
  /** The hunk's lines (with their ` `, `+`, `-` prefixes). */
  lines: string[];
}

const HUNK_HEADER = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/;

/** The hunks of one file's section of a unified diff (`git diff -- path` output). */
export function parseHunks(fileDiff: string): DiffHunk[] {
  const hunks: DiffHunk[] = [];
  let current: DiffHunk | undefined;
  for (const line of fileDiff.split('\n')) {
    const header = HUNK_HEADER.exec(line);
    if (header) {
      current = { header: line, newStart: Number(header[1]), newLines: header[2] === undefined ? 1 : Number(header[2]), lines: [] };
      hunks.push(current);
    } else if (current && (line.startsWith(' ') || line.startsWith('+') || line.startsWith('-') || line.startsWith('\\'))) {
      current.lines.push(line);
    }
  }
  return hunks;
}

/** Most lines of a hunk kept with a comment (the ones just before the commented line). */
export const HUNK_CONTEXT_LINES = 20;

/**
 * The hunk text for a comment on new-file line `line` of `path`, ending at that line; a clear
 * error naming `path` or `line` (with the lines that may be commented on) when it is not on the diff.
 */
export function hunkForLine(path: string, line: number, fileDiff: string, where: string): string {
  const hunks = parseHunks(fileDiff);
  if (hunks.length === 0) {
    throw new DockhandError('bad_request', `path: ${path} is not changed by ${where}`, { field: 'path', hint: 'comment on a file of the PR\'s diff, or leave out --path/--line for a general comment' });
  }
  const hunk = hunks.find((candidate) => line >= candidate.newStart && line < candidate.newStart + candidate.newLines);
  if (!hunk) {
    const ranges = hunks.map((candidate) => `${candidate.newStart}–${candidate.newStart + Math.max(candidate.newLines, 1) - 1}`).join(', ');
    throw new DockhandError('bad_request', `line: line ${line} of ${path} is not on the diff of ${where} (lines on it: ${ranges})`, { field: 'line', hint: 'comment on a line the diff shows' });
  }
  // Walk the hunk to the commented line of the new file (removed lines do not count).
  let newLine = hunk.newStart - 1;
  let end = hunk.lines.length;
  for (let index = 0; index < hunk.lines.length; index++) {
    if (!hunk.lines[index]!.startsWith('-') && !hunk.lines[index]!.startsWith('\\')) newLine += 1;
    if (newLine === line) {
      end = index + 1;
      break;
    }
  }
  const kept = hunk.lines.slice(Math.max(0, end - HUNK_CONTEXT_LINES), end);
  return [hunk.header, ...kept].join('\n');
}
