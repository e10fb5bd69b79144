import type { NewEvent } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { pushApprovalStatus, type PushDecision } from '../policy/approvals';
import type { PolicyCheckResult } from '../policy/check';
import { maskSecrets } from '../policy/mask';
import { gateOutbound, type OutboundInput, type OutboundText } from '../policy/outbound';
import { blockedReason, isBlocked, type GatedPolicyResult } from '../policy/override';
import { policyWorkers } from '../policy/pool';
import type { RepoPolicy } from '../policy/repo-policy';
import { pushChange, type CommitProvenance, type CommitSigner, type CommitTrailerHook, type Person, type PushChangeResult } from './push';
import { commitText } from './pr-text';
import { visibleCharacters } from '../policy/neutralise';
import { redact } from './redact';
import type { Forge, PullRequest, PullRequestOutcome } from './types';

/**
 * Push, then open the draft PR: the last step of a task. Both halves are idempotent (the push
 * checks the remote branch, the forge returns the open PR of the branch), so the runner may call
 * this again after a crash without a second push or a second PR.
 *
 * It is also the last gate: the policy is checked again on the exact diff being pushed, and the
 * repo's required number of human approvals must be there. Nothing is pushed otherwise, whatever
 * the caller believed.
 */

export interface PushGate {
  /** The repo policy at the base SHA (`loadRepoPolicy`). */
  policy: RepoPolicy;
  allowTestEdits: boolean;
  /** Human decisions on the push (`approval.resolved` of kind `push`). */
  decisions: PushDecision[];
  /** Events that may hold an owner's override of this diff's violations. */
  overrides?: NewEvent[];
  /** Names that never count as approvers (the bot itself). */
  bots?: string[];
  /** Values the server holds as secrets: in the diff or the PR text, in any form, they block (`policy/known-secrets.ts`). */
  known?: readonly string[];
}

export interface DeliverInput {
  forge: Forge;
  repo: string;
  /** The server's own clone for this repo (see `pushChange`). */
  cloneDir: string;
  baseSha: string;
  diff: string;
  branch: string;
  /** PR title; also the commit subject unless `commitMessage` is given. */
  title: string;
  commitMessage?: string;
  /** PR body, e.g. from `buildPullRequestBody`. */
  body: string;
  requester?: Person;
  /** Base branch of the PR; default: `startBranch` when the forge has it, else the repo's default branch. */
  base?: string;
  /** The branch the task started from (`context.branch`). */
  startBranch?: string;
  /** Fixed commit date (ISO 8601), e.g. the time the push was approved. */
  date?: string;
  /** The server's signing key: the commit is SSH-signed with it (`pushChange`). */
  signer?: CommitSigner;
  /** The server's `Dockhand-*` trailers (task, trajectory link). */
  provenance?: CommitProvenance;
  /** More server trailers from the commit's tree and parent (the attestation's digest: `provenance/attestation-push.ts`). */
  trailers?: CommitTrailerHook;
  gate: PushGate;
}

export interface DeliverResult {
  pr: PullRequest;
  push: PushChangeResult;
  /** The push-stage check (record it as `policy.checked`); `overridden` when an owner let it through. */
  policy: PolicyCheckResult & { overridden: boolean };
}

/**
 * Throws `policy_violation` / `forbidden` unless the diff may be pushed now. `text` is what goes
 * with it (PR title and body, commit message): the same content gate as the runner's (`gateOutbound`).
 */
export function enforcePushGate(diff: string, gate: PushGate, text: OutboundText = {}): PolicyCheckResult & { overridden: boolean } {
  return pushVerdict(gateOutbound(gateInput(diff, gate, text)), gate);
}

/** `enforcePushGate` with the gate's reading of the diff on a policy worker thread (`deliverPullRequest`). */
export async function enforcePushGateOffThread(diff: string, gate: PushGate, text: OutboundText = {}): Promise<PolicyCheckResult & { overridden: boolean }> {
  return pushVerdict(await policyWorkers.run('gateOutbound', gateInput(diff, gate, text)), gate);
}

function gateInput(diff: string, gate: PushGate, text: OutboundText): OutboundInput {
  return { diff, policy: gate.policy, allowTestEdits: gate.allowTestEdits, stage: 'push', overrides: [...(gate.overrides ?? [])], text, ...(gate.known?.length ? { known: [...gate.known] } : {}) };
}

function pushVerdict(result: GatedPolicyResult, gate: PushGate): PolicyCheckResult & { overridden: boolean } {
  if (isBlocked(result)) {
    throw new DockhandError('policy_violation', `push blocked by policy: ${blockedReason(result)}`, {
      hint: 'fix the violations, or ask a repo owner to override them',
    });
  }
  const approvals = pushApprovalStatus(gate.policy, gate.decisions, gate.bots);
  if (!approvals.satisfied) {
    const why = approvals.deniedBy.length > 0
      ? `denied by ${approvals.deniedBy.join(', ')}`
      : `${approvals.approvers.length} of ${approvals.required} required approvals`;
    throw new DockhandError('forbidden', `push not approved: ${why}`, { hint: 'a reviewer must approve the push' });
  }
  return { ok: result.ok, stage: result.stage, violations: result.violations, overridden: result.overridden };
}

/**
 * The commit git built must not carry a violation the checked diff did not: guards against any
 * difference between how the gate parsed the diff and how `git apply` applied it.
 */
function verifyCommitted(checked: PolicyCheckResult, gate: PushGate): (committedDiff: string) => Promise<void> {
  const key = (violation: { rule: string; path: string }) => `${violation.rule}\u0000${violation.path}`;
  const known = new Set(checked.violations.map(key));
  return async (committedDiff) => {
    const actual = await policyWorkers.run('checkPolicy', { diff: committedDiff, policy: gate.policy, allowTestEdits: gate.allowTestEdits, stage: 'push' });
    const extra = actual.violations.filter((violation) => !known.has(key(violation)));
    if (extra.length > 0) {
      throw new DockhandError('policy_violation', `the commit differs from the checked diff: ${extra.map((v) => `${v.rule} ${v.path}`.trim()).join(', ')}`);
    }
  };
}

export async function deliverPullRequest(input: DeliverInput): Promise<DeliverResult> {
  // Trailers come only from the server (push.ts adds Co-authored-by): trailer-shaped lines of
  // the submitter's or model's text are dropped, so no Reviewed-by or Signed-off-by is forged.
  const message = commitText(input.commitMessage ?? input.title);
  // The ticket's title as the forge will show it: one line, hidden characters written out (a
  // zero-width or bidi character in a Jira title reads differently than it is; written out it is
  // harmless and visible, where left in it would block the push as trojan-source text in pr-title).
  const title = visibleCharacters(input.title.replace(/[\r\n]+/g, ' '));
  const policy = await enforcePushGateOffThread(input.diff, input.gate, { title, body: input.body, commitMessage: message });
  const target = await input.forge.pushTarget(input.repo);
  // Masked even after the gate: an owner's override may let a finding through, never its value.
  const known = [target.token];
  const push = await pushChange({
    cloneDir: input.cloneDir,
    remoteUrl: target.url,
    token: target.token,
    tokenUsername: target.username,
    baseSha: input.baseSha,
    diff: input.diff,
    branch: input.branch,
    message: maskSecrets(message, { known }),
    requester: input.requester,
    date: input.date,
    ...(input.signer ? { signer: input.signer } : {}),
    ...(input.provenance ? { provenance: input.provenance } : {}),
    ...(input.trailers ? { trailers: input.trailers } : {}),
    verifyCommit: verifyCommitted(policy, input.gate),
  });
  const pr = await input.forge.openPullRequest({
    repo: input.repo,
    branch: input.branch,
    base: input.base ?? (await baseBranch(input, target.defaultBranch)),
    title: maskSecrets(title, { known }),
    body: maskSecrets(redact(input.body, [target.token]), { known }),
    draft: true,
  });
  return { pr, push, policy };
}

/** The PR's base: the branch the task started from when the forge has it, else the default branch. */
async function baseBranch(input: DeliverInput, defaultBranch: string): Promise<string> {
  const start = input.startBranch;
  if (start && start !== 'HEAD' && !start.startsWith('dockhand/') && (await input.forge.hasBranch(input.repo, start))) return start;
  return defaultBranch;
}

export function prOpenedEvent(pr: PullRequest): NewEvent {
  return { type: 'pr.opened', data: { number: pr.number, url: pr.url, branch: pr.branch, headSha: pr.headSha } };
}

export function prOutcomeEvent(outcome: PullRequestOutcome): NewEvent {
  return { type: 'pr.outcome', data: { outcome: outcome.outcome, at: outcome.at } };
}
