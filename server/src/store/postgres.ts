import { createHash, randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { z } from 'zod';
import type {
  CreateTaskRequest,
  EventType,
  NewEvent,
  RepoRegistration,
  Task,
  TaskEvent,
  TaskState,
} from '@dockhand/protocol';
import { DockhandError } from '../errors';
import type { Logger } from '../log';
import { migratePostgres } from './postgres-migrations';
import { PostgresApprovals } from './postgres-approvals';
import type { StoredChain } from './chain-rows';
import { PostgresEvents, eventChannel, heldEventChannel } from './postgres-events';
import { PostgresEventHub } from './postgres-hub';
import { PostgresModelBudget, type BudgetLimits } from './postgres-budget';
import { PostgresLeadership } from './postgres-leader';
import { PostgresQueue } from './postgres-queue';
import { PostgresBaselineStore, PostgresFlakyStore, PostgresPullRequestStore, PostgresRepoStore } from './postgres-records';
import { PostgresPullRequestThreadStore } from './postgres-pr-threads';
import type { Claim, ClaimingStore, FencedLease } from './queue';
import { TOKEN_JOIN_COLUMNS, toAuthenticated, toTask, toTokenInfo, toUser } from './rows';
import { hashToken, tokenColumns } from './sqlite';
import type {
  Approval,
  ApprovalRequestInput,
  ApprovalState,
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

export interface PostgresStoreOptions {
  /** `postgres://user@host:port/database` */
  url: string;
  /** A schema of its own (tests, several fleets in one database); default `public`. */
  schema?: string;
  /** Connections in this process's pool. */
  poolSize?: number;
  logger?: Logger;
}

const EMPTY_USAGE = { turns: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 };
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

function now(): string {
  return new Date().toISOString();
}

/**
 * The store of a fleet: one Postgres database shared by API replicas and workers. Every write that
 * SQLite makes in one transaction is one transaction here too. The event log — gap-free seqs under
 * the task's row lock, NOTIFY at commit, lease fences — is `PostgresEvents` (`postgres-events.ts`);
 * `PostgresEventHub` turns its notices into live events on every process.
 */
export class PostgresStore implements Store, RepoStore, ClaimingStore {
  readonly flaky: PostgresFlakyStore;
  readonly baselines: PostgresBaselineStore;
  private readonly repos: PostgresRepoStore;
  readonly pullRequests: PostgresPullRequestStore;
  readonly prThreads: PostgresPullRequestThreadStore;
  readonly queue: PostgresQueue;
  private readonly approvals: PostgresApprovals;
  private readonly events: PostgresEvents;
  readonly channel: string;
  readonly heldChannel: string;
  private hub: PostgresEventHub | undefined;
  private readonly leaderships: PostgresLeadership[] = [];

  private constructor(readonly pool: pg.Pool, readonly options: PostgresStoreOptions & { schema: string }) {
    this.channel = eventChannel(options.schema);
    this.heldChannel = heldEventChannel(options.schema);
    this.events = new PostgresEvents(pool, (work) => this.transaction(work), this.channel, this.heldChannel);
    this.flaky = new PostgresFlakyStore(pool, (work) => this.transaction(work));
    this.baselines = new PostgresBaselineStore(pool);
    this.repos = new PostgresRepoStore(pool);
    this.pullRequests = new PostgresPullRequestStore(pool, (work) => this.transaction(work));
    this.prThreads = new PostgresPullRequestThreadStore(pool, (work) => this.transaction(work));
    this.queue = new PostgresQueue(pool);
    this.approvals = new PostgresApprovals(pool, (work) => this.transaction(work), (client, taskId, event) => this.appendIn(client, taskId, event));
  }

  /** Connects, creates the schema when missing and applies pending migrations. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const schema = options.schema ?? 'public';
    if (!SCHEMA_NAME.test(schema)) {
      throw new DockhandError('bad_request', `Postgres schema "${schema}" must be lower-case letters, digits and _ (at most 63)`, { field: 'schema' });
    }
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize ?? 10,
      // A worker cut off in the middle of a transaction holds the task's row lock; the server ends
      // such a transaction after 10 s (ours last milliseconds), so the lease's next holder is not
      // blocked until TCP gives up on the dead connection.
      options: `-c search_path=${schema} -c idle_in_transaction_session_timeout=10000`,
      connectionTimeoutMillis: 10_000,
      keepAlive: true,
    });
    // An idle connection that dies (server restart) must not crash the process: the pool drops it
    // and the next query opens a new one.
    pool.on('error', (error) => options.logger?.warn({ err: error }, 'postgres connection lost'));
    try {
      const client = await pool.connect();
      try {
        await migratePostgres(client, schema);
      } finally {
        client.release();
      }
    } catch (error) {
      await pool.end().catch(() => undefined);
      const where = options.url.replace(/\/\/[^@/]*@/, '//');
      throw new DockhandError('internal', `cannot open the Postgres store at ${where}: ${error instanceof Error ? error.message : String(error)}`, {
        field: 'DOCKHAND_DATABASE_URL',
        hint: 'check that the server is up and the URL names a database this user may create tables in',
        cause: error,
      });
    }
    return new PostgresStore(pool, { ...options, schema });
  }

  async transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    // A checked-out client's socket error (a link that comes back reset, a server restart) is
    // emitted on the client: without a listener it would crash the process. Its queries fail with
    // it anyway; the client is then destroyed on release, not returned to the pool.
    const onError = (error: Error) => {
      broken = error;
    };
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((rollbackError: unknown) => {
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      });
      throw error;
    } finally {
      client.removeListener('error', onError);
      client.release(broken);
    }
  }

  // ---- users and tokens ----

  async createUser(name: string, role: Role): Promise<User> {
    if (!/^[A-Za-z0-9_.@-]{1,100}$/.test(name)) {
      throw new DockhandError('bad_request', `user name "${name}" must be 1-100 of A-Z a-z 0-9 _ . @ -`, { field: 'name' });
    }
    await this.pool.query('INSERT INTO users (name, role, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO UPDATE SET role = excluded.role', [name, role, now()]);
    const user = await this.getUser(name);
    if (!user) throw new DockhandError('internal', `user ${name} vanished`);
    return user;
  }

  async getUser(name: string): Promise<User | undefined> {
    const { rows } = await this.pool.query('SELECT * FROM users WHERE name = $1', [name]);
    return rows[0] === undefined ? undefined : toUser(rows[0]);
  }

  async listUsers(): Promise<User[]> {
    return (await this.pool.query('SELECT * FROM users ORDER BY name COLLATE "C"')).rows.map(toUser);
  }

  async createToken(user: string, options: string | NewTokenOptions = {}): Promise<{ token: string; info: TokenInfo }> {
    const { label, expiresAt, scopes } = tokenColumns(options);
    if (!(await this.getUser(user))) throw new DockhandError('not_found', `user ${user} not found`, { hint: 'create the user first' });
    const token = `dh_${randomBytes(24).toString('base64url')}`;
    const id = `tok_${randomBytes(6).toString('hex')}`;
    const { rows } = await this.pool.query(
      'INSERT INTO tokens (id, user_name, hash, label, created_at, expires_at, scopes) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *',
      [id, user, hashToken(token), label, now(), expiresAt, scopes],
    );
    return { token, info: toTokenInfo(rows[0]) };
  }

  async revokeToken(id: string): Promise<boolean> {
    const result = await this.pool.query('UPDATE tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [now(), id]);
    return result.rowCount === 1;
  }

  async getToken(id: string): Promise<TokenInfo | undefined> {
    const { rows } = await this.pool.query('SELECT * FROM tokens WHERE id = $1', [id]);
    return rows[0] === undefined ? undefined : toTokenInfo(rows[0]);
  }

  async listTokens(user?: string): Promise<TokenInfo[]> {
    const { rows } = user === undefined
      ? await this.pool.query('SELECT * FROM tokens ORDER BY created_at COLLATE "C", id COLLATE "C"')
      : await this.pool.query('SELECT * FROM tokens WHERE user_name = $1 ORDER BY created_at COLLATE "C", id COLLATE "C"', [user]);
    return rows.map(toTokenInfo);
  }

  async authenticate(token: string): Promise<Authenticated | undefined> {
    const { rows } = await this.pool.query(
      `SELECT ${TOKEN_JOIN_COLUMNS} FROM tokens JOIN users ON users.name = tokens.user_name
       WHERE tokens.hash = $1 AND tokens.revoked_at IS NULL`,
      [hashToken(token)],
    );
    return rows[0] === undefined ? undefined : toAuthenticated(rows[0]);
  }

  // ---- registered repositories (postgres-records.ts) ----

  putRepo(registration: RepoRegistration): Promise<RepoRegistration> {
    return this.repos.put(registration);
  }

  getRepo(name: string): Promise<RepoRegistration | undefined> {
    return this.repos.get(name);
  }

  listRepos(): Promise<RepoRegistration[]> {
    return this.repos.list();
  }

  deleteRepo(name: string): Promise<boolean> {
    return this.repos.delete(name);
  }

  // ---- tasks and events ----

  async createTask(owner: string, request: CreateTaskRequest, id = `t_${randomUUID()}`): Promise<{ task: Task; events: TaskEvent[] }> {
    const events = await this.transaction(async (client) => {
      const ts = now();
      await client.query(
        `INSERT INTO tasks (id, owner, state, repo, priority, request, usage, last_seq, created_at, updated_at)
         VALUES ($1, $2, 'queued', $3, $4, $5, $6, 0, $7, $7)`,
        [id, owner, request.context.repo, request.priority, JSON.stringify(request), JSON.stringify(EMPTY_USAGE), ts],
      );
      return [
        await this.appendIn(client, id, { type: 'task.created', data: { ...request, owner } }),
        await this.appendIn(client, id, { type: 'task.state', data: { state: 'queued' } }),
      ];
    });
    const task = await this.getTask(id);
    if (!task) throw new DockhandError('internal', `task ${id} vanished`);
    return { task, events };
  }

  async getTask(id: string): Promise<Task | undefined> {
    const { rows } = await this.pool.query('SELECT * FROM tasks WHERE id = $1', [id]);
    return rows[0] === undefined ? undefined : toTask(rows[0]);
  }

  async listTasks(query: TaskListQuery): Promise<TaskPage> {
    const where: string[] = [];
    const params: Array<string | number> = [];
    const add = (clause: string, value: string | number) => {
      params.push(value);
      where.push(clause.replace('?', `$${params.length}`));
    };
    if (query.owner !== undefined) add('owner = ?', query.owner);
    if (query.state !== undefined) add('state = ?', query.state);
    if (query.repo !== undefined) add('repo = ?', query.repo);
    if (query.cursor !== undefined) {
      const num = Number(Buffer.from(query.cursor, 'base64url').toString('utf8'));
      if (!Number.isInteger(num)) throw new DockhandError('bad_request', 'cursor is not one this server gave out', { field: 'cursor' });
      add('num < ?', num);
    }
    const limit = Math.min(Math.max(query.limit ?? 50, 1), 200);
    params.push(limit + 1);
    const { rows } = await this.pool.query(
      `SELECT * FROM tasks ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY num DESC LIMIT $${params.length}`,
      params,
    );
    const page: TaskPage = { tasks: rows.slice(0, limit).map(toTask) };
    const last: unknown = rows[limit - 1];
    if (rows.length > limit && last !== undefined) {
      page.nextCursor = Buffer.from(String(z.object({ num: z.number().int() }).parse(last).num)).toString('base64url');
    }
    return page;
  }

  appendEvent(taskId: string, event: NewEvent): Promise<TaskEvent> {
    return this.events.appendEvent(taskId, event);
  }

  /** Inside the caller's transaction (`postgres-events.ts`). */
  appendIn(client: pg.PoolClient, taskId: string, event: NewEvent): Promise<TaskEvent> {
    return this.events.appendIn(client, taskId, event);
  }

  /** Refuses a write made under a lease fence whose lease has since expired or changed hands (`postgres-events.ts`). */
  assertFence(client: pg.PoolClient, taskId: string): Promise<void> {
    return this.events.assertFence(client, taskId);
  }

  listEvents(taskId: string, after?: number, limit?: number): Promise<TaskEvent[]> {
    return this.events.listEvents(taskId, after, limit);
  }

  readChain(taskId: string, withEvents = true): Promise<StoredChain | undefined> {
    return this.events.readChain(taskId, withEvents);
  }

  eventsOfTypes(types: EventType[]): Promise<TaskEvent[]> {
    return this.events.eventsOfTypes(types);
  }

  async setResult(taskId: string, result: { diff: string; summary: string }): Promise<void> {
    await this.transaction(async (client) => {
      const { rows } = await client.query('SELECT id FROM tasks WHERE id = $1 FOR UPDATE', [taskId]);
      if (rows[0] !== undefined) await this.assertFence(client, taskId);
      await client.query('UPDATE tasks SET diff = $1, summary = $2 WHERE id = $3', [result.diff, result.summary, taskId]);
    });
  }

  async getResult(taskId: string): Promise<{ diff: string; summary: string } | undefined> {
    const { rows } = await this.pool.query('SELECT diff, summary FROM tasks WHERE id = $1', [taskId]);
    const parsed = z.object({ diff: z.string().nullable(), summary: z.string().nullable() }).optional().parse(rows[0]);
    if (!parsed || parsed.diff === null) return undefined;
    return { diff: parsed.diff, summary: parsed.summary ?? '' };
  }

  // ---- approvals (postgres-approvals.ts) ----

  requestApproval(taskId: string, req: ApprovalRequestInput): Promise<{ approval: Approval; event: TaskEvent }> {
    return this.approvals.request(taskId, req);
  }

  resolveApproval(
    taskId: string,
    id: string,
    decision: { decision: 'approved' | 'denied'; by: string; comment?: string },
  ): Promise<{ approval: Approval; event: TaskEvent } | undefined> {
    return this.approvals.resolve(taskId, id, decision);
  }

  getApproval(id: string): Promise<Approval | undefined> {
    return this.approvals.get(id);
  }

  listApprovals(taskId: string, state?: ApprovalState): Promise<Approval[]> {
    return this.approvals.list(taskId, state);
  }

  listPendingApprovals(query: PendingApprovalQuery): Promise<PendingApproval[]> {
    return this.approvals.pending(query);
  }

  // ---- leases and the queue (postgres-queue.ts) ----

  acquireLease(taskId: string, workerId: string, ttlMs: number, at?: number): Promise<boolean> {
    return this.queue.acquire(taskId, workerId, ttlMs, at);
  }

  renewLeaseWithState(taskId: string, workerId: string, ttlMs: number): Promise<{ renewed: boolean; state?: TaskState }> {
    return this.queue.renewWithState(taskId, workerId, ttlMs);
  }

  renewLease(taskId: string, workerId: string, ttlMs: number, at?: number): Promise<boolean> {
    return this.queue.renew(taskId, workerId, ttlMs, at);
  }

  releaseLease(taskId: string, workerId: string): Promise<void> {
    return this.queue.release(taskId, workerId);
  }

  /** Under a fence, right before the push: the lease is still live and this epoch's, extended by `ttlMs`; else conflict. */
  confirmLease(taskId: string, ttlMs: number): Promise<void> {
    return this.queue.confirm(taskId, ttlMs);
  }

  getLease(taskId: string): Promise<FencedLease | undefined> {
    return this.queue.get(taskId);
  }

  listRunnable(limit: number, at?: number): Promise<Task[]> {
    return this.queue.listRunnable(limit, at);
  }

  /**
   * One transaction: the claim statement, then each claimed task that was still `queued` becomes
   * `provisioning` (its event appended under the row lock the claim holds, NOTIFY at commit) —
   * so "a worker has it" is in the log the moment it is claimed, not after the run's first reads
   * queue up behind the worker's other tasks for a connection. The returned task has that state.
   */
  async claimRunnable(workerId: string, limit: number, ttlMs: number, options: { exclude?: string[]; now?: number } = {}): Promise<Claim[]> {
    if (limit <= 0) return [];
    const { claims, appended } = await this.transaction(async (client) => {
      const claimed = await this.queue.claim(workerId, limit, ttlMs, { ...options, client });
      const events: TaskEvent[] = [];
      for (const claim of claimed) {
        if (claim.task.state !== 'queued') continue;
        events.push(await this.appendIn(client, claim.task.id, { type: 'task.state', data: { state: 'provisioning' } }));
      }
      return { claims: claimed, appended: events };
    });
    const provisioned = new Map(appended.map((event) => [event.taskId, event]));
    return claims.map((claim) => {
      const event = provisioned.get(claim.task.id);
      return event ? { ...claim, task: { ...claim.task, state: 'provisioning', lastSeq: event.seq, updatedAt: event.ts } } : claim;
    });
  }

  /**
   * This process's hub of live events from every process (LISTEN/NOTIFY), started on first use.
   * `heldEvents: false` (a worker): it does not hear what other lease holders write (see
   * `heldEventChannel`).
   */
  async liveEvents(options: { heldEvents?: boolean } = {}): Promise<PostgresEventHub> {
    this.hub ??= new PostgresEventHub(this, { ...(this.options.logger ? { logger: this.options.logger } : {}), heldEvents: options.heldEvents ?? true });
    await this.hub.start();
    return this.hub;
  }

  async ping(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  /**
   * Leadership of a fleet-wide job (`postgres-leader.ts`), given up when the store closes. Advisory
   * locks are database-wide: the key is derived from the schema and the job's name.
   */
  leadership(job: string): PostgresLeadership {
    const key = BigInt(`0x${createHash('sha256').update(`${this.options.schema}:${job}`).digest('hex').slice(0, 15)}`).toString();
    const leadership = new PostgresLeadership(this.pool, key, this.options.logger);
    this.leaderships.push(leadership);
    return leadership;
  }

  /** The fleet's model rate budget (`postgres-budget.ts`), shared by every process on this schema. */
  modelBudget(limits: BudgetLimits): PostgresModelBudget {
    const key = BigInt(`0x${createHash('sha256').update(`${this.options.schema}:model-budget`).digest('hex').slice(0, 15)}`).toString();
    return new PostgresModelBudget(this.pool, key, limits);
  }

  async close(): Promise<void> {
    await Promise.all(this.leaderships.map((leadership) => leadership.close()));
    await this.hub?.close();
    if (!this.pool.ended) await this.pool.end();
  }
}
