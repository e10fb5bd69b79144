import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleFromJSON, envelopeFromJSON } from '@sigstore/bundle';
import { DsseEnvelope, TaskEvent, type NewEvent, type Task } from '@dockhand/protocol';
import { pushFollowUp } from '../forge/follow-push';
import { pushChange } from '../forge/push';
import { createSourceRepo, diffOf, git, PAGINATE_FIXED } from '../forge/testing/repo';
import { maskEvent } from '../policy/mask';
import { scanText } from '../policy/secrets';
import { TaskStatement } from './attestation-statement';
import { attestationTrailer, createPushAttestor } from './attestation-push';
import { attestationChecks, type AttestedCommit } from './attestation-verify';
import { envelopeDigest, verifyEnvelope } from './dsse';
import { loadSigningKey, type SigningKey } from './signing-key';

/*
 * The attestation end to end on real git and the server's real key (issue #33): a push through
 * `pushChange` with the attestor's hook, the commit's trailer naming the envelope written to the
 * log, the envelope a DSSE envelope of an in-toto Statement v1 that sigstore's types read, one
 * flipped byte failing it, a commit whose tree changed after approval failing `verify commit`'s
 * attestation checks with the diff digest named, a follow-up round chained to the first.
 */

const PLANTED = 'ghp_' + 'Zq8vN2xR7kP4mW9tB3yL6cH1dF5gJ0sA8eUo';

describe('push attestation (real git, real key)', () => {
  let root: string;
  let key: SigningKey;
  let source: { path: string; sha: string };
  let remote: string;
  const log: TaskEvent[] = [];

  const task = (): Task => ({
    id: 't_attest',
    owner: 'alice',
    state: 'pushing',
    ticket: { kind: 'issue', id: '7', title: 'paginate drops the last item', body: '', url: 'https://forge.example/acme/app/issues/7' },
    context: { repo: 'sample', baseSha: source.sha, contextFiles: [], dirty: false },
    budgets: { maxTurns: 40, maxCostUsd: 5, maxWallClockSeconds: 1800 },
    priority: 'normal',
    allowTestEdits: false,
    usage: { turns: 2, inputTokens: 2000, outputTokens: 200, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.31 },
    lastSeq: log.length,
    createdAt: '2026-12-07T00:00:00.000Z',
    updatedAt: '2026-12-07T00:00:00.000Z',
  });
  const append = async (_taskId: string, event: NewEvent) => {
    const stored = TaskEvent.parse({ taskId: 't_attest', seq: log.length + 1, ts: new Date().toISOString(), ...event });
    log.push(stored);
    return stored;
  };
  const sources = (approved?: string) => ({
    verifier: key,
    envelope: async (digest: string) => log.flatMap((event) => (event.type === 'attestation.signed' && event.data.digest === digest ? [event.data.envelope] : []))[0],
    ...(approved !== undefined ? { approvedDiff: async () => approved } : {}),
    chainHashAt: async (_taskId: string, seq: number) => (seq === 4 ? 'f'.repeat(64) : undefined),
  });
  const commitOf = (sha: string): AttestedCommit => {
    const [tree = '', parents = ''] = git(remote, 'log', '-1', '--format=%T%x00%P', sha).split('\0');
    const trailers = git(remote, 'log', '-1', '--format=%(trailers:only,unfold)', sha).split('\n').flatMap((line) => {
      const match = /^([^:]+):\s?(.*)$/.exec(line);
      return match ? [{ key: match[1]!.trim(), value: match[2]!.trim() }] : [];
    });
    return { repoDir: remote, sha, tree, parents: parents.split(' ').filter(Boolean), trailers };
  };

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'dockhand-attest-'));
    key = loadSigningKey(join(root, 'data'));
    source = createSourceRepo();
    remote = join(root, 'remote.git');
    git(root, 'clone', '-q', '--bare', source.path, remote);
    for (const event of [
      { type: 'sandbox.ready', data: { sandboxId: 's', image: 'dockhand/snapshot:5f3a9c', baseSha: source.sha, source: 'snapshot', startMs: 500 } },
      { type: 'model.turn', data: { turn: 1, model: 'claude-sonnet-4-5', usage: { inputTokens: 2000, outputTokens: 200, cacheReadTokens: 0, cacheWriteTokens: 0 }, costUsd: 0.31, stopReason: 'end_turn', contextTokens: 2000, content: [] } },
      // A secret in a test log and in an approved command: the event log masks them, the attestation must hold neither.
      { type: 'tests.finished', data: { command: 'npm test', scope: 'full', passed: 4, failed: 0, skipped: 0, ok: true, quarantined: [], preExisting: ['test/slow.test.js > times out'], output: `token ${PLANTED}`, durationMs: 900 } },
      { type: 'approval.requested', data: { approvalId: 'cmd', kind: 'command', command: `GITHUB_TOKEN=${PLANTED} npm publish --dry-run`, reason: 'risky' } },
      { type: 'approval.resolved', data: { approvalId: 'cmd', decision: 'approved', by: 'alice' } },
      { type: 'approval.requested', data: { approvalId: 'push', kind: 'push', reason: 'review the diff' } },
      { type: 'approval.resolved', data: { approvalId: 'push', decision: 'approved', by: 'bob' } },
    ] as const) {
      // The event log's masking, as `EventLog.append` does it.
      await append('t_attest', maskEvent(TaskEvent.parse({ taskId: 't', seq: 1, ts: '', ...event })));
    }
  });

  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
    rmSync(source.path, { recursive: true, force: true });
  });

  it('attests a push, a follow-up round, and names what a changed tree breaks', async () => {
    const attestor = createPushAttestor({ signer: key, append, chainHead: async () => ({ seq: 4, hash: 'f'.repeat(64) }) });
    const diff = diffOf(source.path, { 'src/paginate.js': PAGINATE_FIXED });
    const branch = 'dockhand/7-paginate';
    const request = { task: task(), events: [...log], round: 1, repository: 'sample', branch, diff, requiredApprovals: 1 };
    // As the runner does on each attempt: the hook gets the task's log as it is then.
    const push = (attest: boolean) =>
      pushChange({ cloneDir: join(root, 'clone'), remoteUrl: remote, baseSha: source.sha, diff, branch, message: 'Fix paginate', requester: { name: 'alice', email: 'alice@users.dockhand.invalid' }, date: '2026-12-07T10:00:00Z', ...(attest ? { trailers: attestor.trailers({ ...request, events: [...log] }) } : {}) });

    const pushed = await push(true);
    const signed = log.filter((event) => event.type === 'attestation.signed');
    expect(signed).toHaveLength(1);
    const first = signed[0]!.type === 'attestation.signed' ? signed[0]!.data : undefined;
    expect(attestationTrailer(git(remote, 'log', '-1', '--format=%B', pushed.headSha))).toBe(first?.digest);
    expect(first?.digest).toBe(envelopeDigest(first!.envelope));

    // DSSE and in-toto formats, read by sigstore's own types and by the statement's schema.
    const json: unknown = JSON.parse(first!.envelope);
    expect(DsseEnvelope.parse(json).payloadType).toBe('application/vnd.in-toto+json');
    expect(envelopeFromJSON(json).signatures[0]?.keyid).toBe(key.keyId);
    bundleFromJSON({ mediaType: 'application/vnd.dev.sigstore.bundle.v0.3+json', verificationMaterial: { publicKey: { hint: key.keyId }, tlogEntries: [], timestampVerificationData: { rfc3161Timestamps: [] } }, dsseEnvelope: json });
    const payload = Buffer.from(DsseEnvelope.parse(json).payload, 'base64').toString('utf8');
    const statement = TaskStatement.parse(JSON.parse(payload));
    expect(statement.subject).toEqual([{ name: `sample@${branch}`, digest: { gitTree: git(remote, 'rev-parse', `${pushed.headSha}^{tree}`) } }]);
    expect(statement.predicate).toMatchObject({ requester: 'alice', repository: { baseSha: source.sha }, snapshot: { snapshotKey: '5f3a9c' }, eventChain: { seq: 4 }, requiredApprovals: 1, tests: { passed: 4, preExisting: ['test/slow.test.js > times out'] } });
    expect(statement.predicate.approvals.map((approval) => `${approval.scope}:${approval.by}`)).toEqual(['command:alice', 'push:bob']);
    // The content gate finds no secret in it, and the planted one is not there in any form.
    expect(scanText(JSON.stringify(statement, null, 1)).filter((finding) => !finding.secret.startsWith('[secret:'))).toEqual([]);
    expect(payload).not.toContain(PLANTED);
    expect(first!.envelope).not.toContain(Buffer.from(PLANTED).toString('base64').slice(0, 20));

    // `verify commit`'s attestation checks pass on the pushed commit, with the stored diff applied again.
    const checks = await attestationChecks(commitOf(pushed.headSha), sources(diff));
    expect(checks.filter((check) => !check.ok)).toEqual([]);
    expect(checks.map((check) => check.check)).toEqual(['attestation', 'attestation signature', 'attestation subject', 'approved diff', 'event chain']);

    // One flipped byte of the envelope: its signature fails (and its digest is no longer the trailer's).
    const at = first!.envelope.indexOf('"payload":"') + 200;
    const flipped = first!.envelope.slice(0, at) + (first!.envelope[at] === 'A' ? 'B' : 'A') + first!.envelope.slice(at + 1);
    expect(verifyEnvelope(flipped, key)).toMatchObject({ ok: false, reason: expect.stringContaining('does not verify') });
    const tampered = await attestationChecks(commitOf(pushed.headSha), { ...sources(diff), envelope: async () => flipped });
    expect(tampered).toEqual([{ check: 'attestation', ok: false, detail: expect.stringContaining('changed after the push') }]);

    // A retry builds the identical commit: the round's attestation is found, not signed again.
    const again = await push(true);
    expect(again.headSha).toBe(pushed.headSha);
    expect(log.filter((event) => event.type === 'attestation.signed')).toHaveLength(1);

    // The same message and parent on a tree changed after approval: named, with the approved diff's digest.
    const digest = statement.predicate.approvedDiff.digest;
    const scratch = mkdtempSync(join(root, 'work-'));
    git(root, 'clone', '-q', remote, scratch);
    git(scratch, 'checkout', '-q', pushed.headSha);
    writeFileSync(join(scratch, 'src', 'extra.js'), 'module.exports = 1;\n');
    git(scratch, 'add', '-A');
    const tree = git(scratch, 'write-tree');
    const message = git(remote, 'log', '-1', '--format=%B', pushed.headSha);
    const forged = git(scratch, '-c', 'user.name=Dockhand Bot', '-c', 'user.email=bot@dockhand.invalid', 'commit-tree', tree, '-p', source.sha, '-m', message);
    git(scratch, 'push', '-q', remote, `${forged}:refs/heads/forged`);
    const broken = await attestationChecks(commitOf(forged), sources(diff));
    const failed = broken.filter((check) => !check.ok).map((check) => check.check);
    expect(failed).toEqual(['attestation subject', 'approved diff']);
    expect(broken.find((check) => check.check === 'approved diff')?.detail).toContain(digest);
    expect(broken.find((check) => check.check === 'approved diff')?.detail).toContain('changed after approval');
    // Without the stored diff at hand the attested tree is what the commit must hold: still named.
    const offline = await attestationChecks(commitOf(forged), { ...sources(), chainHashAt: undefined });
    expect(offline.find((check) => check.check === 'approved diff')).toMatchObject({ ok: false, detail: expect.stringContaining(digest) });

    // A follow-up round: its own attestation, chained to the first, on the PR's last head.
    const followDiff = diffOf(source.path, { 'src/paginate.js': PAGINATE_FIXED, 'CHANGELOG.md': 'paginate fixed\n' });
    const round2 = await pushFollowUp({
      cloneDir: join(root, 'clone'), remoteUrl: remote, baseSha: source.sha, parentSha: pushed.headSha, diff: followDiff, branch, message: 'Address review (round 2)', date: '2026-12-07T11:00:00Z',
      trailers: attestor.trailers({ ...request, events: [...log], round: 2, diff: followDiff }),
    });
    const second = log.filter((event) => event.type === 'attestation.signed').at(-1);
    expect(second?.type === 'attestation.signed' && second.data.round).toBe(2);
    const secondStatement = TaskStatement.parse(JSON.parse(Buffer.from(DsseEnvelope.parse(JSON.parse(second?.type === 'attestation.signed' ? second.data.envelope : '{}')).payload, 'base64').toString('utf8')));
    expect(secondStatement.predicate.previousAttestation).toBe(first!.digest);
    expect(secondStatement.predicate.commit.parent).toBe(pushed.headSha);
    expect((await attestationChecks(commitOf(round2.headSha), sources(followDiff))).filter((check) => !check.ok)).toEqual([]);

  }, 300_000);
});
