import type { ReviewRequest, Task, TaskEvent } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import type { Approval, User } from '../store/types';
import { decidePolicyOverride, requireNoBlockingOverride, type OverrideDecisionDeps } from './policy-override';
import { leftOutFiles, splitDiff } from './review-files';

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

export function formatReviewMessage(comments: ReviewRequest['comments'], rejectedFiles: readonly string[] = []): string {
  const lines = ['The reviewer requested changes:'];
  for (const comment of comments) {
    const where = comment.path ? `${comment.path}${comment.line ? `:${comment.line}` : ''}: ` : '';
    lines.push(`- ${where}${comment.body}`);
  }
  if (comments.length === 0 && rejectedFiles.length === 0) lines.push('- (no comments given; look at the diff again)');
  if (rejectedFiles.length) {
    lines.push('', 'The reviewer rejected your changes to these files; revert them to the base version:');
    for (const path of rejectedFiles) lines.push(`- ${path}`);
  }
  return lines.join('\n');
}

/** A review as callers write it: `rejectedFiles` may be left out. */
export type ReviewInput = Omit<ReviewRequest, 'rejectedFiles'> & { rejectedFiles?: string[] };

/**
 * The rejected files, checked against the diff under review: each must be one of its files, and
 * an approval must keep at least one. Returns them with the diff's files that stay.
 */
async function checkRejectedFiles(deps: DecisionDeps, task: Task, review: ReviewInput): Promise<{ rejected: string[]; accepted: string[]; diff: string }> {
  const rejected = [...new Set(review.rejectedFiles ?? [])];
  const diff = (await deps.store.getResult(task.id))?.diff ?? '';
  if (!rejected.length) return { rejected, accepted: [], diff };
  if (review.action === 'reject') {
    throw new DockhandError('bad_request', 'rejectedFiles: a rejected task pushes nothing, so no file can be left out of it', {
      field: 'rejectedFiles',
      hint: 'send rejectedFiles with approve (to push the other files) or request_changes (to have the agent revert them)',
    });
  }
  const files = splitDiff(diff).map((section) => section.path);
  const missing = rejected.findIndex((path) => !files.includes(path));
  if (missing >= 0) {
    const path = rejected[missing] ?? '';
    // A file an earlier approval left out is not in a later round's diff: say that, not only "not a file".
    const earlier = leftOutFiles(await deps.store.listEvents(task.id)).includes(path);
    throw new DockhandError(
      'bad_request',
      `rejectedFiles.${missing}: ${path} is not a file of the diff under review (${files.join(', ') || 'no files'})${earlier ? '; it was left out of the push at an earlier approval, so there is nothing of it to leave out' : ''}`,
      { field: `rejectedFiles.${missing}`, hint: 'name files as GET /v1/tasks/:id/diff lists them in `files` (its `leftOut` are already left out)' },
    );
  }
  const accepted = files.filter((path) => !rejected.includes(path));
  if (review.action === 'approve' && accepted.length === 0) {
    throw new DockhandError('bad_request', 'rejectedFiles: every file of the diff is rejected, so nothing would be pushed', {
      field: 'rejectedFiles',
      hint: 'reject the task, or request changes',
    });
  }
  if (review.action === 'approve') {
    const events = await deps.store.listEvents(task.id);
    const policy = [...events].reverse().find((e) => e.type === 'policy.checked' && e.data.stage === 'review');
    if (policy?.type === 'policy.checked' && policy.data.overridden) {
      throw new DockhandError('conflict', 'rejectedFiles: a repo owner overrode the policy for this exact diff; a part of it is another diff the override does not cover', {
        field: 'rejectedFiles',
        hint: 'approve every file, or request changes with the files rejected',
      });
    }
  }
  return { rejected, accepted, diff };
}

export async function applyReview(deps: DecisionDeps, task: Task, user: User, review: ReviewInput): Promise<Task> {
  requireState(task, 'awaiting_review', 'review');
  const files = await checkRejectedFiles(deps, task, review);
  if (review.action === 'approve') {
    if (files.rejected.length) {
      // Written before the approval that may move the task to pushing: the push reads it.
      await requireNoBlockingOverride(deps.store, task);
      await deps.events.append(task.id, { type: 'review.files_rejected', data: { by: user.name, rejected: files.rejected, accepted: files.accepted } });
    }
    await approve(deps, task, user, review.comments.map((c) => c.body).join('\n') || undefined);
  } else if (review.action === 'request_changes') {
    await denyPendingPush(deps, task, user, 'changes requested');
    await deps.events.append(task.id, {
      type: 'review.requested_changes',
      data: { by: user.name, comments: review.comments, ...(files.rejected.length ? { rejectedFiles: files.rejected } : {}), reviewedDiff: files.diff },
    });
    await deps.events.append(task.id, { type: 'user.message', data: { from: user.name, text: formatReviewMessage(review.comments, files.rejected) } });
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
