import type { RepoPolicy } from './repo-policy';

/**
 * "N human approvals before push" (`requiredApprovals` in the repo policy). Counts distinct
 * people whose latest decision is an approval; the agent's requester counts like anyone else, a
 * later denial by the same person withdraws their approval, and bots never count.
 */

export interface PushDecision {
  by: string;
  decision: 'approved' | 'denied';
}

export interface ApprovalStatus {
  satisfied: boolean;
  required: number;
  approvers: string[];
  /** People whose latest decision is a denial; any denial blocks the push. */
  deniedBy: string[];
}

export function pushApprovalStatus(policy: RepoPolicy, decisions: PushDecision[], bots: string[] = []): ApprovalStatus {
  const latest = new Map<string, PushDecision['decision']>();
  for (const decision of decisions) {
    if (!bots.includes(decision.by)) latest.set(decision.by, decision.decision);
  }
  const approvers = [...latest].filter(([, decision]) => decision === 'approved').map(([by]) => by);
  const deniedBy = [...latest].filter(([, decision]) => decision === 'denied').map(([by]) => by);
  return {
    satisfied: deniedBy.length === 0 && approvers.length >= policy.requiredApprovals,
    required: policy.requiredApprovals,
    approvers,
    deniedBy,
  };
}
