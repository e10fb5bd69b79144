import type { NewEvent, TaskEvent } from '@dockhand/protocol';

/** Where the loop writes its events. The store implements it; events are durable once it resolves. */
export interface EventSink {
  append(event: NewEvent): Promise<TaskEvent>;
}

export interface ApprovalRequest {
  kind: 'command';
  command: string;
  reason: string;
  toolUseId?: string;
}

export interface ApprovalDecision {
  decision: 'approved' | 'denied';
  by: string;
  comment?: string;
}

/**
 * A human decision the server enforces, outside the model. The implementation records
 * `approval.requested`, waits (surviving reconnects and restarts) and records `approval.resolved`.
 */
export interface Approver {
  request(req: ApprovalRequest, signal?: AbortSignal): Promise<ApprovalDecision>;
}
