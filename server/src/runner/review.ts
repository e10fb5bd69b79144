import type { ReviewRequest, Task, TaskEvent } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import type { Approval, User } from '../store/types';
import { decidePolicyOverride, requireNoBlockingOverride, type OverrideDecisionDeps } from './policy-override';

/*
 * Human decisions on a task, written as events. They never do work themselves: they move the
 * task to a state the scheduler picks up (`pushing`, `running`) and wake it. Writing the decision
 * before anyone acts on it is what makes a crash between the two harmless.
 */

export interface DecisionDeps extends OverrideDecisionDeps {
  wake: () => void;
  requiredApprovals?: (task: Task) => Promise<number>;
}

/** Distinct approvers of the current review round (after the last move to `awaiting_review`). */
export function approversThisRound(events: TaskEvent[]): Set<string> {
  let start = 0;
  for (const event of events) {
    if (event.type === 'task.state' && event.data.state === 'awaiting_review') start = event.seq;
  }
  const pushApprovals = new Set<string>();
  for (const event of events) {
    if (event.type === 'approval.requested' && event.data.kind === 'push') pushApprovals.add(event.data.approvalId);
  }
  const approvers = new Set<string>();
  for (const event of events) {
    if (event.seq <= start || event.type !== 'approval.resolved') continue;
    if (pushApprovals.has(event.data.approvalId) && event.data.decision === 'approved') approvers.add(event.data.by);
  }
  return approvers;
}

function requireState(task: Task, state: Task['state'], action: string): void {
  if (task.state !== state) {
    throw new DockhandError('conflict', `cannot ${action} task ${task.id} while it is ${task.state}`, {
      hint: `only a task in ${state} accepts this`,
    });
  }
}

async function pendingPush(deps: DecisionDeps, taskId: string): Promise<Approval[]> {
  return (await deps.store.listApprovals(taskId, 'pending')).filter((a) => a.kind === 'push');
}

async function approve(deps: DecisionDeps, task: Task, user: User, comment?: string): Promise<void> {
  await requireNoBlockingOverride(deps.store, task);
  const pending = await pendingPush(deps, task.id);
  let target = pending[0];
  if (!target) target = (await deps.store.requestApproval(task.id, { kind: 'push', reason: 'review the diff before it is pushed' })).approval;
  const resolved = await deps.store.resolveApproval(task.id, target.id, { decision: 'approved', by: user.name, ...(comment ? { comment } : {}) });
  if (resolved) deps.events.published([resolved.event]);
  const required = deps.requiredApprovals ? await deps.requiredApprovals(task) : 1;
  const approvers = approversThisRound(await deps.store.listEvents(task.id));
  if (approvers.size >= required) {
    await deps.events.append(task.id, {
      type: 'task.state',
      data: { state: 'pushing', reason: `approved by ${[...approvers].join(', ')}` },
    });
    deps.wake();
    return;
  }
  const next = await deps.store.requestApproval(task.id, {
    kind: 'push',
    reason: `${approvers.size} of ${required} required approvals; another reviewer must approve`,
  });
  deps.events.published([next.event]);
}

async function denyPendingPush(deps: DecisionDeps, task: Task, user: User, comment: string): Promise<void> {
  for (const approval of await pendingPush(deps, task.id)) {
    const resolved = await deps.store.resolveApproval(task.id, approval.id, { decision: 'denied', by: user.name, comment });
    if (resolved) deps.events.published([resolved.event]);
  }
}

export function formatReviewMessage(comments: ReviewRequest['comments']): string {
  const lines = ['The reviewer requested changes:'];
  for (const comment of comments) {
    const where = comment.path ? `${comment.path}${comment.line ? `:${comment.line}` : ''}: ` : '';
    lines.push(`- ${where}${comment.body}`);
  }
  if (comments.length === 0) lines.push('- (no comments given; look at the diff again)');
  return lines.join('\n');
}

export async function applyReview(deps: DecisionDeps, task: Task, user: User, review: ReviewRequest): Promise<Task> {
  requireState(task, 'awaiting_review', 'review');
  if (review.action === 'approve') {
    await approve(deps, task, user, review.comments.map((c) => c.body).join('\n') || undefined);
  } else if (review.action === 'request_changes') {
    await denyPendingPush(deps, task, user, 'changes requested');
    await deps.events.append(task.id, { type: 'review.requested_changes', data: { by: user.name, comments: review.comments } });
    await deps.events.append(task.id, { type: 'user.message', data: { from: user.name, text: formatReviewMessage(review.comments) } });
    await deps.events.append(task.id, { type: 'task.state', data: { state: 'running', reason: `changes requested by ${user.name}` } });
    deps.wake();
  } else {
    await denyPendingPush(deps, task, user, 'rejected');
    await deps.events.append(task.id, { type: 'task.state', data: { state: 'cancelled', reason: `rejected by ${user.name}` } });
  }
  const after = await deps.store.getTask(task.id);
  if (!after) throw new DockhandError('not_found', `task ${task.id} not found`);
  return after;
}

/**
 * `POST /v1/tasks/:id/approvals/:approvalId`. A push approval is a review approval/rejection; a
 * policy override is decided by a repo owner only (`decidePolicyOverride`).
 */
export async function decideApproval(
  deps: DecisionDeps,
  task: Task,
  user: User,
  approvalId: string,
  decision: { decision: 'approved' | 'denied'; comment?: string },
): Promise<Approval> {
  const approval = await deps.store.getApproval(approvalId);
  if (!approval || approval.taskId !== task.id) throw new DockhandError('not_found', `approval ${approvalId} not found`);
  if (approval.state !== 'pending') {
    throw new DockhandError('conflict', `approval ${approvalId} was already ${approval.state}`, { hint: 'decisions are final' });
  }
  if (approval.kind === 'push') {
    // The same decision as the review, with the same state check: a push approval left pending
    // by a task that moved on (a message sent it back to work, an interrupt cancelled it) must
    // not move that task to pushing.
    const comments = decision.comment ? [{ body: decision.comment }] : [];
    await applyReview(deps, task, user, { action: decision.decision === 'approved' ? 'approve' : 'reject', comments });
  } else if (approval.kind === 'policy_override') {
    await decidePolicyOverride(deps, task, user, approval, decision);
  } else {
    const resolved = await deps.store.resolveApproval(task.id, approvalId, {
      decision: decision.decision,
      by: user.name,
      ...(decision.comment ? { comment: decision.comment } : {}),
    });
    if (!resolved) throw new DockhandError('conflict', `approval ${approvalId} was decided meanwhile`);
    deps.events.published([resolved.event]);
  }
  const after = await deps.store.getApproval(approvalId);
  if (!after) throw new DockhandError('not_found', `approval ${approvalId} not found`);
  return after;
}
