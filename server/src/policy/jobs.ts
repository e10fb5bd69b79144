import { checkPolicy, type PolicyCheckInput } from './check';
import { maskDiff, maskSecrets, type MaskOptions } from './mask';
import { gateOutbound, type OutboundInput } from './outbound';

/**
 * The policy work that grows with a diff's size, as one table the worker thread serves
 * (`worker.ts`) and the pool calls by name (`pool.ts`). Every argument and result is plain data,
 * so it crosses the thread boundary by structured clone.
 */
export const POLICY_JOBS = {
  /** A task's diff and summary as they may be stored (see `EventLog.maskResult`). */
  maskResult(result: { diff: string; summary: string }, known: readonly string[]): { diff: string; summary: string } {
    return { diff: maskDiff(result.diff, { known }), summary: maskSecrets(result.summary, { known }) };
  },
  maskSecrets(text: string, options: MaskOptions): string {
    return maskSecrets(text, options);
  },
  checkPolicy(input: PolicyCheckInput): ReturnType<typeof checkPolicy> {
    return checkPolicy(input);
  },
  gateOutbound(input: OutboundInput): ReturnType<typeof gateOutbound> {
    return gateOutbound(input);
  },
};

export type PolicyJobs = typeof POLICY_JOBS;
export type PolicyJobName = keyof PolicyJobs;
