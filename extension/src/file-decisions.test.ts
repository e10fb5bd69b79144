import { describe, expect, it, vi } from 'vitest';

vi.mock('vscode', () => import('./test/vscode-stub'));

import type { TaskEvent } from '@dockhand/protocol';
import { checkRequestedReverts, FileDecisions, type DecisionStore } from './file-decisions';
import { EventEmitter, logChannel, ui } from './test/vscode-stub';

function memoryStore(): DecisionStore & { data: Map<string, unknown> } {
  const data = new Map<string, unknown>();
  return {
    data,
    get: <T>(key: string) => data.get(key) as T | undefined,
    update: async (key: string, value: unknown) => void data.set(key, JSON.parse(JSON.stringify(value))),
  };
}

describe('FileDecisions (accept per file)', () => {
  it('holds the files left out per task, tells listeners, and forgets them once the task is done with review', () => {
    const decisions = new FileDecisions();
    const fired: string[] = [];
    decisions.onDidChange((taskId) => fired.push(taskId));
    decisions.set('t1', 'src/b.js', false);
    decisions.set('t1', 'src/a.js', false);
    decisions.set('t1', 'src/a.js', false);
    decisions.set('t2', 'x', true);
    expect(decisions.rejected('t1')).toEqual(['src/a.js', 'src/b.js']);
    expect(decisions.isAccepted('t1', 'src/b.js')).toBe(false);
    expect(decisions.isAccepted('t2', 'x')).toBe(true);
    // Only real changes fire.
    expect(fired).toEqual(['t1', 't1']);
    // A file no longer in the diff is not sent.
    expect(decisions.rejected('t1', ['src/b.js', 'src/c.js'])).toEqual(['src/b.js']);
    decisions.set('t1', 'src/a.js', true);
    expect(decisions.rejected('t1')).toEqual(['src/b.js']);
    decisions.clear('t1');
    expect(decisions.rejected('t1')).toEqual([]);
    expect(fired).toEqual(['t1', 't1', 't1', 't1']);
  });

  it('keeps a file unchecked across "Request changes" and a reload, and says when the requested revert did not happen', () => {
    const store = memoryStore();
    const first = new FileDecisions(store);
    first.set('t1', 'src/calc.js', false);
    first.revertsRequested('t1', first.rejected('t1'));
    // Round 2, in a reloaded window: the decision is still the reviewer's.
    const reloaded = new FileDecisions(store);
    expect(reloaded.isAccepted('t1', 'src/calc.js')).toBe(false);
    expect(reloaded.rejected('t1')).toEqual(['src/calc.js']);
    // Not known until the diff is read; then the file still in it is a revert that did not happen.
    expect(reloaded.unreverted('t1')).toEqual([]);
    const fired: string[] = [];
    reloaded.onDidChange((taskId) => fired.push(taskId));
    reloaded.diffRead('t1', ['src/calc.js', 'src/other.js']);
    expect(reloaded.unreverted('t1')).toEqual(['src/calc.js']);
    expect(fired).toEqual(['t1']);
    // Reverted: no longer in the diff, nothing to say.
    reloaded.diffRead('t1', ['src/other.js']);
    expect(reloaded.unreverted('t1')).toEqual([]);
    // The reviewer changes their mind: the file goes back into the push.
    reloaded.set('t1', 'src/calc.js', true);
    expect(new FileDecisions(store).isAccepted('t1', 'src/calc.js')).toBe(true);
    reloaded.clear('t1');
    expect(store.data.get('dockhand.fileDecisions')).toEqual({});
  });
});

describe('checking the requested reverts when the task is back in review', () => {
  it('warns naming a file the agent was asked to revert and still changed, once per round', async () => {
    ui.reset();
    const decisions = new FileDecisions();
    decisions.set('t1', 'src/calc.js', false);
    decisions.revertsRequested('t1', ['src/calc.js']);
    const events = new EventEmitter<{ taskId: string; events: TaskEvent[] }>();
    const diffFiles = vi.fn(async () => ['src/calc.js', 'src/other.js']);
    checkRequestedReverts({ decisions, onDidReceiveEvents: events.event, diffFiles, log: logChannel(), show: vi.fn() });
    const back = { seq: 30, ts: '2026-03-01T12:00:00Z', taskId: 't1', type: 'task.state', data: { state: 'awaiting_review' } } as unknown as TaskEvent;
    ui.answers = [undefined];
    events.fire({ taskId: 't1', events: [back] });
    events.fire({ taskId: 't1', events: [back] });
    await vi.waitFor(() => expect(ui.shown).toHaveLength(1));
    expect(ui.shown[0]).toMatchObject({ kind: 'warning', message: expect.stringContaining('you asked the agent to revert src/calc.js, but it is still changed in this round') });
    expect(decisions.unreverted('t1')).toEqual(['src/calc.js']);
    expect(decisions.isAccepted('t1', 'src/calc.js')).toBe(false);
    expect(diffFiles).toHaveBeenCalledTimes(1);
  });
});
