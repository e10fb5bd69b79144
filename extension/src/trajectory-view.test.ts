import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('vscode', () => import('./test/vscode-stub'));

import type { TaskApprovalsResponse, TaskEvent } from '@dockhand/protocol';
import { ToWebview } from '@dockhand/webview-ui/messages';
import { TASK_ID, longRun, runUntilApproval, sampleTask, stamp } from '../../webview-ui/src/test/recorded-stream';
import type { TaskActions } from './actions';
import type { ApiClient } from './api-client';
import { DockhandState } from './dockhand-state';
import { FileDecisions } from './file-decisions';
import { reviewFileRows } from './review-files';
import type { SessionListener, TaskSessions } from './task-sessions';
import type { Connection, ConnectionPhase } from './connection';
import { TaskStatusBar } from './status-bar';
import { TrajectoryViewProvider, webviewHtml } from './trajectory-view';
import { EventEmitter, Uri, env, logChannel, memento, ui } from './test/vscode-stub';
import type * as vscode from 'vscode';

/** Sessions without sockets: the test pushes events as the stream would. */
function fakeSessions() {
  const listeners = new Set<SessionListener>();
  const logs = new Map<string, TaskEvent[]>();
  const followed: string[] = [];
  const sessions = {
    subscribe: (listener: SessionListener) => {
      listeners.add(listener);
      return { dispose: () => listeners.delete(listener) };
    },
    follow: (taskId: string) => {
      followed.push(taskId);
      return logs.get(taskId) ?? [];
    },
    events: (taskId: string) => logs.get(taskId) ?? [],
    status: () => ({ status: 'live' as const }),
    event: (taskId: string, seq: number) => logs.get(taskId)?.find((e) => e.seq === seq),
  };
  const push = (taskId: string, events: TaskEvent[]) => {
    logs.set(taskId, [...(logs.get(taskId) ?? []), ...events]);
    for (const listener of listeners) listener.onEvents(taskId, events);
  };
  return { sessions: sessions as unknown as TaskSessions, push, followed };
}

function fakeView() {
  const posted: ToWebview[] = [];
  const receive = new EventEmitter<unknown>();
  const dispose = new EventEmitter<void>();
  const view = {
    webview: {
      options: {},
      html: '',
      cspSource: 'https://webview.test',
      asWebviewUri: (uri: Uri) => uri,
      postMessage: async (message: unknown) => {
        // Everything the extension posts must pass the webview's own schema.
        posted.push(ToWebview.parse(message));
        return true;
      },
      onDidReceiveMessage: receive.event,
    },
    onDidDispose: dispose.event,
    show: vi.fn(),
  };
  return { view: view as unknown as vscode.WebviewView, posted, send: (m: unknown) => receive.fire(m) };
}

function setup() {
  const { sessions, push, followed } = fakeSessions();
  const api = { listTasks: vi.fn(async () => [sampleTask()]) };
  const state = new DockhandState(() => api as unknown as ApiClient, sessions, memento());
  const actions = {
    interrupt: vi.fn(async () => true),
    sendMessage: vi.fn(async () => true),
    decideApproval: vi.fn(async () => false),
    pause: vi.fn(async () => true),
    resume: vi.fn(async () => true),
  };
  const commentsChanged = new EventEmitter<string>();
  const pending = new Map<string, Array<{ path: string; line: number; body: string }>>();
  const decisions = new FileDecisions();
  const commands = {
    sendTicket: vi.fn(),
    openDiff: vi.fn(),
    review: vi.fn(async () => true),
    taskApprovals: vi.fn(async (): Promise<TaskApprovalsResponse> => ({ approvals: [], canReview: true })),
    cancel: vi.fn(async () => true),
    pendingComments: (taskId: string) => pending.get(taskId) ?? [],
    onDidChangeComments: commentsChanged.event,
    // The diff under review as the server lists it (one file), with the decisions.
    reviewFiles: (taskId: string) =>
      reviewFileRows({ files: [{ path: 'src/b.js', change: 'modified' }], leftOut: [] }, { isAccepted: (path, left) => decisions.isAccepted(taskId, path, left), unreverted: decisions.unreverted(taskId) }),
    setFileAccepted: (taskId: string, path: string, accepted: boolean) => decisions.set(taskId, path, accepted),
    onDidChangeFileDecisions: decisions.onDidChange,
    openChanges: vi.fn(),
    run: vi.fn(),
  };
  const provider = new TrajectoryViewProvider(Uri.file('/ext'), state, actions as unknown as TaskActions, commands, logChannel());
  const setPending = (taskId: string, comments: Array<{ path: string; line: number; body: string }>) => {
    pending.set(taskId, comments);
    commentsChanged.fire(taskId);
  };
  return { state, provider, push, followed, actions, commands, api, setPending, decisions };
}

beforeEach(() => ui.reset());

describe('Trajectory view provider', () => {
  it('posts nothing before ready, then the task list and the whole log of the selected task', async () => {
    const t = setup();
    await t.state.refreshTasks();
    t.state.select(TASK_ID);
    t.push(TASK_ID, stamp(TASK_ID, runUntilApproval()).slice(0, 5));
    const { view, posted, send } = fakeView();
    t.provider.resolveWebviewView(view);
    t.push(TASK_ID, stamp(TASK_ID, runUntilApproval()).slice(5, 7));
    expect(posted).toEqual([]);
    send({ type: 'ready' });
    expect(posted.map((m) => m.type)).toEqual(['tasks', 'events', 'pendingComments', 'fileDecisions', 'connection']);
    const replay = posted[1] as Extract<ToWebview, { type: 'events' }>;
    expect(replay.reset).toBe(true);
    expect(replay.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    // Live events after that are appended.
    t.push(TASK_ID, stamp(TASK_ID, runUntilApproval()).slice(7, 9));
    expect(posted.at(-1)).toMatchObject({ type: 'events', reset: false });
    // A reloaded webview says ready again and gets everything again.
    send({ type: 'ready' });
    expect((posted.find((m, i) => i > 4 && m.type === 'events' && m.reset) as Extract<ToWebview, { type: 'events' }>).events).toHaveLength(9);
  });

  it('tells the panel about pending line comments as they are written', async () => {
    const t = setup();
    t.state.select(TASK_ID);
    const { view, posted, send } = fakeView();
    t.provider.resolveWebviewView(view);
    send({ type: 'ready' });
    expect(posted.find((m) => m.type === 'pendingComments')).toEqual({ type: 'pendingComments', taskId: TASK_ID, comments: [] });
    t.setPending(TASK_ID, [{ path: 'src/a.js', line: 3, body: 'why?' }]);
    expect(posted.at(-1)).toEqual({ type: 'pendingComments', taskId: TASK_ID, comments: [{ path: 'src/a.js', line: 3, body: 'why?' }] });
    t.setPending('another-task', [{ path: 'src/b.js', line: 1, body: 'no' }]);
    expect(posted.at(-1)).toMatchObject({ taskId: TASK_ID });
  });

  it('keeps the per-file decisions the panel makes and sends them back; opens a round\'s changes', async () => {
    const t = setup();
    t.state.select(TASK_ID);
    const { view, posted, send } = fakeView();
    t.provider.resolveWebviewView(view);
    send({ type: 'ready' });
    expect(posted.find((m) => m.type === 'fileDecisions')).toEqual({ type: 'fileDecisions', taskId: TASK_ID, files: [{ path: 'src/b.js', change: 'modified', accepted: true, notReverted: false }] });
    send({ type: 'setFileAccepted', taskId: TASK_ID, path: 'src/b.js', accepted: false });
    expect(t.decisions.rejected(TASK_ID)).toEqual(['src/b.js']);
    expect(posted.at(-1)).toEqual({ type: 'fileDecisions', taskId: TASK_ID, files: [{ path: 'src/b.js', change: 'modified', accepted: false, notReverted: false }] });
    send({ type: 'setFileAccepted', taskId: TASK_ID, path: 'src/b.js', accepted: true });
    expect(posted.at(-1)).toEqual({ type: 'fileDecisions', taskId: TASK_ID, files: [{ path: 'src/b.js', change: 'modified', accepted: true, notReverted: false }] });
    send({ type: 'openChanges', taskId: TASK_ID, scope: 'round' });
    expect(t.commands.openChanges).toHaveBeenCalledWith(TASK_ID, 'round');
  });

  it('clips long outputs and serves the rest on request', async () => {
    const t = setup();
    t.state.select(TASK_ID);
    const events = stamp(TASK_ID, longRun(210, 50_000));
    t.push(TASK_ID, events);
    const { view, posted, send } = fakeView();
    t.provider.resolveWebviewView(view);
    send({ type: 'ready' });
    const replay = posted.find((m) => m.type === 'events') as Extract<ToWebview, { type: 'events' }>;
    const big = events.find((e) => e.type === 'tool.finished' && e.data.output.length > 50_000)!;
    expect(replay.clipped).toContainEqual({ seq: big.seq, totalChars: big.type === 'tool.finished' ? big.data.output.length : 0 });
    const sent = replay.events.find((e) => e.seq === big.seq)!;
    expect(sent.type === 'tool.finished' && sent.data.output.length).toBe(2000);
    send({ type: 'loadOutput', taskId: TASK_ID, seq: big.seq });
    expect(posted.at(-1)).toEqual({ type: 'output', taskId: TASK_ID, seq: big.seq, text: big.type === 'tool.finished' ? big.data.output : '' });
  });

  it('routes decisions and ignores malformed messages; a refused action sends a notice', async () => {
    const t = setup();
    const { view, posted, send } = fakeView();
    t.provider.resolveWebviewView(view);
    send({ type: 'ready' });
    send({ type: 'interrupt', taskId: 't1' });
    send({ type: 'review', taskId: 't1', action: 'request_changes', comment: 'add a test' });
    send({ type: 'openDiff', taskId: 't1', path: 'src/a.js' });
    send({ type: 'openExternal', url: 'https://forge.example/pull/1' });
    send({ type: 'review', taskId: 't1', action: 'merge' });
    send({ type: 'sendMessage', taskId: 't1', text: '' });
    send({ type: 'pause', taskId: 't1' });
    send({ type: 'resume', taskId: 't1', text: 'use utils.js' });
    send({ type: 'resume', taskId: 't1', text: '' });
    send({ type: 'decideApproval', taskId: 't1', approvalId: 'ap', decision: 'approved' });
    await new Promise((r) => setTimeout(r, 0));
    expect(t.actions.pause).toHaveBeenCalledWith('t1');
    // An empty message is malformed (never an empty user.message): only the resume with text went out.
    expect(t.actions.resume.mock.calls).toEqual([['t1', 'use utils.js']]);
    // Cancel asks first (in the extension), then interrupts.
    expect(t.commands.cancel).toHaveBeenCalledWith('t1');
    expect(t.commands.review).toHaveBeenCalledWith('t1', 'request_changes', 'add a test');
    expect(t.commands.review).toHaveBeenCalledTimes(1);
    expect(t.commands.openDiff).toHaveBeenCalledWith('t1', 'src/a.js');
    expect(t.actions.sendMessage).not.toHaveBeenCalled();
    expect(env.opened).toContain('https://forge.example/pull/1');
    expect(posted.at(-1)).toMatchObject({ type: 'notice', level: 'error' });
  });

  it('selecting a task in the panel follows it and sends its log', async () => {
    const t = setup();
    const { view, posted, send } = fakeView();
    t.provider.resolveWebviewView(view);
    send({ type: 'ready' });
    t.push('task-b', stamp('task-b', runUntilApproval()).slice(0, 3));
    send({ type: 'selectTask', taskId: 'task-b' });
    expect(t.followed).toContain('task-b');
    expect(posted.at(-4)).toMatchObject({ type: 'events', taskId: 'task-b', reset: true });
    expect(posted.at(-3)).toMatchObject({ type: 'pendingComments', taskId: 'task-b' });
    expect(posted.at(-2)).toMatchObject({ type: 'fileDecisions', taskId: 'task-b' });
  });

  it('tells the panel who may decide each pending approval, asking the server when one is requested', async () => {
    const t = setup();
    t.commands.taskApprovals.mockResolvedValue({
      canReview: false,
      approvals: [
        { id: 'ap_1', taskId: TASK_ID, kind: 'command', state: 'pending', reason: 'rm', createdAt: '2026-01-01T00:00:00Z', canDecide: false, deciders: ['dev@example.com'] },
        { id: 'ap_0', taskId: TASK_ID, kind: 'command', state: 'approved', reason: 'old', createdAt: '2026-01-01T00:00:00Z', canDecide: false, deciders: [] },
      ],
    });
    const { view, posted, send } = fakeView();
    t.provider.resolveWebviewView(view);
    send({ type: 'ready' });
    t.state.select(TASK_ID);
    const events = stamp(TASK_ID, runUntilApproval());
    t.push(TASK_ID, events.slice(0, -2));
    await new Promise((r) => setTimeout(r, 0));
    // Nothing pending yet: the server is not asked.
    expect(t.commands.taskApprovals).not.toHaveBeenCalled();
    t.push(TASK_ID, events.slice(-2));
    await vi.waitFor(() => expect(posted.at(-1)).toEqual({ type: 'approvals', taskId: TASK_ID, canReview: false, approvals: [{ approvalId: 'ap_1', canDecide: false, deciders: ['dev@example.com'] }] }));
    expect(t.commands.taskApprovals).toHaveBeenCalledWith(TASK_ID);
  });

  it('serves HTML with a nonce CSP and no inline script', () => {
    const { view } = fakeView();
    const html = webviewHtml(view.webview, Uri.file('/ext/dist/webview'));
    const nonce = /'nonce-([A-Za-z0-9]+)'/.exec(html)?.[1];
    expect(nonce).toHaveLength(32);
    expect(html).toContain("default-src 'none'");
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).toContain(`<script nonce="${nonce}" src="file:/ext/dist/webview/webview.js"></script>`);
  });
});

describe('status bar', () => {
  it('shows state, turns and cost of the selected task as events arrive', async () => {
    const t = setup();
    const connection = { state: { phase: 'signed_in' as ConnectionPhase, disconnected: false }, onDidChange: new EventEmitter<unknown>().event };
    const bar = new TaskStatusBar(t.state, connection as unknown as Connection);
    expect(bar.text).toBe('$(rocket) Dockhand');
    t.state.select(TASK_ID);
    t.push(TASK_ID, stamp(TASK_ID, runUntilApproval()));
    expect(bar.text).toBe('$(bell-dot) Dockhand: awaiting approval · 3 turns · $0.08');
    t.push(TASK_ID, stamp(TASK_ID, [{ type: 'task.state', data: { state: 'failed' } }], runUntilApproval().length + 1));
    expect(bar.text).toBe('$(error) Dockhand: failed · 3 turns · $0.08');
    // Disconnected is its own state: no spinner, no stale task state.
    connection.state = { phase: 'signed_in', disconnected: true };
    bar.update();
    expect(bar.text).toBe('$(debug-disconnect) Dockhand: disconnected');
    connection.state = { phase: 'signed_out', disconnected: false };
    bar.update();
    expect(bar.text).toBe('$(account) Dockhand: signed out');
  });
});
