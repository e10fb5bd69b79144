import type { Logger } from 'pino';
import type { Task, TicketSummary } from '@dockhand/protocol';
import type { RepoPolicy } from '../policy';
import type { DependencyCacheMetrics } from '../sandbox/dep-cache';
import type { EventHub, EventLog } from '../store/hub';
import type { TokenSockets } from './socket-tokens';
import type { LoadGate } from './load';
import type { ReadinessChecks } from '../runner/readiness';
import type { RepoRegistry } from '../runner/registry';
import type { RepoStore, Store } from '../store/types';
import type { PullRequestThreads } from '../forge/comments';
import type { RepositorySecrets } from '../secrets/service';
import type { WebhookDeps } from './webhooks';

/** What the runner offers the API: wake the scheduler, abort in-process work, a live diff. */
export interface TaskControl {
  /** Something became runnable (a new task, an approved review, requested changes). */
  wake(): void;
  /** Aborts the task's in-process work, if this server runs it. */
  interrupt(taskId: string): void;
  /** The current diff of a task that is still being worked on (its sandbox), if this server has it. */
  liveDiff?(taskId: string): Promise<string | undefined>;
}

/** Reads a file at a commit of a repo (base contents for inline review). `null` when absent. */
export interface BaseFiles {
  read(repo: string, sha: string, path: string): Promise<string | null>;
  /** Every file path at the commit (a submission's named reproducing test files are checked against it); `null` when unreadable. */
  list?(repo: string, sha: string): Promise<string[] | null>;
}

export interface TicketSource {
  listOpenIssues(repo: string): Promise<TicketSummary[]>;
}

export interface AppDeps {
  store: Store & RepoStore;
  /** Registered repositories: every submitted task names one. */
  repos: RepoRegistry;
  /** Repositories' secrets (`secrets/`): set, listed and removed by admins and owners, never read back. */
  secrets?: RepositorySecrets;
  /** Readiness checks (servers with sandboxes). */
  readiness?: ReadinessChecks;
  hub: EventHub;
  /** Open WebSockets' tokens (`api/socket-tokens.ts`); the app makes one when not given. */
  tokenSockets?: TokenSockets;
  events: EventLog;
  control: TaskControl;
  baseFiles?: BaseFiles;
  tickets?: TicketSource;
  /** Throws when the sandbox host (Docker + runsc) is not usable; used by /readyz. */
  sandboxCheck?: () => Promise<void>;
  /** This process's dependency cache (servers with sandboxes; undefined when it is off): node-wide series on `/metrics`, for admins. */
  dependencyCache?: () => Promise<DependencyCacheMetrics | undefined>;
  /**
   * The repo policy at a task's base SHA. Its `owners` may see the task's approvals and diff and
   * decide its policy overrides; without it nobody may override.
   */
  repoPolicy?: (task: Task) => Promise<RepoPolicy>;
  /** Pushes needed before a PR may open (the repo policy may raise it). */
  requiredApprovals?: (task: Task) => Promise<number>;
  /** Forge webhooks (GitHub), when a secret is configured. */
  webhooks?: WebhookDeps;
  logger?: Logger;
  /** Where evaluation runs are (`GET /v1/evals`, eval figures on `/metrics`): one directory per run. */
  evalRunsDir?: string;
  /** The local forge's PR comments, reviews and checks; `onActivity` wakes the PR follower. */
  pullRequests?: { threads: PullRequestThreads; onActivity?: () => void };
  /** The in-flight count the HTTP server under Fastify shares with the app's hook (`buildApp` makes it). */
  loadGate?: LoadGate;
  limits?: {
    /** Requests per minute per user. */
    ratePerMinute?: number;
    /** Requests worked on at once before the next is answered 503 `overloaded` (`api/load.ts`; default 64). */
    maxInFlight?: number;
    /** A WebSocket subscriber whose unsent bytes pass this is sent `resync` and dropped. */
    wsMaxBufferedBytes?: number;
    /** How often open sockets' tokens are read again for revocations elsewhere (default 5 s). */
    wsTokenCheckMs?: number;
  };
}
