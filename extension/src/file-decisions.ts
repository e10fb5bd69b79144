import * as vscode from 'vscode';

/*
 * Accept per file: which files of a task's diff the developer leaves out of the push, per task,
 * until the review goes out. The Changes view's checkboxes and the panel's file list both write
 * here and both show it; "Approve and push" sends the rejected files (the server pushes the
 * rest), "Request changes" sends them as files the agent is to revert. Kept in memory only: a
 * half-made review does not outlive the window, as pending line comments do not.
 */

export class FileDecisions implements vscode.Disposable {
  private readonly rejectedByTask = new Map<string, Set<string>>();
  private readonly changed = new vscode.EventEmitter<string>();
  /** Fires with the task id whenever that task's decisions change. */
  readonly onDidChange = this.changed.event;

  /** The files left out, limited to `files` when given (the diff's current files), sorted. */
  rejected(taskId: string, files?: Iterable<string>): string[] {
    const rejected = this.rejectedByTask.get(taskId);
    if (!rejected) return [];
    const current = files ? new Set(files) : undefined;
    return [...rejected].filter((path) => !current || current.has(path)).sort();
  }

  isAccepted(taskId: string, path: string): boolean {
    return !this.rejectedByTask.get(taskId)?.has(path);
  }

  set(taskId: string, path: string, accepted: boolean): void {
    const rejected = this.rejectedByTask.get(taskId) ?? new Set<string>();
    if (accepted === !rejected.has(path)) return;
    if (accepted) rejected.delete(path);
    else rejected.add(path);
    if (rejected.size) this.rejectedByTask.set(taskId, rejected);
    else this.rejectedByTask.delete(taskId);
    this.changed.fire(taskId);
  }

  /** The review went out: the next round starts with every file accepted. */
  clear(taskId: string): void {
    if (!this.rejectedByTask.delete(taskId)) return;
    this.changed.fire(taskId);
  }

  dispose(): void {
    this.rejectedByTask.clear();
    this.changed.dispose();
  }
}
