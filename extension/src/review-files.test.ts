import { describe, expect, it, vi } from 'vitest';

vi.mock('vscode', () => import('./test/vscode-stub'));

import type { TaskDiffResponse, TaskEvent } from '@dockhand/protocol';
import { FileDecisions } from './file-decisions';
import { DiffFiles, rejectedForReview, reviewFileRows } from './review-files';
import { EventEmitter, logChannel } from './test/vscode-stub';

const rows = (decisions: FileDecisions, list: { files: TaskDiffResponse['files']; leftOut: string[] }) =>
  reviewFileRows(list, { isAccepted: (path, left) => decisions.isAccepted('t1', path, left), unreverted: decisions.unreverted('t1') });

describe("the review's file list", () => {
  it("is the server's diff: a file changed then restored is not in it, so it is neither listed, counted nor sent", () => {
    const decisions = new FileDecisions();
    // The trajectory said README.md and src/calc.js changed; the diff under review has src/calc.js only.
    decisions.set('t1', 'README.md', false);
    const list = rows(decisions, { files: [{ path: 'src/calc.js', change: 'modified' }], leftOut: [] });
    expect(list).toEqual([{ path: 'src/calc.js', change: 'modified', accepted: true, notReverted: false }]);
    expect(rejectedForReview(list)).toEqual([]);
  });

  it('keeps a file an earlier approval left out left out in a PR round (not in the diff) and never sends it', () => {
    const decisions = new FileDecisions();
    const list = rows(decisions, { files: [{ path: 'src/calc.js', change: 'modified' }], leftOut: ['README.md'] });
    expect(list).toEqual([
      { path: 'README.md', accepted: false, notReverted: false },
      { path: 'src/calc.js', change: 'modified', accepted: true, notReverted: false },
    ]);
    // The payload names files of the diff only: README.md is not in it, so the server would refuse it.
    expect(rejectedForReview(list)).toEqual([]);
    decisions.set('t1', 'src/calc.js', false);
    expect(rejectedForReview(rows(decisions, { files: [{ path: 'src/calc.js', change: 'modified' }], leftOut: ['README.md'] }))).toEqual(['src/calc.js']);
  });

  it('starts a left-out file the agent changed again unchecked; the reviewer may check it, and that is kept', () => {
    const decisions = new FileDecisions();
    const list = { files: [{ path: 'README.md', change: 'modified' as const }, { path: 'src/calc.js', change: 'modified' as const }], leftOut: ['README.md'] };
    expect(rejectedForReview(rows(decisions, list))).toEqual(['README.md']);
    decisions.set('t1', 'README.md', true, true);
    expect(rejectedForReview(rows(decisions, list))).toEqual([]);
    expect(rows(decisions, list)[0]).toMatchObject({ path: 'README.md', accepted: true });
  });

  it('marks a revert the reviewer asked for that did not happen', () => {
    const decisions = new FileDecisions();
    decisions.set('t1', 'README.md', false);
    decisions.revertsRequested('t1', ['README.md']);
    decisions.diffRead('t1', ['README.md', 'src/calc.js']);
    expect(rows(decisions, { files: [{ path: 'README.md', change: 'modified' }, { path: 'src/calc.js', change: 'modified' }], leftOut: [] })[0]).toEqual({ path: 'README.md', change: 'modified', accepted: false, notReverted: true });
  });
});

describe('DiffFiles', () => {
  function setup(selected = 't1') {
    const events = new EventEmitter<{ taskId: string; events: readonly TaskEvent[] }>();
    const selection = new EventEmitter<unknown>();
    let files: TaskDiffResponse['files'] = [{ path: 'src/calc.js', change: 'modified' }];
    const getDiff = vi.fn(async (): Promise<TaskDiffResponse> => ({ baseSha: 'a'.repeat(40), diff: '', files, round: 1, leftOut: [] }));
    const diffFiles = new DiffFiles({ getDiff, onDidReceiveEvents: events.event, onDidChangeSelection: selection.event, selectedTaskId: () => selected, log: logChannel(), debounceMs: 5 });
    return { events, getDiff, diffFiles, setFiles: (next: typeof files) => (files = next) };
  }
  const event = (type: string, data: object = {}) => ({ seq: 1, ts: '2026-01-01T00:00:00Z', taskId: 't1', type, data }) as unknown as TaskEvent;

  it('reads the selected task at once and again, once per burst, when events say the diff changed', async () => {
    const t = setup();
    await vi.waitFor(() => expect(t.diffFiles.get('t1')?.files).toHaveLength(1));
    const changed: string[] = [];
    t.diffFiles.onDidChange((taskId) => changed.push(taskId));
    t.setFiles([]);
    t.events.fire({ taskId: 't1', events: [event('file.changed', { path: 'src/calc.js' }), event('file.changed', { path: 'src/calc.js' })] });
    t.events.fire({ taskId: 't1', events: [event('task.state', { state: 'awaiting_review' })] });
    await vi.waitFor(() => expect(changed).toEqual(['t1']));
    expect(t.getDiff).toHaveBeenCalledTimes(2);
    expect(t.diffFiles.get('t1')?.files).toEqual([]);
    // Events that do not touch the diff read nothing.
    t.events.fire({ taskId: 't1', events: [event('assistant.text', { turn: 1, text: 'hi' })] });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(t.getDiff).toHaveBeenCalledTimes(2);
    t.diffFiles.dispose();
  });

  it('drops an answer overtaken by a later read', async () => {
    const t = setup();
    await vi.waitFor(() => expect(t.getDiff).toHaveBeenCalledTimes(1));
    let release: (value: TaskDiffResponse) => void = () => undefined;
    t.getDiff.mockImplementationOnce(() => new Promise((resolve) => (release = resolve)));
    const slow = t.diffFiles.read('t1');
    t.setFiles([{ path: 'b.js', change: 'added' }]);
    await t.diffFiles.read('t1');
    release({ baseSha: 'a'.repeat(40), diff: '', files: [{ path: 'stale.js', change: 'added' }], round: 1, leftOut: [] });
    await slow;
    expect(t.diffFiles.get('t1')?.files).toEqual([{ path: 'b.js', change: 'added' }]);
    t.diffFiles.dispose();
  });
});
