import { button, h } from './dom';
import type { ApprovalAccess } from './messages';
import type { Trajectory } from './trajectory';

/*
 * Cards for the agent's flagged commands and policy overrides that wait for a decision. The push
 * approval has no card: the review buttons decide it ("Approve and push" approves it, "Request
 * changes" and "Reject" deny it), and a second Approve/Deny for the same decision would confuse.
 */

export function renderApprovalCards(
  trajectory: Trajectory,
  access: ReadonlyMap<string, ApprovalAccess> | undefined,
  decide: (approvalId: string, decision: 'approved' | 'denied') => void,
): HTMLElement[] {
  const cards: HTMLElement[] = [];
  for (const approvalId of trajectory.summary.pendingApprovals) {
    const index = trajectory.approvalRows.get(approvalId);
    const row = index === undefined ? undefined : trajectory.rows[index];
    if (row?.kind !== 'approval' || row.approvalKind === 'push') continue;
    const choose = (decision: 'approved' | 'denied') => () => {
      for (const b of card.querySelectorAll('button')) b.disabled = true;
      decide(approvalId, decision);
    };
    const card = h(
      'div',
      { className: 'approval-card', dataset: { approvalId }, attrs: { role: 'group', 'aria-label': 'Approval needed' } },
      h('div', { className: 'approval-title' }, row.approvalKind === 'command' ? 'The agent wants to run:' : `Approval needed (${row.approvalKind.replace('_', ' ')})`),
      row.command ? h('code', { className: 'command' }, row.command) : null,
      h('div', { className: 'reason' }, h('strong', {}, 'Why it was flagged: '), row.reason),
      decisionControls(access?.get(approvalId), row.approvalKind, choose),
    );
    cards.push(card);
  }
  return cards;
}

/**
 * Approve/Deny only for a viewer who may decide; otherwise who is being waited for. An override
 * is usually someone else's to decide (a repo owner), so its buttons wait until the server says
 * this viewer may; a command approval is the requester's, so its buttons go only when told not.
 */
function decisionControls(known: ApprovalAccess | undefined, kind: string, decide: (decision: 'approved' | 'denied') => () => void): HTMLElement {
  const override = kind === 'policy_override';
  const mayDecide = override ? known?.canDecide === true : known?.canDecide !== false;
  if (mayDecide) {
    return h('div', { className: 'buttons' }, button('Approve', 'primary approve', decide('approved')), button('Deny', 'secondary deny', decide('denied')));
  }
  let text: string;
  if (!known) text = 'Checking who may decide…';
  else if (override) text = known.deciders.length ? `Waiting for an owner (${known.deciders.join(', ')})` : 'Waiting for an owner: the repository lists none in .dockhand/policy.yml';
  else text = `Waiting for ${known.deciders.join(', ') || 'the requester'}`;
  return h('div', { className: 'waiting' }, text);
}
