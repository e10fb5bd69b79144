import type { Budgets, TaskEvent } from '@dockhand/protocol';
import { activeMs } from './conversation';

export type BudgetName = 'turns' | 'cost' | 'wall_clock';

export interface BudgetExceeded {
  budget: BudgetName;
  limit: number;
  used: number;
}

/** What earlier rounds of a task spent: a follow-up round's budget does not count it. */
export interface SpentBefore {
  turns: number;
  costUsd: number;
}

/**
 * A PR's follow-up round has a budget of its own (the task's turns, cost and wall clock, counted
 * from the round's start), so a round is neither starved by the first run nor free to spend
 * without bound: the follower's cost cap across rounds bounds the whole. The round starts at its
 * `pr.feedback` (kind `round`); before any, the whole log is the round.
 */
export function currentRound(events: readonly TaskEvent[]): { before: SpentBefore; events: readonly TaskEvent[] } {
  const start = events.findLastIndex((event) => event.type === 'pr.feedback' && event.data.kind === 'round');
  const before = { turns: 0, costUsd: 0 };
  if (start < 0) return { before, events };
  for (const event of events.slice(0, start)) {
    if (event.type !== 'model.turn') continue;
    before.costUsd += event.data.costUsd;
    if ((event.data.purpose ?? 'agent') === 'agent') before.turns += 1;
  }
  return { before, events: events.slice(start) };
}

/** Wall-clock time the current round has used (the whole task's before any follow-up round). */
export function roundActiveMs(events: readonly TaskEvent[]): number {
  return activeMs(currentRound(events).events);
}

/**
 * Turn, cost and wall-clock accounting for one task. Cost comes from real usage × prices (the model
 * client reports it per call), review and compaction calls included. Time already spent before a
 * resume counts too. `turns` and `costUsd` are the task's totals; the limits apply to what was
 * spent after `spentBefore` (a follow-up round's own budget).
 */
export class BudgetTracker {
  turns = 0;
  costUsd = 0;
  private readonly startedAt: number;

  constructor(
    readonly limits: Budgets,
    private readonly now: () => number = Date.now,
    private readonly priorElapsedMs = 0,
    private readonly spentBefore: SpentBefore = { turns: 0, costUsd: 0 },
  ) {
    this.startedAt = now();
  }

  elapsedMs(): number {
    return this.now() - this.startedAt + this.priorElapsedMs;
  }

  remainingMs(): number {
    return Math.max(0, this.limits.maxWallClockSeconds * 1000 - this.elapsedMs());
  }

  /** The first budget that is used up, checked before each model call. */
  exceeded(): BudgetExceeded | undefined {
    const turns = this.turns - this.spentBefore.turns;
    const costUsd = this.costUsd - this.spentBefore.costUsd;
    if (turns >= this.limits.maxTurns) return { budget: 'turns', limit: this.limits.maxTurns, used: turns };
    if (costUsd >= this.limits.maxCostUsd) {
      return { budget: 'cost', limit: this.limits.maxCostUsd, used: Number(costUsd.toFixed(6)) };
    }
    if (this.remainingMs() <= 0) return this.wallClockExceeded();
    return undefined;
  }

  wallClockExceeded(): BudgetExceeded {
    return { budget: 'wall_clock', limit: this.limits.maxWallClockSeconds, used: Math.round(this.elapsedMs() / 1000) };
  }
}
