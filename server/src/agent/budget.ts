import type { Budgets } from '@dockhand/protocol';

export type BudgetName = 'turns' | 'cost' | 'wall_clock';

export interface BudgetExceeded {
  budget: BudgetName;
  limit: number;
  used: number;
}

/**
 * Turn, cost and wall-clock accounting for one task. Cost comes from real usage × prices (the model
 * client reports it per call), review and compaction calls included. Time already spent before a
 * resume counts too.
 */
export class BudgetTracker {
  turns = 0;
  costUsd = 0;
  private readonly startedAt: number;

  constructor(
    readonly limits: Budgets,
    private readonly now: () => number = Date.now,
    private readonly priorElapsedMs = 0,
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
    if (this.turns >= this.limits.maxTurns) return { budget: 'turns', limit: this.limits.maxTurns, used: this.turns };
    if (this.costUsd >= this.limits.maxCostUsd) {
      return { budget: 'cost', limit: this.limits.maxCostUsd, used: Number(this.costUsd.toFixed(6)) };
    }
    if (this.remainingMs() <= 0) return this.wallClockExceeded();
    return undefined;
  }

  wallClockExceeded(): BudgetExceeded {
    return { budget: 'wall_clock', limit: this.limits.maxWallClockSeconds, used: Math.round(this.elapsedMs() / 1000) };
  }
}
