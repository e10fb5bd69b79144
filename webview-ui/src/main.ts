import { ACTIVE_STATES, isFinalState, type Task } from '@dockhand/protocol';
import { button, h } from './dom';
import { FromWebview, ToWebview, type ApprovalAccess, type ConnectionStatus, type ReviewAction } from './messages';
import { renderRow, type RowContext } from './rows';
import { applyEvents, createTrajectory, formatDuration, stateLabel, stateTone, type Trajectory } from './trajectory';
import { VirtualList } from './virtual-list';

/*
 * The side panel. It renders what the extension sends and posts the developer's decisions back;
 * it never talks to the server. It says `ready` once its listener is in place, and the extension
 * sends nothing before that.
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

const taskList = h('ul', { className: 'task-list', attrs: { 'aria-label': 'Tasks' } });
const empty = h(
  'div',
  { className: 'empty' },
  h('p', {}, 'No tasks yet.'),
  button('Send ticket to agent', 'primary', () => post({ type: 'sendTicket' })),
);
const title = h('div', { className: 'task-title' });
const stateBadge = h('span', { className: 'badge state' });
const connectionBadge = h('span', { className: 'badge connection' });
const budgets = h('div', { className: 'budgets' });
const interruptButton = button('Interrupt', 'secondary interrupt', () => selectedTaskId && post({ type: 'interrupt', taskId: selectedTaskId }));
const banner = h('div', { className: 'banner', attrs: { role: 'alert' } });
const approvals = h('section', { className: 'approvals', attrs: { 'aria-label': 'Pending approvals' } });
const viewport = h('div', { className: 'trajectory', attrs: { role: 'log', 'aria-label': 'Trajectory' } });
const review = h('section', { className: 'review', attrs: { 'aria-label': 'Review' } });
const steerInput = h('textarea', { className: 'steer-input', attrs: { rows: '2', placeholder: 'Message the agent (Ctrl+Enter to send)' } });
const steerButton = button('Send', 'primary steer-send', sendSteer);
const steer = h('form', { className: 'steer' }, steerInput, steerButton);
const header = h('section', { className: 'task-header' }, h('div', { className: 'title-line' }, title, stateBadge, connectionBadge), budgets, h('div', { className: 'controls' }, interruptButton));
const detail = h('div', { className: 'detail' }, header, banner, approvals, viewport, review, steer);
document.body.append(h('div', { className: 'app' }, taskList, empty, detail));

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

steer.addEventListener('submit', (event) => {
  event.preventDefault();
  sendSteer();
});
steerInput.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) sendSteer();
});
steerInput.addEventListener('input', () => {
  if (selectedTaskId) saved.drafts[selectedTaskId] = steerInput.value;
  persist();
});

function sendSteer(): void {
  const text = steerInput.value.trim();
  if (!selectedTaskId || !text) return;
  post({ type: 'sendMessage', taskId: selectedTaskId, text });
  steerInput.value = '';
  delete saved.drafts[selectedTaskId];
  persist();
}

// ---- rendering ----------------------------------------------------------------------------

function renderTasks(): void {
  taskList.replaceChildren(
    ...tasks.map((listed) => {
      // The selected task's live events are newer than the list the extension last sent.
      const live = trajectory && trajectory.summary.taskId === listed.id && trajectory.lastSeq > listed.lastSeq ? trajectory.summary : undefined;
      const task = live ? { ...listed, state: live.state, usage: { ...listed.usage, costUsd: Math.max(listed.usage.costUsd, live.costUsd) } } : listed;
      const item = h(
        'li',
        { className: `task-item${task.id === selectedTaskId ? ' selected' : ''}`, dataset: { taskId: task.id }, attrs: { tabindex: '0' } },
        h('span', { className: 'task-item-title' }, task.ticket.title),
        h('span', { className: `badge tone-${stateTone(task.state)}` }, stateLabel(task.state)),
        h('span', { className: 'cost' }, `$${task.usage.costUsd.toFixed(2)}`),
      );
      const choose = (): void => {
        if (task.id !== selectedTaskId) post({ type: 'selectTask', taskId: task.id });
      };
      item.addEventListener('click', choose);
      item.addEventListener('keydown', (event) => event.key === 'Enter' && choose());
      return item;
    }),
  );
  empty.hidden = tasks.length > 0;
  detail.hidden = !selectedTaskId;
}

function bar(label: string, used: number, limit: number, text: string): HTMLElement {
  const ratio = limit > 0 ? Math.min(1, used / limit) : 0;
  const fill = h('div', { className: `bar-fill${ratio >= 0.9 ? ' high' : ''}` });
  fill.style.width = `${(ratio * 100).toFixed(1)}%`;
  return h(
    'div',
    { className: 'budget', title: `${label}: ${text}`, attrs: { role: 'meter', 'aria-label': label, 'aria-valuenow': String(used), 'aria-valuemax': String(limit) } },
    h('span', { className: 'budget-label' }, label),
    h('div', { className: 'bar' }, fill),
    h('span', { className: 'budget-text' }, text),
  );
}

function renderHeader(): void {
  if (!trajectory) return;
  const summary = trajectory.summary;
  const task = tasks.find((t) => t.id === summary.taskId);
  const state = trajectory.lastSeq > 0 ? summary.state : (task?.state ?? summary.state);
  title.textContent = summary.title || task?.ticket.title || summary.taskId;
  stateBadge.textContent = stateLabel(state);
  stateBadge.className = `badge state tone-${stateTone(state)}`;
  connectionBadge.textContent = connection.status === 'live' ? 'live' : connection.status;
  connectionBadge.className = `badge connection connection-${connection.status}`;
  const start = summary.startedAt ? Date.parse(summary.startedAt) : NaN;
  // The clock runs while the agent works; waiting for the developer or a finished task stops it.
  const working = state === 'queued' || ACTIVE_STATES.includes(state);
  const end = !working && summary.lastEventAt ? Date.parse(summary.lastEventAt) : Date.now();
  const elapsedMs = Number.isNaN(start) ? 0 : Math.max(0, end - start);
  const b = summary.budgets;
  budgets.replaceChildren(
    bar('Turns', summary.turnsUsed, b.maxTurns, `${summary.turnsUsed} / ${b.maxTurns}`),
    bar('Cost', summary.costUsd, b.maxCostUsd, `$${summary.costUsd.toFixed(2)} / $${b.maxCostUsd.toFixed(2)}`),
    bar('Time', elapsedMs / 1000, b.maxWallClockSeconds, `${formatDuration(elapsedMs)} / ${formatDuration(b.maxWallClockSeconds * 1000)}`),
  );
  const mine = viewerMayReview();
  interruptButton.disabled = !mine || isFinalState(state) || state === 'awaiting_review' || state === 'pr_open';
  steerInput.disabled = !mine || isFinalState(state);
  steerButton.disabled = !mine || isFinalState(state);
  if (connection.status === 'reconnecting' || connection.status === 'offline') {
    banner.textContent = connection.detail ?? 'Lost the connection to the Dockhand server; reconnecting…';
    banner.hidden = false;
  } else if (summary.failure) {
    banner.textContent = `This task failed: ${summary.failure}`;
    banner.hidden = false;
  } else if (banner.dataset.notice !== 'true') {
    banner.hidden = true;
  }
}

function renderApprovals(): void {
  if (!trajectory) return approvals.replaceChildren();
  const cards: HTMLElement[] = [];
  for (const approvalId of trajectory.summary.pendingApprovals) {
    const index = trajectory.approvalRows.get(approvalId);
    const row = index === undefined ? undefined : trajectory.rows[index];
    // The push approval is what the Review section decides ("Approve and push" approves it,
    // "Request changes" and "Reject" deny it): a card with its own Approve/Deny beside those
    // buttons would be a second control for the same decision.
    if (row?.kind !== 'approval' || row.approvalKind === 'push') continue;
    const decide = (decision: 'approved' | 'denied') => () => {
      if (!selectedTaskId) return;
      for (const b of card.querySelectorAll('button')) b.disabled = true;
      post({ type: 'decideApproval', taskId: selectedTaskId, approvalId, decision });
    };
    const card = h(
      'div',
      { className: 'approval-card', dataset: { approvalId } },
      h('div', { className: 'approval-title' }, row.approvalKind === 'command' ? 'The agent wants to run:' : `Approval needed (${row.approvalKind.replace('_', ' ')})`),
      row.command ? h('code', { className: 'command' }, row.command) : null,
      h('div', { className: 'reason' }, h('strong', {}, 'Why it was flagged: '), row.reason),
      decisionControls(approvalId, row.approvalKind, decide),
    );
    cards.push(card);
  }
  approvals.replaceChildren(...cards);
  approvals.hidden = cards.length === 0;
}

/**
 * Approve/Deny only for a viewer who may decide; otherwise who is being waited for. An override
 * is usually someone else's to decide (a repo owner), so its buttons wait until the server says
 * this viewer may; a command approval is the requester's, so its buttons go only when told not.
 */
function decisionControls(approvalId: string, kind: string, decide: (decision: 'approved' | 'denied') => () => void): HTMLElement {
  const known = access.taskId === selectedTaskId ? access.byId.get(approvalId) : undefined;
  const override = kind === 'policy_override';
  const mayDecide = override ? known?.canDecide === true : known?.canDecide !== false;
  if (mayDecide) {
    return h('div', { className: 'buttons' }, button('Approve', 'primary approve', decide('approved')), button('Deny', 'secondary deny', decide('denied')));
  }
  let text: string;
  if (!known) text = 'Checking who may decide…';
  else if (override) text = known.deciders.length ? `Waiting for an owner (${known.deciders.join(', ')})` : 'Waiting for an owner: the repository lists none in .dockhand/policy.yml';
  else text = `Waiting for ${known.deciders.join(', ') || 'the requester'}`;
  return h('div', { className: 'waiting' }, text);
}

function renderReview(): void {
  if (!trajectory) return review.replaceChildren();
  const summary = trajectory.summary;
  const reviewable = summary.state === 'awaiting_review';
  if (!reviewable && !summary.prUrl && !summary.policy) {
    review.hidden = true;
    return;
  }
  const parts: HTMLElement[] = [h('h3', {}, 'Review')];
  if (summary.policy) {
    const policy = summary.policy;
    // An overridden check keeps its violations (`ok: false`) but did not block: a repo owner let it through.
    const [tone, label] = policy.ok
      ? ['tone-ok', '✓ Policy checks passed']
      : policy.overridden
        ? ['tone-warn', `⚠ Policy checks overridden by ${policy.overriddenBy ?? 'a repo owner'}`]
        : ['tone-error', '✗ Policy checks failed'];
    parts.push(
      h(
        'div',
        { className: `policy ${tone}` },
        label,
        ...policy.violations.map((v) => h('div', { className: 'violation' }, `${v.rule} — ${v.path}${v.line ? `:${v.line}` : ''}: ${v.message}`)),
      ),
    );
  }
  if (summary.review) {
    parts.push(h('div', { className: 'self-review' }, summary.review.summary || (summary.review.approved ? 'Self-review approved.' : 'Self-review found problems.'), ...summary.review.problems.map((p) => h('div', { className: 'problem' }, `• ${p}`))));
  }
  if (summary.changedFiles.size) {
    parts.push(
      h(
        'ul',
        { className: 'changed-files' },
        ...[...summary.changedFiles].map(([path, change]) => {
          const link = button(path, 'link', () => context.openDiff(path), `Open the diff of ${path}`);
          return h('li', {}, h('span', { className: `badge change-${change}` }, change), ' ', link);
        }),
      ),
    );
  }
  if (reviewable && !viewerMayReview()) {
    const requester = tasks.find((t) => t.id === selectedTaskId)?.owner;
    parts.push(h('div', { className: 'waiting' }, `The review is ${requester ? `${requester}'s` : "the requester's"} to give.`));
  } else if (reviewable) {
    const comment = h('textarea', { className: 'review-comment', attrs: { rows: '2', placeholder: 'What should change? (needed for "Request changes")' } });
    const act = (action: ReviewAction) => () => {
      if (!selectedTaskId) return;
      const text = comment.value.trim();
      if (action === 'request_changes' && !text) {
        comment.focus();
        comment.classList.add('invalid');
        return;
      }
      for (const b of review.querySelectorAll('button')) b.disabled = true;
      post({ type: 'review', taskId: selectedTaskId, action, ...(text ? { comment: text } : {}) });
    };
    parts.push(
      comment,
      h(
        'div',
        { className: 'buttons' },
        button('Approve and push', 'primary review-approve', act('approve')),
        button('Request changes', 'secondary review-changes', act('request_changes')),
        button('Reject', 'secondary review-reject', act('reject')),
      ),
    );
  }
  if (summary.prUrl) {
    const url = summary.prUrl;
    parts.push(h('div', { className: 'pr-link' }, 'Pull request: ', button(url, 'link open-pr', () => post({ type: 'openExternal', url }))));
  }
  review.replaceChildren(...parts);
  review.hidden = false;
}

function renderDetail(): void {
  renderHeader();
  renderApprovals();
  renderReview();
}

function selectTrajectory(taskId: string): void {
  selectedTaskId = taskId;
  trajectory = createTrajectory(taskId);
  context.loadedOutputs.clear();
  context.clippedOutputs.clear();
  context.expanded.clear();
  steerInput.value = saved.drafts[taskId] ?? '';
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
      const touched = applyEvents(trajectory, message.events);
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
    case 'notice':
      banner.textContent = message.text;
      banner.className = `banner tone-${message.level === 'error' ? 'error' : 'info'}`;
      banner.dataset.notice = 'true';
      banner.hidden = false;
      // Actions the server refused re-enable their buttons so the developer can try again.
      if (message.level === 'error') renderDetail();
      break;
  }
});

// The wall-clock bar moves while the task runs.
setInterval(() => {
  if (trajectory && !isFinalState(trajectory.summary.state)) renderHeader();
}, 1000);

banner.hidden = true;
approvals.hidden = true;
review.hidden = true;
renderTasks();
post({ type: 'ready' });
