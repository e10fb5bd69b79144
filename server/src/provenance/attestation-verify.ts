import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { createGit, type Git } from '../forge/git';
import { diffDigest } from '../policy/override';
import { TaskStatement } from './attestation-statement';
import { ATTESTATION_TRAILER } from './attestation-push';
import { envelopeDigest, envelopePayload, verifyEnvelope, type EnvelopeVerifier } from './dsse';
import type { CommitCheck, CommitCheckStep, CommitUnderCheck } from './verify-commit';

/*
 * The attestation's checks of `dockhand verify commit` (issue #33), each named, each saying what it
 * found: the trailer's attestation is the one stored, its signature by the server's key holds over
 * an in-toto statement, the statement's subject is this commit's tree and parent, the commit's tree
 * is the base plus the approved diff (recomputed from the stored diff when the verifier has it),
 * and the event chain head it names is the task's. A failed check never stops the others: a reader
 * sees every finding.
 */

/** What the attestation's checks read of the commit (`verify-commit.ts` reads it once for every step). */
export type AttestedCommit = Pick<CommitUnderCheck, 'repoDir' | 'sha' | 'tree' | 'parents' | 'trailers'>;

export interface AttestationSources {
  /** The server's key (or its public half). */
  verifier: EnvelopeVerifier;
  /** The envelope the store holds under `digest` for the commit's task, or undefined. */
  envelope(digest: string, taskId: string | undefined): Promise<string | undefined>;
  /** The diff the task's approval covered (the stored result less left-out files), when at hand. */
  approvedDiff?(taskId: string, round: number): Promise<string | undefined>;
  /** The stored chain hash of the task's event at `seq` (`provenance/chain.ts`), when at hand. */
  chainHashAt?(taskId: string, seq: number): Promise<string | undefined>;
}

function trailer(commit: AttestedCommit, key: string): string | undefined {
  return commit.trailers.filter((entry) => entry.key.toLowerCase() === key.toLowerCase()).at(-1)?.value;
}

export async function attestationChecks(commit: AttestedCommit, sources: AttestationSources): Promise<CommitCheck[]> {
  const digest = trailer(commit, ATTESTATION_TRAILER);
  const taskId = trailer(commit, 'Dockhand-Task');
  if (!digest || !/^sha256:[0-9a-f]{64}$/.test(digest)) {
    return [{ check: 'attestation', ok: false, detail: digest ? `the ${ATTESTATION_TRAILER} trailer "${digest.slice(0, 80)}" is not sha256:<64 hex>` : `no ${ATTESTATION_TRAILER} trailer: the push was not attested` }];
  }
  const envelope = await sources.envelope(digest, taskId);
  if (envelope === undefined) return [{ check: 'attestation', ok: false, detail: `no attestation ${digest} is stored${taskId ? ` for task ${taskId}` : ''}` }];
  const stored = envelopeDigest(envelope);
  if (stored !== digest) return [{ check: 'attestation', ok: false, detail: `the stored attestation's digest is ${stored}, not the trailer's ${digest}: it was changed after the push` }];
  const checks: CommitCheck[] = [{ check: 'attestation', ok: true, detail: `${digest}${taskId ? ` of task ${taskId}` : ''}` }];

  const signature = verifyEnvelope(envelope, sources.verifier);
  if (!signature.ok) return [...checks, { check: 'attestation signature', ok: false, detail: signature.reason }];
  const statement = TaskStatement.safeParse(envelopePayload(signature));
  if (!statement.success) {
    const issue = statement.error.issues[0];
    return [...checks, { check: 'attestation signature', ok: false, detail: `signed, but not a Dockhand in-toto statement: ${issue ? `${issue.path.join('.')}: ${issue.message}` : 'invalid'}` }];
  }
  checks.push({ check: 'attestation signature', ok: true, detail: `DSSE signature by key ${signature.keyId} over an in-toto Statement v1 (${statement.data.predicateType})` });
  const { predicate, subject } = statement.data;

  const trees = subject.flatMap((entry) => (entry.digest['gitTree'] ? [entry.digest['gitTree']] : []));
  const parentOk = commit.parents.length === 1 && commit.parents[0] === predicate.commit.parent;
  const treeOk = trees.includes(commit.tree) && predicate.commit.tree === commit.tree;
  checks.push({
    check: 'attestation subject',
    ok: treeOk && parentOk && (taskId === undefined || taskId === predicate.task.id),
    detail: !treeOk
      ? `the commit's tree ${commit.tree} is not the attested tree ${predicate.commit.tree}`
      : !parentOk
        ? `the commit's parent ${commit.parents.join(' ') || '(none)'} is not the attested parent ${predicate.commit.parent}`
        : taskId !== undefined && taskId !== predicate.task.id
          ? `the commit names task ${taskId}, the attestation task ${predicate.task.id}`
          : `tree ${commit.tree} on parent ${predicate.commit.parent} (${subject.map((entry) => entry.name).join(', ')}, round ${predicate.task.round})`,
  });

  checks.push(await approvedDiffCheck(commit, predicate.repository.baseSha, predicate.approvedDiff.digest, predicate.commit.tree, sources.approvedDiff ? await sources.approvedDiff(predicate.task.id, predicate.task.round) : undefined));
  checks.push(await chainCheck(predicate.task.id, predicate.eventChain, sources));
  return checks;
}

/**
 * The commit's tree is the base plus the approved diff: recomputed (the diff applied to the base in
 * a scratch repository that borrows the commit's objects, so the checked repository is not
 * written) when the stored diff is at hand and its digest is the attested one; else the attested
 * tree, which the server computed from the same diff at signing, is what the commit must hold.
 */
async function approvedDiffCheck(commit: AttestedCommit, baseSha: string, digest: string, attestedTree: string, diff: string | undefined): Promise<CommitCheck> {
  const check = 'approved diff';
  if (diff !== undefined && `sha256:${diffDigest(diff)}` !== digest) {
    return { check, ok: false, detail: `the stored diff's digest sha256:${diffDigest(diff)} is not the approved diff ${digest}` };
  }
  const expected = diff === undefined ? attestedTree : await treeOf(commit.repoDir, baseSha, diff).catch((error: unknown) => `(the approved diff does not apply to the base: ${error instanceof Error ? error.message.split('\n')[0] : String(error)})`);
  if (expected !== commit.tree) {
    return { check, ok: false, detail: `the commit's tree ${commit.tree} is not the base ${baseSha.slice(0, 12)} plus the approved diff ${digest}, which gives ${expected}: the tree changed after approval` };
  }
  return { check, ok: true, detail: `tree ${commit.tree} = base ${baseSha.slice(0, 12)} + approved diff ${digest}${diff === undefined ? ' (as attested; the diff itself is not at hand to apply again)' : ' (applied again)'}` };
}

async function chainCheck(taskId: string, head: { seq: number; hash: string } | null, sources: AttestationSources): Promise<CommitCheck> {
  const check = 'event chain';
  if (head === null) return { check, ok: false, detail: `the attestation names no event chain head: the server kept no hash chain for task ${taskId} when it signed` };
  if (!sources.chainHashAt) return { check, ok: true, detail: `head ${head.hash.slice(0, 16)}… at event ${head.seq} (not compared: the task's log is not at hand)` };
  const stored = await sources.chainHashAt(taskId, head.seq);
  if (stored === undefined) return { check, ok: false, detail: `task ${taskId} has no chained event ${head.seq}: the log the attestation was signed over is gone` };
  if (stored !== head.hash) return { check, ok: false, detail: `event ${head.seq} of task ${taskId} hashes to ${stored.slice(0, 16)}…, the attestation signed ${head.hash.slice(0, 16)}…: the log was changed` };
  return { check, ok: true, detail: `event ${head.seq} of task ${taskId} is the attested chain head ${head.hash.slice(0, 16)}…` };
}

/** base + diff as a tree, computed in a scratch repository whose objects borrow `repoDir`'s. */
export async function treeOf(repoDir: string, baseSha: string, diff: string): Promise<string> {
  const scratch = await mkdtemp(join(tmpdir(), 'dockhand-tree-'));
  try {
    const objects = (await createGit(repoDir).raw(['rev-parse', '--git-path', 'objects'])).trim();
    const scratchGit: Git = createGit(scratch, { indexFile: join(scratch, 'index') });
    await scratchGit.raw(['init', '-q', '--bare']);
    await writeFile(join(scratch, 'objects', 'info', 'alternates'), `${isAbsolute(objects) ? objects : join(repoDir, objects)}\n`);
    await scratchGit.raw(['read-tree', baseSha]);
    if (diff.trim() !== '') {
      await writeFile(join(scratch, 'change.diff'), diff.endsWith('\n') ? diff : `${diff}\n`);
      await scratchGit.raw(['apply', '--cached', '--whitespace=nowarn', join(scratch, 'change.diff')]);
    }
    return (await scratchGit.raw(['write-tree'])).trim();
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** The checks as a `verify commit` step (`verifyCommit(input, [attestationStep(sources)])`). */
export function attestationStep(sources: AttestationSources): CommitCheckStep {
  return (commit) => attestationChecks(commit, sources);
}
