import type { TaskEvent } from '@dockhand/protocol';
import * as vscode from 'vscode';

/*
 * Accept per file: which files of a task's diff the developer leaves out of the push, per task.
 * The Changes view's checkboxes and the panel's file list both write here and both show it;
 * "Approve and push" sends the rejected files (the server pushes the rest), "Request changes"
 * sends them as files the agent is to revert.
 *
 * A decision is the reviewer's until the reviewer changes it: it outlives "Request changes" (round
 * 2 starts with the file still unchecked, not silently back in the push) and a reload of the
 * window (kept in the workspace state). The files a request asked the agent to revert are kept
 * too, so round 2 can say which reverts did not happen (the file is still in the diff).
 */

/** What is kept per task in the workspace state. */
interface Stored {
  rejected: string[];
  revertRequested: string[];
  /**
   * Files the reviewer checked again after an earlier approval had left them out (the server's
   * `leftOut`): without it such a file would fall back to unchecked.
   */
  accepted?: string[];
}

/** The part of `vscode.Memento` used here (the workspace state, or a map in tests). */
export interface DecisionStore {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void>;
}

const KEY = 'dockhand.fileDecisions';

export class FileDecisions implements vscode.Disposable {
  private readonly byTask: Map<string, Stored>;
  /** The diff's files as last read from the server, per task (not kept: read again after a reload). */
  private readonly currentFiles = new Map<string, Set<string>>();
  private readonly changed = new vscode.EventEmitter<string>();
  /** Fires with the task id whenever that task's decisions change. */
  readonly onDidChange = this.changed.event;

  constructor(private readonly store?: DecisionStore) {
    this.byTask = new Map(Object.entries(store?.get<Record<string, Stored>>(KEY) ?? {}));
  }

  /** The files left out, limited to `files` when given (the diff's current files), sorted. */
  rejected(taskId: string, files?: Iterable<string>): string[] {
    const rejected = this.byTask.get(taskId)?.rejected ?? [];
    const current = files ? new Set(files) : undefined;
    return rejected.filter((path) => !current || current.has(path)).sort();
  }

  /**
   * The reviewer's decision on the file; without one, checked unless an earlier approval left it
   * out (`leftOutBefore`, from the server's stored decisions): a left-out file stays left out.
   */
  isAccepted(taskId: string, path: string, leftOutBefore = false): boolean {
    const entry = this.byTask.get(taskId);
    if (entry?.rejected.includes(path)) return false;
    if (entry?.accepted?.includes(path)) return true;
    return !leftOutBefore;
  }

  /** `leftOutBefore` as for `isAccepted`: checking such a file is kept as a decision of its own. */
  set(taskId: string, path: string, accepted: boolean, leftOutBefore = false): void {
    const entry = this.byTask.get(taskId) ?? { rejected: [], revertRequested: [] };
    const rejected = accepted ? entry.rejected.filter((p) => p !== path) : [...new Set([...entry.rejected, path])].sort();
    const checked = accepted && leftOutBefore ? [...new Set([...(entry.accepted ?? []), path])].sort() : (entry.accepted ?? []).filter((p) => p !== path);
    if (JSON.stringify([rejected, checked]) === JSON.stringify([entry.rejected, entry.accepted ?? []])) return;
    this.save(taskId, { ...entry, rejected, ...(checked.length ? { accepted: checked } : { accepted: undefined }) });
  }

  /** "Request changes" went out asking the agent to revert `files`: the decisions stay as they are. */
  revertsRequested(taskId: string, files: string[]): void {
    const entry = this.byTask.get(taskId) ?? { rejected: [], revertRequested: [] };
    entry.revertRequested = [...files].sort();
    this.save(taskId, entry);
  }

  /** The files the last "Request changes" asked the agent to revert. */
  revertRequestedFor(taskId: string): string[] {
    return this.byTask.get(taskId)?.revertRequested ?? [];
  }

  /** The files of the task's diff as the server has it now (read when the task is back in review). */
  diffRead(taskId: string, files: string[]): void {
    this.currentFiles.set(taskId, new Set(files));
    if (this.byTask.get(taskId)?.revertRequested.length) this.changed.fire(taskId);
  }

  /** Files the last request asked the agent to revert that are still in the task's diff: reverts that did not happen. */
  unreverted(taskId: string): string[] {
    const requested = this.byTask.get(taskId)?.revertRequested ?? [];
    const current = this.currentFiles.get(taskId);
    return current ? requested.filter((path) => current.has(path)) : [];
  }

  /** The task is done with review (approved and pushed, or rejected): nothing left to decide. */
  clear(taskId: string): void {
    this.currentFiles.delete(taskId);
    if (!this.byTask.has(taskId)) return;
    this.save(taskId, undefined);
  }

  dispose(): void {
    this.changed.dispose();
  }

  private save(taskId: string, entry: Stored | undefined): void {
    if (entry && (entry.rejected.length || entry.revertRequested.length || entry.accepted?.length)) this.byTask.set(taskId, entry);
    else this.byTask.delete(taskId);
    void this.store?.update(KEY, Object.fromEntries(this.byTask));
    this.changed.fire(taskId);
  }
}

export interface RevertCheckDeps {
  decisions: FileDecisions;
  onDidReceiveEvents: vscode.Event<{ taskId: string; events: TaskEvent[] }>;
  /** The files of the task's diff as the server has it. */
  diffFiles(taskId: string): Promise<string[]>;
  log: vscode.LogOutputChannel;
  /** Selects the task and shows the side panel. */
  show(taskId: string): void;
}

/**
 * When a task whose review asked for reverts is back in review, reads its diff and says which
 * reverts did not happen (a warning; the panel and the Changes view mark the files), instead of
 * letting round 2 look as if the files were dealt with.
 */
export function checkRequestedReverts(deps: RevertCheckDeps): vscode.Disposable {
  const checked = new Set<string>();
  return deps.onDidReceiveEvents(({ taskId, events }) => {
    const back = events.filter((e) => e.type === 'task.state' && e.data.state === 'awaiting_review').at(-1);
    if (!back || checked.has(`${taskId}:${back.seq}`)) return;
    checked.add(`${taskId}:${back.seq}`);
    if (!deps.decisions.revertRequestedFor(taskId).length) return;
    deps.diffFiles(taskId).then(
      (files) => {
        deps.decisions.diffRead(taskId, files);
        const left = deps.decisions.unreverted(taskId);
        if (!left.length) return;
        const names = left.join(', ');
        void Promise.resolve(
          vscode.window.showWarningMessage(
            `Dockhand: you asked the agent to revert ${names}, but ${left.length === 1 ? 'it is' : 'they are'} still changed in this round. ${left.length === 1 ? 'It stays' : 'They stay'} unchecked (left out of the push) until you check ${left.length === 1 ? 'it' : 'them'}.`,
            'Review',
          ),
        ).then((picked) => picked && deps.show(taskId));
      },
      (error: unknown) => deps.log.warn(`Could not read the diff of ${taskId} to check the requested reverts: ${error instanceof Error ? error.message : String(error)}`),
    );
  });
}
