import type { ChangedFile } from '@dockhand/protocol';
import type { ReviewFile } from '@dockhand/webview-ui/messages';
import * as vscode from 'vscode';
import type { ApiClient } from './api-client';
import type { DockhandState } from './dockhand-state';
import type { FileDecisions } from './file-decisions';
import { reviewFileRows, type DiffFileList } from './review-files';

/*
 * Inline diff review: a "Changes" tree of the files of the selected task's diff under review (the
 * server's, `review-files.ts`: never the trajectory's change events) with the files an earlier
 * approval left out, and a read-only content provider for `dockhand-base:` (the file at the base SHA) and `dockhand-agent:`
 * (the agent's version) so VS Code's own diff editor and Comments API work on them.
 * URIs look like `dockhand-agent:/<path in repo>?task=<taskId>`: the path is the repository's, so
 * the Comments panel and editor tabs show `src/calc.js`, not an internal task folder.
 * From the second review round, `dockhand-reviewed:` is the file as it was when changes were
 * last requested, so one round's own changes open in the diff editor too.
 * In review each file has a checkbox: unchecked files are left out of the push (FileDecisions).
 */

export const BASE_SCHEME = 'dockhand-base';
export const AGENT_SCHEME = 'dockhand-agent';
export const REVIEWED_SCHEME = 'dockhand-reviewed';
type ChangeScheme = typeof BASE_SCHEME | typeof AGENT_SCHEME | typeof REVIEWED_SCHEME;

export function changeUri(scheme: ChangeScheme, taskId: string, path: string): vscode.Uri {
  return vscode.Uri.from({ scheme, path: `/${path.replace(/^\/+/, '')}`, query: `task=${encodeURIComponent(taskId)}` });
}

export function parseChangeUri(uri: vscode.Uri): { taskId: string; path: string } | undefined {
  if (uri.scheme !== BASE_SCHEME && uri.scheme !== AGENT_SCHEME && uri.scheme !== REVIEWED_SCHEME) return undefined;
  const task = /(?:^|&)task=([^&]+)/.exec(uri.query);
  if (task) return uri.path.length > 1 ? { taskId: decodeURIComponent(task[1]!), path: uri.path.replace(/^\/+/, '') } : undefined;
  // The older form, /<taskId>/<path>, from editors restored after an update.
  const match = /^\/([^/]+)\/(.+)$/.exec(uri.path);
  return match ? { taskId: decodeURIComponent(match[1]!), path: match[2]! } : undefined;
}

export class ChangeContentProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly cache = new Map<string, Promise<{ base: string | null; after: string | null; reviewed?: string | null | undefined }>>();

  constructor(private readonly api: () => ApiClient) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const target = parseChangeUri(uri);
    if (!target) return '';
    const key = `${target.taskId}\n${target.path}`;
    let pending = this.cache.get(key);
    if (!pending) {
      pending = this.api().getFile(target.taskId, target.path);
      this.cache.set(key, pending);
      pending.catch(() => this.cache.delete(key));
    }
    const file = await pending;
    if (uri.scheme === REVIEWED_SCHEME) return file.reviewed ?? file.base ?? '';
    return (uri.scheme === BASE_SCHEME ? file.base : file.after) ?? '';
  }

  /** A new review round: every file's "as reviewed" version moved on. */
  invalidateTask(taskId: string): void {
    for (const key of [...this.cache.keys()]) {
      if (!key.startsWith(`${taskId}\n`)) continue;
      this.cache.delete(key);
      const path = key.slice(taskId.length + 1);
      this.changed.fire(changeUri(AGENT_SCHEME, taskId, path));
      this.changed.fire(changeUri(REVIEWED_SCHEME, taskId, path));
    }
  }

  /** The agent changed the file again: drop the cached copy and refresh open editors. */
  invalidate(taskId: string, path: string): void {
    this.cache.delete(`${taskId}\n${path}`);
    this.changed.fire(changeUri(AGENT_SCHEME, taskId, path));
  }

  dispose(): void {
    this.changed.dispose();
  }
}

export class ChangeItem extends vscode.TreeItem {
  readonly taskId: string;
  readonly path: string;
  /** Its change in the diff under review; undefined: left out at an earlier approval and no longer in the diff. */
  readonly change: ChangedFile['change'] | undefined;
  /** An earlier approval left it out (the server's stored decision): the default when the reviewer has not decided. */
  readonly leftOutBefore: boolean;

  constructor(
    taskId: string,
    row: ReviewFile,
    options: {
      /** In review: a checkbox on each file of the diff (checked: its changes go out with the approval). */
      reviewing: boolean;
      leftOutBefore: boolean;
    },
  ) {
    super(row.path, vscode.TreeItemCollapsibleState.None);
    this.taskId = taskId;
    this.path = row.path;
    this.change = row.change;
    this.leftOutBefore = options.leftOutBefore;
    const notReverted = options.reviewing && row.notReverted;
    this.description = [row.change ?? '', notReverted ? 'revert not done' : '', row.accepted ? '' : 'left out'].filter(Boolean).join(' · ');
    if (!row.change) {
      // Nothing of it is in the diff (nor in the PR): nothing to open or to push, no checkbox.
      this.contextValue = 'dockhand.change.leftOut';
      this.tooltip = `${row.path}: left out of the push at an earlier approval; the pull request does not change it`;
      return;
    }
    if (options.reviewing) {
      this.checkboxState = {
        state: row.accepted ? vscode.TreeItemCheckboxState.Checked : vscode.TreeItemCheckboxState.Unchecked,
        tooltip: row.accepted ? 'Pushed with the approval; uncheck to leave this file out' : 'Left out of the push; check to include it',
        accessibilityInformation: { label: `Push the changes to ${row.path}`, role: 'checkbox' },
      };
    }
    this.resourceUri = changeUri(AGENT_SCHEME, taskId, row.path);
    this.contextValue = `dockhand.change.${row.change}`;
    this.tooltip = `${row.path} (${row.change}): click to compare with the base`;
    this.command = { command: 'dockhand.openChange', title: 'Open diff', arguments: [taskId, row.path] };
  }
}

/** Where the Changes view reads the diff's files (`DiffFiles`). */
export interface DiffFileSource {
  get(taskId: string): DiffFileList | undefined;
  onDidChange: vscode.Event<string>;
}

/** The rows of a task's review file list: the diff's files with the decisions (undefined until the diff is read). */
export function taskReviewFiles(files: DiffFileSource, decisions: FileDecisions, taskId: string): ReviewFile[] | undefined {
  const list = files.get(taskId);
  if (!list) return undefined;
  return reviewFileRows(list, { isAccepted: (path, leftOutBefore) => decisions.isAccepted(taskId, path, leftOutBefore), unreverted: decisions.unreverted(taskId) });
}

export class ChangesTreeProvider implements vscode.TreeDataProvider<ChangeItem>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<ChangeItem | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [this.changed];

  constructor(
    private readonly state: DockhandState,
    content: ChangeContentProvider,
    private readonly decisions: FileDecisions,
    private readonly files: DiffFileSource,
  ) {
    const ifSelected = (taskId: string) => {
      if (taskId === state.selectedTaskId) this.changed.fire(undefined);
    };
    this.disposables.push(
      state.onDidChangeSelection(() => this.changed.fire(undefined)),
      decisions.onDidChange(ifSelected),
      // The list is the server's diff: it is drawn again when a new read of it differs.
      files.onDidChange(ifSelected),
      state.onDidReceiveEvents(({ taskId, events }) => {
        let touched = false;
        for (const event of events) {
          // The review state (checkboxes) and, after a request for changes, the reviewed versions.
          if (event.type === 'task.state') touched = true;
          // A copy fetched while the agent worked may predate its last edits; the review sees the stored diff.
          if (event.type === 'task.state' && event.data.state === 'awaiting_review') content.invalidateTask(taskId);
          if (event.type === 'review.requested_changes') content.invalidateTask(taskId);
          if (event.type === 'file.changed') content.invalidate(taskId, event.data.path);
        }
        if (touched) ifSelected(taskId);
      }),
    );
  }

  getTreeItem(item: ChangeItem): vscode.TreeItem {
    return item;
  }

  getChildren(item?: ChangeItem): ChangeItem[] {
    const taskId = this.state.selectedTaskId;
    if (item || !taskId) return [];
    const reviewing = this.state.trajectory(taskId).summary.state === 'awaiting_review';
    const leftOut = new Set(this.files.get(taskId)?.leftOut ?? []);
    return (taskReviewFiles(this.files, this.decisions, taskId) ?? []).map((row) => new ChangeItem(taskId, row, { reviewing, leftOutBefore: leftOut.has(row.path) }));
  }

  /** The view's checkboxes write the decisions (several at once when many rows are toggled). */
  onCheckboxes(event: vscode.TreeCheckboxChangeEvent<ChangeItem>): void {
    for (const [item, checked] of event.items) {
      if (item.change) this.decisions.set(item.taskId, item.path, checked === vscode.TreeItemCheckboxState.Checked, item.leftOutBefore);
    }
  }

  dispose(): void {
    for (const disposable of this.disposables) disposable.dispose();
  }
}

/** Opens base ↔ agent in the diff editor; `line` (1-based, the agent's version) is revealed and selected. */
export async function openChangeDiff(taskId: string, path: string, line?: number): Promise<void> {
  const name = path.split('/').pop() ?? path;
  const at = line ? new vscode.Range(line - 1, 0, line - 1, 0) : undefined;
  await vscode.commands.executeCommand(
    'vscode.diff',
    changeUri(BASE_SCHEME, taskId, path),
    changeUri(AGENT_SCHEME, taskId, path),
    `${name} (base ↔ Dockhand)`,
    { preview: true, ...(at ? { selection: at } : {}) },
  );
}

/**
 * The native multi-file diff editor on a task's changes: `all` is base ↔ the agent's version of
 * every changed file; `round` (from the second review round) is the version changes were last
 * requested on ↔ the agent's, for the files this round changed.
 */
export async function openTaskChanges(api: ApiClient, taskId: string, scope: 'round' | 'all', title: string): Promise<number> {
  const diff = await api.getDiff(taskId);
  if (scope === 'round' && diff.roundFiles === undefined) {
    throw new Error("this task is in its first review round: its changes are all changes (no earlier review to compare with)");
  }
  const files = scope === 'round' ? (diff.roundFiles ?? []) : diff.files;
  if (!files.length) {
    void vscode.window.showInformationMessage(scope === 'round' ? 'Dockhand: the agent changed nothing in this round.' : 'Dockhand: the task has no changes.');
    return 0;
  }
  const left = scope === 'round' ? REVIEWED_SCHEME : BASE_SCHEME;
  const label = scope === 'round' ? `${title}: round ${diff.round} changes (reviewed ↔ Dockhand)` : `${title}: all changes (base ↔ Dockhand)`;
  await vscode.commands.executeCommand(
    'vscode.changes',
    label,
    files.map((file) => [changeUri(AGENT_SCHEME, taskId, file.path), changeUri(left, taskId, file.path), changeUri(AGENT_SCHEME, taskId, file.path)]),
  );
  return files.length;
}

/**
 * Space on a row of the Changes view toggles the file's checkbox in review (VS Code's own Space
 * opens the row, here its diff). The API does not say which row has the keyboard focus; toggling
 * the list's selection of the focused row (`list.toggleSelection`) does, through the view's
 * selection event, so the row that changed selection is the focused one.
 */
export async function toggleFocusedFile(view: vscode.TreeView<ChangeItem>, decisions: FileDecisions, waitMs = 1_000): Promise<string | undefined> {
  const key = (item: ChangeItem) => `${item.taskId}\n${item.path}`;
  const before = new Map(view.selection.map((item) => [key(item), item]));
  const selection = new Promise<readonly ChangeItem[] | undefined>((resolve) => {
    const timer = setTimeout(() => {
      listener.dispose();
      resolve(undefined);
    }, waitMs);
    const listener = view.onDidChangeSelection((event) => {
      clearTimeout(timer);
      listener.dispose();
      resolve(event.selection);
    });
  });
  await vscode.commands.executeCommand('list.toggleSelection');
  const after = await selection;
  let item: ChangeItem | undefined;
  if (after) {
    const now = new Map(after.map((entry) => [key(entry), entry]));
    item = [...now.values()].find((entry) => !before.has(key(entry))) ?? [...before.values()].find((entry) => !now.has(key(entry)));
  } else {
    item = view.selection[0];
  }
  // A file left out earlier and no longer in the diff has nothing to push: no checkbox to toggle.
  if (!item?.change) return undefined;
  decisions.set(item.taskId, item.path, !decisions.isAccepted(item.taskId, item.path, item.leftOutBefore), item.leftOutBefore);
  return item.path;
}
