import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('vscode', () => import('./test/vscode-stub'));

import type { InboxApproval, Task } from '@dockhand/protocol';
import { sampleTask } from '../../webview-ui/src/test/recorded-stream';
import type { ApiClient } from './api-client';
import { requestedWhen, showApprovalInbox } from './approvals-inbox';
import { DockhandState } from './dockhand-state';
import type { TaskSessions } from './task-sessions';
import { memento, ui } from './test/vscode-stub';

/* "Dockhand: Show approvals waiting for me" with the vscode stub and a fake API. */

const override: InboxApproval = {
  approvalId: 'apr_1',
  taskId: 'task-alice',
  taskTitle: 'Let CI run on tags',
  taskOwner: 'alice',
  repo: 'https://forge.example/acme/app.git',
  kind: 'policy_override',
  reason: '1 policy violation blocks this diff: ci-config (.github/workflows/ci.yml); a repo owner (olive) may override them for this exact diff',
  requestedAt: '2026-11-29T12:00:00.000Z',
  canDecide: true,
};
const command: InboxApproval = { ...override, approvalId: 'apr_2', taskId: 'task-mine', taskTitle: 'Bump deps', taskOwner: 'olive', kind: 'command', command: 'npm install', reason: 'network' };

function setup(approvals: InboxApproval[]) {
  const followed: string[] = [];
  const sessions = { subscribe: () => ({ dispose() {} }), follow: (id: string) => { followed.push(id); return []; } };
  const own: Task[] = [sampleTask({ id: 'task-mine', owner: 'olive' })];
  const api = {
    listApprovalInbox: vi.fn(async () => ({ approvals, more: false })),
    getTask: vi.fn(async (id: string) => sampleTask({ id, owner: 'alice', ticket: { kind: 'text', title: 'Let CI run on tags', body: '' } })),
    listTasks: vi.fn(async () => own),
  };
  const state = new DockhandState(() => api as unknown as ApiClient, sessions as unknown as TaskSessions, memento());
  const revealPanel = vi.fn();
  return { deps: { api: () => api as unknown as ApiClient, state, revealPanel }, api, state, followed, revealPanel };
}

beforeEach(() => ui.reset());

describe('Show approvals waiting for me', () => {
  it("lists the inbox and opens the chosen task in the side panel, even another developer's", async () => {
    const t = setup([override, command]);
    await t.state.refreshTasks();
    ui.answers.push('Let CI run');
    expect(await showApprovalInbox(t.deps)).toBe('task-alice');
    expect(ui.quickPickItems[0]).toEqual(['Let CI run on tags', 'Bump deps']);
    // alice's task is not in olive's list: it is fetched, selected, followed and shown.
    expect(t.api.getTask).toHaveBeenCalledWith('task-alice');
    expect(t.state.selectedTaskId).toBe('task-alice');
    expect(t.followed).toContain('task-alice');
    expect(t.revealPanel).toHaveBeenCalledOnce();
    // A refresh of olive's own tasks keeps the one she opened from the inbox.
    await t.state.refreshTasks();
    expect(t.state.selectedTaskId).toBe('task-alice');
    expect(t.state.tasks.map((task) => task.id).sort()).toEqual(['task-alice', 'task-mine']);
  });

  it('opens one of your own tasks without fetching it again, and does nothing when cancelled', async () => {
    const t = setup([override, command]);
    await t.state.refreshTasks();
    ui.answers.push('Bump deps');
    expect(await showApprovalInbox(t.deps)).toBe('task-mine');
    expect(t.api.getTask).not.toHaveBeenCalled();
    ui.answers.push(undefined);
    expect(await showApprovalInbox(t.deps)).toBeUndefined();
    expect(t.revealPanel).toHaveBeenCalledOnce();
  });

  it('says so when nothing waits for you', async () => {
    const t = setup([]);
    expect(await showApprovalInbox(t.deps)).toBeUndefined();
    expect(ui.shown).toContainEqual({ kind: 'info', message: 'Dockhand: nothing waits for your decision.' });
    expect(ui.quickPickItems).toEqual([]);
  });
});

describe('when an approval was requested', () => {
  it('is said as how long ago and the clock time, never a raw ISO timestamp', () => {
    const now = Date.parse('2026-11-29T12:12:00.000Z');
    expect(requestedWhen('2026-11-29T12:00:00.000Z', now)).toBe('12 min ago (12:00 UTC)');
    expect(requestedWhen('2026-11-27T09:30:00.000Z', now)).toBe('2 days ago (2026-11-27 09:30 UTC)');
  });
});
