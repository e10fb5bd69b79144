import * as vscode from 'vscode';
import type { ApiClient } from './api-client';
import type { DockhandState } from './dockhand-state';

/*
 * Inline diff review: a "Changes" tree of the files the agent changed in the selected task, and a
 * read-only content provider for `dockhand-base:` (the file at the base SHA) and `dockhand-agent:`
 * (the agent's version) so VS Code's own diff editor and Comments API work on them.
 * URIs look like `dockhand-agent:/<path in repo>?task=<taskId>`: the path is the repository's, so
 * the Comments panel and editor tabs show `src/calc.js`, not an internal task folder.
 */

export const BASE_SCHEME = 'dockhand-base';
export const AGENT_SCHEME = 'dockhand-agent';

export function changeUri(scheme: typeof BASE_SCHEME | typeof AGENT_SCHEME, taskId: string, path: string): vscode.Uri {
  return vscode.Uri.from({ scheme, path: `/${path.replace(/^\/+/, '')}`, query: `task=${encodeURIComponent(taskId)}` });
}

export function parseChangeUri(uri: vscode.Uri): { taskId: string; path: string } | undefined {
  if (uri.scheme !== BASE_SCHEME && uri.scheme !== AGENT_SCHEME) return undefined;
  const task = /(?:^|&)task=([^&]+)/.exec(uri.query);
  if (task) return uri.path.length > 1 ? { taskId: decodeURIComponent(task[1]!), path: uri.path.replace(/^\/+/, '') } : undefined;
  // The older form, /<taskId>/<path>, from editors restored after an update.
  const match = /^\/([^/]+)\/(.+)$/.exec(uri.path);
  return match ? { taskId: decodeURIComponent(match[1]!), path: match[2]! } : undefined;
}

export class ChangeContentProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly cache = new Map<string, Promise<{ base: string | null; after: string | null }>>();

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
    return (uri.scheme === BASE_SCHEME ? file.base : file.after) ?? '';
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
  constructor(
    readonly taskId: string,
    readonly path: string,
    readonly change: 'added' | 'modified' | 'deleted',
  ) {
    super(path, vscode.TreeItemCollapsibleState.None);
    this.description = change;
    this.resourceUri = changeUri(AGENT_SCHEME, taskId, path);
    this.contextValue = `dockhand.change.${change}`;
    this.tooltip = `${path} (${change}): click to compare with the base`;
    this.command = { command: 'dockhand.openChange', title: 'Open diff', arguments: [taskId, path] };
  }
}

export class ChangesTreeProvider implements vscode.TreeDataProvider<ChangeItem>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<ChangeItem | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [this.changed];

  constructor(
    private readonly state: DockhandState,
    content: ChangeContentProvider,
  ) {
    this.disposables.push(
      state.onDidChangeSelection(() => this.changed.fire(undefined)),
      state.onDidReceiveEvents(({ taskId, events }) => {
        let touched = false;
        for (const event of events) {
          if (event.type !== 'file.changed') continue;
          content.invalidate(taskId, event.data.path);
          touched = true;
        }
        if (touched && taskId === state.selectedTaskId) this.changed.fire(undefined);
      }),
    );
  }

  getTreeItem(item: ChangeItem): vscode.TreeItem {
    return item;
  }

  getChildren(item?: ChangeItem): ChangeItem[] {
    const taskId = this.state.selectedTaskId;
    if (item || !taskId) return [];
    const files = this.state.trajectory(taskId).summary.changedFiles;
    return [...files].sort(([a], [b]) => a.localeCompare(b)).map(([path, change]) => new ChangeItem(taskId, path, change));
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
