import type { FeedbackEngine } from '../../feedback/types';
import type { ApprovalDecision, ApprovalRequest, Approver } from '../ports';
import { SimpleFeedbackEngine } from '../simple-feedback';
import type { ToolContext } from '../tools/types';
import type { HostSandbox } from '../../sandbox/testing/host-sandbox';
import { MemoryEventSink } from './memory-sink';

/** An approver that answers every request the same way and remembers what it was asked. */
export class RecordingApprover implements Approver {
  readonly requests: ApprovalRequest[] = [];

  constructor(private readonly decision: ApprovalDecision['decision'] = 'denied', private readonly comment?: string) {}

  async request(request: ApprovalRequest): Promise<ApprovalDecision> {
    this.requests.push(request);
    return { decision: this.decision, by: 'reviewer@example.com', ...(this.comment ? { comment: this.comment } : {}) };
  }
}

export function toolContext(
  sandbox: HostSandbox,
  overrides: Partial<ToolContext> & { events?: MemoryEventSink; feedback?: FeedbackEngine } = {},
): ToolContext & { events: MemoryEventSink } {
  return {
    sandbox,
    signal: new AbortController().signal,
    toolUseId: 'toolu_test',
    approver: new RecordingApprover(),
    feedback: new SimpleFeedbackEngine(),
    allowTestEdits: false,
    ...overrides,
    events: overrides.events ?? new MemoryEventSink(),
  };
}
