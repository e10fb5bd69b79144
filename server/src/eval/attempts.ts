import type { InstanceResult } from './run-dir';

/*
 * Best-of-N (`eval run --attempts N`): an instance's attempts are N tasks on the same base, run
 * side by side by the fleet's scheduler (each its own sandbox from the warm pool or the snapshot,
 * its own cassette in the scripted modes). The server's verdicts choose among them: the first
 * attempt, in attempt order, that reached review (green verified tests, an approving review and
 * the policy gate passed). None did: attempt 1 stands (its empty prediction and why it stopped).
 *
 * Choosing the first accepted attempt, not the "best-looking" one, keeps pass@1 exact from the
 * grade of the chosen predictions alone: when attempt 1 was accepted it is the one graded, and
 * when it was not its prediction was empty (unresolved, as SWE-bench counts an empty patch).
 */

/** Attempt k of an instance: what its ticket URL says (`?attempt=k`; none: attempt 1). */
export function attemptOfUrl(url: string | undefined): number {
  const match = url ? /[?&]attempt=(\d+)$/.exec(url) : null;
  return match ? Number(match[1]) : 1;
}

export function withAttempt(url: string, attempt: number): string {
  return attempt === 1 ? url : `${url}?attempt=${attempt}`;
}

/**
 * The instance's result from its attempts' (all settled): the chosen attempt's verdict, patch and
 * policy, with what every attempt cost. Cost, tokens and turns are the sum over attempts (what the
 * instance cost); wall time is the longest attempt's (they ran side by side).
 */
export function chooseAttempt(attempts: InstanceResult[]): InstanceResult {
  const sorted = [...attempts].sort((a, b) => a.attempt - b.attempt);
  const first = sorted[0];
  if (!first) throw new Error('chooseAttempt: no attempts');
  if (sorted.length === 1 && first.attempt === 1) return first;
  const chosen = sorted.find((attempt) => attempt.reachedReview) ?? first;
  const total = (pick: (result: InstanceResult) => number) => sorted.reduce((sum, result) => sum + pick(result), 0);
  return {
    ...chosen,
    turns: total((result) => result.turns),
    costUsd: total((result) => result.costUsd),
    inputTokens: total((result) => result.inputTokens),
    outputTokens: total((result) => result.outputTokens),
    cacheReadTokens: total((result) => result.cacheReadTokens),
    cacheWriteTokens: total((result) => result.cacheWriteTokens),
    refusedFinishes: total((result) => result.refusedFinishes),
    wallSeconds: Math.max(...sorted.map((result) => result.wallSeconds)),
    attempts: sorted.map((result) => ({
      attempt: result.attempt,
      ...(result.taskId ? { taskId: result.taskId } : {}),
      reachedReview: result.reachedReview,
      ...(result.stopReason ? { stopReason: result.stopReason } : {}),
      turns: result.turns,
      costUsd: result.costUsd,
      wallSeconds: result.wallSeconds,
    })),
  };
}

/** Figures of a best-of-N run for the report: pass@1, pass@N and what the extra attempts cost. */
export interface AttemptFigures {
  attempts: number;
  instances: number;
  /** Resolved by attempt 1 alone (graded: the chosen prediction when attempt 1 is the one chosen). */
  passAt1: number;
  /** Resolved by the chosen attempt. */
  passAtN: number;
  reachedReviewAt1: number;
  reachedReviewAtN: number;
  firstAttemptCostUsd: number;
  allAttemptsCostUsd: number;
  /** Extra cost per instance the extra attempts resolved; null when they resolved none. */
  extraCostPerExtraResolvedUsd: number | null;
}

export function attemptFigures(attempts: number, rows: Array<InstanceResult & { resolved: boolean }>): AttemptFigures {
  const ran = rows.filter((row) => row.status === 'settled');
  const firstOf = (row: InstanceResult) => row.attempts?.find((attempt) => attempt.attempt === 1);
  const passAt1 = ran.filter((row) => row.resolved && row.attempt === 1).length;
  const passAtN = ran.filter((row) => row.resolved).length;
  const firstAttemptCostUsd = ran.reduce((sum, row) => sum + (firstOf(row)?.costUsd ?? row.costUsd), 0);
  const allAttemptsCostUsd = ran.reduce((sum, row) => sum + row.costUsd, 0);
  return {
    attempts,
    instances: rows.length,
    passAt1,
    passAtN,
    reachedReviewAt1: ran.filter((row) => (firstOf(row)?.reachedReview ?? row.reachedReview)).length,
    reachedReviewAtN: ran.filter((row) => row.reachedReview).length,
    firstAttemptCostUsd,
    allAttemptsCostUsd,
    extraCostPerExtraResolvedUsd: passAtN > passAt1 ? (allAttemptsCostUsd - firstAttemptCostUsd) / (passAtN - passAt1) : null,
  };
}
