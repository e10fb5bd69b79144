import { z } from 'zod';
import { Budgets, CreateTaskRequest, RepoRegistration, TaskState, TaskUsage, type Task } from '@dockhand/protocol';
import { TOKEN_SCOPES, type Approval, type TokenInfo, type User } from './types';

/* Rows come back from SQLite as unknown values; they are parsed here, never cast. */

const nullableText = z.string().nullable();

export const UserRow = z.object({ name: z.string(), role: z.enum(['user', 'admin']), created_at: z.string() });
export function toUser(row: unknown): User {
  const r = UserRow.parse(row);
  return { name: r.name, role: r.role, createdAt: r.created_at };
}

export const TokenRow = z.object({
  id: z.string(),
  user_name: z.string(),
  label: z.string(),
  created_at: z.string(),
  revoked_at: nullableText,
  // Both NULL in rows from before expiry and scopes (migration 5): never expires, every scope of the role.
  expires_at: nullableText.optional(),
  scopes: nullableText.optional(),
});
export function toTokenInfo(row: unknown): TokenInfo {
  const r = TokenRow.parse(row);
  const info: TokenInfo = { id: r.id, user: r.user_name, label: r.label, createdAt: r.created_at };
  if (r.revoked_at) info.revokedAt = r.revoked_at;
  if (r.expires_at) info.expiresAt = r.expires_at;
  if (r.scopes) info.scopes = z.array(z.enum(TOKEN_SCOPES)).parse(JSON.parse(r.scopes));
  return info;
}

/** The token columns of a `users.*, tokens.*` join, prefixed `t_` so they do not clash with the user's. */
export const TOKEN_JOIN_COLUMNS =
  'users.*, tokens.id AS t_id, tokens.user_name AS t_user_name, tokens.label AS t_label, tokens.created_at AS t_created_at, tokens.revoked_at AS t_revoked_at, tokens.expires_at AS t_expires_at, tokens.scopes AS t_scopes';

export function toAuthenticated(row: unknown): { user: User; token: TokenInfo } {
  const record = z.record(z.string(), z.unknown()).parse(row);
  const token = Object.fromEntries(Object.entries(record).filter(([key]) => key.startsWith('t_')).map(([key, value]) => [key.slice(2), value]));
  return { user: toUser(record), token: toTokenInfo(token) };
}

const TaskRow = z.object({
  id: z.string(),
  owner: z.string(),
  state: TaskState,
  request: z.string(),
  usage: z.string(),
  last_seq: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
  pr_url: nullableText,
  error: nullableText,
});
export function toTask(row: unknown): Task {
  const r = TaskRow.parse(row);
  const request = CreateTaskRequest.parse(JSON.parse(r.request));
  const task: Task = {
    id: r.id,
    owner: r.owner,
    state: r.state,
    ticket: request.ticket,
    context: request.context,
    budgets: Budgets.parse(request.budgets),
    priority: request.priority,
    allowTestEdits: request.allowTestEdits,
    usage: TaskUsage.parse(JSON.parse(r.usage)),
    lastSeq: r.last_seq,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
  if (request.reproducingTests && request.reproducingTests.length > 0) task.reproducingTests = request.reproducingTests;
  if (request.allowTestEditsLabel) task.allowTestEditsLabel = request.allowTestEditsLabel;
  if (r.pr_url) task.prUrl = r.pr_url;
  if (r.error) task.error = r.error;
  return task;
}

export const ProjectionRow = z.object({ last_seq: z.number().int(), usage: z.string(), state: TaskState });

export const EventRow = z.object({ task_id: z.string(), seq: z.number().int(), type: z.string(), data: z.string(), ts: z.string() });

const ApprovalRow = z.object({
  id: z.string(),
  task_id: z.string(),
  kind: z.enum(['command', 'push', 'policy_override']),
  state: z.enum(['pending', 'approved', 'denied']),
  reason: z.string(),
  command: nullableText,
  tool_use_id: nullableText,
  decided_by: nullableText,
  comment: nullableText,
  created_at: z.string(),
  resolved_at: nullableText,
});
export function toApproval(row: unknown): Approval {
  const r = ApprovalRow.parse(row);
  const approval: Approval = { id: r.id, taskId: r.task_id, kind: r.kind, state: r.state, reason: r.reason, createdAt: r.created_at };
  if (r.command !== null) approval.command = r.command;
  if (r.tool_use_id !== null) approval.toolUseId = r.tool_use_id;
  if (r.decided_by !== null) approval.decidedBy = r.decided_by;
  if (r.comment !== null) approval.comment = r.comment;
  if (r.resolved_at !== null) approval.resolvedAt = r.resolved_at;
  return approval;
}


const RepoRow = z.object({
  name: z.string(),
  source: z.string(),
  mirror_source: nullableText,
  default_branch: z.string(),
  owners: z.string(),
  submitters: z.string(),
  created_at: z.string(),
  created_by: z.string(),
});
export function toRepo(row: unknown): RepoRegistration {
  const r = RepoRow.parse(row);
  return RepoRegistration.parse({
    name: r.name,
    source: r.source,
    ...(r.mirror_source === null ? {} : { mirrorSource: r.mirror_source }),
    defaultBranch: r.default_branch,
    owners: JSON.parse(r.owners),
    submitters: JSON.parse(r.submitters),
    createdAt: r.created_at,
    createdBy: r.created_by,
  });
}
