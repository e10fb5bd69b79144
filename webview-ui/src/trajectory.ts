import { ACTIVE_STATES, type Budgets, type TaskEvent, type TaskEventOf, type TaskState, type TurnUsage } from '@dockhand/protocol';
import { classifyFailure, type Failure } from './failures';

/*
 * Folds a task's event log into what the side panel shows: a list of rows (one per thing the
 * developer reads) plus a summary (state, budgets, pending approvals, policy, PR). Pure and
 * incremental so thousands of events cost one pass, and duplicate or replayed events are ignored
 * by seq.
 */

/** error: failed; budget: stopped by a budget; muted: ended by a person (cancelled, closed). */
export type Tone = 'info' | 'warn' | 'error' | 'ok' | 'budget' | 'muted';

interface RowBase {
  /** Seq of the event that created the row; rows are ordered by it. */
  seq: number;
  /** Bumped whenever a later event changes the row, so a renderer knows to redraw it. */
  version: number;
}

export type Row =
  | (RowBase & { kind: 'text'; turn: number; text: string })
  | (RowBase & { kind: 'user'; from: string; text: string })
  | (RowBase & {
      kind: 'tool';
      toolUseId: string;
      name: string;
      input: unknown;
      result?: { seq: number; isError: boolean; output: string; truncated: boolean; durationMs: number };
      /** Ended by a cancel (the task was stopped while it ran): not a failure of the tool. */
      interrupted?: boolean;
    })
  | (RowBase & {
      kind: 'tests';
      command: string;
      scope: 'selected' | 'full';
      passed: number;
      failed: number;
      skipped: number;
      ok: boolean;
      output: string;
      durationMs: number;
      /** Failing tests that already failed at the base commit. */
      preExisting: string[];
      /** The run was killed by a cancel: its result says nothing about the change. */
      interrupted?: boolean;
      /** Steps counted by an exit status that failed at the base: they judge nothing. */
      cannotJudge?: string[];
      /** No step of the run could judge the change: it verified nothing. */
      unjudged?: boolean;
    })
  | (RowBase & { kind: 'runner'; command: string; failure: string; message: string; output: string })
  | (RowBase & { kind: 'snapshot'; stage: string; elapsedMs: number; line?: string; done: boolean })
  | (RowBase & { kind: 'file'; path: string; change: 'added' | 'modified' | 'deleted'; patch: string })
  | (RowBase & {
      kind: 'approval';
      approvalId: string;
      approvalKind: string;
      command?: string;
      reason: string;
      resolved?: { decision: 'approved' | 'denied'; by: string; comment?: string };
    })
  | (RowBase & { kind: 'note'; tone: Tone; text: string });

export type PolicyResult = TaskEventOf<'policy.checked'>['data'];

function policyNote(policy: PolicyResult): string {
  if (policy.ok) return `Policy check passed (${policy.stage})`;
  const violations = policy.violations.map((v) => `${v.path ? `${v.path}: ` : ''}${v.message}`).join('; ');
  if (policy.overridden) return `Policy check overridden by ${policy.overriddenBy ?? 'a repo owner'} (${policy.stage}): ${violations}`;
  return `Policy check failed: ${violations}`;
}
export type ReviewResult = TaskEventOf<'review.finished'>['data'];

export interface TrajectorySummary {
  taskId: string;
  title: string;
  state: TaskState;
  budgets: Budgets;
  turnsUsed: number;
  costUsd: number;
  /** Tokens of every model call (agent turns, self-review, compaction), as `model.turn` reports them. */
  tokens: TurnUsage;
  startedAt?: string;
  /** Time of the last event, used for the wall-clock bar of a task that has ended. */
  lastEventAt?: string;
  pendingApprovals: string[];
  changedFiles: Map<string, 'added' | 'modified' | 'deleted'>;
  /** Review rounds: 1, plus one per "request changes". */
  round: number;
  policy?: PolicyResult;
  review?: ReviewResult;
  prUrl?: string;
  failure?: Failure;
  /** Who asked the agent to pause, while it has not reached its safe point yet. */
  pauseRequestedBy?: string;
  /** Time the agent has worked (queued and active states), excluding time waiting for a person. */
  workedMs: number;
  /** When the current working stretch began; unset while the task waits for a person or has ended. */
  workingSince?: string;
}

export interface Trajectory {
  summary: TrajectorySummary;
  rows: Row[];
  lastSeq: number;
  /** Row index by tool use id / approval id so late events update the row in place. */
  toolRows: Map<string, number>;
  approvalRows: Map<string, number>;
  /** The one row that shows a snapshot build's progress, updated in place. */
  snapshotRow?: number;
  /** The row of a turn waiting for the fleet's model budget, updated in place when it goes ahead. */
  budgetWaitRow?: number;
}

const DEFAULT_BUDGETS: Budgets = { maxTurns: 40, maxCostUsd: 5, maxWallClockSeconds: 1800 };

export function createTrajectory(taskId: string): Trajectory {
  return {
    summary: {
      taskId,
      title: '',
      state: 'queued',
      budgets: { ...DEFAULT_BUDGETS },
      turnsUsed: 0,
      costUsd: 0,
      tokens: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
      pendingApprovals: [],
      changedFiles: new Map(),
      round: 1,
      workedMs: 0,
    },
    rows: [],
    lastSeq: 0,
    toolRows: new Map(),
    approvalRows: new Map(),
  };
}

/** Applies events in order; returns the indexes of rows added or changed. */
export function applyEvents(trajectory: Trajectory, events: readonly TaskEvent[]): Set<number> {
  const touched = new Set<number>();
  for (const event of events) {
    if (event.seq <= trajectory.lastSeq) continue;
    trajectory.lastSeq = event.seq;
    trajectory.summary.lastEventAt = event.ts;
    const index = applyEvent(trajectory, event, touched);
    if (index !== undefined) touched.add(index);
  }
  return touched;
}

function push(trajectory: Trajectory, row: Row): number {
  trajectory.rows.push(row);
  return trajectory.rows.length - 1;
}

function note(trajectory: Trajectory, seq: number, tone: Tone, text: string): number {
  return push(trajectory, { kind: 'note', seq, version: 0, tone, text });
}

/** States in which the agent works (or is about to): Pause means something there. */
export const PAUSABLE_STATES: readonly TaskState[] = ['queued', 'provisioning', 'running', 'awaiting_approval', 'verifying'];

/** States in which the agent (not a person) is who the task waits for: the wall clock runs. */
export function isWorkingState(state: TaskState): boolean {
  return state === 'queued' || (ACTIVE_STATES.includes(state) && state !== 'awaiting_approval');
}

/** Time the agent has worked up to `now` (ms since epoch). */
export function workedMs(summary: TrajectorySummary, now: number): number {
  const since = summary.workingSince ? Date.parse(summary.workingSince) : NaN;
  return summary.workedMs + (Number.isNaN(since) ? 0 : Math.max(0, now - since));
}

function changeState(trajectory: Trajectory, state: TaskState, ts: string, touched: Set<number>): void {
  const summary = trajectory.summary;
  if (summary.workingSince) {
    const since = Date.parse(summary.workingSince);
    if (!Number.isNaN(since)) summary.workedMs += Math.max(0, Date.parse(ts) - since);
  }
  summary.workingSince = isWorkingState(state) ? ts : undefined;
  summary.state = state;
  // The same rule as the server's: paused, or stopped anyway (review, PR, an end), answers a pause request.
  if (!PAUSABLE_STATES.includes(state)) summary.pauseRequestedBy = undefined;
  if (state !== 'cancelled') return;
  // A cancel kills whatever was running: those calls were interrupted, they did not fail.
  trajectory.rows.forEach((row, index) => {
    if (row.kind === 'tool' && !row.result && !row.interrupted) {
      row.interrupted = true;
      row.version += 1;
      touched.add(index);
    }
  });
}

function applyEvent(trajectory: Trajectory, event: TaskEvent, touched: Set<number>): number | undefined {
  const summary = trajectory.summary;
  const seq = event.seq;
  switch (event.type) {
    case 'task.created':
      summary.title = event.data.ticket.title;
      summary.startedAt = event.ts;
      summary.workingSince ??= event.ts;
      summary.budgets = { ...DEFAULT_BUDGETS, ...event.data.budgets };
      return note(trajectory, seq, 'info', `Task created: ${event.data.ticket.title}`);
    case 'task.state': {
      changeState(trajectory, event.data.state, event.ts, touched);
      // A failure's words are already shown once (the banner); the state row only names the state.
      const reason = event.data.reason && !(event.data.state === 'failed' && summary.failure) ? ` (${event.data.reason})` : '';
      return note(trajectory, seq, stateTone(event.data.state), `State: ${stateLabel(event.data.state)}${reason}`);
    }
    case 'snapshot.progress': {
      const done = event.data.stage === 'done' || event.data.stage === 'failed';
      const existing = trajectory.snapshotRow === undefined ? undefined : trajectory.rows[trajectory.snapshotRow];
      if (existing?.kind === 'snapshot') {
        existing.stage = event.data.stage;
        existing.elapsedMs = event.data.elapsedMs;
        existing.line = event.data.line ?? existing.line;
        existing.done = done;
        existing.version += 1;
        return trajectory.snapshotRow;
      }
      const index = push(trajectory, { kind: 'snapshot', seq, version: 0, stage: event.data.stage, elapsedMs: event.data.elapsedMs, line: event.data.line, done });
      trajectory.snapshotRow = index;
      return index;
    }
    case 'tests.runner_failed':
      return push(trajectory, { kind: 'runner', seq, version: 0, command: event.data.command, failure: event.data.kind, message: event.data.message, output: event.data.output });
    case 'sandbox.ready':
      return note(
        trajectory,
        seq,
        'info',
        `Sandbox ready in ${formatDuration(event.data.startMs)} (${event.data.source.replace('_', ' ')})`,
      );
    case 'model.turn':
      summary.turnsUsed = Math.max(summary.turnsUsed, event.data.turn);
      summary.costUsd += event.data.costUsd;
      summary.tokens = {
        inputTokens: summary.tokens.inputTokens + event.data.usage.inputTokens,
        outputTokens: summary.tokens.outputTokens + event.data.usage.outputTokens,
        cacheReadTokens: summary.tokens.cacheReadTokens + event.data.usage.cacheReadTokens,
        cacheWriteTokens: summary.tokens.cacheWriteTokens + event.data.usage.cacheWriteTokens,
      };
      return undefined;
    case 'assistant.text':
      return push(trajectory, { kind: 'text', seq, version: 0, turn: event.data.turn, text: event.data.text });
    case 'tool.called': {
      const index = push(trajectory, {
        kind: 'tool',
        seq,
        version: 0,
        toolUseId: event.data.toolUseId,
        name: event.data.name,
        input: event.data.input,
      });
      trajectory.toolRows.set(event.data.toolUseId, index);
      return index;
    }
    case 'tool.finished':
      return finishTool(trajectory, event);
    case 'file.changed':
      summary.changedFiles.set(event.data.path, event.data.change);
      return push(trajectory, { kind: 'file', seq, version: 0, ...event.data });
    case 'approval.requested': {
      summary.pendingApprovals.push(event.data.approvalId);
      const index = push(trajectory, {
        kind: 'approval',
        seq,
        version: 0,
        approvalId: event.data.approvalId,
        approvalKind: event.data.kind,
        command: event.data.command,
        reason: event.data.reason,
      });
      trajectory.approvalRows.set(event.data.approvalId, index);
      return index;
    }
    case 'approval.resolved': {
      summary.pendingApprovals = summary.pendingApprovals.filter((id) => id !== event.data.approvalId);
      const index = trajectory.approvalRows.get(event.data.approvalId);
      const row = index === undefined ? undefined : trajectory.rows[index];
      if (index === undefined || row?.kind !== 'approval') return undefined;
      row.resolved = { decision: event.data.decision, by: event.data.by, comment: event.data.comment };
      row.version += 1;
      return index;
    }
    case 'tests.finished':
      return push(trajectory, {
        kind: 'tests',
        seq,
        version: 0,
        command: event.data.command,
        scope: event.data.scope,
        passed: event.data.passed,
        failed: event.data.failed,
        skipped: event.data.skipped,
        ok: event.data.ok,
        output: event.data.output,
        durationMs: event.data.durationMs,
        preExisting: event.data.preExisting ?? [],
        ...cannotJudgeOf(event.data),
        // A run that ends after the task was cancelled was killed by the cancel.
        interrupted: summary.state === 'cancelled' && !event.data.ok ? true : undefined,
      });
    case 'review.finished':
      summary.review = event.data;
      return note(
        trajectory,
        seq,
        event.data.approved ? 'ok' : 'warn',
        `Self-review ${event.data.approved ? 'approved' : 'found problems'}${event.data.summary ? `: ${event.data.summary}` : ''}`,
      );
    case 'policy.checked':
      summary.policy = event.data;
      return note(trajectory, seq, event.data.ok ? 'ok' : event.data.overridden ? 'warn' : 'error', policyNote(event.data));
    case 'budget.exceeded':
      // A banner with the next step, as a failure has: the run stopped, it did not break.
      summary.failure = budgetFailure(event.data);
      return note(trajectory, seq, 'budget', budgetMessage(event.data));
    case 'context.compacted':
      return note(
        trajectory,
        seq,
        'info',
        `Context compacted: ${event.data.turnsCompacted} turns summarised, ${event.data.tokensBefore.toLocaleString('en')} → ${event.data.tokensAfter.toLocaleString('en')} tokens`,
      );
    case 'model.budget_wait': {
      const limit = event.data.limit === 'requests_per_minute' ? 'requests' : 'input tokens';
      const seconds = Math.max(1, Math.round(event.data.waitMs / 1000));
      if (event.data.phase === 'waiting') {
        const index = note(trajectory, seq, 'info', `Waiting for the fleet's model budget: ${limit} per minute are used up for now; the turn goes ahead in about ${seconds} s`);
        trajectory.budgetWaitRow = index;
        return index;
      }
      const text = `Waited ${seconds} s for the fleet's model budget (${limit} per minute); the turn went ahead`;
      const row = trajectory.budgetWaitRow;
      const existing = row === undefined ? undefined : trajectory.rows[row];
      trajectory.budgetWaitRow = undefined;
      if (row !== undefined && existing?.kind === 'note') {
        existing.text = text;
        existing.version += 1;
        return row;
      }
      return note(trajectory, seq, 'info', text);
    }
    case 'model.fell_back':
      return note(trajectory, seq, 'warn', `Switched model from ${event.data.from} to ${event.data.to}: ${event.data.reason}`);
    case 'pr.opened':
      summary.prUrl = event.data.url;
      return note(trajectory, seq, 'ok', `Pull request #${event.data.number} opened on ${event.data.branch}`);
    case 'pr.outcome':
      return note(trajectory, seq, 'info', `Pull request ${event.data.outcome}`);
    case 'user.message':
      return push(trajectory, { kind: 'user', seq, version: 0, from: event.data.from, text: event.data.text });
    case 'review.requested_changes': {
      const comments = event.data.comments.map((c) => (c.path ? `${c.path}${c.line ? `:${c.line}` : ''} ` : '') + c.body);
      const rejected = event.data.rejectedFiles ?? [];
      if (rejected.length) comments.push(`revert ${rejected.join(', ')}`);
      summary.round += 1;
      // The next round goes on in the same list, under a heading that says which round it is. A
      // follow-up round on the open PR is numbered as the PR's rounds are (issue 26), and says what started it.
      const followUp = event.data.followUp;
      if (followUp) return note(trajectory, seq, 'warn', `PR round ${followUp.round} on pull request #${followUp.number}, started by ${event.data.by}${comments.length ? `: ${comments.join('; ')}` : ''}`);
      return note(trajectory, seq, 'warn', `Round ${summary.round}: ${event.data.by} requested changes: ${comments.join('; ')}`);
    }
    case 'pr.feedback':
      return pullRequestFeedback(trajectory, event);
    case 'pr.pushed': {
      const replied = event.data.replied.length ? `; replied on ${event.data.replied.length === 1 ? '1 thread' : `${event.data.replied.length} threads`}` : '';
      return event.data.commit
        ? note(trajectory, seq, 'ok', `PR round ${event.data.round}: one new commit ${event.data.headSha.slice(0, 12)} pushed to pull request #${event.data.number}${replied}`)
        : note(trajectory, seq, 'ok', `PR round ${event.data.round}: no code change was needed, nothing pushed${replied}`);
    }
    case 'attestation.signed':
      return note(trajectory, seq, 'muted', `Attestation signed for ${event.data.round === 1 ? 'the push' : `PR round ${event.data.round}`}: ${event.data.digest.slice(0, 19)}… (key ${event.data.keyId})`);
    case 'review.files_rejected':
      return note(
        trajectory,
        seq,
        'info',
        `${event.data.by} left ${event.data.rejected.length === 1 ? '1 file' : `${event.data.rejected.length} files`} out of the push: ${event.data.rejected.join(', ')}`,
      );
    case 'task.pause_requested':
      summary.pauseRequestedBy = event.data.by;
      return note(trajectory, seq, 'info', `${event.data.by} asked the agent to pause: it stops after its current step`);
    case 'task.resumed':
      summary.pauseRequestedBy = undefined;
      return note(trajectory, seq, 'info', `Resumed by ${event.data.by}`);
    case 'task.failed':
      // Shown once, classified, in the panel's banner; the raw message goes to the output channel.
      summary.failure = classifyFailure(event.data.code, event.data.message);
      return undefined;
  }
}

const TRIAGE_LABELS = { caused: 'caused by this PR', pre_existing: 'pre-existing', flaky: 'flaky', infrastructure: 'infrastructure' } as const;

/** What came back on the open PR: the red check and its triage, who was ignored, a limit (the comments of a round are its heading's). */
function pullRequestFeedback(trajectory: Trajectory, event: TaskEventOf<'pr.feedback'>): number | undefined {
  const { seq, data } = event;
  const ignored = data.ignored.length ? `Ignored on pull request #${data.number} (may not steer): ${data.ignored.map((entry) => `#${entry.id} by ${entry.author}`).join(', ')}` : '';
  const check = data.check ? `Check ${data.check.name} is red (${data.check.conclusion}), ${TRIAGE_LABELS[data.check.triage]}: ${data.check.evidence}` : '';
  switch (data.kind) {
    case 'round':
      if (!check && !ignored) return undefined;
      return note(trajectory, seq, 'warn', [check, ignored].filter(Boolean).join('. '));
    case 'triaged':
      return note(trajectory, seq, 'info', [`${check}. No round was started`, ignored].filter(Boolean).join('. '));
    case 'limit':
      return note(trajectory, seq, 'warn', [`No more rounds on pull request #${data.number}: ${data.reason ?? 'its limits are reached'}`, ignored].filter(Boolean).join('. '));
    case 'ignored':
      return note(trajectory, seq, 'muted', ignored);
    case 'seen':
      return undefined;
  }
}

function finishTool(trajectory: Trajectory, event: TaskEventOf<'tool.finished'>): number | undefined {
  const result = {
    seq: event.seq,
    isError: event.data.isError,
    output: event.data.output,
    truncated: event.data.truncated,
    durationMs: event.data.durationMs,
  };
  const index = trajectory.toolRows.get(event.data.toolUseId);
  const row = index === undefined ? undefined : trajectory.rows[index];
  const interrupted = trajectory.summary.state === 'cancelled' && event.data.isError ? true : undefined;
  if (index !== undefined && row?.kind === 'tool') {
    row.result = result;
    row.interrupted = interrupted;
    row.version += 1;
    return index;
  }
  // A result whose call was compacted away still shows up, as its own row.
  const added = push(trajectory, {
    kind: 'tool',
    seq: event.seq,
    version: 0,
    toolUseId: event.data.toolUseId,
    name: event.data.name,
    input: undefined,
    result,
    interrupted,
  });
  trajectory.toolRows.set(event.data.toolUseId, added);
  return added;
}

function budgetMessage(data: TaskEventOf<'budget.exceeded'>['data']): string {
  switch (data.budget) {
    case 'turns':
      return `Stopped: the turn budget is used up (${data.used} of ${data.limit} turns).`;
    case 'cost':
      return `Stopped: the cost budget is used up ($${data.used.toFixed(2)} of $${data.limit.toFixed(2)}).`;
    case 'wall_clock':
      return `Stopped: the time budget is used up (${formatDuration(data.used * 1000)} of ${formatDuration(data.limit * 1000)}).`;
  }
}

const BUDGET_NAMES = { turns: 'turn', cost: 'cost', wall_clock: 'time' } as const;
const BUDGET_SETTINGS = { turns: 'maxTurns', cost: 'maxCostUsd', wall_clock: 'maxWallClockSeconds' } as const;

/** The banner for a run a budget stopped: which budget, and what to do next. */
export function budgetFailure(data: TaskEventOf<'budget.exceeded'>['data']): Failure {
  const name = BUDGET_NAMES[data.budget];
  return {
    kind: 'budget',
    title: `Stopped: the ${name} budget ran out`,
    // "20 of 20 turns used": the title already says which budget stopped it.
    detail: `${/\((.*)\)/.exec(budgetMessage(data))?.[1] ?? ''} used`,
    action: `Nothing was pushed. Send the ticket again with a larger ${name} budget (setting dockhand.budgets.${BUDGET_SETTINGS[data.budget]}), or narrow the ticket.`,
  };
}

export function stateLabel(state: TaskState): string {
  return state.replace(/_/g, ' ');
}

export function stateTone(state: TaskState): Tone {
  if (state === 'failed') return 'error';
  if (state === 'budget_exhausted') return 'budget';
  if (state === 'cancelled' || state === 'closed' || state === 'reverted') return 'muted';
  if (state === 'awaiting_approval' || state === 'awaiting_review' || state === 'paused') return 'warn';
  if (state === 'pr_open' || state === 'merged') return 'ok';
  return 'info';
}

function compactCount(count: number): string {
  if (count < 1000) return String(count);
  if (count < 1_000_000) return `${(count / 1000).toFixed(count < 10_000 ? 1 : 0)}k`;
  return `${(count / 1_000_000).toFixed(1)}M`;
}

/**
 * Tokens in one line: "182k in · 4.1k out · 64% of the prompt from cache". The prompt is the
 * uncached input plus cache reads and writes (the API reports them apart); the share read from
 * the cache is what makes a long run cheap, as the CLI shows.
 */
export function formatTokens(tokens: TurnUsage): string {
  const prompt = tokens.inputTokens + tokens.cacheReadTokens + tokens.cacheWriteTokens;
  if (prompt === 0 && tokens.outputTokens === 0) return '';
  const share = prompt ? Math.round((tokens.cacheReadTokens / prompt) * 100) : 0;
  return `${compactCount(prompt)} in · ${compactCount(tokens.outputTokens)} out · ${share}% of the prompt from cache`;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes} min ${Math.round(seconds % 60)} s`;
}

/** The steps of a test run that cannot judge the change, and whether any step could. */
function cannotJudgeOf(data: { steps?: Array<{ name: string; judgement?: string }>; judged?: boolean }): { cannotJudge?: string[]; unjudged?: boolean } {
  const cannotJudge = (data.steps ?? []).filter((step) => step.judgement === 'cannot judge').map((step) => step.name);
  return { ...(cannotJudge.length > 0 ? { cannotJudge } : {}), ...(data.judged === false ? { unjudged: true } : {}) };
}
