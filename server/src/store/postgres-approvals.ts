import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { z } from 'zod';
import type { EventPayload, NewEvent, TaskEvent } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { toApproval, toTask } from './rows';
import type { Approval, ApprovalRequestInput, ApprovalState, PendingApproval, PendingApprovalQuery } from './types';

type Transaction = <T>(work: (client: pg.PoolClient) => Promise<T>) => Promise<T>;
type AppendIn = (client: pg.PoolClient, taskId: string, event: NewEvent) => Promise<TaskEvent>;

const APPROVAL_COLUMNS = ['id', 'task_id', 'kind', 'state', 'reason', 'command', 'tool_use_id', 'decided_by', 'comment', 'created_at', 'resolved_at'];

function now(): string {
  return new Date().toISOString();
}

/**
 * Approvals in Postgres (the `Store` port's approval methods, as in SQLite): a request or a
 * decision and its event are one transaction; `position` orders the inbox as SQLite's rowid does.
 */
export class PostgresApprovals {
  constructor(private readonly pool: pg.Pool, private readonly transaction: Transaction, private readonly appendIn: AppendIn) {}

  async request(taskId: string, req: ApprovalRequestInput): Promise<{ approval: Approval; event: TaskEvent }> {
    const id = `apr_${randomBytes(8).toString('hex')}`;
    const event = await this.transaction(async (client) => {
      await client.query(
        `INSERT INTO approvals (id, task_id, kind, state, reason, command, tool_use_id, created_at)
         VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7)`,
        [id, taskId, req.kind, req.reason, req.command ?? null, req.toolUseId ?? null, now()],
      );
      const data: EventPayload<'approval.requested'> = { approvalId: id, kind: req.kind, reason: req.reason };
      if (req.command !== undefined) data.command = req.command;
      if (req.toolUseId !== undefined) data.toolUseId = req.toolUseId;
      if (req.diffDigest !== undefined) data.diffDigest = req.diffDigest;
      return this.appendIn(client, taskId, { type: 'approval.requested', data });
    });
    const approval = await this.get(id);
    if (!approval) throw new DockhandError('internal', `approval ${id} vanished`);
    return { approval, event };
  }

  async resolve(
    taskId: string,
    id: string,
    decision: { decision: 'approved' | 'denied'; by: string; comment?: string },
  ): Promise<{ approval: Approval; event: TaskEvent } | undefined> {
    const event = await this.transaction(async (client) => {
      const result = await client.query(
        `UPDATE approvals SET state = $1, decided_by = $2, comment = $3, resolved_at = $4
         WHERE id = $5 AND task_id = $6 AND state = 'pending'`,
        [decision.decision, decision.by, decision.comment ?? null, now(), id, taskId],
      );
      if (result.rowCount !== 1) return undefined;
      const data: EventPayload<'approval.resolved'> = { approvalId: id, decision: decision.decision, by: decision.by };
      if (decision.comment !== undefined) data.comment = decision.comment;
      return this.appendIn(client, taskId, { type: 'approval.resolved', data });
    });
    if (!event) return undefined;
    const approval = await this.get(id);
    if (!approval) throw new DockhandError('internal', `approval ${id} vanished`);
    return { approval, event };
  }

  async get(id: string): Promise<Approval | undefined> {
    const { rows } = await this.pool.query('SELECT * FROM approvals WHERE id = $1', [id]);
    return rows[0] === undefined ? undefined : toApproval(rows[0]);
  }

  async list(taskId: string, state?: ApprovalState): Promise<Approval[]> {
    const { rows } = state === undefined
      ? await this.pool.query('SELECT * FROM approvals WHERE task_id = $1 ORDER BY created_at COLLATE "C", position', [taskId])
      : await this.pool.query('SELECT * FROM approvals WHERE task_id = $1 AND state = $2 ORDER BY created_at COLLATE "C", position', [taskId, state]);
    return rows.map(toApproval);
  }

  async pending(query: PendingApprovalQuery): Promise<PendingApproval[]> {
    const kinds = query.overrides
      ? `((tasks.owner = $1 AND approvals.kind != 'policy_override') OR approvals.kind = 'policy_override')`
      : `(tasks.owner = $1 AND approvals.kind != 'policy_override')`;
    const params: Array<string | number> = [query.owner];
    let before = '';
    if (query.before !== undefined) {
      params.push(query.before);
      before = `AND approvals.position < $${params.length}`;
    }
    params.push(Math.max(1, query.limit));
    const approvalColumns = APPROVAL_COLUMNS.map((column) => `approvals.${column} AS a_${column}`).join(', ');
    const { rows } = await this.pool.query(
      `SELECT approvals.position AS a_position, ${approvalColumns}, tasks.*
       FROM approvals JOIN tasks ON tasks.id = approvals.task_id
       WHERE approvals.state = 'pending' AND tasks.state IN ('awaiting_approval', 'awaiting_review') AND ${kinds} ${before}
       ORDER BY approvals.position DESC LIMIT $${params.length}`,
      params,
    );
    return rows.map((row: unknown) => {
      // Both tables have id, state and created_at: the approval's columns come prefixed.
      const fields = Object.entries(z.record(z.string(), z.unknown()).parse(row));
      const approvalRow = Object.fromEntries(fields.filter(([key]) => key.startsWith('a_')).map(([key, value]) => [key.slice(2), value]));
      return { approval: toApproval(approvalRow), task: toTask(row), position: z.number().int().parse(approvalRow.position) };
    });
  }
}
