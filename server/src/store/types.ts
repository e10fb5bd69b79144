import type { FlakyStore } from '../feedback/types';
import type { StoredChain } from './chain-rows';
import type { PullRequestStore } from '../forge/types';
import type { PullRequestThreadStore } from '../forge/comments';
import type { CreateTaskRequest, EventType, NewEvent, RepoRegistration, Task, TaskEvent, TaskState } from '@dockhand/protocol';

/*
 * The store port. `SqliteStore` (embedded, one server) implements it today; a Postgres store for a
 * fleet of servers is planned behind this same interface (every method is async for that reason,
 * and leases — not in-process locks — decide which server works on a task). It is not built yet.
 */

export type Role = 'user' | 'admin';

export interface User {
  name: string;
  role: Role;
  createdAt: string;
}

/**
 * What a token may do: `read` (GET routes and the events WebSocket), `submit` (create tasks, steer
 * one's own: messages, interrupt, pause, resume), `review` (approve, request changes, decide approval
 * requests), `admin` (registered repositories, tokens, other users' tasks; an admin role only).
 */
export const TOKEN_SCOPES = ['read', 'submit', 'review', 'admin'] as const;
export type TokenScope = (typeof TOKEN_SCOPES)[number];

/** The scopes a role may hold; a token without stored scopes (made before scopes existed) has all of these. */
export function scopesOfRole(role: Role): TokenScope[] {
  return role === 'admin' ? [...TOKEN_SCOPES] : ['read', 'submit', 'review'];
}

export interface TokenInfo {
  id: string;
  user: string;
  label: string;
  createdAt: string;
  revokedAt?: string;
  /** Absent: the token never expires (tokens made before expiry existed). */
  expiresAt?: string;
  /** Absent: every scope of the user's role (tokens made before scopes existed). */
  scopes?: TokenScope[];
}

export interface NewTokenOptions {
  label?: string;
  /** ISO time; omitted: never expires (the CLI and the API default to 90 days). */
  expiresAt?: string;
  /** Omitted: every scope of the user's role. */
  scopes?: TokenScope[];
}

/** A token that is known and not revoked, with its user; the caller checks `token.expiresAt`. */
export interface Authenticated {
  user: User;
  token: TokenInfo;
}

export type ApprovalKind = 'command' | 'push' | 'policy_override';
export type ApprovalState = 'pending' | 'approved' | 'denied';

export interface Approval {
  id: string;
  taskId: string;
  kind: ApprovalKind;
  state: ApprovalState;
  reason: string;
  command?: string;
  toolUseId?: string;
  decidedBy?: string;
  comment?: string;
  createdAt: string;
  resolvedAt?: string;
}

export interface ApprovalRequestInput {
  kind: ApprovalKind;
  reason: string;
  command?: string;
  toolUseId?: string;
  diffDigest?: string;
}

export interface TaskListQuery {
  /** Only this owner's tasks; absent = every task (admins). */
  owner?: string;
  state?: TaskState;
  repo?: string;
  cursor?: string;
  limit?: number;
}

export interface TaskPage {
  tasks: Task[];
  nextCursor?: string;
}

/**
 * Pending approvals of tasks that wait for a decision (`awaiting_approval`, `awaiting_review`),
 * newest first: the `owner`'s own command and push approvals, plus — with `overrides` — every
 * pending `policy_override`, which the caller filters by repo ownership (owners live in each
 * repo's policy file, not in the store).
 */
export interface PendingApprovalQuery {
  owner: string;
  overrides: boolean;
  /** Only approvals older than this position (a previous page's last `position`). */
  before?: number;
  limit: number;
}

export interface PendingApproval {
  approval: Approval;
  task: Task;
  /** Stable order key (newest highest), for cursors. */
  position: number;
}

export interface Lease {
  taskId: string;
  workerId: string;
  expiresAt: number;
}

/**
 * Registered repositories (migration 3): a task names one; its mirror is made from the
 * registration only. `SqliteStore` implements it; a store for a fleet of servers will too.
 */
export interface RepoStore {
  /** Inserts or replaces the registration of `registration.name`. */
  putRepo(registration: RepoRegistration): Promise<RepoRegistration>;
  getRepo(name: string): Promise<RepoRegistration | undefined>;
  listRepos(): Promise<RepoRegistration[]>;
  /** False when no such registration existed. */
  deleteRepo(name: string): Promise<boolean>;
}

export interface Store {
  // users and tokens (tokens are stored as sha256 hashes; the plain token is shown once)
  createUser(name: string, role: Role): Promise<User>;
  getUser(name: string): Promise<User | undefined>;
  listUsers(): Promise<User[]>;
  /** `options` as a string is the label. */
  createToken(user: string, options?: string | NewTokenOptions): Promise<{ token: string; info: TokenInfo }>;
  revokeToken(id: string): Promise<boolean>;
  getToken(id: string): Promise<TokenInfo | undefined>;
  listTokens(user?: string): Promise<TokenInfo[]>;
  /** The user and token of a known, unrevoked token (expired ones too: the caller says it expired). */
  authenticate(token: string): Promise<Authenticated | undefined>;

  // tasks and their event log
  /** Stores the task as `queued` and appends `task.created` + `task.state` in one transaction. */
  createTask(owner: string, request: CreateTaskRequest, id?: string): Promise<{ task: Task; events: TaskEvent[] }>;
  getTask(id: string): Promise<Task | undefined>;
  listTasks(query: TaskListQuery): Promise<TaskPage>;
  /**
   * Appends one event (seq assigned in a transaction) and updates the task's projection from it
   * (state, usage, PR link, error) in the same transaction.
   */
  appendEvent(taskId: string, event: NewEvent): Promise<TaskEvent>;
  listEvents(taskId: string, after?: number, limit?: number): Promise<TaskEvent[]>;
  /**
   * The task's events as stored, with their chained hashes, and the task row's chain start and
   * head (`provenance/chain.ts`); without `withEvents`, the row's part alone. Undefined: no such task.
   */
  readChain(taskId: string, withEvents?: boolean): Promise<StoredChain | undefined>;
  /** Every task's events of the given types, in (task, seq) order (metrics). */
  eventsOfTypes(types: EventType[]): Promise<TaskEvent[]>;
  /** The final diff and PR summary of a task (set when it reaches review). */
  setResult(taskId: string, result: { diff: string; summary: string }): Promise<void>;
  getResult(taskId: string): Promise<{ diff: string; summary: string } | undefined>;

  // approvals (pending ones survive restarts)
  /**
   * Creates a pending approval and appends `approval.requested` in one transaction. `diffDigest`
   * (policy overrides) goes into the event only: the log is what binds an override to its diff.
   */
  requestApproval(taskId: string, req: ApprovalRequestInput): Promise<{ approval: Approval; event: TaskEvent }>;
  /** Resolves a pending approval and appends `approval.resolved`; `undefined` when not pending. */
  resolveApproval(taskId: string, id: string, decision: { decision: 'approved' | 'denied'; by: string; comment?: string }): Promise<{ approval: Approval; event: TaskEvent } | undefined>;
  getApproval(id: string): Promise<Approval | undefined>;
  listApprovals(taskId: string, state?: ApprovalState): Promise<Approval[]>;
  /** The approvals inbox's candidates (an indexed query; no event log is read). */
  listPendingApprovals(query: PendingApprovalQuery): Promise<PendingApproval[]>;

  // leases for the scheduler
  acquireLease(taskId: string, workerId: string, ttlMs: number, now?: number): Promise<boolean>;
  renewLease(taskId: string, workerId: string, ttlMs: number, now?: number): Promise<boolean>;
  releaseLease(taskId: string, workerId: string): Promise<void>;
  getLease(taskId: string): Promise<Lease | undefined>;
  /** Queued tasks and active tasks without a live lease, normal priority first, oldest first. */
  listRunnable(limit: number, now?: number): Promise<Task[]>;

  /** The local forge's pull-request records (its `PullRequestStore` port). */
  readonly pullRequests: PullRequestStore;
  /** The local forge's PR comments, reviews and checks (`pr-threads.ts`). */
  readonly prThreads: PullRequestThreadStore;
  /** Quarantined flaky tests per repo (the feedback engine's port). */
  readonly flaky: FlakyStore;

  ping(): Promise<void>;
  close(): Promise<void>;
}
