import { describe, expect, it } from 'vitest';
import { pushApprovalStatus } from './approvals';
import { parseRepoPolicy } from './repo-policy';

describe('pushApprovalStatus', () => {
  const two = parseRepoPolicy('requiredApprovals: 2');

  it('needs the configured number of distinct approvers', () => {
    expect(pushApprovalStatus(two, [{ by: 'ada', decision: 'approved' }]).satisfied).toBe(false);
    expect(pushApprovalStatus(two, [{ by: 'ada', decision: 'approved' }, { by: 'ada', decision: 'approved' }]).satisfied).toBe(false);
    expect(pushApprovalStatus(two, [{ by: 'ada', decision: 'approved' }, { by: 'bob', decision: 'approved' }])).toEqual({
      satisfied: true,
      required: 2,
      approvers: ['ada', 'bob'],
      deniedBy: [],
    });
    expect(pushApprovalStatus(parseRepoPolicy(undefined), [{ by: 'ada', decision: 'approved' }]).satisfied).toBe(true);
  });

  it('lets a later decision replace an earlier one, blocks on a denial, ignores bots', () => {
    const withdrawn = pushApprovalStatus(two, [
      { by: 'ada', decision: 'approved' },
      { by: 'bob', decision: 'approved' },
      { by: 'bob', decision: 'denied' },
    ]);
    expect(withdrawn).toMatchObject({ satisfied: false, approvers: ['ada'], deniedBy: ['bob'] });
    const bot = pushApprovalStatus(two, [{ by: 'ada', decision: 'approved' }, { by: 'dockhand-bot', decision: 'approved' }], ['dockhand-bot']);
    expect(bot.satisfied).toBe(false);
  });
});
