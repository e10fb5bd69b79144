import { z } from 'zod';
import { Task } from './task';

/*
 * Bodies of the HTTP API besides `CreateTaskRequest` (task.ts), shared by the server's routes and
 * the extension's client so both sides parse the same shapes.
 */

export const CreateTaskResponse = z.object({ id: z.string().min(1) });
export type CreateTaskResponse = z.infer<typeof CreateTaskResponse>;

export const TaskListResponse = z.object({
  tasks: z.array(Task),
  /** Pass as `?cursor=` for the next page; absent on the last page. */
  nextCursor: z.string().nullable().optional(),
});
export type TaskListResponse = z.infer<typeof TaskListResponse>;

export const SendMessageRequest = z.object({ text: z.string().min(1).max(20_000) });
export type SendMessageRequest = z.infer<typeof SendMessageRequest>;

export const ApprovalDecisionRequest = z.object({
  decision: z.enum(['approved', 'denied']),
  comment: z.string().max(20_000).optional(),
});
export type ApprovalDecisionRequest = z.infer<typeof ApprovalDecisionRequest>;

export const ReviewComment = z.object({
  path: z.string().optional(),
  line: z.number().int().min(1).optional(),
  body: z.string().min(1).max(20_000),
});
export type ReviewComment = z.infer<typeof ReviewComment>;

export const ReviewRequest = z.object({
  action: z.enum(['approve', 'request_changes', 'reject']),
  comments: z.array(ReviewComment).default([]),
  /**
   * Files of the diff the reviewer does not accept (paths as `files` of the diff lists them).
   * With `approve` their changes are left out of the push (reverted, as Cline's per-file reject
   * does); with `request_changes` the agent is told to revert them. Not with `reject`.
   */
  rejectedFiles: z.array(z.string().min(1).max(4096)).max(1000).default([]),
});
export type ReviewRequest = z.infer<typeof ReviewRequest>;

export const ChangedFile = z.object({
  path: z.string(),
  change: z.enum(['added', 'modified', 'deleted']),
});
export type ChangedFile = z.infer<typeof ChangedFile>;

/** `GET /v1/tasks/:id/diff`: the agent's whole change against the base SHA. */
export const TaskDiffResponse = z.object({
  baseSha: z.string(),
  /** Unified diff (`git diff` format). */
  diff: z.string(),
  files: z.array(ChangedFile),
  /** Review rounds so far: 1, plus one per "request changes". */
  round: z.number().int().min(1).default(1),
  /**
   * From round 2 on: this round's changes alone, from the diff reviewed last (the one changes
   * were requested on) to the current one. Absent in the first round, where it is `diff`.
   */
  roundDiff: z.string().optional(),
  roundFiles: z.array(ChangedFile).optional(),
  /**
   * The reviewer's stored per-file decisions: files an approval left out of the push
   * (`review.files_rejected`, every round, a later approval that pushed a file takes it back out
   * of this list). Such a file stays left out in every later round (a PR round's diff does not
   * have it: the PR does not) until the reviewer pushes it; clients show it so, never as changed.
   */
  leftOut: z.array(z.string()).default([]),
});
export type TaskDiffResponse = z.infer<typeof TaskDiffResponse>;

/**
 * A DSSE envelope (https://github.com/secure-systems-lab/dsse, the JSON form): `payload` and each
 * `sig` in base64. `GET /v1/tasks/:id/attestation[?round=N]` answers one, byte for byte as signed
 * and stored, so the sha256 of the body is the commit's `Dockhand-Attestation:` digest.
 */
export const DsseEnvelope = z.object({
  payloadType: z.string().min(1),
  payload: z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64'),
  signatures: z.array(z.object({ keyid: z.string(), sig: z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64').min(1) })).min(1),
});
export type DsseEnvelope = z.infer<typeof DsseEnvelope>;

export const TaskAttestationQuery = z.object({ round: z.coerce.number().int().min(1).optional() });

/** `GET /v1/tasks/:id/files?path=`: one file before and after; null where it does not exist. */
export const TaskFileResponse = z.object({
  path: z.string(),
  base: z.string().nullable(),
  after: z.string().nullable(),
  /** From round 2 on: the file as it was when changes were last requested (null: not there then). */
  reviewed: z.string().nullable().optional(),
});
export type TaskFileResponse = z.infer<typeof TaskFileResponse>;

/** `GET /v1/tickets?repo=`: the forge's open issues. */
/**
 * `GET /healthz` (no token): a Dockhand server says so, with its version, so a client told a URL
 * can tell "nothing listens" from "something else listens" from "a Dockhand server".
 */
export const HealthResponse = z.object({ ok: z.literal(true), service: z.literal('dockhand'), version: z.string().min(1) });
export type HealthResponse = z.infer<typeof HealthResponse>;

export const TicketSummary = z.object({
  id: z.string(),
  title: z.string(),
  body: z.string().default(''),
  url: z.string().optional(),
  /** The labels (`dockhand:allow-test-edits` lets the agent change existing tests). */
  labels: z.array(z.string()).default([]),
});
export type TicketSummary = z.infer<typeof TicketSummary>;

export const TicketListResponse = z.object({ tickets: z.array(TicketSummary) });
export type TicketListResponse = z.infer<typeof TicketListResponse>;

export const ApprovalKind = z.enum(['command', 'push', 'policy_override']);
export type ApprovalKind = z.infer<typeof ApprovalKind>;

/** One approval of a task, as `GET /v1/tasks/:id/approvals` shows it to the caller. */
export const ApprovalView = z.object({
  id: z.string(),
  taskId: z.string(),
  kind: ApprovalKind,
  state: z.enum(['pending', 'approved', 'denied']),
  reason: z.string(),
  command: z.string().optional(),
  toolUseId: z.string().optional(),
  decidedBy: z.string().optional(),
  comment: z.string().optional(),
  createdAt: z.string(),
  resolvedAt: z.string().optional(),
  /** The caller may decide it now (pending, and the caller is someone who may). */
  canDecide: z.boolean().default(false),
  /**
   * Pending only: who may decide it — the repo's owners for a `policy_override`, the task's
   * requester for the others (admins may too). Empty when nobody may (a repo without owners).
   */
  deciders: z.array(z.string()).default([]),
});
export type ApprovalView = z.infer<typeof ApprovalView>;

export const TaskApprovalsResponse = z.object({
  approvals: z.array(ApprovalView),
  /**
   * The caller may review, steer and interrupt the task (its requester or an admin); false for a
   * repo owner who reads it to decide an override.
   */
  canReview: z.boolean().default(false),
});
export type TaskApprovalsResponse = z.infer<typeof TaskApprovalsResponse>;

/** `GET /v1/approvals?state=pending`: one approval waiting for the caller's decision. */
export const InboxApproval = z.object({
  approvalId: z.string(),
  taskId: z.string(),
  /** The task's ticket title, so a list of them reads as what is being decided. */
  taskTitle: z.string(),
  /** The task's requester. */
  taskOwner: z.string(),
  repo: z.string(),
  kind: ApprovalKind,
  reason: z.string(),
  command: z.string().optional(),
  requestedAt: z.string(),
  /** Always true: the inbox lists only what the caller may decide. */
  canDecide: z.literal(true),
});
export type InboxApproval = z.infer<typeof InboxApproval>;

export const ApprovalInboxResponse = z.object({
  approvals: z.array(InboxApproval),
  /** Pass as `?cursor=` for the next page; absent on the last page. */
  nextCursor: z.string().nullable().optional(),
});
export type ApprovalInboxResponse = z.infer<typeof ApprovalInboxResponse>;
