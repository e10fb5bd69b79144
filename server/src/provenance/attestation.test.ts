import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { bundleFromJSON, envelopeFromJSON } from '@sigstore/bundle';
import { dsse } from '@sigstore/core';
import { DsseEnvelope, TaskEvent, type Task } from '@dockhand/protocol';
import { STATEMENT_TYPE, TASK_PREDICATE_TYPE, TaskStatement } from './attestation-statement';
import { attestationEvent, buildStatement, signAttestation, type AttestationInput } from './attestation';
import { envelopeDigest, envelopePayload, IN_TOTO_PAYLOAD_TYPE, verifyEnvelope, type EnvelopeSigner, type EnvelopeVerifier } from './dsse';

function testKey(keyId = 'SHA256:test-key'): EnvelopeSigner & EnvelopeVerifier {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { keyId, sign: (bytes) => sign(null, bytes, privateKey), verify: (bytes, signature) => verify(null, bytes, publicKey, signature) };
}

const BASE = 'a'.repeat(40);
const TREE = 'b'.repeat(40);
const task: Task = {
  id: 'task-1',
  owner: 'alice',
  state: 'pushing',
  ticket: { kind: 'issue', id: '42', title: 'Fix the parser', body: '', url: 'https://forge.example/issues/42' },
  context: { repo: 'acme/widgets', baseSha: BASE, contextFiles: [], dirty: false },
  budgets: { maxTurns: 40, maxCostUsd: 5, maxWallClockSeconds: 1800 },
  priority: 'normal',
  allowTestEdits: false,
  usage: { turns: 3, inputTokens: 300, outputTokens: 30, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.12 },
  lastSeq: 10,
  createdAt: '2026-12-07T00:00:00.000Z',
  updatedAt: '2026-12-07T00:00:00.000Z',
};

let seq = 0;
/** Parsed, so a test event is exactly what the store would hold. */
function event(type: TaskEvent['type'], data: unknown): TaskEvent {
  seq += 1;
  return TaskEvent.parse({ taskId: task.id, seq, ts: `2026-12-07T00:00:${String(seq).padStart(2, '0')}.000Z`, type, data });
}

const usage = { inputTokens: 100, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0 };
const events: TaskEvent[] = [
  event('sandbox.ready', { sandboxId: 's1', image: 'dockhand/snapshot:f3c9a1b27d4e8f60a5b3c2d1e0f9a8b7', baseSha: BASE, source: 'snapshot', startMs: 400 }),
  event('model.turn', { turn: 1, model: 'claude-a', usage, costUsd: 0.05, stopReason: 'tool_use', contextTokens: 100, content: [] }),
  event('model.turn', { turn: 2, model: 'claude-a', usage, costUsd: 0.05, stopReason: 'end_turn', contextTokens: 100, content: [] }),
  event('model.turn', { turn: 3, model: 'claude-b', usage, costUsd: 0.02, stopReason: 'end_turn', contextTokens: 100, content: [], purpose: 'review' }),
  event('tests.finished', { command: 'npm test', scope: 'full', passed: 12, failed: 1, skipped: 0, ok: true, quarantined: [], preExisting: ['test/old.test.js > flaky'], output: 'log', durationMs: 10 }),
  event('policy.checked', { ok: true, stage: 'review', violations: [] }),
  event('approval.requested', { approvalId: 'push-1', kind: 'push', reason: 'review the diff' }),
  event('approval.resolved', { approvalId: 'push-1', decision: 'approved', by: 'bob' }),
  event('policy.checked', { ok: true, stage: 'push', violations: [] }),
];
const DIFF = 'diff --git a/src/parse.js b/src/parse.js\n--- a/src/parse.js\n+++ b/src/parse.js\n@@ -1 +1 @@\n-old\n+new\n';

function input(overrides: Partial<AttestationInput> = {}): AttestationInput {
  return { task, events, round: 1, repository: 'acme/widgets', branch: 'dockhand/42-fix-the-parser', diff: DIFF, tree: TREE, parent: BASE, requiredApprovals: 1, eventChain: { seq: 9, hash: 'c'.repeat(64) }, ...overrides };
}

describe('attestation', () => {
  it('is an in-toto Statement v1 whose predicate holds the task figures', () => {
    const statement = TaskStatement.parse(buildStatement(input()));
    expect(statement._type).toBe(STATEMENT_TYPE);
    expect(statement.predicateType).toBe(TASK_PREDICATE_TYPE);
    expect(statement.subject).toEqual([{ name: 'acme/widgets@dockhand/42-fix-the-parser', digest: { gitTree: TREE } }]);
    const p = statement.predicate;
    expect(p.ticket).toEqual({ source: 'issue', id: '42', url: 'https://forge.example/issues/42', title: 'Fix the parser' });
    expect(p.snapshot).toEqual({ image: 'dockhand/snapshot:f3c9a1b27d4e8f60a5b3c2d1e0f9a8b7', snapshotKey: 'f3c9a1b27d4e8f60a5b3c2d1e0f9a8b7' });
    expect(p.models).toEqual([
      { model: 'claude-a', turns: 2, inputTokens: 200, outputTokens: 20, costUsd: 0.1 },
      { model: 'claude-b', turns: 1, inputTokens: 100, outputTokens: 10, costUsd: 0.02 },
    ]);
    expect(p.approvals).toEqual([{ scope: 'push', approvalId: 'push-1', by: 'bob', decision: 'approved', at: events[7]!.ts, round: 1 }]);
    expect(p.tests).toMatchObject({ passed: 12, failed: 1, preExisting: ['test/old.test.js > flaky'] });
    expect(p.approvedDiff).toEqual({ digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/), files: 1 });
    expect(p.policy.map((result) => result.stage)).toEqual(['review', 'push']);
    expect(p.previousAttestation).toBeNull();
  });

  it('signs a DSSE envelope that sigstore reads and that verifies over PAE; one flipped byte fails', async () => {
    const key = testKey();
    const signed = await signAttestation(input(), key);
    expect(signed.digest).toBe(envelopeDigest(signed.envelope));
    const json: unknown = JSON.parse(signed.envelope);
    const shape = DsseEnvelope.parse(json);
    expect(shape.payloadType).toBe(IN_TOTO_PAYLOAD_TYPE);
    expect(shape.signatures).toEqual([{ keyid: key.keyId, sig: expect.any(String) }]);
    // The protobuf-specs Envelope and a whole sigstore bundle around it read it.
    const envelope = envelopeFromJSON(json);
    expect(key.verify(dsse.preAuthEncoding(envelope.payloadType, envelope.payload), envelope.signatures[0]!.sig)).toBe(true);
    bundleFromJSON({ mediaType: 'application/vnd.dev.sigstore.bundle.v0.3+json', verificationMaterial: { publicKey: { hint: key.keyId }, tlogEntries: [], timestampVerificationData: { rfc3161Timestamps: [] } }, dsseEnvelope: json });

    const check = verifyEnvelope(signed.envelope, key);
    expect(check.ok).toBe(true);
    if (check.ok) expect(TaskStatement.parse(envelopePayload(check))).toEqual(signed.statement);

    // One flipped byte of the payload (inside its base64): the signature no longer verifies.
    const at = signed.envelope.indexOf('"payload":"') + 40;
    const flipped = signed.envelope.slice(0, at) + (signed.envelope[at] === 'A' ? 'B' : 'A') + signed.envelope.slice(at + 1);
    expect(verifyEnvelope(flipped, key)).toEqual({ ok: false, reason: expect.stringContaining('does not verify') });
    expect(verifyEnvelope(signed.envelope, testKey())).toMatchObject({ ok: false });
    expect(verifyEnvelope(signed.envelope, { ...testKey(), keyId: key.keyId })).toEqual({ ok: false, reason: expect.stringContaining('does not verify') });
    expect(verifyEnvelope('{"payloadType":"x"}', key)).toEqual({ ok: false, reason: expect.stringContaining('not a DSSE envelope') });
  });

  it('masks a secret planted in the log and the gate finds none in the signed statement', async () => {
    const planted = 'ghp_' + 'R8xk2PqL9mZ4vT7wN3yB6cD1fG5hJ0sA2eUi';
    const known = 'server-held-value-93847';
    const leaky = [
      ...events,
      event('approval.requested', { approvalId: 'cmd-1', kind: 'command', command: `curl -H "Authorization: token ${planted}" https://x`, reason: 'risky' }),
      event('approval.resolved', { approvalId: 'cmd-1', decision: 'approved', by: 'bob' }),
    ];
    const signed = await signAttestation(input({ events: leaky, task: { ...task, ticket: { ...task.ticket, title: `Fix ${known}` } }, known: [known] }), testKey());
    const payload = Buffer.from(DsseEnvelope.parse(JSON.parse(signed.envelope)).payload, 'base64').toString('utf8');
    expect(payload).not.toContain(planted);
    expect(payload).not.toContain(known);
    expect(payload).toContain('[secret:');
    // Digests and SHAs are identifiers: never masked.
    expect(signed.statement.predicate.commit).toEqual({ tree: TREE, parent: BASE });
    expect(signed.statement.predicate.eventChain?.hash).toBe('c'.repeat(64));
    // A real snapshot key (hex) survives the gate: it is an identifier, not an API key.
    expect(signed.statement.predicate.snapshot?.snapshotKey).toBe('f3c9a1b27d4e8f60a5b3c2d1e0f9a8b7');
  });

  it('chains a follow-up round to the previous attestation', async () => {
    const key = testKey();
    const first = await signAttestation(input(), key);
    const later = [...events, event('attestation.signed', attestationEvent(first).data), event('pr.feedback', { number: 1, kind: 'round', round: 2, seenThrough: 1, checksSeenThrough: 0, comments: [], ignored: [] })];
    const second = await signAttestation(input({ events: later, round: 2, parent: 'd'.repeat(40) }), key);
    expect(second.statement.predicate.previousAttestation).toBe(first.digest);
    expect(second.statement.predicate.task.round).toBe(2);
  });
});
