import { createHash } from 'node:crypto';
import type { NewEvent } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { checkPolicy, type DiffStats, type PolicyCheckInput, type PolicyCheckResult } from './check';
import { DEFAULT_REPO_POLICY, type RepoPolicy } from './repo-policy';

/**
 * Overriding a blocked diff. The override is two ordinary events, `approval.requested` (kind
 * `policy_override`) and `approval.resolved`, so it is in the task's log like every decision.
 *
 * The approval id is derived from the diff, so an override covers exactly the diff it was given
 * for: if the agent changes anything afterwards the id changes and the old override no longer
 * applies (`isOverrideFor`).
 */

export function diffDigest(diff: string): string {
  return createHash('sha256').update(diff).digest('hex');
}

export function policyOverrideId(diff: string): string {
  return `policy-override-${diffDigest(diff).slice(0, 24)}`;
}

/** Owners listed in the repo policy may override; nobody may when the list is empty. */
export function canOverridePolicy(policy: RepoPolicy, user: string): boolean {
  return policy.owners.includes(user);
}

function summarize(result: PolicyCheckResult): string {
  const rules = [...new Set(result.violations.map((violation) => violation.rule))];
  const count = result.violations.length;
  return `${count} policy violation${count === 1 ? '' : 's'} (${rules.join(', ')}) block the push; a repo owner may override`;
}

/** `approval.requested` asking a repo owner to override the violations of this diff. */
export function policyOverrideRequest(diff: string, result: PolicyCheckResult): NewEvent {
  return {
    type: 'approval.requested',
    data: { approvalId: policyOverrideId(diff), kind: 'policy_override', reason: summarize(result) },
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
 * `approval.resolved` recording that a repo owner overrode the violations. Throws `forbidden`
 * when `by` is not an owner and `bad_request` without a reason.
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
  const rules = [...new Set(input.result.violations.map((violation) => violation.rule))].join(', ');
  return {
    type: 'approval.resolved',
    data: {
      approvalId: policyOverrideId(input.diff),
      decision: 'approved',
      by: input.by,
      comment: `override of ${rules}: ${comment}`,
    },
  };
}

/**
 * True when an `approval.resolved` event approves an override of exactly this diff by someone who
 * is (still) an owner under the given policy.
 */
export function isOverrideFor(diff: string, event: NewEvent, policy: RepoPolicy): boolean {
  return (
    event.type === 'approval.resolved' &&
    event.data.decision === 'approved' &&
    event.data.approvalId === policyOverrideId(diff) &&
    canOverridePolicy(policy, event.data.by)
  );
}

export type GatedPolicyResult = PolicyCheckResult & { overridden: boolean; stats: DiffStats };

/**
 * The policy as the gate applies it: `checkPolicy`, and a failing result is `overridden` when
 * `overrides` (usually the task's whole log) holds an owner's override of exactly this diff. The
 * runner's policy stages and the forge's push gate both call this, so they cannot disagree on
 * what may be pushed.
 */
export function checkPolicyWithOverrides(input: PolicyCheckInput & { overrides: readonly NewEvent[] }): GatedPolicyResult {
  const { overrides, ...check } = input;
  const result = checkPolicy(check);
  const policy = check.policy ?? DEFAULT_REPO_POLICY;
  const overridden = !result.ok && overrides.some((event) => isOverrideFor(check.diff, event, policy));
  return { ...result, overridden };
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
