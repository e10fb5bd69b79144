import type { EventPayload, Task, TaskEvent } from '@dockhand/protocol';

/** A snapshot build's progress while a task waits for its sandbox (`snapshot.progress`). */
export type SnapshotProgress = EventPayload<'snapshot.progress'>;
import type { SteeringSource } from '../agent';
import type { Approver, EventSink } from '../agent/ports';
import type { Sandbox } from '../sandbox/types';

/*
 * The task runner's view of the other pieces. Each port is small so the runner is testable with
 * fakes; `wiring.ts` adapts the real sandbox service, agent loop, policy gate and forge to them.
 */

export interface AcquiredSandbox {
  sandbox: Sandbox;
  source: 'warm_pool' | 'snapshot' | 'cold';
  startMs: number;
  /** The snapshot image the sandbox was started from. */
  snapshotImage?: string;
}

export interface SandboxProvider {
  /**
   * `repo` is the registered repository's name (its snapshot's identity; the mirror comes from the
   * registration). `signal`: the task was cancelled; git and Docker work for it stops.
   */
  acquire(input: { repo: string; baseSha: string; taskId: string; signal?: AbortSignal; onProgress?: (progress: SnapshotProgress) => void }): Promise<AcquiredSandbox>;
  /** The sandbox named in an earlier `sandbox.ready`, when it is still alive (after a restart). */
  reattach?(input: { sandboxId: string; baseSha: string; taskId: string }): Promise<Sandbox | undefined>;
  release(sandbox: Sandbox): Promise<void>;
}

export type AgentOutcomeKind = 'finished' | 'budget_exhausted' | 'failed' | 'cancelled' | 'paused';

export interface AgentResult {
  outcome: AgentOutcomeKind;
  /** PR summary (finished) or why it stopped. */
  summary: string;
  /** The workspace diff against the base SHA when the agent stopped. */
  diff: string;
  error?: { code: string; message: string };
}

export interface AgentInput {
  task: Task;
  sandbox: Sandbox;
  events: EventSink;
  approver: Approver;
  /** The task's log so far: the loop rebuilds its conversation from it when resuming. */
  priorEvents: TaskEvent[];
  /** Developer messages queued while the loop runs (durable; see QueuedSteering). */
  steering: SteeringSource;
  signal: AbortSignal;
}

export interface AgentPort {
  run(input: AgentInput): Promise<AgentResult>;
}

export type PolicyResult = EventPayload<'policy.checked'>;

/**
 * A check result, whether a repo owner's override in the task's log lets it through anyway (and
 * whose), and who may override it (the repo policy's `owners`; none: a block is final).
 */
export type PolicyVerdict = PolicyResult & { overridden: boolean; owners: string[] };

export interface PolicyPort {
  /**
   * `events`: the task's log, where an owner's override of this exact diff would be. `summary`:
   * the model's summary, which goes into the PR and passes the same content gate as the diff.
   */
  check(input: { task: Task; diff: string; stage: 'review' | 'push'; events: TaskEvent[]; summary?: string }): Promise<PolicyVerdict>;
}

export interface PublishResult {
  number: number;
  url: string;
  branch: string;
  headSha: string;
}

/**
 * Pushes the branch and opens the draft PR. Must be idempotent: a retry after a crash finds the
 * branch already at the same tree and the PR already open, and pushes nothing twice.
 */
export interface PublisherPort {
  /** `policy`: the push-stage verdict, so the PR body can list violations an owner overrode. */
  publish(input: { task: Task; diff: string; summary: string; events: TaskEvent[]; policy?: PolicyVerdict }): Promise<PublishResult>;
}
