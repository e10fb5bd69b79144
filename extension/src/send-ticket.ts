import { isFinalState, type Budgets, type CreateTaskRequest, type Selection, type Task, type Ticket, type TicketSummary } from '@dockhand/protocol';
import { relative, isAbsolute } from 'node:path';
import * as vscode from 'vscode';
import type { ApiClient } from './api-client';
import type { DockhandState } from './dockhand-state';
import { DockhandError, describeError } from './errors';
import { readGitState, type WorkspaceGitState } from './git-context';
import { issueUrlShape, matchIssueUrl, type IssueUrlMatch } from './issue-url';
import { readSettings } from './settings';

/*
 * "Dockhand: Send ticket to agent": choose a ticket, gather the workspace context, confirm the
 * budgets, send, then follow provisioning in a progress notification and open the side panel.
 * Every step can be cancelled with Escape; nothing is sent until the last one.
 */

export interface SendTicketDeps {
  api(): ApiClient;
  state: DockhandState;
  log: vscode.LogOutputChannel;
  revealPanel(): void;
  readGit?: (folder: string) => Promise<WorkspaceGitState>;
  /** False when there is no token: the developer is offered "Sign in" before anything else. */
  signedIn?: () => Promise<boolean>;
}

type TicketPick = vscode.QuickPickItem & { ticket?: TicketSummary; action?: 'url' | 'text' };

export async function sendTicket(deps: SendTicketDeps, fromEditor = false): Promise<string | undefined> {
  if (deps.signedIn && !(await deps.signedIn())) {
    const choice = await vscode.window.showErrorMessage('Dockhand: sign in to the Dockhand server before sending a ticket.', 'Sign in');
    if (choice === 'Sign in') void vscode.commands.executeCommand('dockhand.signIn');
    return undefined;
  }
  const folder = pickFolder();
  if (!folder) {
    void vscode.window.showErrorMessage('Dockhand: open a folder with a git repository first.');
    return undefined;
  }
  let git: WorkspaceGitState;
  try {
    git = await (deps.readGit ?? readGitState)(folder.uri.fsPath);
  } catch (error) {
    void vscode.window.showErrorMessage(`Dockhand: ${describeError(error)}`);
    return undefined;
  }
  const settings = readSettings();
  if (!(await confirmGitState(git, settings.warnWhenDirty))) return undefined;

  const repo = await resolveRepository(deps, git);
  if (!repo) return undefined;
  const ticket = await chooseTicket(deps, repo, git.repo);
  if (!ticket) return undefined;

  const context = await chooseEditorContext(git.root, settings.includeActiveFile, fromEditor);
  if (!context) return undefined;

  const confirmed = settings.confirmBudgets ? await confirmBudgets(settings.budgets) : { budgets: settings.budgets, allowTestEdits: false };
  if (!confirmed) return undefined;
  const { budgets, allowTestEdits } = confirmed;

  const request: CreateTaskRequest = {
    ticket,
    context: {
      repo,
      baseSha: git.headSha,
      branch: git.branch,
      dirty: git.dirty,
      contextFiles: context.activeFile ? [context.activeFile] : [],
      ...context,
    },
    budgets,
    priority: 'normal',
    allowTestEdits,
  };
  let taskId: string;
  try {
    taskId = await deps.api().createTask(request);
  } catch (error) {
    deps.log.error(`Sending the task failed: ${describeError(error)}`);
    void vscode.window.showErrorMessage(`Dockhand: sending the task failed: ${describeError(error)}`);
    return undefined;
  }
  deps.log.info(`Task ${taskId} created for "${ticket.title}" at ${git.headSha}`);
  try {
    deps.state.addTask(await deps.api().getTask(taskId));
  } catch (error) {
    deps.log.warn(`Could not read task ${taskId} back: ${describeError(error)}`);
  }
  deps.state.select(taskId);
  deps.revealPanel();
  void showProvisioning(deps.state, taskId);
  return taskId;
}

/** "/srv/git/shop.git/", "https://host/acme/shop.git" and "git@host:acme/shop" compared without the noise. */
function sameSource(a: string, b: string): boolean {
  const normal = (value: string) => value.trim().replace(/\/+$/, '').replace(/\.git$/, '').replace(/^[a-z+]+:\/\/([^@/]+@)?/, '').replace(/^[^@/]+@([^:]+):/, '$1/').toLowerCase();
  return normal(a) === normal(b);
}

/**
 * The registered repository this folder is a clone of: a task names a registered repository, never
 * a path or URL. Matched by the `origin` remote against each registration's source; otherwise the
 * developer picks one. A server without registrations (older) gets the remote as before.
 */
async function resolveRepository(deps: SendTicketDeps, git: WorkspaceGitState): Promise<string | undefined> {
  let repos: Array<{ name: string; source: string }>;
  try {
    repos = await deps.api().listRepos();
  } catch (error) {
    if (error instanceof DockhandError && error.code === 'not_found' && error.details.status === 404) return git.repo;
    deps.log.error(`Listing the registered repositories failed: ${describeError(error)}`);
    void vscode.window.showErrorMessage(`Dockhand: cannot list the server's repositories: ${describeError(error)}`);
    return undefined;
  }
  const match = repos.find((registration) => sameSource(registration.source, git.repo) || registration.name === git.repo);
  if (match) return match.name;
  if (repos.length === 0) {
    void vscode.window.showErrorMessage(`Dockhand: no repository is registered on the server for you yet. An admin registers this one with "dockhand repo add <name> --from ${git.repo}".`);
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    repos.map((registration) => ({ label: registration.name, description: registration.source })),
    { title: 'Dockhand: which registered repository is this?', placeHolder: `This folder's origin (${git.repo}) matches no registration; pick the one it is a clone of`, ignoreFocusOut: true },
  );
  return picked?.label;
}

function pickFolder(): vscode.WorkspaceFolder | undefined {
  const active = vscode.window.activeTextEditor?.document.uri;
  return (active && vscode.workspace.getWorkspaceFolder(active)) ?? vscode.workspace.workspaceFolders?.[0];
}

async function confirmGitState(git: WorkspaceGitState, warnWhenDirty: boolean): Promise<boolean> {
  const problems: string[] = [];
  if (warnWhenDirty && git.dirty) problems.push('the working tree has uncommitted changes the agent will not see');
  if (git.hasRemote && !git.pushed) problems.push(`HEAD (${git.headSha.slice(0, 8)}) is not pushed, so the server may not be able to fetch it`);
  if (problems.length === 0) return true;
  const choice = await vscode.window.showWarningMessage(
    `Dockhand starts from HEAD ${git.headSha.slice(0, 8)}${git.branch ? ` on ${git.branch}` : ''}, but ${problems.join(', and ')}.`,
    { modal: true },
    'Send anyway',
  );
  return choice === 'Send anyway';
}

async function chooseTicket(deps: SendTicketDeps, repo: string, origin: string): Promise<Ticket | undefined> {
  const picker = vscode.window.createQuickPick<TicketPick>();
  picker.title = 'Dockhand: Send ticket to agent';
  picker.placeholder = 'Pick an open issue, paste an issue URL, or describe the task';
  picker.matchOnDetail = true;
  const fixed: TicketPick[] = [
    { label: '$(edit) Describe the task', action: 'text', alwaysShow: true },
    { label: '$(link) Paste an issue URL', action: 'url', alwaysShow: true },
  ];
  picker.items = fixed;
  picker.busy = true;
  let tickets: TicketSummary[] = [];
  const loading = deps
    .api()
    .listTickets(repo)
    .then((found) => {
      tickets = found;
      picker.items = [
        ...fixed,
        { label: 'Open issues', kind: vscode.QuickPickItemKind.Separator },
        ...found.map((ticket) => {
          const open = openTaskFor(deps, repo, ticket.id);
          const marker = open ? (open.prUrl ? '$(git-pull-request) has an open Dockhand PR' : `$(sync) Dockhand task: ${open.state.replace(/_/g, ' ')}`) : undefined;
          return { label: `#${ticket.id} ${ticket.title}`, description: marker, detail: ticket.body.slice(0, 200), ticket };
        }),
      ];
    })
    .catch((error: unknown) => {
      deps.log.warn(`Could not list open issues: ${describeError(error)}`);
      // Said in the list itself (a separator would hide the reason), with what to do.
      picker.items = [...fixed, { label: '$(error) Open issues could not be loaded', detail: describeError(error), alwaysShow: true }];
    })
    .finally(() => {
      picker.busy = false;
    });
  const chosen = await new Promise<TicketPick | undefined>((resolve) => {
    picker.onDidAccept(() => resolve(picker.selectedItems[0]));
    picker.onDidHide(() => resolve(undefined));
    picker.show();
  });
  picker.dispose();
  void loading;
  if (!chosen) return undefined;
  let picked = chosen.ticket;
  if (chosen.action === 'url') {
    await loading;
    picked = await ticketFromUrl(tickets, origin, repo);
    if (!picked) return undefined;
  }
  if (picked) {
    // Offer the task (or PR) that already works on this issue rather than a second one.
    const open = openTaskFor(deps, repo, picked.id);
    if (open) {
      const choice = await vscode.window.showWarningMessage(
        `Dockhand already ${open.prUrl ? 'opened a pull request' : `has a task (${open.state.replace(/_/g, ' ')})`} for #${picked.id}.`,
        { modal: true },
        open.prUrl ? 'Open pull request' : 'Open the task',
        'Send another task',
      );
      if (choice === 'Send another task') return issueTicket(picked);
      if (choice === 'Open pull request' && open.prUrl) void vscode.env.openExternal(vscode.Uri.parse(open.prUrl));
      if (choice === 'Open the task') {
        deps.state.select(open.id);
        deps.revealPanel();
      }
      return undefined;
    }
    return issueTicket(picked);
  }
  if (chosen.action === 'text') return describedTicket();
  return undefined;
}

/** A task of this window's list on the same issue that is still going or has its PR open. */
function openTaskFor(deps: SendTicketDeps, repo: string, issueId: string): Task | undefined {
  const tasks: readonly Task[] = deps.state.tasks ?? [];
  return tasks.find((task) => task.ticket.kind === 'issue' && task.ticket.id === issueId && task.context.repo === repo && (!isFinalState(task.state) || task.state === 'pr_open'));
}

function issueTicket(ticket: TicketSummary): Ticket {
  return { kind: 'issue', id: ticket.id, title: ticket.title, body: ticket.body, ...(ticket.url ? { url: ticket.url } : {}) };
}

const problemOf = (match: IssueUrlMatch): string | undefined => ('problem' in match ? match.problem : undefined);

/** An open issue of this repository by its URL; another repository's URL or an unknown number is refused in the box. */
async function ticketFromUrl(open: TicketSummary[], origin: string, repo: string): Promise<TicketSummary | undefined> {
  const url = await vscode.window.showInputBox({
    title: 'Dockhand: issue URL',
    prompt: `Paste the URL of an open issue of ${repo}`,
    ignoreFocusOut: true,
    validateInput: (value) => issueUrlShape(value) ?? problemOf(matchIssueUrl(value, open, origin, repo)),
  });
  if (!url) return undefined;
  const match = matchIssueUrl(url, open, origin, repo);
  if ('problem' in match) {
    void vscode.window.showErrorMessage(`Dockhand: ${match.problem}`);
    return undefined;
  }
  return match.ticket;
}

async function describedTicket(): Promise<Ticket | undefined> {
  const title = await vscode.window.showInputBox({
    title: 'Dockhand: describe the task (1/2)',
    prompt: 'One line: what should the agent do?',
    ignoreFocusOut: true,
    validateInput: (value) => (value.trim().length === 0 ? 'Say what the agent should do' : value.length > 500 ? 'Keep the title under 500 characters' : undefined),
  });
  if (!title) return undefined;
  const body = await vscode.window.showInputBox({
    title: 'Dockhand: describe the task (2/2)',
    prompt: 'Details, acceptance criteria (optional; Enter to skip)',
    ignoreFocusOut: true,
  });
  if (body === undefined) return undefined;
  return { kind: 'text', title: title.trim(), body: body.trim() };
}

/** Returns {} for "no editor context", undefined when the developer cancelled. */
async function chooseEditorContext(
  root: string,
  mode: 'ask' | 'always' | 'never',
  fromEditor: boolean,
): Promise<{ activeFile?: string; selection?: Selection } | undefined> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || mode === 'never' || editor.document.uri.scheme !== 'file') return {};
  const path = relative(root, editor.document.uri.fsPath);
  if (path.startsWith('..') || isAbsolute(path)) return {};
  const range = editor.selection;
  const selection: Selection | undefined = range.isEmpty
    ? undefined
    : { path, startLine: range.start.line + 1, endLine: range.end.line + 1, text: editor.document.getText(range) };
  if (mode === 'ask' && !fromEditor) {
    const what = selection ? `${path} and lines ${selection.startLine}–${selection.endLine}` : path;
    const choice = await vscode.window.showQuickPick([`Include ${what}`, 'Do not include the editor'], {
      title: 'Dockhand: give the agent the active editor?',
      ignoreFocusOut: true,
    });
    if (choice === undefined) return undefined;
    if (choice.startsWith('Do not')) return {};
  }
  return selection ? { activeFile: path, selection } : { activeFile: path };
}

const ALLOW_TEST_EDITS = 'and let the agent edit tests';

/**
 * The budgets, and whether the agent may edit tests (policy refuses test edits unless the ticket
 * asks; this is the developer saying it does).
 */
async function confirmBudgets(defaults: Budgets): Promise<{ budgets: Budgets; allowTestEdits: boolean } | undefined> {
  const summary = `${defaults.maxTurns} turns, $${defaults.maxCostUsd.toFixed(2)}, ${Math.round(defaults.maxWallClockSeconds / 60)} min`;
  const choice = await vscode.window.showQuickPick([`Send with budgets: ${summary}`, `Send with budgets: ${summary}, ${ALLOW_TEST_EDITS}`, 'Adjust budgets…'], {
    title: 'Dockhand: budgets for this task',
    ignoreFocusOut: true,
  });
  if (choice === undefined) return undefined;
  if (!choice.startsWith('Adjust')) return { budgets: defaults, allowTestEdits: choice.endsWith(ALLOW_TEST_EDITS) };
  const budgets = await adjustBudgets(defaults);
  if (!budgets) return undefined;
  const tests = await vscode.window.showQuickPick(['Send', `Send, ${ALLOW_TEST_EDITS}`], { title: 'Dockhand: send the task', ignoreFocusOut: true });
  return tests === undefined ? undefined : { budgets, allowTestEdits: tests.endsWith(ALLOW_TEST_EDITS) };
}

async function adjustBudgets(defaults: Budgets): Promise<Budgets | undefined> {
  const turns = await askNumber('Maximum model turns', defaults.maxTurns, 1, 500, true);
  if (turns === undefined) return undefined;
  const cost = await askNumber('Maximum cost in US dollars', defaults.maxCostUsd, 0.01, 1000, false);
  if (cost === undefined) return undefined;
  const minutes = await askNumber('Maximum wall-clock minutes', Math.round(defaults.maxWallClockSeconds / 60), 1, 1440, true);
  if (minutes === undefined) return undefined;
  return { maxTurns: turns, maxCostUsd: cost, maxWallClockSeconds: minutes * 60 };
}

async function askNumber(prompt: string, value: number, min: number, max: number, integer: boolean): Promise<number | undefined> {
  const text = await vscode.window.showInputBox({
    title: 'Dockhand: adjust budgets',
    prompt,
    value: String(value),
    ignoreFocusOut: true,
    validateInput: (input) => {
      const number = Number(input);
      if (!Number.isFinite(number) || (integer && !Number.isInteger(number))) return `Enter ${integer ? 'a whole number' : 'a number'}`;
      if (number < min || number > max) return `Between ${min} and ${max}`;
      return undefined;
    },
  });
  return text === undefined ? undefined : Number(text);
}

/** A progress notification from "sent" until the sandbox is ready (or the task ends). */
function showProvisioning(state: DockhandState, taskId: string): Thenable<void> {
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'Dockhand', cancellable: false },
    (progress) =>
      new Promise<void>((resolve) => {
        progress.report({ message: 'Task queued; waiting for a sandbox…' });
        const timeout = setTimeout(finish, 10 * 60_000);
        const subscription = state.onDidReceiveEvents(({ taskId: id, events }) => {
          if (id !== taskId) return;
          for (const event of events) {
            if (event.type === 'task.state' && event.data.state === 'provisioning') progress.report({ message: 'Provisioning a sandbox…' });
            if (event.type === 'snapshot.progress') {
              progress.report({ message: `Building the sandbox snapshot: ${event.data.stage}, ${Math.round(event.data.elapsedMs / 1000)} s${event.data.line ? ` — ${event.data.line.slice(0, 80)}` : ''}` });
            }
            if (event.type === 'sandbox.ready') return finish();
            if (event.type === 'task.failed' || (event.type === 'task.state' && event.data.state !== 'queued' && event.data.state !== 'provisioning')) return finish();
          }
        });
        function finish(): void {
          clearTimeout(timeout);
          subscription.dispose();
          resolve();
        }
      }),
  );
}
