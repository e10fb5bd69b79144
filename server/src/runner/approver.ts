import type { ApprovalDecision, ApprovalRequest, Approver } from '../agent/ports';
import { DockhandError } from '../errors';
import type { EventLog } from '../store/hub';
import type { Approval } from '../store/types';

/**
 * `Approver` on the store. The request is durable (`approval.requested`, state
 * `awaiting_approval`) before anyone is asked; the decision comes from the API through the store
 * (`approval.resolved`), so a decision given while this server was down is still found. A resumed
 * task that asks again for the same tool call (same `toolUseId`) waits on the same approval
 * instead of asking twice.
 */
export class StoreApprover implements Approver {
  constructor(private readonly log: EventLog, private readonly taskId: string) {}

  async request(req: ApprovalRequest, signal?: AbortSignal): Promise<ApprovalDecision> {
    const { store } = this.log;
    const existing = req.toolUseId === undefined
      ? undefined
      : (await store.listApprovals(this.taskId)).find((a) => a.toolUseId === req.toolUseId && a.kind === 'command');
    let approval: Approval;
    if (existing) {
      approval = existing;
    } else {
      const created = await store.requestApproval(this.taskId, {
        kind: req.kind,
        reason: req.reason,
        command: req.command,
        ...(req.toolUseId === undefined ? {} : { toolUseId: req.toolUseId }),
      });
      this.log.published([created.event]);
      approval = created.approval;
    }
    if (approval.state === 'pending') await this.setState('awaiting_approval', 'running', `waiting for approval ${approval.id}`);
    const decided = await this.waitFor(approval.id, signal);
    await this.setState('running', 'awaiting_approval', `approval ${approval.id} ${decided.state}`);
    const decision: ApprovalDecision = {
      decision: decided.state === 'approved' ? 'approved' : 'denied',
      by: decided.decidedBy ?? 'unknown',
    };
    if (decided.comment !== undefined) decision.comment = decided.comment;
    return decision;
  }

  /** Moves the task between running and awaiting_approval, never out of any other state. */
  private async setState(to: 'running' | 'awaiting_approval', from: 'running' | 'awaiting_approval', reason: string): Promise<void> {
    const task = await this.log.store.getTask(this.taskId);
    if (task?.state === from) await this.log.append(this.taskId, { type: 'task.state', data: { state: to, reason } });
  }

  private waitFor(approvalId: string, signal?: AbortSignal): Promise<Approval> {
    return new Promise<Approval>((resolve, reject) => {
      let settled = false;
      const finish = (fn: () => void) => {
        if (settled) return;
        settled = true;
        unsubscribe();
        signal?.removeEventListener('abort', onAbort);
        fn();
      };
      const check = async () => {
        const approval = await this.log.store.getApproval(approvalId);
        if (approval && approval.state !== 'pending') finish(() => resolve(approval));
      };
      // Subscribe first, then look: a decision between the two is seen by one or the other.
      const unsubscribe = this.log.hub.subscribe(this.taskId, (event) => {
        if (event.type === 'approval.resolved' && event.data.approvalId === approvalId) void check();
      });
      const onAbort = () => finish(() => reject(new DockhandError('conflict', 'the task was interrupted while waiting for approval')));
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      void check().catch((error: unknown) => finish(() => reject(error)));
    });
  }
}
