import { isFinalState, type Task } from '@dockhand/protocol';
import { ActionArea } from './action-area';
import { renderApprovalCards } from './approval-cards';
import { button, h } from './dom';
import { FromWebview, ToWebview, type ApprovalAccess, type ConnectionStatus, type PendingComment, type ReviewFile } from './messages';
import { renderRow, type RowContext } from './rows';
import { renderTaskItems } from './task-list';
import { applyEvents, createTrajectory, formatDuration, formatTokens, isWorkingState, stateLabel, stateTone, workedMs, type Trajectory } from './trajectory';
import { VirtualList } from './virtual-list';

/*
 * The side panel. It renders what the extension sends and posts the developer's decisions back;
 * it never talks to the server. It says `ready` once its listener is in place, and the extension
 * sends nothing before that.
 *
 * Layout, top to bottom: the selected task's header (a picker that opens the task list, the title,
 * the state, and the budgets in a section that folds to one line), one banner for a problem,
 * approval cards, the trajectory (the only part that grows), and one compact action area
 * (action-area.ts). The task list and the budget bars are folded away in review, so the trajectory
 * keeps most of a 720-pixel-high side bar (issue 24 found it left 85-140 px).
 */

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

interface SavedState {
  selectedTaskId: string | null;
  drafts: Record<string, string>;
}

const vscode = acquireVsCodeApi();

function readSavedState(): SavedState {
  const raw = vscode.getState();
  const state: SavedState = { selectedTaskId: null, drafts: {} };
  if (raw && typeof raw === 'object') {
    const selected: unknown = Reflect.get(raw, 'selectedTaskId');
    const drafts: unknown = Reflect.get(raw, 'drafts');
    if (typeof selected === 'string') state.selectedTaskId = selected;
    if (drafts && typeof drafts === 'object') {
      for (const [key, value] of Object.entries(drafts)) if (typeof value === 'string') state.drafts[key] = value;
    }
  }
  return state;
}

const saved = readSavedState();
let tasks: Task[] = [];
let selectedTaskId: string | null = saved.selectedTaskId;
let trajectory: Trajectory | null = null;
let connection: { status: ConnectionStatus; detail?: string } = { status: 'connecting' };
/** Who may decide the selected task's pending approvals, as the extension last heard from the server. */
let access: { taskId: string; byId: Map<string, ApprovalAccess>; canReview: boolean } = { taskId: '', byId: new Map(), canReview: true };
let pending: { taskId: string; comments: PendingComment[] } = { taskId: '', comments: [] };
/** The selected task's diff under review with the decisions, as the extension read it from the server. */
let reviewFiles: { taskId: string; files: ReviewFile[] } = { taskId: '', files: [] };
/** A refusal or other notice from the extension; cleared when the next state arrives. */
let notice: { level: 'info' | 'error'; text: string } | null = null;

/** False only once the extension said the viewer does not own the selected task. */
function viewerMayReview(): boolean {
  return access.taskId !== selectedTaskId || access.canReview;
}
const context: RowContext = {
  loadedOutputs: new Map(),
  clippedOutputs: new Map(),
  expanded: new Set(),
  loadOutput: (seq) => selectedTaskId && post({ type: 'loadOutput', taskId: selectedTaskId, seq }),
  openDiff: (path) => selectedTaskId && post({ type: 'openDiff', taskId: selectedTaskId, path }),
  resized: () => list.remeasure(),
};

function post(message: FromWebview): void {
  vscode.postMessage(FromWebview.parse(message));
}

function persist(): void {
  vscode.setState({ selectedTaskId, drafts: saved.drafts } satisfies SavedState);
}

// ---- layout -------------------------------------------------------------------------------

const taskList = h('ul', { className: 'task-list', attrs: { id: 'task-list', 'aria-label': 'Tasks' } });
/** The task list is a picker: open while no task is selected, or when the developer opens it. */
let pickerOpen = false;
const picker = h('button', { className: 'task-picker', attrs: { type: 'button', 'aria-controls': 'task-list', 'aria-expanded': 'false' } });
picker.addEventListener('click', () => {
  pickerOpen = !pickerOpen;
  renderTasks();
  if (pickerOpen) taskList.querySelector<HTMLElement>('.task-item.selected, .task-item')?.focus();
});
taskList.addEventListener('keydown', (event) => {
  if (event.key !== 'Escape' || !selectedTaskId) return;
  pickerOpen = false;
  renderTasks();
  picker.focus();
});
const empty = h(
  'div',
  { className: 'empty' },
  h('p', {}, 'No tasks yet.'),
  button('Send ticket to agent', 'primary', () => post({ type: 'sendTicket' })),
);
const title = h('h2', { className: 'task-title' });
const stateBadge = h('span', { className: 'badge state' });
const connectionBadge = h('span', { className: 'badge connection' });
const budgets = h('div', { className: 'budgets' });
/** The budgets fold to their cost on the title line; the bars show while the agent works, or when the developer opens them. */
const budgetsToggle = h('button', { className: 'budgets-toggle', attrs: { type: 'button', 'aria-controls': 'budgets' } });
budgets.id = 'budgets';
/** The developer's own choice (until another task is selected); else open only while the agent works. */
let budgetsFolded: boolean | null = null;
budgetsToggle.addEventListener('click', () => {
  budgetsFolded = !budgets.hidden;
  renderHeader();
});
const banner = h('div', { className: 'banner', attrs: { role: 'alert' } });
const approvals = h('section', { className: 'approvals', attrs: { 'aria-label': 'Pending approvals' } });
const viewport = h('div', { className: 'trajectory', attrs: { role: 'log', 'aria-label': 'Trajectory', tabindex: '0' } });
const actions = new ActionArea({
  post,
  draftChanged: (text) => {
    if (!selectedTaskId) return;
    if (text) saved.drafts[selectedTaskId] = text;
    else delete saved.drafts[selectedTaskId];
    persist();
  },
});
const header = h('section', { className: 'task-header', attrs: { 'aria-label': 'Selected task' } }, h('div', { className: 'title-line' }, picker, title, stateBadge, connectionBadge, budgetsToggle), budgets);
const detail = h('div', { className: 'detail' }, header, banner, approvals, viewport, actions.element);
document.body.append(h('main', { className: 'app' }, h('nav', { className: 'tasks', attrs: { 'aria-label': 'Tasks' } }, taskList), empty, detail));

const list = new VirtualList(viewport, {
  renderRow: (index) => {
    const row = trajectory?.rows[index];
    return row ? renderRow(row, context) : h('div');
  },
  rowVersion: (index) => {
    const row = trajectory?.rows[index];
    if (!row) return '';
    const loaded = context.loadedOutputs.has(row.kind === 'tool' ? (row.result?.seq ?? row.seq) : row.seq) ? 'L' : '';
    return `${row.seq}:${row.version}${loaded}`;
  },
});

// ---- rendering ----------------------------------------------------------------------------

function renderTasks(): void {
  const shown = tasks.map((listed) => {
    // The selected task's live events are newer than the list the extension last sent.
    const live = trajectory && trajectory.summary.taskId === listed.id && trajectory.lastSeq > listed.lastSeq ? trajectory.summary : undefined;
    return live ? { ...listed, state: live.state, usage: { ...listed.usage, costUsd: Math.max(listed.usage.costUsd, live.costUsd) } } : listed;
  });
  const focused = document.activeElement instanceof HTMLElement ? document.activeElement.dataset.taskId : undefined;
  taskList.replaceChildren(
    ...renderTaskItems(shown, selectedTaskId, Date.now(), (taskId) => {
      if (taskId !== selectedTaskId) post({ type: 'selectTask', taskId });
      if (pickerOpen) {
        pickerOpen = false;
        renderTasks();
        picker.focus();
      }
    }),
  );
  if (focused) taskList.querySelector<HTMLElement>(`[data-task-id="${CSS.escape(focused)}"]`)?.focus();
  empty.hidden = tasks.length > 0;
  const listShown = tasks.length > 0 && (pickerOpen || !selectedTaskId);
  taskList.hidden = !listShown;
  picker.hidden = !selectedTaskId;
  picker.replaceChildren(h('span', { attrs: { 'aria-hidden': 'true' } }, listShown ? '▾ ' : '▸ '), String(tasks.length));
  picker.setAttribute('aria-expanded', String(listShown));
  picker.setAttribute('aria-label', `${tasks.length} ${tasks.length === 1 ? 'task' : 'tasks'}: ${listShown ? 'hide the list' : 'show the list to choose another'}`);
  picker.title = listShown ? 'Hide the task list' : `Choose another task (${tasks.length} in all)`;
  detail.hidden = !selectedTaskId;
}

/** " · 43% cached": the share of the prompt read from the cache, once a model call reported it. */
function cacheShare(tokens: Trajectory['summary']['tokens']): string {
  const prompt = tokens.inputTokens + tokens.cacheReadTokens + tokens.cacheWriteTokens;
  return prompt ? ` · ${Math.round((tokens.cacheReadTokens / prompt) * 100)}% cached` : '';
}

function bar(label: string, used: number, limit: number, text: string, detail?: string): HTMLElement {
  const ratio = limit > 0 ? Math.min(1, used / limit) : 0;
  const fill = h('div', { className: `bar-fill${ratio >= 0.9 ? ' high' : ''}` });
  fill.style.width = `${(ratio * 100).toFixed(1)}%`;
  return h(
    'div',
    { className: 'budget', title: `${label}: ${text}${detail ? `\n${detail}` : ''}`, attrs: { role: 'meter', 'aria-label': label, 'aria-valuenow': String(used), 'aria-valuemin': '0', 'aria-valuemax': String(limit), 'aria-valuetext': text } },
    h('span', { className: 'budget-label' }, label),
    h('div', { className: 'bar' }, fill),
    h('span', { className: 'budget-text' }, text),
  );
}

function currentState(): Task['state'] {
  const summary = trajectory!.summary;
  const task = tasks.find((t) => t.id === summary.taskId);
  return trajectory!.lastSeq > 0 ? summary.state : (task?.state ?? summary.state);
}

function renderHeader(): void {
  if (!trajectory) return;
  const summary = trajectory.summary;
  const task = tasks.find((t) => t.id === summary.taskId);
  const state = currentState();
  title.textContent = summary.title || task?.ticket.title || summary.taskId;
  stateBadge.textContent = stateLabel(state);
  stateBadge.className = `badge state tone-${stateTone(state)}`;
  const status = connection.status;
  connectionBadge.textContent = status === 'signed_out' ? 'signed out' : status;
  connectionBadge.className = `badge connection connection-${status}`;
  // "live" matters while the agent works or waits on the developer mid-run (paused, an approval): the
  // developer acts through the connection then; later only a problem with the connection is worth the room.
  connectionBadge.hidden = status === 'live' && !isWorkingState(state) && state !== 'awaiting_approval' && state !== 'paused';
  // The clock counts the agent's time only: waiting for the developer's review or decision is not the agent's.
  const elapsedMs = workedMs(summary, isWorkingState(state) ? Date.now() : Date.parse(summary.lastEventAt ?? '') || Date.now());
  const b = summary.budgets;
  // Tokens on the cost line (its share read from the cache) and in full in its tooltip: no extra line taken from the trajectory.
  const tokens = formatTokens(summary.tokens);
  const open = budgetsFolded === null ? isWorkingState(state) : !budgetsFolded;
  budgets.hidden = !open;
  const said = `${summary.turnsUsed} of ${b.maxTurns} turns, $${summary.costUsd.toFixed(2)} of $${b.maxCostUsd.toFixed(2)}, ${formatDuration(elapsedMs)}`;
  budgetsToggle.textContent = `$${summary.costUsd.toFixed(2)}`;
  budgetsToggle.setAttribute('aria-expanded', String(open));
  budgetsToggle.setAttribute('aria-label', `$${summary.costUsd.toFixed(2)} spent: ${open ? 'hide the budgets' : 'show the budgets'}`);
  budgetsToggle.title = `Budgets: ${said}. ${open ? 'Click to fold them.' : 'Click to show them as bars.'}`;
  budgets.replaceChildren(
    bar('Turns', summary.turnsUsed, b.maxTurns, `${summary.turnsUsed} / ${b.maxTurns}`),
    bar('Cost', summary.costUsd, b.maxCostUsd, `$${summary.costUsd.toFixed(2)} / $${b.maxCostUsd.toFixed(2)}${cacheShare(summary.tokens)}`, tokens ? `Tokens: ${tokens}` : undefined),
    bar('Time', elapsedMs / 1000, b.maxWallClockSeconds, `${formatDuration(elapsedMs)} / ${formatDuration(b.maxWallClockSeconds * 1000)}`),
  );

  renderBanner();
}

let bannerKey = '';

/** One banner, one problem: signed out, the connection, a failure, or the last refusal. */
function renderBanner(): void {
  const summary = trajectory?.summary;
  // Redrawn only when what it says changes, so a focused "Sign in" keeps the focus.
  const key = JSON.stringify([connection, summary?.failure ?? null, notice]);
  if (key === bannerKey) return;
  bannerKey = key;
  const parts: Array<HTMLElement | string> = [];
  let tone = 'warn';
  if (connection.status === 'signed_out') {
    tone = 'error';
    parts.push(h('strong', {}, 'Signed out. '), connection.detail ?? 'The server did not accept your token.', ' ', button('Sign in', 'link banner-action', () => post({ type: 'command', command: 'signIn' })));
  } else if (connection.status === 'reconnecting' || connection.status === 'offline') {
    parts.push(connection.detail ?? 'Lost the connection to the Dockhand server; reconnecting…');
  } else if (summary?.failure) {
    tone = summary.failure.kind === 'budget' ? 'budget' : 'error';
    const failure = summary.failure;
    parts.push(
      h('strong', { className: 'failure-title' }, `${failure.title}.`),
      failure.detail ? ` ${failure.detail}.` : '',
      h('div', { className: 'failure-action' }, failure.action, ' ', button('Show details', 'link banner-action', () => post({ type: 'command', command: 'showOutput' }))),
    );
  } else if (notice) {
    tone = notice.level === 'error' ? 'error' : 'info';
    parts.push(notice.text);
  }
  banner.replaceChildren(...parts);
  banner.className = `banner tone-${tone}`;
  banner.hidden = parts.length === 0;
}

function renderApprovals(): void {
  if (!trajectory) return approvals.replaceChildren();
  const known = access.taskId === selectedTaskId ? access.byId : undefined;
  const cards = renderApprovalCards(trajectory, known, (approvalId, decision) => {
    if (selectedTaskId) post({ type: 'decideApproval', taskId: selectedTaskId, approvalId, decision });
  });
  approvals.replaceChildren(...cards);
  approvals.hidden = cards.length === 0;
}

function renderActions(): void {
  if (!trajectory || !selectedTaskId) return actions.render(null);
  actions.render({
    taskId: selectedTaskId,
    state: currentState(),
    summary: trajectory.summary,
    mayReview: viewerMayReview(),
    requester: tasks.find((t) => t.id === selectedTaskId)?.owner,
    pending: pending.taskId === selectedTaskId ? pending.comments : [],
    files: reviewFiles.taskId === selectedTaskId ? reviewFiles.files : [],
  });
}

function renderDetail(): void {
  renderHeader();
  renderApprovals();
  renderActions();
}

function selectTrajectory(taskId: string): void {
  selectedTaskId = taskId;
  trajectory = createTrajectory(taskId);
  context.loadedOutputs.clear();
  context.clippedOutputs.clear();
  context.expanded.clear();
  notice = null;
  budgetsFolded = null;
  actions.setDraft(saved.drafts[taskId] ?? '');
  list.reset(0);
  persist();
}

// ---- messages -----------------------------------------------------------------------------

window.addEventListener('message', (event: MessageEvent<unknown>) => {
  const parsed = ToWebview.safeParse(event.data);
  if (!parsed.success) return;
  const message = parsed.data;
  switch (message.type) {
    case 'tasks':
      tasks = message.tasks;
      if (message.selectedTaskId && message.selectedTaskId !== selectedTaskId) selectTrajectory(message.selectedTaskId);
      if (!message.selectedTaskId && selectedTaskId && !tasks.some((t) => t.id === selectedTaskId)) selectedTaskId = null;
      renderTasks();
      renderDetail();
      break;
    case 'events': {
      if (message.taskId !== selectedTaskId || !trajectory || message.reset) selectTrajectory(message.taskId);
      if (!trajectory) break;
      for (const clip of message.clipped) context.clippedOutputs.set(clip.seq, clip.totalChars);
      const before = trajectory.rows.length;
      const stateBefore = trajectory.summary.state;
      const touched = applyEvents(trajectory, message.events);
      if (trajectory.summary.state !== stateBefore) notice = null;
      list.setCount(trajectory.rows.length);
      for (const index of touched) if (index < before) list.invalidate(index);
      renderTasks();
      renderDetail();
      break;
    }
    case 'connection':
      if (message.taskId !== selectedTaskId) break;
      connection = { status: message.status, detail: message.detail };
      renderHeader();
      break;
    case 'output': {
      if (message.taskId !== selectedTaskId || !trajectory) break;
      context.loadedOutputs.set(message.seq, message.text);
      const index = trajectory.rows.findIndex((row) => row.seq === message.seq || (row.kind === 'tool' && row.result?.seq === message.seq));
      if (index >= 0) {
        context.expanded.add(trajectory.rows[index]!.seq);
        list.invalidate(index);
      }
      break;
    }
    case 'approvals':
      access = { taskId: message.taskId, byId: new Map(message.approvals.map((a) => [a.approvalId, a])), canReview: message.canReview };
      if (message.taskId === selectedTaskId) renderDetail();
      break;
    case 'pendingComments':
      pending = { taskId: message.taskId, comments: message.comments };
      if (message.taskId === selectedTaskId) renderActions();
      break;
    case 'fileDecisions':
      reviewFiles = { taskId: message.taskId, files: message.files };
      if (message.taskId === selectedTaskId) renderActions();
      break;
    case 'notice':
      notice = { level: message.level, text: message.text };
      renderBanner();
      // Actions the server refused re-enable their buttons so the developer can try again.
      if (message.level === 'error') actions.enable();
      break;
  }
});

// The wall-clock bar moves while the agent works; the list's "5 min ago" every so often.
let ticks = 0;
setInterval(() => {
  ticks += 1;
  if (trajectory && !isFinalState(trajectory.summary.state)) renderHeader();
  if (ticks % 30 === 0) renderTasks();
}, 1000);

banner.hidden = true;
approvals.hidden = true;
actions.element.hidden = true;
renderTasks();
post({ type: 'ready' });
