import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('vscode', () => import('./test/vscode-stub'));

import type { ChangedFile, TaskDiffResponse, TaskState } from '@dockhand/protocol';
import type * as vscode from 'vscode';
import type { ApiClient } from './api-client';
import { AGENT_SCHEME, BASE_SCHEME, ChangeContentProvider, ChangesTreeProvider, REVIEWED_SCHEME, changeUri, openTaskChanges, toggleFocusedFile } from './changes';
import type { DockhandState } from './dockhand-state';
import { FileDecisions } from './file-decisions';
import type { DiffFileList } from './review-files';
import { EventEmitter, TreeItemCheckboxState, commands } from './test/vscode-stub';

/** The checkbox as the Changes view sets it (always the object form). */
const box = (item: vscode.TreeItem) => (typeof item.checkboxState === 'object' ? item.checkboxState : undefined);

/** The state the Changes view reads: one selected task and its state. */
function fakeState(state: TaskState) {
  // The trajectory's change events name a file the server's diff does not have (changed, then restored): never listed.
  const summary = { state, changedFiles: new Map<string, 'added' | 'modified' | 'deleted'>([['src/calc.js', 'modified'], ['CHANGELOG.md', 'added'], ['restored.md', 'modified']]) };
  const received = new EventEmitter<{ taskId: string; events: unknown[] }>();
  return {
    summary,
    received,
    state: {
      selectedTaskId: 't1',
      trajectory: () => ({ summary }),
      onDidChangeSelection: new EventEmitter<void>().event,
      onDidReceiveEvents: received.event,
    } as unknown as DockhandState,
  };
}

/** The diff under review as the server lists it (DiffFiles stands in), and the files left out earlier. */
function diffFiles(leftOut: string[] = [], files: ChangedFile[] = [{ path: 'src/calc.js', change: 'modified' }, { path: 'CHANGELOG.md', change: 'added' }]) {
  const changed = new EventEmitter<string>();
  const list: DiffFileList = { files, leftOut };
  return { list, changed, source: { get: () => list, onDidChange: changed.event } };
}

const api = (diff: Partial<TaskDiffResponse>, file = { path: 'src/calc.js', base: 'a', after: 'c', reviewed: 'b' }) =>
  ({
    getDiff: vi.fn(async () => ({ baseSha: 'f'.repeat(40), diff: '', files: [], round: 1, ...diff })),
    getFile: vi.fn(async () => file),
  }) as unknown as ApiClient;

beforeEach(() => {
  commands.executed.length = 0;
});

describe('Changes view: accept per file', () => {
  it('gives each file a checkbox in review (checked: pushed), follows the decisions and writes them back', () => {
    const { state } = fakeState('awaiting_review');
    const decisions = new FileDecisions();
    const content = new ChangeContentProvider(() => api({}));
    const tree = new ChangesTreeProvider(state, content, decisions, diffFiles().source);
    let refreshed = 0;
    tree.onDidChangeTreeData(() => (refreshed += 1));
    const items = () => tree.getChildren().map((item) => [item.path, box(item)?.state, item.description]);
    expect(items()).toEqual([
      ['CHANGELOG.md', TreeItemCheckboxState.Checked, 'added'],
      ['src/calc.js', TreeItemCheckboxState.Checked, 'modified'],
    ]);
    const [notes] = tree.getChildren();
    tree.onCheckboxes({ items: [[notes!, TreeItemCheckboxState.Unchecked]] } as unknown as vscode.TreeCheckboxChangeEvent<typeof notes & object>);
    expect(decisions.rejected('t1')).toEqual(['CHANGELOG.md']);
    expect(refreshed).toBe(1);
    expect(items()[0]).toEqual(['CHANGELOG.md', TreeItemCheckboxState.Unchecked, 'added · left out']);
    expect(box(tree.getChildren()[0]!)?.accessibilityInformation?.label).toBe('Push the changes to CHANGELOG.md');
  });

  it("lists the server's diff, not the change events, and keeps a file an earlier approval left out left out (PR round)", () => {
    const { state } = fakeState('awaiting_review');
    const decisions = new FileDecisions();
    // A PR round: README.md was left out of the PR, so the round's diff does not have it.
    const files = diffFiles(['README.md'], [{ path: 'src/calc.js', change: 'modified' }]);
    const tree = new ChangesTreeProvider(state, new ChangeContentProvider(() => api({})), decisions, files.source);
    let refreshed = 0;
    tree.onDidChangeTreeData(() => (refreshed += 1));
    const items = () => tree.getChildren().map((item) => [item.path, box(item)?.state, item.description, item.command?.command]);
    expect(items()).toEqual([
      ['README.md', undefined, 'left out', undefined],
      ['src/calc.js', TreeItemCheckboxState.Checked, 'modified', 'dockhand.openChange'],
    ]);
    // The agent changed README.md again this round: it is in the diff, unchecked until the reviewer checks it.
    files.list.files = [{ path: 'README.md', change: 'modified' }, { path: 'src/calc.js', change: 'modified' }];
    files.changed.fire('t1');
    expect(refreshed).toBe(1);
    expect(items()[0]).toEqual(['README.md', TreeItemCheckboxState.Unchecked, 'modified · left out', 'dockhand.openChange']);
    const [readme] = tree.getChildren();
    tree.onCheckboxes({ items: [[readme!, TreeItemCheckboxState.Checked]] } as unknown as vscode.TreeCheckboxChangeEvent<typeof readme & object>);
    expect(items()[0]).toEqual(['README.md', TreeItemCheckboxState.Checked, 'modified', 'dockhand.openChange']);
  });

  it('has no checkboxes outside review', () => {
    const { state } = fakeState('running');
    const tree = new ChangesTreeProvider(state, new ChangeContentProvider(() => api({})), new FileDecisions(), diffFiles().source);
    expect(tree.getChildren().map((item) => item.checkboxState)).toEqual([undefined, undefined]);
  });
});

describe('a round of changes in the diff editor', () => {
  it("opens this round's files as reviewed ↔ agent, and all files as base ↔ agent, in the multi-file diff editor", async () => {
    const client = api({ round: 2, files: [{ path: 'CHANGELOG.md', change: 'added' }, { path: 'src/calc.js', change: 'modified' }], roundFiles: [{ path: 'src/calc.js', change: 'modified' }] });
    expect(await openTaskChanges(client, 't1', 'round', 'Fix average')).toBe(1);
    const [round] = commands.executed;
    expect(round?.command).toBe('vscode.changes');
    expect(round?.args[0]).toBe('Fix average: round 2 changes (reviewed ↔ Dockhand)');
    expect((round?.args[1] as vscode.Uri[][]).map((triple) => triple.map((uri) => uri.toString()))).toEqual([
      [changeUri(AGENT_SCHEME, 't1', 'src/calc.js'), changeUri(REVIEWED_SCHEME, 't1', 'src/calc.js'), changeUri(AGENT_SCHEME, 't1', 'src/calc.js')].map(String),
    ]);
    expect(await openTaskChanges(client, 't1', 'all', 'Fix average')).toBe(2);
    const all = commands.executed[1]!;
    expect(all.args[0]).toBe('Fix average: all changes (base ↔ Dockhand)');
    expect((all.args[1] as vscode.Uri[][]).map((triple) => triple[1]!.scheme)).toEqual([BASE_SCHEME, BASE_SCHEME]);
  });

  it('says why when the task is in its first round', async () => {
    await expect(openTaskChanges(api({ files: [{ path: 'a', change: 'added' }] }), 't1', 'round', 'x')).rejects.toThrow('first review round');
    expect(commands.executed).toEqual([]);
  });

  it('fetches a file again once the task is back in review (a copy read while the agent worked may be stale)', async () => {
    const { state, received } = fakeState('awaiting_review');
    const client = api({});
    const content = new ChangeContentProvider(() => client);
    new ChangesTreeProvider(state, content, new FileDecisions(), diffFiles().source);
    const uri = changeUri(AGENT_SCHEME, 't1', 'src/calc.js') as unknown as vscode.Uri;
    await content.provideTextDocumentContent(uri);
    await content.provideTextDocumentContent(uri);
    expect(client.getFile).toHaveBeenCalledTimes(1);
    received.fire({ taskId: 't1', events: [{ type: 'task.state', data: { state: 'awaiting_review' } }] });
    await content.provideTextDocumentContent(uri);
    expect(client.getFile).toHaveBeenCalledTimes(2);
  });

  it('serves the file as reviewed last under dockhand-reviewed:', async () => {
    const content = new ChangeContentProvider(() => api({}));
    expect(await content.provideTextDocumentContent(changeUri(REVIEWED_SCHEME, 't1', 'src/calc.js') as unknown as vscode.Uri)).toBe('b');
    expect(await content.provideTextDocumentContent(changeUri(BASE_SCHEME, 't1', 'src/calc.js') as unknown as vscode.Uri)).toBe('a');
    expect(await content.provideTextDocumentContent(changeUri(AGENT_SCHEME, 't1', 'src/calc.js') as unknown as vscode.Uri)).toBe('c');
  });
});

describe('Changes view: Space toggles the focused file', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  /** A tree view whose focused row VS Code's `list.toggleSelection` adds to (or takes from) the selection. */
  function fakeView(tree: ChangesTreeProvider, focused: number, selected: number[] = []) {
    const items = tree.getChildren();
    const changed = new EventEmitter<{ selection: typeof items }>();
    const view = { selection: selected.map((index) => items[index]!), onDidChangeSelection: changed.event };
    vi.spyOn(commands, 'executeCommand').mockImplementation(async (command: string) => {
      if (command !== 'list.toggleSelection') return undefined;
      const item = items[focused]!;
      view.selection = view.selection.includes(item) ? view.selection.filter((entry) => entry !== item) : [...view.selection, item];
      changed.fire({ selection: view.selection });
      return undefined;
    });
    return view as unknown as vscode.TreeView<(typeof items)[number]>;
  }

  it('leaves the focused file out, then takes it back, whether or not its row was selected', async () => {
    const { state } = fakeState('awaiting_review');
    const decisions = new FileDecisions();
    const tree = new ChangesTreeProvider(state, new ChangeContentProvider(() => api({})), decisions, diffFiles().source);
    expect(await toggleFocusedFile(fakeView(tree, 1), decisions)).toBe('src/calc.js');
    expect(decisions.rejected('t1')).toEqual(['src/calc.js']);
    // The row was selected already (a click opened its diff): the toggle takes it out of the selection.
    expect(await toggleFocusedFile(fakeView(tree, 1, [1]), decisions)).toBe('src/calc.js');
    expect(decisions.rejected('t1')).toEqual([]);
    expect(await toggleFocusedFile(fakeView(tree, 0, [1]), decisions)).toBe('CHANGELOG.md');
    expect(decisions.rejected('t1')).toEqual(['CHANGELOG.md']);
  });

  it('is bound to Space in the Changes view during review only, not while typing', async () => {
    const manifest: unknown = JSON.parse(readFileSync(join(import.meta.dirname, '../package.json'), 'utf8'));
    const bindings: unknown = Reflect.get(Reflect.get(manifest as object, 'contributes') as object, 'keybindings');
    expect(bindings).toContainEqual({ command: 'dockhand.toggleFocusedFile', key: 'space', when: 'focusedView == dockhand.changes && dockhand.taskState == awaiting_review && !inputFocus' });
  });
});
