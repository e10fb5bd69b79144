import { createHash } from 'node:crypto';
import type { NewEvent } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { checkPolicy, type DiffStats, type PolicyCheckInput, type PolicyCheckResult } from './check';
import { DEFAULT_REPO_POLICY, type RepoPolicy } from './repo-policy';

/**
 * Overriding a blocked diff. The override is two ordinary events, `approval.requested` (kind
 * `policy_override`, carrying the sha256 `diffDigest` of the blocked diff) and
 * `approval.resolved`, so it is in the task's log like every decision.
 *
 * An approval counts only for the diff its request was raised for (`findOverride`): if the agent
 * changes anything afterwards the digest differs and the old override no longer applies. The
 * request is written by the server (the runner, through the store), never by a client, so a
 * decision cannot be pointed at another diff.
 */

export function diffDigest(diff: string): string {
  return createHash('sha256').update(diff).digest('hex');
}

/** A deterministic approval id for a diff, for callers that write the events themselves. */
export function policyOverrideId(diff: string): string {
  return `policy-override-${diffDigest(diff).slice(0, 24)}`;
}

/** Owners listed in the repo policy may override; nobody may when the list is empty. */
export function canOverridePolicy(policy: RepoPolicy, user: string): boolean {
  return policy.owners.includes(user);
}

function ruleList(result: PolicyCheckResult): string {
  return [...new Set(result.violations.map((violation) => violation.rule))].join(', ');
}

/** The request's reason: how many violations, each rule and where, and who may decide. */
export function policyOverrideReason(result: PolicyCheckResult, owners: readonly string[]): string {
  const count = result.violations.length;
  const who = owners.length > 0 ? `a repo owner (${owners.join(', ')})` : 'a repo owner';
  return `${count} policy violation${count === 1 ? ' blocks' : 's block'} this diff: ${blockedReason(result)}; ${who} may override them for this exact diff`;
}

/** What an approved override records in the log: which violations, and the owner's reason. */
export function policyOverrideComment(result: PolicyCheckResult, reason?: string): string {
  const why = reason?.trim();
  return `override of ${blockedReason(result)}${why ? `: ${why}` : ''}`;
}

/** `approval.requested` asking a repo owner to override the violations of this diff. */
export function policyOverrideRequest(diff: string, result: PolicyCheckResult, policy: RepoPolicy = DEFAULT_REPO_POLICY): NewEvent {
  return {
    type: 'approval.requested',
    data: { approvalId: policyOverrideId(diff), kind: 'policy_override', reason: policyOverrideReason(result, policy.owners), diffDigest: diffDigest(diff) },
  };
}

export interface PolicyOverrideInput {
  diff: string;
  result: PolicyCheckResult;
  policy: RepoPolicy;
  /** The user deciding; must be one of the policy's owners. */
  by: string;
  /** Why the violations are acceptable; required so the log explains the exception. */
  comment: string;
}

/**
 * `approval.resolved` recording that a repo owner overrode the violations (paired with
 * `policyOverrideRequest`). Throws `forbidden` when `by` is not an owner and `bad_request`
 * without a reason.
 */
export function policyOverride(input: PolicyOverrideInput): NewEvent {
  if (!canOverridePolicy(input.policy, input.by)) {
    throw new DockhandError('forbidden', `${input.by} is not an owner of this repository and cannot override its policy`, {
      hint: 'ask one of the owners listed in .dockhand/policy.yml',
    });
  }
  const comment = input.comment.trim();
  if (comment === '') {
    throw new DockhandError('bad_request', 'comment: an override needs a reason', { field: 'comment' });
  }
  return {
    type: 'approval.resolved',
    data: {
      approvalId: policyOverrideId(input.diff),
      decision: 'approved',
      by: input.by,
      comment: `override of ${ruleList(input.result)}: ${comment}`,
    },
  };
}

export interface FoundOverride {
  approvalId: string;
  by: string;
  comment?: string;
}

/**
 * The approved override of exactly this diff in a log: an `approval.resolved` approving a
 * `policy_override` request raised with this diff's digest, by someone who is (still) an owner
 * under the given policy. The last such decision wins.
 */
export function findOverride(diff: string, events: readonly NewEvent[], policy: RepoPolicy): FoundOverride | undefined {
  const digest = diffDigest(diff);
  const requested = new Set<string>();
  for (const event of events) {
    if (event.type === 'approval.requested' && event.data.kind === 'policy_override' && event.data.diffDigest === digest) {
      requested.add(event.data.approvalId);
    }
  }
  if (requested.size === 0) return undefined;
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i];
    if (event?.type !== 'approval.resolved' || event.data.decision !== 'approved') continue;
    if (!requested.has(event.data.approvalId) || !canOverridePolicy(policy, event.data.by)) continue;
    return { approvalId: event.data.approvalId, by: event.data.by, ...(event.data.comment ? { comment: event.data.comment } : {}) };
  }
  return undefined;
}

export type GatedPolicyResult = PolicyCheckResult & { overridden: boolean; overriddenBy?: string; stats: DiffStats };

/**
 * The policy as the gate applies it: `checkPolicy`, and a failing result is `overridden` (by
 * `overriddenBy`) when `overrides` (usually the task's whole log) holds an owner's override of
 * exactly this diff. The runner's policy stages and the forge's push gate both call this, so they
 * cannot disagree on what may be pushed.
 */
export function checkPolicyWithOverrides(input: PolicyCheckInput & { overrides: readonly NewEvent[] }): GatedPolicyResult {
  const { overrides, ...check } = input;
  const result = checkPolicy(check);
  if (result.ok) return { ...result, overridden: false };
  const found = findOverride(check.diff, overrides, check.policy ?? DEFAULT_REPO_POLICY);
  return found ? { ...result, overridden: true, overriddenBy: found.by } : { ...result, overridden: false };
}

/** Nothing may go further: violations and no owner override. */
export function isBlocked(result: PolicyCheckResult & { overridden: boolean }): boolean {
  return !result.ok && !result.overridden;
}

/** Why a result blocks, naming each rule and where: `ci-config (.github/workflows/ci.yml), diff-size:lines`. */
export function blockedReason(result: PolicyCheckResult): string {
  const seen = new Set<string>();
  for (const violation of result.violations) {
    seen.add(violation.path === '' ? violation.rule : `${violation.rule} (${violation.path})`);
  }
  return [...seen].join(', ');
}
