import type { Task, TaskEvent, TaskEventOf } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { policyWorkers } from '../policy/pool';
import { blockedReason, canOverridePolicy, diffDigest, policyOverrideComment, policyOverrideReason, type PolicyCheckResult, type RepoPolicy } from '../policy';
import type { EventLog } from '../store/hub';
import type { Approval, Store, User } from '../store/types';

/*
 * Owners' overrides of a blocked diff: the runner raises the request, a repo owner decides it
 * through the approvals route.
 *
 * A blocked task waits in `awaiting_review` (not an active state: no worker, lease or sandbox is
 * held while a person thinks it over) with a pending `policy_override` approval whose request
 * carries the sha256 of the diff. The push approval is asked for only once an owner approved the
 * override; a denial leaves the task in review, blocked, with the reason, where the developer can
 * request changes (the agent works on, voiding the override) or reject it. The approval binds to
 * the digest, so it never lets another diff through (`findOverride` in policy/override.ts).
 */

/** The digest a `policy_override` request was raised for, read from the log. */
export function requestedDigest(events: readonly TaskEvent[], approvalId: string): string | undefined {
  for (const event of events) {
    if (event.type === 'approval.requested' && event.data.approvalId === approvalId) return event.data.diffDigest;
  }
  return undefined;
}

/**
 * Asks the repo's owners to override this diff's violations: a pending `policy_override`
 * approval bound to the diff, or the one already pending for it (a retry after a crash).
 */
export async function raisePolicyOverride(log: EventLog, taskId: string, diff: string, result: PolicyCheckResult, owners: readonly string[]): Promise<string> {
  const digest = diffDigest(diff);
  const events = await log.store.listEvents(taskId);
  const pending = await log.store.listApprovals(taskId, 'pending');
  const existing = pending.find((approval) => approval.kind === 'policy_override' && requestedDigest(events, approval.id) === digest);
  if (existing) return existing.id;
  const created = await log.store.requestApproval(taskId, { kind: 'policy_override', reason: policyOverrideReason(result, owners), diffDigest: digest });
  log.published([created.event]);
  return created.approval.id;
}

export interface OverrideDecisionDeps {
  store: Store;
  events: EventLog;
  /** The repo policy at the task's base SHA (its `owners` may decide). Absent: nobody may. */
  repoPolicy?: (task: Task) => Promise<RepoPolicy>;
}

/** Who may decide, for the 403 message. */
function whoMayDecide(task: Task, policy: RepoPolicy | undefined): string {
  if (!policy) return 'this server cannot read the repository policy, so nobody may';
  if (policy.owners.length === 0) return `${task.context.repo} lists no owners in .dockhand/policy.yml, so nobody may`;
  return `only an owner of ${task.context.repo} may (${policy.owners.join(', ')})`;
}

/** The policy result of the task's diff, if the override being decided is still for that diff. */
async function currentBlockedDiff(deps: OverrideDecisionDeps, task: Task, approvalId: string, policy: RepoPolicy): Promise<PolicyCheckResult> {
  const result = await deps.store.getResult(task.id);
  const events = await deps.store.listEvents(task.id);
  if (!result || requestedDigest(events, approvalId) !== diffDigest(result.diff)) {
    throw new DockhandError('conflict', `policy override ${approvalId} was asked for a diff the task no longer has`, {
      hint: 'decide the override the task asks for now (GET the task\'s approvals)',
    });
  }
  return policyWorkers.run('checkPolicy', { diff: result.diff, policy, allowTestEdits: task.allowTestEdits, stage: 'review' });
}

/**
 * `POST /v1/tasks/:id/approvals/:approvalId` for a `policy_override`: only a repo owner may decide
 * (403 naming who may). Approved: the comment records which violations were overridden, and the
 * push approval is asked for. Denied: the task stays in review, blocked, with the reason.
 */
export async function decidePolicyOverride(
  deps: OverrideDecisionDeps,
  task: Task,
  user: User,
  approval: Approval,
  decision: { decision: 'approved' | 'denied'; comment?: string },
): Promise<void> {
  const policy = deps.repoPolicy ? await deps.repoPolicy(task) : undefined;
  if (!policy || !canOverridePolicy(policy, user.name)) {
    throw new DockhandError('forbidden', `${user.name} may not decide policy override ${approval.id}: ${whoMayDecide(task, policy)}`, {
      hint: 'owners are listed under `owners` in the repository\'s .dockhand/policy.yml at the task\'s base SHA',
    });
  }
  if (task.state !== 'awaiting_review') {
    throw new DockhandError('conflict', `cannot decide policy override ${approval.id} while task ${task.id} is ${task.state}`, {
      hint: 'an override is decided while the task waits in awaiting_review',
    });
  }
  const check = await currentBlockedDiff(deps, task, approval.id, policy);
  const approved = decision.decision === 'approved';
  const comment = approved ? policyOverrideComment(check, decision.comment) : decision.comment?.trim();
  const resolved = await deps.store.resolveApproval(task.id, approval.id, { decision: decision.decision, by: user.name, ...(comment ? { comment } : {}) });
  if (!resolved) throw new DockhandError('conflict', `approval ${approval.id} was decided meanwhile`);
  deps.events.published([resolved.event]);
  if (approved) {
    const push = await deps.store.requestApproval(task.id, { kind: 'push', reason: `review the diff before it is pushed (policy overridden by ${user.name})` });
    deps.events.published([push.event]);
    return;
  }
  await deps.events.append(task.id, {
    type: 'task.state',
    data: { state: 'awaiting_review', reason: `blocked by policy: ${blockedReason(check)}; override denied by ${user.name}${comment ? `: ${comment}` : ''}` },
  });
}

/**
 * Refuses a push approval while the current diff waits for an owner's override or an owner
 * denied it: the push gate would stop it anyway, and the reviewer should know why now.
 */
export async function requireNoBlockingOverride(store: Store, task: Task): Promise<void> {
  const result = await store.getResult(task.id);
  if (!result) return;
  const digest = diffDigest(result.diff);
  const events = await store.listEvents(task.id);
  const requests = events.filter((e) => e.type === 'approval.requested' && e.data.kind === 'policy_override' && e.data.diffDigest === digest);
  const last = requests.at(-1);
  if (last?.type !== 'approval.requested') return;
  const id = last.data.approvalId;
  const isDecision = (e: TaskEvent): e is TaskEventOf<'approval.resolved'> => e.type === 'approval.resolved' && e.data.approvalId === id;
  const decided = events.find(isDecision);
  if (decided?.data.decision === 'approved') return;
  if (!decided) {
    throw new DockhandError('conflict', `the diff of task ${task.id} breaks repository policy and policy override ${id} is still pending`, {
      hint: `a repo owner must decide it first (${last.data.reason})`,
    });
  }
  const { by, comment } = decided.data;
  throw new DockhandError('conflict', `the diff of task ${task.id} breaks repository policy and ${by} denied the override${comment ? `: ${comment}` : ''}`, {
    hint: 'request changes to send it back to the agent, or reject it',
  });
}
