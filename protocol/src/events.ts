import { z } from 'zod';
import { TaskState } from './states';
import { EnvironmentRecipe } from './repos';
import { CreateTaskRequest } from './task';

/*
 * The append-only event log of a task. Every event carries a per-task `seq` that rises by one;
 * subscribers resume from the last `seq` they saw and the server rebuilds a task from the same
 * log after a crash. Names are `noun.verb` (past tense) or `noun.state`.
 *
 * One schema per event type; the TypeScript types are inferred from them.
 */

const Usage = z.object({
  inputTokens: z.number().int().min(0),
  outputTokens: z.number().int().min(0),
  cacheReadTokens: z.number().int().min(0),
  cacheWriteTokens: z.number().int().min(0),
});
export type TurnUsage = z.infer<typeof Usage>;

export const EventData = {
  'task.created': CreateTaskRequest.extend({ owner: z.string() }),
  'task.state': z.object({ state: TaskState, reason: z.string().optional() }),
  'sandbox.ready': z.object({
    sandboxId: z.string(),
    image: z.string(),
    baseSha: z.string(),
    source: z.enum(['warm_pool', 'snapshot', 'cold']),
    startMs: z.number().min(0),
  }),
  /** Progress of a snapshot build the task waits for (cold start): stage, time so far, last output line. */
  'snapshot.progress': z.object({
    stage: z.enum(['recipe', 'mirror', 'toolchain', 'install', 'setup', 'baseline', 'commit', 'done', 'failed']),
    elapsedMs: z.number().min(0),
    line: z.string().max(2000).optional(),
    image: z.string().optional(),
    /** Stage `recipe`: the environment detected (what was chosen and from where), before anything is fetched or built. */
    environment: EnvironmentRecipe.optional(),
  }),
  'model.turn': z.object({
    turn: z.number().int().min(1),
    model: z.string(),
    usage: Usage,
    costUsd: z.number().min(0),
    stopReason: z.string().nullable(),
    contextTokens: z.number().int().min(0),
    /** The assistant message exactly as returned (SDK content blocks) so a task can be rebuilt. */
    content: z.array(z.unknown()),
    /**
     * Why the call was made. Absent means 'agent' (a turn of the conversation); 'review' (the
     * verified stop's self-review) and 'compaction' (summarising old turns) cost money but are not
     * part of the conversation that is rebuilt from the log.
     */
    purpose: z.enum(['agent', 'review', 'compaction']).optional(),
  }),
  /**
   * A turn waits for the fleet's model rate budget (Postgres, `modelBudget`) instead of calling the
   * model and meeting a 429: `waiting` when it starts (`waitMs`: the budget's estimate until the
   * window has room), `done` when the turn goes ahead (`waitMs`: how long it waited). `limit` is the
   * limit that was full over the sliding `windowSeconds`; `tokens` the turn's estimated input.
   */
  'model.budget_wait': z.object({
    phase: z.enum(['waiting', 'done']),
    limit: z.enum(['input_tokens_per_minute', 'requests_per_minute']),
    windowSeconds: z.number().int().min(1),
    tokens: z.number().int().min(0),
    waitMs: z.number().min(0),
  }),
  'assistant.text': z.object({ turn: z.number().int().min(1), text: z.string() }),
  'tool.called': z.object({
    turn: z.number().int().min(1),
    toolUseId: z.string(),
    name: z.string(),
    input: z.unknown(),
  }),
  'tool.finished': z.object({
    toolUseId: z.string(),
    name: z.string(),
    isError: z.boolean(),
    /** Output as given to the model (already capped). */
    output: z.string(),
    truncated: z.boolean().default(false),
    durationMs: z.number().min(0),
  }),
  'file.changed': z.object({
    path: z.string(),
    change: z.enum(['added', 'modified', 'deleted']),
    patch: z.string(),
  }),
  'approval.requested': z.object({
    approvalId: z.string(),
    kind: z.enum(['command', 'push', 'policy_override']),
    command: z.string().optional(),
    reason: z.string(),
    toolUseId: z.string().optional(),
    /**
     * `policy_override` only: sha256 (hex) of the exact diff whose violations it would let
     * through. An approval of it never covers another diff.
     */
    diffDigest: z.string().optional(),
  }),
  'approval.resolved': z.object({
    approvalId: z.string(),
    decision: z.enum(['approved', 'denied']),
    by: z.string(),
    comment: z.string().optional(),
  }),
  'tests.finished': z.object({
    command: z.string(),
    scope: z.enum(['selected', 'full']),
    passed: z.number().int().min(0),
    failed: z.number().int().min(0),
    skipped: z.number().int().min(0).default(0),
    ok: z.boolean(),
    selectionReason: z.string().optional(),
    quarantined: z.array(z.string()).default([]),
    /** Failing tests that already fail at the base commit: reported, not the agent's to fix. */
    preExisting: z.array(z.string()).optional(),
    /**
     * The task's reproducing tests (failing at the base; the ticket names them, or the task's
     * `reproducingTests`): they must pass before the task may finish. not_run: not in this run.
     */
    reproducing: z.array(z.object({ id: z.string(), outcome: z.enum(['passed', 'failed', 'not_run']) })).optional(),
    output: z.string(),
    durationMs: z.number().min(0),
    /**
     * Each step of the command as it ran: counted per test or by its exit status, and how it
     * judges the change — 'cannot judge': counted by an exit status that failed at the base, so
     * neither a reason to refuse finishing nor evidence that the change works. `tail`: the last
     * lines a step that failed by its exit status printed (why it failed).
     */
    steps: z
      .array(
        z.object({
          name: z.string(),
          counted: z.enum(['tests', 'exit status']),
          judgement: z.enum(['tests', 'exit status', 'cannot judge']).optional(),
          exitCode: z.number().int(),
          passed: z.number().int().min(0),
          failed: z.number().int().min(0),
          tail: z.string().optional(),
        }),
      )
      .optional(),
    /** false: no step of this run could judge the change (see `steps`): green or red, it verified nothing. */
    judged: z.boolean().optional(),
  }),
  /**
   * The test runner itself failed (missing, could not start, crashed, timed out, gave no report),
   * or the full suite ran no test where the base commit ran none either (no_tests):
   * an infrastructure result, never a red test and never something the model is asked to fix.
   */
  'tests.runner_failed': z.object({
    command: z.string(),
    kind: z.enum(['missing', 'start', 'crash', 'timeout', 'no_report', 'no_tests']),
    message: z.string(),
    output: z.string().default(''),
  }),
  'review.finished': z.object({
    approved: z.boolean(),
    problems: z.array(z.string()).default([]),
    summary: z.string().default(''),
  }),
  'policy.checked': z.object({
    ok: z.boolean(),
    stage: z.enum(['review', 'push']),
    violations: z.array(
      z.object({
        rule: z.string(),
        path: z.string(),
        line: z.number().int().min(0).optional(),
        excerpt: z.string().optional(),
        message: z.string(),
      }),
    ),
    /** True when the violations stand but a repo owner overrode them for this exact diff. */
    overridden: z.boolean().optional(),
    /** The owner whose override let the diff through. */
    overriddenBy: z.string().optional(),
  }),
  'budget.exceeded': z.object({
    budget: z.enum(['turns', 'cost', 'wall_clock']),
    limit: z.number(),
    used: z.number(),
  }),
  'context.compacted': z.object({
    tokensBefore: z.number().int().min(0),
    tokensAfter: z.number().int().min(0),
    turnsCompacted: z.number().int().min(0),
    summary: z.string(),
  }),
  'model.fell_back': z.object({ from: z.string(), to: z.string(), reason: z.string() }),
  'pr.opened': z.object({
    number: z.number().int().min(1),
    url: z.string(),
    branch: z.string(),
    headSha: z.string(),
  }),
  'pr.outcome': z.object({
    outcome: z.enum(['merged', 'closed', 'reverted']),
    at: z.string(),
  }),
  /**
   * What came back on the task's open PR (issue 26), recorded before anything is done about it:
   * `round` starts a follow-up round (the comments, or a red check caused by the PR); `ignored`:
   * comments from people who may not steer (never shown to the model); `triaged`: a red check not
   * caused by the PR (pre-existing, flaky, infrastructure: no round); `limit`: the PR's rounds or
   * cost cap is reached; `seen`: nothing to act on (approvals). `seenThrough` / `checksSeenThrough`:
   * the highest comment and check ids taken into account.
   */
  'pr.feedback': z.object({
    number: z.number().int().min(1),
    kind: z.enum(['round', 'ignored', 'triaged', 'limit', 'seen']),
    round: z.number().int().min(2).optional(),
    seenThrough: z.number().int().min(0),
    checksSeenThrough: z.number().int().min(0),
    comments: z.array(z.object({ id: z.number().int(), author: z.string(), path: z.string().optional(), line: z.number().int().optional(), body: z.string() })),
    ignored: z.array(z.object({ id: z.number().int(), author: z.string(), reason: z.string() })),
    check: z
      .object({
        id: z.number().int(),
        name: z.string(),
        conclusion: z.string(),
        triage: z.enum(['caused', 'pre_existing', 'flaky', 'infrastructure']),
        evidence: z.string(),
      })
      .optional(),
    reason: z.string().optional(),
  }),
  /** A follow-up round's one push: a new commit on the PR's branch (`commit` false: no code change was needed), and the threads replied to. */
  'pr.pushed': z.object({
    round: z.number().int().min(2),
    number: z.number().int().min(1),
    headSha: z.string(),
    commit: z.boolean(),
    replied: z.array(z.number().int()),
  }),
  /**
   * The signed attestation of a push (issue 33): an in-toto Statement v1 in a DSSE envelope, signed
   * with the server's key and written BEFORE the commit that names its digest in a
   * `Dockhand-Attestation:` trailer (round 1: the first push; 2, 3, …: the PR's follow-up rounds).
   * `envelope` is the envelope's JSON byte for byte (its sha256 is `digest`); `treeSha` and
   * `parentSha` are the commit's tree and parent the statement names (`server/src/provenance/`).
   */
  'attestation.signed': z.object({
    round: z.number().int().min(1),
    digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
    keyId: z.string(),
    treeSha: z.string(),
    parentSha: z.string(),
    envelope: z.string(),
  }),
  'user.message': z.object({ from: z.string(), text: z.string().min(1).max(20_000) }),
  'review.requested_changes': z.object({
    by: z.string(),
    comments: z.array(
      z.object({ path: z.string().optional(), line: z.number().int().optional(), body: z.string() }),
    ),
    /** Files whose changes the reviewer rejected: the agent is asked to revert them. */
    rejectedFiles: z.array(z.string()).optional(),
    /** The whole diff (masked) changes were requested on, so the next round's own changes can be shown. */
    reviewedDiff: z.string().optional(),
    /**
     * Set when the request came back on the open PR (issue 26): which PR and which follow-up round
     * it starts (2, 3, …), so a trajectory heads the round's events with it. Absent: a review before the PR.
     */
    followUp: z.object({ number: z.number().int().min(1), round: z.number().int().min(2) }).optional(),
  }),
  /**
   * An approval that leaves files out: their changes are not pushed (the PR body lists them).
   * `accepted` is what the push keeps.
   */
  'review.files_rejected': z.object({ by: z.string(), rejected: z.array(z.string()).min(1), accepted: z.array(z.string()) }),
  'task.failed': z.object({ code: z.string(), message: z.string() }),
  /**
   * A developer asked the agent to pause: it stops at its next safe point (after the tool calls of
   * the current turn, before the next model call) and the task becomes `paused`.
   */
  'task.pause_requested': z.object({ by: z.string() }),
  /** A developer resumed the task: a pause not yet reached is withdrawn, a paused task goes back to `running`. */
  'task.resumed': z.object({ by: z.string() }),
} as const;

export type EventType = keyof typeof EventData;
export const EVENT_TYPES = Object.keys(EventData) as EventType[];
export type EventPayload<T extends EventType> = z.infer<(typeof EventData)[T]>;

const envelopeFields = {
  taskId: z.string(),
  seq: z.number().int().min(1),
  ts: z.string(),
};

function envelope<T extends EventType>(type: T) {
  return z.object({ ...envelopeFields, type: z.literal(type), data: EventData[type] });
}

export const TaskEvent = z.discriminatedUnion('type', [
  envelope('task.created'),
  envelope('task.state'),
  envelope('sandbox.ready'),
  envelope('snapshot.progress'),
  envelope('model.turn'),
  envelope('model.budget_wait'),
  envelope('assistant.text'),
  envelope('tool.called'),
  envelope('tool.finished'),
  envelope('file.changed'),
  envelope('approval.requested'),
  envelope('approval.resolved'),
  envelope('tests.finished'),
  envelope('tests.runner_failed'),
  envelope('review.finished'),
  envelope('policy.checked'),
  envelope('budget.exceeded'),
  envelope('context.compacted'),
  envelope('model.fell_back'),
  envelope('pr.opened'),
  envelope('pr.outcome'),
  envelope('pr.feedback'),
  envelope('pr.pushed'),
  envelope('attestation.signed'),
  envelope('user.message'),
  envelope('review.requested_changes'),
  envelope('review.files_rejected'),
  envelope('task.failed'),
  envelope('task.pause_requested'),
  envelope('task.resumed'),
]);
export type TaskEvent = z.infer<typeof TaskEvent>;
export type TaskEventOf<T extends EventType> = Extract<TaskEvent, { type: T }>;

/** An event before the store gives it its `seq` and timestamp. */
export type NewEvent = { [T in EventType]: { type: T; data: EventPayload<T> } }[EventType];
