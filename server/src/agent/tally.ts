import type { NewEvent, TaskEvent, TaskUsage } from '@dockhand/protocol';
import type { BudgetTracker } from './budget';
import type { RebuiltConversation } from './conversation';
import type { EventSink } from './ports';

/** Usage and cost of every model call of a task (conversation, review, compaction). */
export class UsageTally {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;

  constructor(
    private readonly budget: BudgetTracker,
    prior?: RebuiltConversation,
  ) {
    budget.turns = prior?.turns ?? 0;
    budget.costUsd = prior?.costUsd ?? 0;
    this.inputTokens = prior?.inputTokens ?? 0;
    this.outputTokens = prior?.outputTokens ?? 0;
    this.cacheReadTokens = prior?.cacheReadTokens ?? 0;
    this.cacheWriteTokens = prior?.cacheWriteTokens ?? 0;
  }

  add(event: NewEvent): void {
    if (event.type !== 'model.turn') return;
    const { usage, costUsd, purpose } = event.data;
    this.inputTokens += usage.inputTokens;
    this.outputTokens += usage.outputTokens;
    this.cacheReadTokens += usage.cacheReadTokens;
    this.cacheWriteTokens += usage.cacheWriteTokens;
    this.budget.costUsd += costUsd;
    if ((purpose ?? 'agent') === 'agent') this.budget.turns += 1;
  }

  usage(): TaskUsage {
    return {
      turns: this.budget.turns,
      inputTokens: this.inputTokens,
      outputTokens: this.outputTokens,
      cacheReadTokens: this.cacheReadTokens,
      cacheWriteTokens: this.cacheWriteTokens,
      costUsd: Number(this.budget.costUsd.toFixed(6)),
    };
  }
}

/**
 * Passes events through to the real sink and counts model usage on the way, so the cost budget
 * sees every model call (review and compaction included) exactly once: when it is recorded.
 */
export class TallyingSink implements EventSink {
  constructor(
    private readonly inner: EventSink,
    private readonly tally: UsageTally,
  ) {}

  async append(event: NewEvent): Promise<TaskEvent> {
    const stored = await this.inner.append(event);
    this.tally.add(event);
    return stored;
  }
}
