import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { z } from 'zod';
import {
  ACTIVE_STATES,
  TaskEvent,
  TaskUsage,
  type CreateTaskRequest,
  type EventPayload,
  type EventType,
  type NewEvent,
  type RepoRegistration,
  type Task,
} from '@dockhand/protocol';
import { DockhandError, fromZodError } from '../errors';
import { eventHash, wellFormed } from '../provenance/chain-hash';
import { ChainHeadRow, storedChain, type StoredChain } from './chain-rows';
import { project } from './projection';
import { migrate } from './migrations';
import {
  EventRow,
  ProjectionRow,
  toApproval,
  toRepo,
  toTask,
  toTokenInfo,
  toUser,
  TOKEN_JOIN_COLUMNS,
  toAuthenticated,
} from './rows';
import { TOKEN_SCOPES } from './types';
import type {
  Approval,
  ApprovalRequestInput,
  ApprovalState,
  Lease,
  PendingApproval,
  PendingApprovalQuery,
  RepoStore,
  Role,
  Store,
  TaskListQuery,
  TaskPage,
  TokenInfo,
  User,
  Authenticated,
  NewTokenOptions,
} from './types';
import { SqliteBaselineStore } from './baselines';
import { SqliteFlakyStore } from './flaky';
import { SqlitePullRequestStore } from './pull-requests';
import { SqlitePullRequestThreadStore } from './pr-threads';

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** A new token's label, expiry and scopes as columns (shared with the Postgres store). */
export function tokenColumns(options: string | NewTokenOptions): { label: string; expiresAt: string | null; scopes: string | null } {
  const { label = '', expiresAt, scopes } = typeof options === 'string' ? { label: options } : options;
  if (expiresAt !== undefined && Number.isNaN(Date.parse(expiresAt))) {
    throw new DockhandError('bad_request', `expiresAt: "${expiresAt}" is not an ISO time`, { field: 'expiresAt' });
  }
  if (scopes !== undefined && scopes.length === 0) throw new DockhandError('bad_request', 'scopes: give at least one scope', { field: 'scopes' });
  return {
    label,
    expiresAt: expiresAt === undefined ? null : new Date(expiresAt).toISOString(),
    scopes: scopes === undefined ? null : JSON.stringify(TOKEN_SCOPES.filter((scope) => scopes.includes(scope))),
  };
}

function now(): string {
  return new Date().toISOString();
}

const EMPTY_USAGE: TaskUsage = { turns: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 };
const LeaseRow = z.object({ task_id: z.string(), worker_id: z.string(), expires_at: z.number() });
const RUNNABLE_STATES = ['queued', ...ACTIVE_STATES];
const APPROVAL_COLUMNS = ['id', 'task_id', 'kind', 'state', 'reason', 'command', 'tool_use_id', 'decided_by', 'comment', 'created_at', 'resolved_at'];

/**
 * The embedded store: one SQLite file in WAL mode. better-sqlite3 is synchronous, so every write
 * (including seq assignment) is a real transaction and no two appends can interleave.
 */
export class SqliteStore implements Store, RepoStore {
  readonly db: Database.Database;
  readonly flaky: SqliteFlakyStore;
  readonly baselines: SqliteBaselineStore;
  readonly pullRequests: SqlitePullRequestStore;
  readonly prThreads: SqlitePullRequestThreadStore;
  private readonly statements;

  constructor(path: string) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.pragma('foreign_keys = ON');
    migrate(this.db);
    this.flaky = new SqliteFlakyStore(this.db);
    this.baselines = new SqliteBaselineStore(this.db);
    this.pullRequests = new SqlitePullRequestStore(this.db);
    this.prThreads = new SqlitePullRequestThreadStore(this.db);
    this.statements = {
      projection: this.db.prepare('SELECT last_seq, usage, state, chain_head FROM tasks WHERE id = ?'),
      insertEvent: this.db.prepare('INSERT INTO events (task_id, seq, type, data, ts, hash) VALUES (?, ?, ?, ?, ?, ?)'),
      updateProjection: this.db.prepare(
        `UPDATE tasks SET last_seq = @seq, updated_at = @ts, state = @state, usage = @usage,
           pr_url = COALESCE(@prUrl, pr_url), error = COALESCE(@error, error),
           chain_head = @hash, chain_from = COALESCE(chain_from, @seq) WHERE id = @id`,
      ),
      chainTask: this.db.prepare('SELECT last_seq, chain_from, chain_head FROM tasks WHERE id = ?'),
      chainEvents: this.db.prepare('SELECT seq, type, data, ts, hash FROM events WHERE task_id = ? ORDER BY seq'),
      events: this.db.prepare('SELECT task_id, seq, type, data, ts FROM events WHERE task_id = ? AND seq > ? ORDER BY seq LIMIT ?'),
      task: this.db.prepare('SELECT * FROM tasks WHERE id = ?'),
    };
  }

  // ---- users and tokens ----

  async createUser(name: string, role: Role): Promise<User> {
    if (!/^[A-Za-z0-9_.@-]{1,100}$/.test(name)) {
      throw new DockhandError('bad_request', `user name "${name}" must be 1-100 of A-Z a-z 0-9 _ . @ -`, { field: 'name' });
    }
    const createdAt = now();
    this.db
      .prepare('INSERT INTO users (name, role, created_at) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET role = excluded.role')
      .run(name, role, createdAt);
    const user = await this.getUser(name);
    if (!user) throw new DockhandError('internal', `user ${name} vanished`);
    return user;
  }

  async getUser(name: string): Promise<User | undefined> {
    const row = this.db.prepare('SELECT * FROM users WHERE name = ?').get(name);
    return row === undefined ? undefined : toUser(row);
  }

  async listUsers(): Promise<User[]> {
    return this.db.prepare('SELECT * FROM users ORDER BY name').all().map(toUser);
  }

  async createToken(user: string, options: string | NewTokenOptions = {}): Promise<{ token: string; info: TokenInfo }> {
    const { label, expiresAt, scopes } = tokenColumns(options);
    if (!(await this.getUser(user))) throw new DockhandError('not_found', `user ${user} not found`, { hint: 'create the user first' });
    const token = `dh_${randomBytes(24).toString('base64url')}`;
    const id = `tok_${randomBytes(6).toString('hex')}`;
    this.db
      .prepare('INSERT INTO tokens (id, user_name, hash, label, created_at, expires_at, scopes) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(id, user, hashToken(token), label, now(), expiresAt, scopes);
    const info = toTokenInfo(this.db.prepare('SELECT * FROM tokens WHERE id = ?').get(id));
    return { token, info };
  }

  async revokeToken(id: string): Promise<boolean> {
    const result = this.db.prepare('UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(now(), id);
    return result.changes === 1;
  }

  async getToken(id: string): Promise<TokenInfo | undefined> {
    const row = this.db.prepare('SELECT * FROM tokens WHERE id = ?').get(id);
    return row === undefined ? undefined : toTokenInfo(row);
  }

  async listTokens(user?: string): Promise<TokenInfo[]> {
    const rows = user === undefined
      ? this.db.prepare('SELECT * FROM tokens ORDER BY created_at, id').all()
      : this.db.prepare('SELECT * FROM tokens WHERE user_name = ? ORDER BY created_at, id').all(user);
    return rows.map(toTokenInfo);
  }

  async authenticate(token: string): Promise<Authenticated | undefined> {
    const row = this.db
      .prepare(
        `SELECT ${TOKEN_JOIN_COLUMNS} FROM tokens JOIN users ON users.name = tokens.user_name
         WHERE tokens.hash = ? AND tokens.revoked_at IS NULL`,
      )
      .get(hashToken(token));
    return row === undefined ? undefined : toAuthenticated(row);
  }

  // ---- registered repositories ----

  async putRepo(registration: RepoRegistration): Promise<RepoRegistration> {
    this.db
      .prepare(
        `INSERT INTO repos (name, source, mirror_source, default_branch, owners, submitters, created_at, created_by)
         VALUES (@name, @source, @mirrorSource, @defaultBranch, @owners, @submitters, @createdAt, @createdBy)
         ON CONFLICT(name) DO UPDATE SET source = excluded.source, mirror_source = excluded.mirror_source,
           default_branch = excluded.default_branch, owners = excluded.owners, submitters = excluded.submitters`,
      )
      .run({
        name: registration.name,
        source: registration.source,
        mirrorSource: registration.mirrorSource ?? null,
        defaultBranch: registration.defaultBranch,
        owners: JSON.stringify(registration.owners),
        submitters: JSON.stringify(registration.submitters),
        createdAt: registration.createdAt,
        createdBy: registration.createdBy,
      });
    const stored = await this.getRepo(registration.name);
    if (!stored) throw new DockhandError('internal', `repository ${registration.name} vanished`);
    return stored;
  }

  async getRepo(name: string): Promise<RepoRegistration | undefined> {
    const row = this.db.prepare('SELECT * FROM repos WHERE name = ?').get(name);
    return row === undefined ? undefined : toRepo(row);
  }

  async listRepos(): Promise<RepoRegistration[]> {
    return this.db.prepare('SELECT * FROM repos ORDER BY name').all().map(toRepo);
  }

  async deleteRepo(name: string): Promise<boolean> {
    return this.db.prepare('DELETE FROM repos WHERE name = ?').run(name).changes === 1;
  }

  // ---- tasks and events ----

  async createTask(owner: string, request: CreateTaskRequest, id = `t_${randomUUID()}`): Promise<{ task: Task; events: TaskEvent[] }> {
    const events = this.db.transaction(() => {
      const ts = now();
      this.db
        .prepare(
          `INSERT INTO tasks (id, owner, state, repo, priority, request, usage, last_seq, created_at, updated_at)
           VALUES (?, ?, 'queued', ?, ?, ?, ?, 0, ?, ?)`,
        )
        .run(id, owner, request.context.repo, request.priority, JSON.stringify(request), JSON.stringify(EMPTY_USAGE), ts, ts);
      return [
        this.appendSync(id, { type: 'task.created', data: { ...request, owner } }),
        this.appendSync(id, { type: 'task.state', data: { state: 'queued' } }),
      ];
    })();
    const task = await this.getTask(id);
    if (!task) throw new DockhandError('internal', `task ${id} vanished`);
    return { task, events };
  }

  async getTask(id: string): Promise<Task | undefined> {
    const row = this.statements.task.get(id);
    return row === undefined ? undefined : toTask(row);
  }

  async listTasks(query: TaskListQuery): Promise<TaskPage> {
    const where: string[] = [];
    const params: Array<string | number> = [];
    if (query.owner !== undefined) { where.push('owner = ?'); params.push(query.owner); }
    if (query.state !== undefined) { where.push('state = ?'); params.push(query.state); }
    if (query.repo !== undefined) { where.push('repo = ?'); params.push(query.repo); }
    if (query.cursor !== undefined) {
      const num = Number(Buffer.from(query.cursor, 'base64url').toString('utf8'));
      if (!Number.isInteger(num)) throw new DockhandError('bad_request', 'cursor is not one this server gave out', { field: 'cursor' });
      where.push('num < ?');
      params.push(num);
    }
    const limit = Math.min(Math.max(query.limit ?? 50, 1), 200);
    const sql = `SELECT * FROM tasks ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY num DESC LIMIT ?`;
    const rows = this.db.prepare(sql).all(...params, limit + 1);
    const NumRow = z.object({ num: z.number().int() });
    const page: TaskPage = { tasks: rows.slice(0, limit).map(toTask) };
    const last = rows[limit - 1];
    if (rows.length > limit && last !== undefined) {
      page.nextCursor = Buffer.from(String(NumRow.parse(last).num)).toString('base64url');
    }
    return page;
  }

  async appendEvent(taskId: string, event: NewEvent): Promise<TaskEvent> {
    return this.db.transaction(() => this.appendSync(taskId, event))();
  }

  /**
   * Call inside a transaction. Validates the event, assigns the next seq, chains its hash to the
   * task's head (`provenance/chain-hash.ts`), updates the projection. better-sqlite3 is
   * synchronous, so no other append reads the same head.
   */
  appendSync(taskId: string, event: NewEvent): TaskEvent {
    const projectionRow = this.statements.projection.get(taskId);
    if (projectionRow === undefined) throw new DockhandError('not_found', `task ${taskId} not found`);
    const projection = ProjectionRow.parse(projectionRow);
    const ts = now();
    const parsed = TaskEvent.safeParse({ taskId, seq: projection.last_seq + 1, ts, type: event.type, data: event.data });
    if (!parsed.success) throw fromZodError(parsed.error, `event ${event.type}`);
    const stored = wellFormed(parsed.data);
    const hash = eventHash(ChainHeadRow.parse(projectionRow).chain_head ?? '', stored);
    this.statements.insertEvent.run(taskId, stored.seq, stored.type, JSON.stringify(stored.data), ts, hash);
    const { state, usage, prUrl, error } = project({ state: projection.state, usage: projection.usage }, stored);
    this.statements.updateProjection.run({ id: taskId, seq: stored.seq, ts, state, usage, prUrl, error, hash });
    return stored;
  }

  async readChain(taskId: string, withEvents = true): Promise<StoredChain | undefined> {
    // One read transaction: the task row's head and the events are of the same moment.
    return this.db.transaction(() => {
      const row = this.statements.chainTask.get(taskId);
      if (row === undefined) return undefined;
      return storedChain(taskId, row, withEvents ? this.statements.chainEvents.all(taskId) : []);
    })();
  }

  async listEvents(taskId: string, after = 0, limit = 1_000_000): Promise<TaskEvent[]> {
    return this.statements.events.all(taskId, after, limit).map((row) => {
      const r = EventRow.parse(row);
      return TaskEvent.parse({ taskId: r.task_id, seq: r.seq, ts: r.ts, type: r.type, data: JSON.parse(r.data) });
    });
  }

  async eventsOfTypes(types: EventType[]): Promise<TaskEvent[]> {
    if (types.length === 0) return [];
    const rows = this.db
      .prepare(`SELECT task_id, seq, type, data, ts FROM events WHERE type IN (${types.map(() => '?').join(', ')}) ORDER BY task_id, seq`)
      .all(...types);
    return rows.map((row) => {
      const r = EventRow.parse(row);
      return TaskEvent.parse({ taskId: r.task_id, seq: r.seq, ts: r.ts, type: r.type, data: JSON.parse(r.data) });
    });
  }

  async setResult(taskId: string, result: { diff: string; summary: string }): Promise<void> {
    this.db.prepare('UPDATE tasks SET diff = ?, summary = ? WHERE id = ?').run(result.diff, result.summary, taskId);
  }

  async getResult(taskId: string): Promise<{ diff: string; summary: string } | undefined> {
    const row = this.db.prepare('SELECT diff, summary FROM tasks WHERE id = ?').get(taskId);
    const parsed = z.object({ diff: z.string().nullable(), summary: z.string().nullable() }).optional().parse(row);
    if (!parsed || parsed.diff === null) return undefined;
    return { diff: parsed.diff, summary: parsed.summary ?? '' };
  }

  // ---- approvals ----

  async requestApproval(
    taskId: string,
    req: ApprovalRequestInput,
  ): Promise<{ approval: Approval; event: TaskEvent }> {
    const id = `apr_${randomBytes(8).toString('hex')}`;
    const event = this.db.transaction(() => {
      this.db
        .prepare(
          `INSERT INTO approvals (id, task_id, kind, state, reason, command, tool_use_id, created_at)
           VALUES (?, ?, ?, 'pending', ?, ?, ?, ?)`,
        )
        .run(id, taskId, req.kind, req.reason, req.command ?? null, req.toolUseId ?? null, now());
      const data: EventPayload<'approval.requested'> = { approvalId: id, kind: req.kind, reason: req.reason };
      if (req.command !== undefined) data.command = req.command;
      if (req.toolUseId !== undefined) data.toolUseId = req.toolUseId;
      if (req.diffDigest !== undefined) data.diffDigest = req.diffDigest;
      return this.appendSync(taskId, { type: 'approval.requested', data });
    })();
    const approval = await this.getApproval(id);
    if (!approval) throw new DockhandError('internal', `approval ${id} vanished`);
    return { approval, event };
  }

  async resolveApproval(
    taskId: string,
    id: string,
    decision: { decision: 'approved' | 'denied'; by: string; comment?: string },
  ): Promise<{ approval: Approval; event: TaskEvent } | undefined> {
    const event = this.db.transaction(() => {
      const result = this.db
        .prepare(
          `UPDATE approvals SET state = ?, decided_by = ?, comment = ?, resolved_at = ?
           WHERE id = ? AND task_id = ? AND state = 'pending'`,
        )
        .run(decision.decision, decision.by, decision.comment ?? null, now(), id, taskId);
      if (result.changes !== 1) return undefined;
      const data: { approvalId: string; decision: 'approved' | 'denied'; by: string; comment?: string } = {
        approvalId: id,
        decision: decision.decision,
        by: decision.by,
      };
      if (decision.comment !== undefined) data.comment = decision.comment;
      return this.appendSync(taskId, { type: 'approval.resolved', data });
    })();
    if (!event) return undefined;
    const approval = await this.getApproval(id);
    if (!approval) throw new DockhandError('internal', `approval ${id} vanished`);
    return { approval, event };
  }

  async getApproval(id: string): Promise<Approval | undefined> {
    const row = this.db.prepare('SELECT * FROM approvals WHERE id = ?').get(id);
    return row === undefined ? undefined : toApproval(row);
  }

  async listApprovals(taskId: string, state?: ApprovalState): Promise<Approval[]> {
    const rows = state === undefined
      ? this.db.prepare('SELECT * FROM approvals WHERE task_id = ? ORDER BY created_at, rowid').all(taskId)
      : this.db.prepare('SELECT * FROM approvals WHERE task_id = ? AND state = ? ORDER BY created_at, rowid').all(taskId, state);
    return rows.map(toApproval);
  }

  async listPendingApprovals(query: PendingApprovalQuery): Promise<PendingApproval[]> {
    const kinds = query.overrides
      ? `((tasks.owner = ? AND approvals.kind != 'policy_override') OR approvals.kind = 'policy_override')`
      : `(tasks.owner = ? AND approvals.kind != 'policy_override')`;
    const params: Array<string | number> = [query.owner];
    let before = '';
    if (query.before !== undefined) {
      before = 'AND approvals.rowid < ?';
      params.push(query.before);
    }
    const approvalColumns = APPROVAL_COLUMNS.map((column) => `approvals.${column} AS a_${column}`).join(', ');
    const rows = this.db
      .prepare(
        `SELECT approvals.rowid AS a_position, ${approvalColumns}, tasks.*
         FROM approvals JOIN tasks ON tasks.id = approvals.task_id
         WHERE approvals.state = 'pending' AND tasks.state IN ('awaiting_approval', 'awaiting_review') AND ${kinds} ${before}
         ORDER BY approvals.rowid DESC LIMIT ?`,
      )
      .all(...params, Math.max(1, query.limit));
    return rows.map((row) => {
      // Both tables have id, state and created_at: the approval's columns come prefixed.
      const fields = Object.entries(z.record(z.string(), z.unknown()).parse(row));
      const approvalRow = Object.fromEntries(fields.filter(([key]) => key.startsWith('a_')).map(([key, value]) => [key.slice(2), value]));
      return { approval: toApproval(approvalRow), task: toTask(row), position: z.number().int().parse(approvalRow.position) };
    });
  }

  // ---- leases ----

  async acquireLease(taskId: string, workerId: string, ttlMs: number, at = Date.now()): Promise<boolean> {
    const result = this.db
      .prepare(
        `INSERT INTO leases (task_id, worker_id, expires_at) VALUES (?, ?, ?)
         ON CONFLICT(task_id) DO UPDATE SET worker_id = excluded.worker_id, expires_at = excluded.expires_at
         WHERE leases.expires_at <= ? OR leases.worker_id = excluded.worker_id`,
      )
      .run(taskId, workerId, at + ttlMs, at);
    return result.changes === 1;
  }

  async renewLease(taskId: string, workerId: string, ttlMs: number, at = Date.now()): Promise<boolean> {
    const result = this.db
      .prepare('UPDATE leases SET expires_at = ? WHERE task_id = ? AND worker_id = ?')
      .run(at + ttlMs, taskId, workerId);
    return result.changes === 1;
  }

  async releaseLease(taskId: string, workerId: string): Promise<void> {
    this.db.prepare('DELETE FROM leases WHERE task_id = ? AND worker_id = ?').run(taskId, workerId);
  }

  async getLease(taskId: string): Promise<Lease | undefined> {
    const row = this.db.prepare('SELECT * FROM leases WHERE task_id = ?').get(taskId);
    if (row === undefined) return undefined;
    const r = LeaseRow.parse(row);
    return { taskId: r.task_id, workerId: r.worker_id, expiresAt: r.expires_at };
  }

  async listRunnable(limit: number, at = Date.now()): Promise<Task[]> {
    const placeholders = RUNNABLE_STATES.map(() => '?').join(', ');
    const rows = this.db
      .prepare(
        `SELECT tasks.* FROM tasks LEFT JOIN leases ON leases.task_id = tasks.id AND leases.expires_at > ?
         WHERE leases.task_id IS NULL AND tasks.state IN (${placeholders})
         ORDER BY CASE tasks.priority WHEN 'normal' THEN 0 ELSE 1 END, tasks.num LIMIT ?`,
      )
      .all(at, ...RUNNABLE_STATES, limit);
    return rows.map(toTask);
  }

  async ping(): Promise<void> {
    this.db.prepare('SELECT 1').get();
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
