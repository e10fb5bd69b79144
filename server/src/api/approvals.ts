import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ApprovalInboxResponse, type ApprovalView, type InboxApproval, type Task } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { canOverridePolicy, type RepoPolicy } from '../policy';
import type { Approval, PendingApproval, User } from '../store/types';
import { requireUser } from './auth';
import type { AppDeps } from './deps';

/*
 * Who may decide an approval, and the inbox of what waits for the caller's decision.
 *
 * A `policy_override` is decided by an owner of the task's repo (`owners` in its
 * `.dockhand/policy.yml` at the base SHA; admins are not owners by role); command and push
 * approvals by the task's requester or an admin. The same rules the decision route enforces
 * (tasks.ts, runner/policy-override.ts), so the panel never offers a button the server refuses.
 */

type PolicyLookup = (task: Task) => Promise<RepoPolicy | undefined>;

/** One policy read per repo and base SHA for the life of a request; a failed read means no owners. */
function policyLookup(deps: Pick<AppDeps, 'repoPolicy'>): PolicyLookup {
  const cache = new Map<string, Promise<RepoPolicy | undefined>>();
  return (task) => {
    const repoPolicy = deps.repoPolicy;
    if (!repoPolicy) return Promise.resolve(undefined);
    const key = `${task.context.repo}\0${task.context.baseSha}`;
    let policy = cache.get(key);
    if (!policy) {
      policy = repoPolicy(task).catch(() => undefined);
      cache.set(key, policy);
    }
    return policy;
  };
}

async function deciders(approval: Approval, task: Task, policyOf: PolicyLookup): Promise<string[]> {
  if (approval.kind !== 'policy_override') return [task.owner];
  return [...((await policyOf(task))?.owners ?? [])];
}

async function mayDecide(user: User, approval: Approval, task: Task, policyOf: PolicyLookup): Promise<boolean> {
  if (approval.state !== 'pending') return false;
  if (approval.kind !== 'policy_override') return task.owner === user.name || user.role === 'admin';
  const policy = await policyOf(task);
  return policy !== undefined && canOverridePolicy(policy, user.name);
}

/** An approval as the caller sees it: `canDecide` and, while pending, `deciders`. */
export async function describeApproval(deps: Pick<AppDeps, 'repoPolicy'>, user: User, task: Task, approval: Approval, policyOf = policyLookup(deps)): Promise<ApprovalView> {
  return {
    ...approval,
    canDecide: await mayDecide(user, approval, task, policyOf),
    deciders: approval.state === 'pending' ? await deciders(approval, task, policyOf) : [],
  };
}

/** A task's approvals as the caller sees them (the policy is read once for all of them). */
export async function describeApprovals(deps: Pick<AppDeps, 'repoPolicy'>, user: User, task: Task, approvals: Approval[]): Promise<ApprovalView[]> {
  const policyOf = policyLookup(deps);
  return Promise.all(approvals.map((approval) => describeApproval(deps, user, task, approval, policyOf)));
}

function encodeCursor(position: number): string {
  return Buffer.from(String(position)).toString('base64url');
}

function decodeCursor(cursor: string): number {
  const position = Number(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!Number.isInteger(position) || position < 1) throw new DockhandError('bad_request', 'cursor is not one this server gave out', { field: 'cursor' });
  return position;
}

function inboxItem({ approval, task }: PendingApproval): InboxApproval {
  return {
    approvalId: approval.id,
    taskId: task.id,
    taskTitle: task.ticket.title,
    taskOwner: task.owner,
    repo: task.context.repo,
    kind: approval.kind,
    reason: approval.reason,
    ...(approval.command === undefined ? {} : { command: approval.command }),
    requestedAt: approval.createdAt,
    canDecide: true,
  };
}

/** Rows read per store query while filling a page (override rows the caller does not own are skipped). */
const SCAN_BATCH = 100;

export async function approvalRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.get('/approvals', {
    schema: {
      tags: ['approvals'],
      summary: "What waits for your decision: your tasks' command and push approvals, and policy overrides on repos you own; newest first, cursor paging",
      querystring: z.object({
        state: z.enum(['pending']).default('pending'),
        cursor: z.string().optional(),
        limit: z.coerce.number().int().min(1).max(200).default(50),
      }),
      response: { 200: ApprovalInboxResponse },
    },
  }, async (request) => {
    const user = requireUser(request);
    const { cursor, limit } = request.query;
    const policyOf = policyLookup(deps);
    // The store answers "pending, on a task that waits, mine or an override" from an index; only
    // overrides need a policy read (cached per repo and base SHA) to keep those the caller owns.
    const found: PendingApproval[] = [];
    let before = cursor === undefined ? undefined : decodeCursor(cursor);
    for (;;) {
      const batch = await deps.store.listPendingApprovals({
        owner: user.name,
        overrides: deps.repoPolicy !== undefined,
        limit: Math.max(SCAN_BATCH, limit + 1),
        ...(before === undefined ? {} : { before }),
      });
      for (const candidate of batch) {
        if (found.length > limit) break;
        if (await mayDecide(user, candidate.approval, candidate.task, policyOf)) found.push(candidate);
      }
      const last = batch.at(-1);
      if (found.length > limit || last === undefined || batch.length < Math.max(SCAN_BATCH, limit + 1)) break;
      before = last.position;
    }
    const page = found.slice(0, limit);
    const lastShown = page.at(-1);
    return {
      approvals: page.map(inboxItem),
      nextCursor: found.length > limit && lastShown ? encodeCursor(lastShown.position) : null,
    };
  });
}
