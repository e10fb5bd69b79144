import { z } from 'zod';

/**
 * The attestation's shape, one schema for writing and reading it: an in-toto Statement v1
 * (https://github.com/in-toto/attestation/blob/main/spec/v1/statement.md) whose predicate is
 * Dockhand's own record of how one push was made. Nothing in it is taken from the model's words
 * alone: every figure is read from the task's stored (masked) event log and records.
 */

export const STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
export const TASK_PREDICATE_TYPE = 'https://dockhand.dev/attestation/task/v1';

const Sha = z.string().regex(/^[0-9a-f]{40}$/, 'must be a full 40-character lowercase hex SHA');
const Sha256 = z.string().regex(/^sha256:[0-9a-f]{64}$/, 'must be sha256:<64 hex>');

/** in-toto ResourceDescriptor, the parts a subject uses: a name and at least one digest. */
export const ResourceDescriptor = z.object({
  name: z.string().min(1),
  digest: z.record(z.string().min(1), z.string().regex(/^[0-9a-f]+$/, 'a digest is lowercase hex')).refine((digest) => Object.keys(digest).length > 0, 'at least one digest'),
});

const Approval = z.object({
  /** What was approved: the push (the review of the diff), an owner's override of a policy violation, a risky command. */
  scope: z.enum(['push', 'policy_override', 'command']),
  approvalId: z.string(),
  by: z.string(),
  decision: z.enum(['approved', 'denied']),
  /** When it was decided (the `approval.resolved` event's time). */
  at: z.string(),
  /** The review round the decision belongs to (1: before the PR; 2, 3, …: follow-up rounds). */
  round: z.number().int().min(1),
  /** `policy_override`: the sha256 of the exact diff it covers. `command`: the command. */
  diffDigest: Sha256.optional(),
  command: z.string().optional(),
});

const PolicyResult = z.object({
  stage: z.enum(['review', 'push']),
  ok: z.boolean(),
  overridden: z.boolean(),
  overriddenBy: z.string().optional(),
  violations: z.array(z.object({ rule: z.string(), path: z.string(), line: z.number().int().min(0).optional() })),
});

const Model = z.object({
  model: z.string(),
  /** Model calls of every purpose (the conversation, the self-review, compaction). */
  turns: z.number().int().min(0),
  inputTokens: z.number().int().min(0),
  outputTokens: z.number().int().min(0),
  costUsd: z.number().min(0),
});

export const TaskPredicate = z.object({
  task: z.object({ id: z.string(), round: z.number().int().min(1) }),
  ticket: z.object({ source: z.enum(['issue', 'text']), id: z.string().optional(), url: z.string().optional(), title: z.string() }),
  requester: z.string(),
  repository: z.object({ name: z.string(), baseSha: Sha, branch: z.string() }),
  /**
   * The commit the push makes: its tree (the subject's `gitTree`) and its parent (the base for
   * round 1, the PR branch's last head for a follow-up). The commit itself names this
   * attestation's digest in its `Dockhand-Attestation:` trailer (see provenance/README.md).
   */
  commit: z.object({ tree: Sha, parent: Sha }),
  /**
   * The snapshot image the task's sandbox ran from (`dockhand/snapshot:<key>`) and its key; null
   * when unknown. Not named `key`: the secret scan reads `"key": "<hex>"` as an API key.
   */
  snapshot: z.object({ image: z.string(), snapshotKey: z.string() }).nullable(),
  models: z.array(Model),
  cost: z.object({ turns: z.number().int().min(0), costUsd: z.number().min(0) }),
  /** The head of the task's event hash chain when this was signed; null where the store keeps no chain. */
  eventChain: z.object({ seq: z.number().int().min(1), hash: z.string().regex(/^[0-9a-f]{64}$/) }).nullable(),
  /** The diff that was approved and is pushed (the whole change against the base): sha256 of its bytes. */
  approvedDiff: z.object({ digest: Sha256, files: z.number().int().min(0) }),
  approvals: z.array(Approval),
  /** Human approvals the repository's policy requires before a push (`requiredApprovals`). */
  requiredApprovals: z.number().int().min(0),
  policy: z.array(PolicyResult),
  /** The last test run before the push, as the server ran it; null when none ran. */
  tests: z
    .object({
      command: z.string(),
      scope: z.enum(['selected', 'full']),
      ok: z.boolean(),
      passed: z.number().int().min(0),
      failed: z.number().int().min(0),
      skipped: z.number().int().min(0),
      /** Failing tests that fail at the base commit too (the baseline's). */
      preExisting: z.array(z.string()),
      reproducing: z.array(z.object({ id: z.string(), outcome: z.enum(['passed', 'failed', 'not_run']) })),
      judged: z.boolean(),
    })
    .nullable(),
  /** The previous round's attestation (its envelope's digest): each follow-up round chains to the one before. */
  previousAttestation: Sha256.nullable(),
  builder: z.object({ id: z.literal('dockhand'), version: z.string() }),
});
export type TaskPredicate = z.infer<typeof TaskPredicate>;

export const TaskStatement = z.object({
  _type: z.literal(STATEMENT_TYPE),
  subject: z.array(ResourceDescriptor).min(1),
  predicateType: z.literal(TASK_PREDICATE_TYPE),
  predicate: TaskPredicate,
});
export type TaskStatement = z.infer<typeof TaskStatement>;
