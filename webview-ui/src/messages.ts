import { z } from 'zod';
import { Task, TaskEvent } from '@dockhand/protocol';

/*
 * The one contract between the extension host and the side-panel webview. Both sides parse every
 * message with these schemas: the webview only renders and posts decisions, the extension owns the
 * server connection (DESIGN: the UI never drives the agent loop).
 */

/** `signed_out`: the server refused the token (401); reconnecting cannot help until the developer signs in. */
export const ConnectionStatus = z.enum(['connecting', 'replaying', 'live', 'reconnecting', 'offline', 'signed_out']);
export type ConnectionStatus = z.infer<typeof ConnectionStatus>;

/** Long tool/test outputs are sent clipped; the webview asks for the rest on demand. */
export const ClippedOutput = z.object({ seq: z.number().int().min(1), totalChars: z.number().int().min(0) });
export type ClippedOutput = z.infer<typeof ClippedOutput>;

/** Whether the viewer may decide a pending approval, and who may (from the task's approvals route). */
export const ApprovalAccess = z.object({ approvalId: z.string(), canDecide: z.boolean(), deciders: z.array(z.string()) });
export type ApprovalAccess = z.infer<typeof ApprovalAccess>;

/** A line comment written in the diff editor (Comments API) and not yet sent. */
export const PendingComment = z.object({ path: z.string(), line: z.number().int().min(1), body: z.string() });
export type PendingComment = z.infer<typeof PendingComment>;

/** One row of the review's file list (built by the extension: `extension/src/review-files.ts`). */
export const ReviewFile = z.object({
  path: z.string(),
  /** Its change in the diff under review; absent: not in the diff, left out at an earlier approval (the PR does not have it). */
  change: z.enum(['added', 'modified', 'deleted']).optional(),
  /** Goes out with the approval (checked in review); false: left out of the push. */
  accepted: z.boolean(),
  /** The last "Request changes" asked the agent to revert it, and it is still in the diff. */
  notReverted: z.boolean().default(false),
});
export type ReviewFile = z.infer<typeof ReviewFile>;

export const ToWebview = z.discriminatedUnion('type', [
  z.object({ type: z.literal('tasks'), tasks: z.array(Task), selectedTaskId: z.string().nullable() }),
  /**
   * Events of one task in seq order. `reset` replaces what the webview holds for the task (first
   * load after `ready`); otherwise they are appended, and seqs already held are ignored.
   */
  z.object({
    type: z.literal('events'),
    taskId: z.string(),
    reset: z.boolean(),
    events: z.array(TaskEvent),
    clipped: z.array(ClippedOutput).default([]),
  }),
  z.object({
    type: z.literal('connection'),
    taskId: z.string(),
    status: ConnectionStatus,
    detail: z.string().optional(),
  }),
  z.object({
    type: z.literal('output'),
    taskId: z.string(),
    seq: z.number().int().min(1),
    text: z.string(),
  }),
  z.object({ type: z.literal('notice'), level: z.enum(['info', 'error']), text: z.string() }),
  /** The pending approvals of a task as the viewer may act on them; replaces what was sent before. */
  z.object({
    type: z.literal('approvals'),
    taskId: z.string(),
    approvals: z.array(ApprovalAccess),
    /** False for a viewer who is not the requester (a repo owner deciding an override): no review, steering or interrupt. */
    canReview: z.boolean().default(true),
  }),
  /** The line comments waiting to go out with "Request changes"; replaces what was sent before. */
  z.object({ type: z.literal('pendingComments'), taskId: z.string(), comments: z.array(PendingComment) }),
  /**
   * The files of the task's diff under review as the server has it, with the reviewer's
   * decisions; replaces what was sent before. The panel's file list, counts and "Approve and
   * push N of M" come from here only, never from the trajectory's `file.changed` events (a file
   * changed and restored is not in the diff; a file left out of the PR is not in a later round's).
   */
  z.object({ type: z.literal('fileDecisions'), taskId: z.string(), files: z.array(ReviewFile) }),
]);
export type ToWebview = z.infer<typeof ToWebview>;

export const ReviewAction = z.enum(['approve', 'request_changes', 'reject']);
export type ReviewAction = z.infer<typeof ReviewAction>;

export const FromWebview = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready') }),
  z.object({ type: z.literal('selectTask'), taskId: z.string() }),
  z.object({ type: z.literal('interrupt'), taskId: z.string() }),
  z.object({ type: z.literal('pause'), taskId: z.string() }),
  /** Resume a paused task (or withdraw a pause not reached); `text` is sent as a message first. */
  z.object({ type: z.literal('resume'), taskId: z.string(), text: z.string().min(1).max(20_000).optional() }),
  z.object({ type: z.literal('sendMessage'), taskId: z.string(), text: z.string().min(1).max(20_000) }),
  z.object({
    type: z.literal('decideApproval'),
    taskId: z.string(),
    approvalId: z.string(),
    decision: z.enum(['approved', 'denied']),
    comment: z.string().optional(),
  }),
  z.object({
    type: z.literal('review'),
    taskId: z.string(),
    action: ReviewAction,
    comment: z.string().optional(),
  }),
  z.object({ type: z.literal('openDiff'), taskId: z.string(), path: z.string(), line: z.number().int().min(1).optional() }),
  /** Accept (push) or reject (leave out) one file's changes; the extension holds the decisions. */
  z.object({ type: z.literal('setFileAccepted'), taskId: z.string(), path: z.string().min(1), accepted: z.boolean() }),
  /** The native multi-file diff editor: this round's changes (from the diff reviewed last) or the whole diff. */
  z.object({ type: z.literal('openChanges'), taskId: z.string(), scope: z.enum(['round', 'all']) }),
  z.object({ type: z.literal('openExternal'), url: z.string().url() }),
  z.object({ type: z.literal('loadOutput'), taskId: z.string(), seq: z.number().int().min(1) }),
  z.object({ type: z.literal('sendTicket') }),
  /** A fix the panel offers for a problem it shows (signed out, failure details). */
  z.object({ type: z.literal('command'), command: z.enum(['signIn', 'showOutput']) }),
]);
export type FromWebview = z.infer<typeof FromWebview>;

/** Characters of a tool or test output sent up front; the rest comes with "load more". */
export const OUTPUT_HEAD_CHARS = 2_000;

/**
 * Cuts long outputs before an event crosses into the webview so MBs of logs never sit in the DOM
 * or in the postMessage queue. Returns the event to send and, when cut, the original length.
 */
export function clipEventOutput(event: TaskEvent, headChars = OUTPUT_HEAD_CHARS): { event: TaskEvent; clipped?: ClippedOutput } {
  if (event.type === 'review.requested_changes' && event.data.reviewedDiff !== undefined) {
    // The whole diff a request for changes was made on is for the server's round diffs; the panel never shows it.
    const { reviewedDiff: _reviewedDiff, ...data } = event.data;
    return { event: { ...event, data } };
  }
  if (event.type !== 'tool.finished' && event.type !== 'tests.finished') return { event };
  const output = event.data.output;
  if (output.length <= headChars) return { event };
  const clipped: ClippedOutput = { seq: event.seq, totalChars: output.length };
  if (event.type === 'tool.finished') {
    return { event: { ...event, data: { ...event.data, output: output.slice(0, headChars) } }, clipped };
  }
  return { event: { ...event, data: { ...event.data, output: output.slice(0, headChars) } }, clipped };
}
