import type { ChangedFile, TaskDiffResponse, TaskEvent } from '@dockhand/protocol';
import type { ReviewFile } from '@dockhand/webview-ui/messages';
import * as vscode from 'vscode';

/*
 * The review's file list, from the server's diff under review (`GET /v1/tasks/:id/diff`: its
 * `files` and the stored decisions in `leftOut`) and the reviewer's own decisions, never from the
 * trajectory's `file.changed` events: a file the agent changed and then restored is not in the
 * diff, and a file an approval left out is not in a PR round's diff (the PR does not have it).
 * The Changes view, the panel's list and counts, and the approve / request-changes payloads all
 * read it, so what is listed is what would be pushed, and no payload names a file the server
 * does not have in the diff.
 */

export interface DiffFileList {
  files: ChangedFile[];
  /** Files left out at an earlier approval (the server's stored decisions). */
  leftOut: string[];
}

export interface RowDecisions {
  /** Whether `path` goes out with the approval; `leftOutBefore`: an earlier approval left it out. */
  isAccepted(path: string, leftOutBefore: boolean): boolean;
  /** Files the last "Request changes" asked the agent to revert that are still in the diff. */
  unreverted: readonly string[];
}

/**
 * One row per file of the diff (checked unless the reviewer, or an earlier approval, left it
 * out), then one per file left out earlier that is no longer in the diff (left out, nothing to
 * push). Sorted by path.
 */
export function reviewFileRows(list: DiffFileList, decisions: RowDecisions): ReviewFile[] {
  const inDiff = new Set(list.files.map((file) => file.path));
  const left = new Set(list.leftOut);
  const rows: ReviewFile[] = list.files.map((file) => ({
    path: file.path,
    change: file.change,
    accepted: decisions.isAccepted(file.path, left.has(file.path)),
    notReverted: decisions.unreverted.includes(file.path),
  }));
  for (const path of left) if (!inDiff.has(path)) rows.push({ path, accepted: false, notReverted: false });
  return rows.sort((a, b) => a.path.localeCompare(b.path));
}

/** What "Approve" and "Request changes" send as `rejectedFiles`: unchecked files of the diff, and only those. */
export function rejectedForReview(rows: readonly ReviewFile[]): string[] {
  return rows.filter((row) => row.change !== undefined && !row.accepted).map((row) => row.path);
}

/** Events after which the diff under review (or its stored decisions) may be different. */
const DIFF_EVENTS = new Set<TaskEvent['type']>(['file.changed', 'task.state', 'review.requested_changes', 'review.files_rejected', 'pr.opened', 'pr.pushed', 'pr.feedback']);

export interface DiffFilesDeps {
  getDiff(taskId: string): Promise<TaskDiffResponse>;
  onDidReceiveEvents: vscode.Event<{ taskId: string; events: readonly TaskEvent[] }>;
  onDidChangeSelection: vscode.Event<unknown>;
  selectedTaskId(): string | undefined;
  log: Pick<vscode.LogOutputChannel, 'warn'>;
  /** Events come in bursts (a replay, an agent's edits): one read per burst. */
  debounceMs?: number;
}

/**
 * The diff's files per task as last read from the server, read again when an event says the diff
 * may have changed (for the selected task and any task already read). Stale answers (a read
 * overtaken by a later one) are dropped.
 */
export class DiffFiles implements vscode.Disposable {
  private readonly byTask = new Map<string, DiffFileList>();
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();
  private readonly reads = new Map<string, number>();
  private readonly inFlight = new Set<string>();
  private readonly changed = new vscode.EventEmitter<string>();
  /** Fires with the task id when its list was read and differs from before. */
  readonly onDidChange = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [this.changed];

  constructor(private readonly deps: DiffFilesDeps) {
    this.disposables.push(
      deps.onDidChangeSelection(() => {
        const taskId = deps.selectedTaskId();
        if (taskId && !this.byTask.has(taskId)) this.refresh(taskId);
      }),
      deps.onDidReceiveEvents(({ taskId, events }) => {
        if (taskId !== deps.selectedTaskId() && !this.byTask.has(taskId)) return;
        if (events.some((event) => DIFF_EVENTS.has(event.type))) this.refresh(taskId);
      }),
    );
    const selected = deps.selectedTaskId();
    if (selected) this.refresh(selected);
  }

  /** The list as last read; undefined until the first read answers (asks for one). */
  get(taskId: string): DiffFileList | undefined {
    const list = this.byTask.get(taskId);
    if (!list && !this.timers.has(taskId) && !this.inFlight.has(taskId)) this.refresh(taskId);
    return list;
  }

  /** Reads the list again after the debounce. */
  refresh(taskId: string): void {
    clearTimeout(this.timers.get(taskId));
    this.timers.set(
      taskId,
      setTimeout(() => {
        this.timers.delete(taskId);
        this.read(taskId).catch((error: unknown) => this.deps.log.warn(`Could not read the diff of ${taskId}: ${error instanceof Error ? error.message : String(error)}`));
      }, this.deps.debounceMs ?? 250),
    );
  }

  /** Reads the list now (a review decision reads it first, so its payload names only files of the diff). */
  async read(taskId: string): Promise<DiffFileList> {
    const generation = (this.reads.get(taskId) ?? 0) + 1;
    this.reads.set(taskId, generation);
    this.inFlight.add(taskId);
    const diff = await this.deps.getDiff(taskId).finally(() => this.inFlight.delete(taskId));
    const list: DiffFileList = { files: diff.files, leftOut: diff.leftOut };
    if (this.reads.get(taskId) !== generation) return list;
    const before = this.byTask.get(taskId);
    this.byTask.set(taskId, list);
    if (JSON.stringify(before) !== JSON.stringify(list)) this.changed.fire(taskId);
    return list;
  }

  dispose(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    for (const disposable of this.disposables) disposable.dispose();
  }
}
