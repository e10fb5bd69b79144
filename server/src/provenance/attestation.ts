import type { EventPayload, Task, TaskEvent } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { maskDeep } from '../policy/mask';
import { diffDigest } from '../policy/override';
import { storedSecretInText } from '../policy/known-secrets';
import { scanText } from '../policy/secrets';
import { SERVER_VERSION } from '../version';
import { STATEMENT_TYPE, TASK_PREDICATE_TYPE, TaskStatement, type TaskPredicate } from './attestation-statement';
import { signEnvelope, type EnvelopeSigner } from './dsse';

/**
 * The attestation of one push (issue 33): who asked, which model, what ran, who approved which
 * diff, built from the task's stored event log, masked and gated like everything that leaves the
 * server, then signed in a DSSE envelope with the server's key.
 *
 * Subject: the commit's TREE (`gitTree`), with its parent in the predicate, not the commit's own
 * SHA: the commit carries this attestation's digest in its `Dockhand-Attestation:` trailer, so no
 * statement inside it can name the commit's SHA. The signed commit names the attestation, the
 * attestation names the commit's tree, parent and approved diff: each binds the other
 * (provenance/README.md).
 */

export interface AttestationInput {
  task: Task;
  /** The task's log as stored (masked) when the push was decided. */
  events: readonly TaskEvent[];
  /** 1 for the first push, the follow-up round (2, 3, …) after. */
  round: number;
  /** The registered repository's name (the forge's name for it). */
  repository: string;
  /** The PR's branch. */
  branch: string;
  /** The diff pushed: the whole change against the base, as approved. */
  diff: string;
  /** The commit the push makes: its tree and its parent. */
  tree: string;
  parent: string;
  requiredApprovals: number;
  /** The task's event chain head (`provenance/chain.ts`); null where the store keeps none. */
  eventChain: { seq: number; hash: string } | null;
  /** Values the server holds as secrets: masked, and the statement refused if one were left. */
  known?: readonly string[];
}

export interface SignedAttestation {
  round: number;
  statement: TaskStatement;
  /** The DSSE envelope's JSON, byte for byte. */
  envelope: string;
  /** `sha256:<hex>` of `envelope`: the commit's `Dockhand-Attestation:` trailer. */
  digest: string;
  keyId: string;
}

function changedFiles(diff: string): number {
  return new Set([...diff.matchAll(/^diff --git a\/.* b\/(.*)$/gm)].map((match) => match[1])).size;
}

/** Approvals decided in the task, each with its request's scope and the round it was decided in. */
function approvalsOf(events: readonly TaskEvent[]): TaskPredicate['approvals'] {
  const requested = new Map<string, EventPayload<'approval.requested'>>();
  const approvals: TaskPredicate['approvals'] = [];
  let round = 1;
  for (const event of events) {
    if (event.type === 'pr.feedback' && event.data.kind === 'round' && event.data.round !== undefined) round = event.data.round;
    if (event.type === 'approval.requested') requested.set(event.data.approvalId, event.data);
    if (event.type !== 'approval.resolved') continue;
    const request = requested.get(event.data.approvalId);
    if (!request) continue;
    approvals.push({
      scope: request.kind,
      approvalId: event.data.approvalId,
      by: event.data.by,
      decision: event.data.decision,
      at: event.ts,
      round,
      ...(request.diffDigest ? { diffDigest: `sha256:${request.diffDigest}` } : {}),
      ...(request.kind === 'command' && request.command ? { command: request.command } : {}),
    });
  }
  return approvals;
}

function modelsOf(events: readonly TaskEvent[]): TaskPredicate['models'] {
  const models = new Map<string, TaskPredicate['models'][number]>();
  for (const event of events) {
    if (event.type !== 'model.turn') continue;
    const entry = models.get(event.data.model) ?? { model: event.data.model, turns: 0, inputTokens: 0, outputTokens: 0, costUsd: 0 };
    entry.turns += 1;
    entry.inputTokens += event.data.usage.inputTokens;
    entry.outputTokens += event.data.usage.outputTokens;
    entry.costUsd = Math.round((entry.costUsd + event.data.costUsd) * 1e6) / 1e6;
    models.set(event.data.model, entry);
  }
  return [...models.values()];
}

function lastOf<T extends TaskEvent['type']>(events: readonly TaskEvent[], type: T): Extract<TaskEvent, { type: T }> | undefined {
  const isType = (event: TaskEvent): event is Extract<TaskEvent, { type: T }> => event.type === type;
  return [...events].reverse().find(isType);
}

/** The previous round's attestation: the last one signed for an earlier round. */
export function previousAttestation(events: readonly TaskEvent[], round: number): string | null {
  const earlier = events.filter((event): event is Extract<TaskEvent, { type: 'attestation.signed' }> => event.type === 'attestation.signed' && event.data.round < round);
  return earlier.at(-1)?.data.digest ?? null;
}

export function buildStatement(input: AttestationInput): TaskStatement {
  const { task, events } = input;
  const ready = lastOf(events, 'sandbox.ready');
  const tests = lastOf(events, 'tests.finished');
  const image = ready?.data.image;
  const predicate: TaskPredicate = {
    task: { id: task.id, round: input.round },
    ticket: task.ticket.kind === 'issue'
      ? { source: 'issue', id: task.ticket.id, ...(task.ticket.url ? { url: task.ticket.url } : {}), title: task.ticket.title }
      : { source: 'text', title: task.ticket.title },
    requester: task.owner,
    repository: { name: input.repository, baseSha: task.context.baseSha, branch: input.branch },
    commit: { tree: input.tree, parent: input.parent },
    snapshot: image ? { image, snapshotKey: image.includes(':') ? image.slice(image.lastIndexOf(':') + 1) : image } : null,
    models: modelsOf(events),
    cost: { turns: task.usage.turns, costUsd: task.usage.costUsd },
    eventChain: input.eventChain,
    approvedDiff: { digest: `sha256:${diffDigest(input.diff)}`, files: changedFiles(input.diff) },
    approvals: approvalsOf(events),
    requiredApprovals: input.requiredApprovals,
    policy: events.flatMap((event) =>
      event.type === 'policy.checked'
        ? [{
            stage: event.data.stage,
            ok: event.data.ok,
            overridden: event.data.overridden ?? false,
            ...(event.data.overriddenBy ? { overriddenBy: event.data.overriddenBy } : {}),
            // Rule and place only: an excerpt is the diff's own text, which the diff digest covers.
            violations: event.data.violations.map((violation) => ({ rule: violation.rule, path: violation.path, ...(violation.line !== undefined ? { line: violation.line } : {}) })),
          }]
        : [],
    ),
    tests: tests
      ? {
          command: tests.data.command,
          scope: tests.data.scope,
          ok: tests.data.ok,
          passed: tests.data.passed,
          failed: tests.data.failed,
          skipped: tests.data.skipped,
          preExisting: tests.data.preExisting ?? [],
          reproducing: tests.data.reproducing ?? [],
          judged: tests.data.judged ?? true,
        }
      : null,
    previousAttestation: previousAttestation(events, input.round),
    builder: { id: 'dockhand', version: SERVER_VERSION },
  };
  return {
    _type: STATEMENT_TYPE,
    subject: [{ name: `${input.repository}@${input.branch}`, digest: { gitTree: input.tree } }],
    predicateType: TASK_PREDICATE_TYPE,
    predicate,
  };
}

/**
 * The statement as it may leave the server: every string masked as events are (identifiers and
 * digests left alone), then the content gate's secret scan over the statement's JSON, where a value
 * is read with its key (`"password": "…"`), which the masking of a lone value cannot see: what it
 * finds is masked too. Anything the scan or a server-held secret still finds after that refuses
 * the attestation (and so the push) rather than signing a secret into a record meant to be kept.
 */
export function gatedStatement(statement: TaskStatement, known: readonly string[] = []): TaskStatement {
  const findings = (value: TaskStatement) => scanText(JSON.stringify(value, null, 1)).filter((finding) => !finding.secret.startsWith('[secret:'));
  let masked = TaskStatement.parse(maskDeep(statement, { known }));
  const inContext = findings(masked);
  if (inContext.length > 0) masked = TaskStatement.parse(maskDeep(masked, { known: [...known, ...inContext.map((finding) => finding.secret)] }));
  const text = JSON.stringify(masked, null, 1);
  const stored = storedSecretInText(text, known);
  const found = findings(masked);
  if (stored !== undefined || found.length > 0) {
    const what = stored !== undefined ? `a value this server holds as a secret (line ${stored})` : `${found[0]?.description ?? 'a secret'} (line ${found[0]?.line ?? 0})`;
    throw new DockhandError('policy_violation', `the attestation would hold ${what} after masking; it is not signed`, { hint: 'report this: the statement is built from masked events' });
  }
  return masked;
}

export async function signAttestation(input: AttestationInput, signer: EnvelopeSigner): Promise<SignedAttestation> {
  const statement = gatedStatement(buildStatement(input), input.known ?? []);
  const signed = await signEnvelope(Buffer.from(JSON.stringify(statement), 'utf8'), signer);
  return { round: input.round, statement, envelope: signed.json, digest: signed.digest, keyId: signer.keyId };
}

/** The attestation event of a signed attestation, written before the commit that names it. */
export function attestationEvent(signed: SignedAttestation): { type: 'attestation.signed'; data: EventPayload<'attestation.signed'> } {
  return {
    type: 'attestation.signed',
    data: { round: signed.round, digest: signed.digest, keyId: signed.keyId, treeSha: signed.statement.predicate.commit.tree, parentSha: signed.statement.predicate.commit.parent, envelope: signed.envelope },
  };
}
