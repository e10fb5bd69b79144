import { beforeEach, describe, expect, it, vi } from 'vitest';

vi.mock('vscode', () => import('./test/vscode-stub'));

import { sampleTask } from '../../webview-ui/src/test/recorded-stream';
import type { ApiClient } from './api-client';
import type { DockhandState } from './dockhand-state';
import type { WorkspaceGitState } from './git-context';
import { sendTicket, type SendTicketDeps } from './send-ticket';
import { Selection, Uri, commands, logChannel, settings, ui, window } from './test/vscode-stub';

const sha = 'd'.repeat(40);
const cleanGit: WorkspaceGitState = { root: '/repo', repo: 'https://forge.example/acme/app.git', hasRemote: true, branch: 'main', headSha: sha, dirty: false, pushed: true };

function harness(git: Partial<WorkspaceGitState> = {}) {
  const created: unknown[] = [];
  const selected: string[] = [];
  const api = {
    // The folder's origin is a clone of the registered "acme/app" (as ssh; registered as https).
    listRepos: vi.fn(async () => [{ name: 'other', source: '/srv/git/other.git' }, { name: 'acme/app', source: 'git@forge.example:acme/app' }]),
    listTickets: vi.fn(async () => [{ id: '42', title: 'paginate() skips the first item', body: 'Page 1 starts at 2.', url: 'https://forge.example/acme/app/issues/42' }]),
    createTask: vi.fn(async (request: unknown) => {
      created.push(request);
      return 'task-9';
    }),
    getTask: vi.fn(async () => sampleTask({ id: 'task-9' })),
  };
  const state = {
    addTask: vi.fn(),
    select: (id: string) => selected.push(id),
    onDidReceiveEvents: () => ({ dispose() {} }),
  };
  const revealPanel = vi.fn();
  const deps: SendTicketDeps = {
    api: () => api as unknown as ApiClient,
    state: state as unknown as DockhandState,
    log: logChannel(),
    revealPanel,
    readGit: async () => ({ ...cleanGit, ...git }),
  };
  return { deps, api, created, selected, revealPanel };
}

beforeEach(() => {
  ui.reset();
  commands.executed.length = 0;
});

describe('Send ticket to agent', () => {
  it('marks an issue that already has an open task and offers to open it instead of a second one', async () => {
    const h = harness();
    const existing = sampleTask({ id: 'task-3', state: 'running', ticket: { kind: 'issue', id: '42', title: 'paginate() skips the first item', body: '' }, context: { repo: 'acme/app', baseSha: sha, contextFiles: [], dirty: false } });
    Object.assign(h.deps.state, { tasks: [existing] });
    ui.answers.push('#42', 'Open the task');
    expect(await sendTicket(h.deps)).toBeUndefined();
    expect(h.created).toEqual([]);
    expect(h.selected).toEqual(['task-3']);
    expect(ui.shown.find((s) => s.kind === 'warning')?.message).toBe('Dockhand already has a task (running) for #42.');
  });

  it('sends an open issue with the workspace context and opens the panel', async () => {
    const h = harness();
    ui.answers.push('paginate()', 'Send with budgets');
    expect(await sendTicket(h.deps)).toBe('task-9');
    // Tasks and tickets name the registered repository, never the remote URL.
    expect(h.api.listTickets).toHaveBeenCalledWith('acme/app');
    expect(ui.quickPickItems[0]).toEqual(['$(edit) Describe the task', '$(link) Paste an issue URL', 'Open issues', '#42 paginate() skips the first item']);
    expect(h.created[0]).toEqual({
      ticket: { kind: 'issue', id: '42', title: 'paginate() skips the first item', body: 'Page 1 starts at 2.', url: 'https://forge.example/acme/app/issues/42' },
      context: { repo: 'acme/app', baseSha: sha, branch: 'main', dirty: false, contextFiles: [] },
      budgets: { maxTurns: 40, maxCostUsd: 5, maxWallClockSeconds: 1800 },
      priority: 'normal',
      allowTestEdits: false,
    });
    expect(h.selected).toEqual(['task-9']);
    expect(h.revealPanel).toHaveBeenCalled();
    expect(ui.shown.some((s) => s.kind === 'progress' && s.message.includes('waiting for a sandbox'))).toBe(true);
  });

  it('warns about a dirty tree and unpushed HEAD; cancelling sends nothing', async () => {
    const h = harness({ dirty: true, pushed: false });
    ui.answers.push(undefined);
    expect(await sendTicket(h.deps)).toBeUndefined();
    expect(ui.shown[0]!.kind).toBe('warning');
    expect(ui.shown[0]!.message).toContain('uncommitted changes');
    expect(ui.shown[0]!.message).toContain('is not pushed');
    expect(h.api.createTask).not.toHaveBeenCalled();
  });

  it('describes a task in words, with adjusted budgets and the editor selection', async () => {
    const h = harness();
    settings.set('dockhand.budgets.maxTurns', 25);
    window.activeTextEditor = {
      document: { uri: Uri.file('/repo/src/paginate.js'), getText: () => 'const start = page * size + 1;' },
      selection: new Selection(1, 0, 1, 30),
    };
    ui.answers.push('Describe the task', 'Fix the off-by-one', 'Page 1 must start at item 1', 'Include', 'Adjust budgets', '12', '1.5', '20', 'Send, and let the agent edit tests');
    await sendTicket(h.deps);
    expect(ui.quickPickItems[1]).toEqual(['Include src/paginate.js and lines 2–2', 'Do not include the editor']);
    expect(ui.quickPickItems[2]![0]).toBe('Send with budgets: 25 turns, $5.00, 30 min');
    expect(h.created[0]).toMatchObject({
      ticket: { kind: 'text', title: 'Fix the off-by-one', body: 'Page 1 must start at item 1' },
      context: {
        activeFile: 'src/paginate.js',
        contextFiles: ['src/paginate.js'],
        selection: { path: 'src/paginate.js', startLine: 2, endLine: 2, text: 'const start = page * size + 1;' },
      },
      budgets: { maxTurns: 12, maxCostUsd: 1.5, maxWallClockSeconds: 1200 },
      allowTestEdits: true,
    });
    expect(ui.quickPickItems[2]![1]).toBe('Send with budgets: 25 turns, $5.00, 30 min, and let the agent edit tests');
  });

  it("takes a pasted URL of one of this repository's open issues, with its title and body", async () => {
    const h = harness();
    ui.answers.push('Paste an issue URL', 'https://forge.example/acme/app/issues/42', 'Send');
    await sendTicket(h.deps);
    expect(h.created[0]).toMatchObject({ ticket: { kind: 'issue', id: '42', title: 'paginate() skips the first item', body: 'Page 1 starts at 2.', url: 'https://forge.example/acme/app/issues/42' } });
    ui.answers.push('Paste an issue URL', 'https://forge.example/acme/app/pull/3');
    await expect(sendTicket(h.deps)).rejects.toThrow(/Paste an issue URL ending in \/issues/);
  });

  it("refuses another repository's issue with the same number, and a number that is not an open issue, sending nothing", async () => {
    const h = harness();
    ui.answers.push('Paste an issue URL', 'https://github.com/other-org/other-repo/issues/42');
    await expect(sendTicket(h.deps)).rejects.toThrow('That is an issue of github.com/other-org/other-repo, not of acme/app (forge.example/acme/app)');
    ui.answers.push('Paste an issue URL', 'https://forge.example/acme/app/issues/77');
    await expect(sendTicket(h.deps)).rejects.toThrow('#77 is not an open issue of acme/app (the server lists 1 open issue)');
    expect(h.created).toEqual([]);
  });

  it('flags a pasted issue that already has an open Dockhand task before sending', async () => {
    const h = harness();
    const existing = sampleTask({ id: 'task-3', state: 'pr_open', prUrl: 'https://forge.example/acme/app/pull/8', ticket: { kind: 'issue', id: '42', title: 'paginate() skips the first item', body: '' }, context: { repo: 'acme/app', baseSha: sha, contextFiles: [], dirty: false } });
    Object.assign(h.deps.state, { tasks: [existing] });
    ui.answers.push('Paste an issue URL', 'https://forge.example/acme/app/issues/42', 'Send another task', 'Send');
    await sendTicket(h.deps);
    expect(ui.shown.find((s) => s.kind === 'warning')?.message).toBe('Dockhand already opened a pull request for #42.');
    expect(h.created[0]).toMatchObject({ ticket: { id: '42' } });
  });

  it('offers to sign in first when there is no token', async () => {
    const h = harness();
    h.deps.signedIn = async () => false;
    expect(await sendTicket(h.deps)).toBeUndefined();
    expect(ui.shown[0]).toMatchObject({ kind: 'error', message: 'Dockhand: sign in to the Dockhand server before sending a ticket.' });
    expect(h.api.listTickets).not.toHaveBeenCalled();
  });

  it('reports a server refusal in words and selects nothing', async () => {
    const h = harness();
    h.api.createTask.mockRejectedValueOnce(new Error('the server is at capacity'));
    ui.answers.push('paginate()', 'Send with budgets');
    expect(await sendTicket(h.deps)).toBeUndefined();
    expect(ui.shown.find((s) => s.kind === 'error')?.message).toBe('Dockhand: sending the task failed: the server is at capacity');
    expect(h.selected).toEqual([]);
  });
});

