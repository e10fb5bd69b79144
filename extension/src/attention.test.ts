import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('vscode', () => import('./test/vscode-stub'));

import type { Task, TaskEvent } from '@dockhand/protocol';
import { TASK_ID, runUntilReview, sampleTask, stamp } from '../../webview-ui/src/test/recorded-stream';
import type { ApiClient } from './api-client';
import { Attention } from './attention';
import { DockhandState } from './dockhand-state';
import type { SessionListener, TaskSessions } from './task-sessions';
import * as vscode from 'vscode';
import { logChannel, memento, ui } from './test/vscode-stub';

function setup(tasks: Task[]) {
  const listeners = new Set<SessionListener>();
  const sessions = {
    subscribe: (listener: SessionListener) => {
      listeners.add(listener);
      return { dispose: () => listeners.delete(listener) };
    },
    follow: () => [],
    events: () => [],
    status: () => undefined,
  } as unknown as TaskSessions;
  const api = { listTasks: vi.fn(async () => tasks) };
  const state = new DockhandState(() => api as unknown as ApiClient, sessions, memento());
  const shown: string[] = [];
  const badge: { badge?: { value: number; tooltip: string } } = {};
  const attention = new Attention({ state, log: logChannel(), show: (taskId) => shown.push(taskId), badgeViews: () => [badge], since: Date.parse('2026-03-01T12:00:00Z') });
  const push = (events: TaskEvent[]) => {
    for (const listener of listeners) listener.onEvents(TASK_ID, events);
  };
  return { state, attention, push, shown, badge, api };
}

const at = (iso: string) => Date.parse(iso);

beforeEach(() => ui.reset());

describe('attention', () => {
  it('says nothing about history, then once per review round, failure and pull request', async () => {
    const t = setup([sampleTask()]);
    await t.state.refreshTasks();
    // Replayed after a window reload: old news.
    t.push(stamp(TASK_ID, runUntilReview(), 1, at('2026-03-01T09:00:00Z')));
    expect(ui.shown).toEqual([]);

    const base = runUntilReview().length;
    t.push(stamp(TASK_ID, [{ type: 'task.state', data: { state: 'awaiting_review' } }], base + 1, at('2026-03-01T12:05:00Z')));
    t.push(stamp(TASK_ID, [{ type: 'task.state', data: { state: 'awaiting_review' } }], base + 1, at('2026-03-01T12:05:00Z')));
    expect(ui.shown).toEqual([{ kind: 'info', message: 'Dockhand: “paginate() skips the first item of every page” is ready for your review.', buttons: ['Review'] }]);

    ui.answers.push('Decide');
    t.push(stamp(TASK_ID, [{ type: 'approval.requested', data: { approvalId: 'ap_9', kind: 'command', command: 'rm -rf build', reason: 'deletes' } }], base + 2, at('2026-03-01T12:06:00Z')));
    expect(ui.shown.at(-1)).toEqual({ kind: 'warning', message: 'Dockhand: the agent on “paginate() skips the first item of every page” wants to run `rm -rf build`.', buttons: ['Decide'] });
    await vi.waitFor(() => expect(t.shown).toEqual([TASK_ID]));

    t.push(stamp(TASK_ID, [{ type: 'task.failed', data: { code: 'model_unavailable', message: 'model x failed: overloaded (request_id: req_1)' } }], base + 3, at('2026-03-01T12:07:00Z')));
    expect(ui.shown.at(-1)).toEqual({ kind: 'error', message: 'Dockhand: “paginate() skips the first item of every page” failed. The model could not be reached: model x failed: overloaded.', buttons: ['Show task', 'Show details'] });

    t.push(stamp(TASK_ID, [{ type: 'pr.opened', data: { number: 3, url: 'https://forge.example/pull/3', branch: 'b', headSha: 'c'.repeat(40) } }], base + 4, at('2026-03-01T12:08:00Z')));
    expect(ui.shown.at(-1)).toEqual({ kind: 'info', message: 'Dockhand opened a pull request: https://forge.example/pull/3', buttons: ['Open pull request'] });
    expect(ui.shown).toHaveLength(4);
  });

  it('does not send the developer to a review that is over: a review rejected in the same batch is not news, and a late click says it was rejected', async () => {
    const t = setup([sampleTask()]);
    await t.state.refreshTasks();
    const base = runUntilReview().length;
    t.push(stamp(TASK_ID, runUntilReview(), 1, at('2026-03-01T09:00:00Z')));
    t.push(stamp(TASK_ID, [{ type: 'task.state', data: { state: 'awaiting_review' } }, { type: 'task.state', data: { state: 'closed', reason: 'rejected by olive' } }], base + 1, at('2026-03-01T12:05:00Z')));
    expect(ui.shown).toEqual([]);

    let click: (choice: string) => void = () => undefined;
    const spy = vi.spyOn(vscode.window, 'showInformationMessage').mockImplementationOnce(
      (() => new Promise<string>((resolve) => (click = resolve))) as unknown as typeof vscode.window.showInformationMessage,
    );
    t.push(stamp(TASK_ID, [{ type: 'task.state', data: { state: 'awaiting_review' } }], base + 3, at('2026-03-01T12:06:00Z')));
    t.push(stamp(TASK_ID, [{ type: 'task.state', data: { state: 'closed', reason: 'rejected by olive' } }], base + 4, at('2026-03-01T12:07:00Z')));
    spy.mockRestore();
    click('Review');
    await vi.waitFor(() => expect(ui.shown.at(-1)).toEqual({ kind: 'info', message: 'Dockhand: “paginate() skips the first item of every page” was rejected; there is nothing to review.' }));
    expect(t.shown).toEqual([]);
  });

  it('counts the tasks waiting for the developer on the badge, and hears of tasks it does not follow from the list', async () => {
    const waiting = { ...sampleTask(), id: 't_2', state: 'awaiting_review' as const };
    const running = { ...sampleTask(), id: 't_3', state: 'running' as const };
    const t = setup([waiting, running]);
    await t.state.refreshTasks();
    expect(t.badge.badge).toEqual({ value: 1, tooltip: '1 Dockhand task waiting for you' });
    // The first list is what was already so: no notification for t_2.
    expect(ui.shown).toEqual([]);
    t.api.listTasks.mockResolvedValue([waiting, { ...running, state: 'awaiting_review' }]);
    await t.state.refreshTasks();
    expect(t.badge.badge?.value).toBe(2);
    expect(ui.shown).toEqual([{ kind: 'info', message: 'Dockhand: “paginate() skips the first item of every page” is ready for your review.', buttons: ['Review'] }]);
    t.api.listTasks.mockResolvedValue([{ ...waiting, state: 'pr_open' }, { ...running, state: 'running' }]);
    await t.state.refreshTasks();
    expect(t.badge.badge).toBeUndefined();
  });
});
