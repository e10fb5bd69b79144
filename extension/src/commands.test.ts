import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('vscode', () => import('./test/vscode-stub'));

import { cancelTask } from './commands';
import type { DockhandState } from './dockhand-state';
import { ui } from './test/vscode-stub';

function deps() {
  const interrupted: string[] = [];
  const state = { task: () => ({ ticket: { title: 'Fix paginate' } }), trajectory: () => ({ summary: {} }) };
  const actions = { interrupt: async (id: string) => (interrupted.push(id), true) };
  return { interrupted, deps: { state: state as unknown as DockhandState, actions: actions as never } };
}

beforeEach(() => ui.reset());

describe('cancelling a task', () => {
  it("asks with keeping the task as the dialog's default (first) button and cancels only on 'Cancel task'", async () => {
    const kept = deps();
    ui.answers.push('Keep it running');
    expect(await cancelTask(kept.deps, 't1')).toBe(false);
    expect(ui.shown[0]).toMatchObject({ kind: 'warning', message: 'Cancel “Fix paginate”?', buttons: ['Keep it running', 'Cancel task'] });
    expect(kept.interrupted).toEqual([]);
    const cancelled = deps();
    ui.answers.push('Cancel task');
    expect(await cancelTask(cancelled.deps, 't1')).toBe(true);
    expect(cancelled.interrupted).toEqual(['t1']);
  });
});
