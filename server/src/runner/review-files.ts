import { applyPatch, createTwoFilesPatch, parsePatch } from 'diff';
import type { ChangedFile, TaskEvent } from '@dockhand/protocol';

/*
 * Per-file review decisions and review rounds, computed from a task's stored diff and its log.
 *
 * A file the reviewer rejects at approval is left out of the push: its section is dropped from
 * the diff exactly as `git diff` wrote it (no re-formatting, so mode lines, renames and binary
 * markers of the other files stay as they were). What it will not do: split a file's hunks, or
 * re-run the tests on what is left (the PR body says the tests ran with the rejected files in).
 */

export interface DiffSection {
  path: string;
  change: ChangedFile['change'];
  /** The section exactly as it appears in the diff, from its header to the next one. */
  text: string;
}

function stripPrefix(name: string | undefined): string | undefined {
  if (name === undefined || name === '/dev/null') return undefined;
  return name.replace(/^[ab]\//, '');
}

/** Where each file's section starts: `diff --git` headers, else `--- `/`+++ ` pairs (a plain unified diff). */
function sectionStarts(lines: string[]): number[] {
  const git = lines.flatMap((line, index) => (line.startsWith('diff --git ') ? [index] : []));
  if (git.length) return git;
  return lines.flatMap((line, index) => (line.startsWith('--- ') && lines[index + 1]?.startsWith('+++ ') ? [index] : []));
}

function describe(text: string): { path: string; change: ChangedFile['change'] } | undefined {
  const patch = parsePatch(text)[0];
  const header = /^diff --git a\/(.+?) b\/(.+)$/m.exec(text);
  const path = stripPrefix(patch?.newFileName) ?? stripPrefix(patch?.oldFileName) ?? header?.[2];
  if (!path) return undefined;
  const created = patch?.oldFileName === '/dev/null' || /^new file mode /m.test(text);
  const deleted = patch?.newFileName === '/dev/null' || /^deleted file mode /m.test(text);
  return { path, change: created ? 'added' : deleted ? 'deleted' : 'modified' };
}

/** The diff cut into one section per file. */
export function splitDiff(diff: string): DiffSection[] {
  if (diff.trim() === '') return [];
  const lines = diff.split('\n');
  const starts = sectionStarts(lines);
  return starts.flatMap((start, index) => {
    const text = lines.slice(start, starts[index + 1] ?? lines.length).join('\n');
    const described = describe(text);
    return described ? [{ ...described, text }] : [];
  });
}

/** The diff without the sections of `paths`. */
export function withoutFiles(diff: string, paths: Iterable<string>): string {
  const drop = new Set(paths);
  if (drop.size === 0) return diff;
  const kept = splitDiff(diff).filter((section) => !drop.has(section.path));
  if (!kept.length) return '';
  const text = kept.map((section) => section.text).join('\n');
  return text.endsWith('\n') ? text : `${text}\n`;
}

/** Events of the current review round: after the task last entered `awaiting_review`. */
function thisRound(events: TaskEvent[]): TaskEvent[] {
  let start = 0;
  for (const event of events) {
    if (event.type === 'task.state' && event.data.state === 'awaiting_review') start = event.seq;
  }
  return events.filter((event) => event.seq > start);
}

/** Files the approvals of the current round left out (every approver's rejections count). */
export function rejectedThisRound(events: TaskEvent[]): { files: string[]; by: string[] } {
  const files = new Set<string>();
  const by = new Set<string>();
  for (const event of thisRound(events)) {
    if (event.type !== 'review.files_rejected') continue;
    for (const path of event.data.rejected) files.add(path);
    by.add(event.data.by);
  }
  return { files: [...files].sort(), by: [...by] };
}

/**
 * Files the task's approvals left out of the push, over every round: a file rejected at an
 * approval stays left out until a later approval names it as accepted. Sorted.
 */
export function leftOutFiles(events: TaskEvent[]): string[] {
  const left = new Set<string>();
  for (const event of events) {
    if (event.type !== 'review.files_rejected') continue;
    for (const path of event.data.rejected) left.add(path);
    for (const path of event.data.accepted) left.delete(path);
  }
  return [...left].sort();
}

/** What the server pushes: the stored diff less the files the current round's approvals rejected. */
export function pushedDiff(diff: string, events: TaskEvent[]): string {
  return withoutFiles(diff, rejectedThisRound(events).files);
}

/** Review rounds so far (1, plus one per "request changes") and the diff changes were last requested on. */
export function reviewRounds(events: TaskEvent[]): { round: number; reviewedDiff?: string } {
  let round = 1;
  let reviewedDiff: string | undefined;
  for (const event of events) {
    if (event.type !== 'review.requested_changes') continue;
    round += 1;
    reviewedDiff = event.data.reviewedDiff;
  }
  return { round, ...(reviewedDiff === undefined ? {} : { reviewedDiff }) };
}

/**
 * A file's contents after a diff, from its base contents. `null` when the diff deletes it;
 * `undefined` when the patch does not apply (the caller reports that instead of guessing).
 */
export function fileAfter(diff: string, path: string, base: string | null): string | null | undefined {
  const section = splitDiff(diff).find((s) => s.path === path);
  if (!section) return base;
  if (section.change === 'deleted') return null;
  const patch = parsePatch(section.text)[0];
  if (!patch) return base;
  const result = applyPatch(base ?? '', patch);
  return result === false ? undefined : result;
}

/**
 * One round's own changes: from the diff reviewed last to the current one, both against the same
 * base. `base` reads a file at the base commit (null: not there). A file whose patch does not
 * apply is reported as such rather than skipped.
 */
export async function roundDiff(reviewed: string, current: string, base: (path: string) => Promise<string | null>): Promise<{ diff: string; files: ChangedFile[] }> {
  const paths = [...new Set([...splitDiff(reviewed), ...splitDiff(current)].map((s) => s.path))].sort();
  let diff = '';
  const files: ChangedFile[] = [];
  for (const path of paths) {
    const original = await base(path);
    const before = fileAfter(reviewed, path, original);
    const after = fileAfter(current, path, original);
    if (before === undefined || after === undefined) throw new Error(`the diff for ${path} does not apply to the base`);
    if (before === after) continue;
    files.push({ path, change: before === null ? 'added' : after === null ? 'deleted' : 'modified' });
    const patch = createTwoFilesPatch(before === null ? '/dev/null' : `a/${path}`, after === null ? '/dev/null' : `b/${path}`, before ?? '', after ?? '', undefined, undefined, { context: 3 });
    diff += `diff --git a/${path} b/${path}\n${patch.replace(/^=+\n/m, '').replace(/^Index:.*\n/m, '')}`;
  }
  return { diff, files };
}
