import type { Command } from 'commander';
import { TaskChainReport } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { verifyTaskChain } from '../provenance/chain';
import type { Store } from '../store/types';
import type { ApiClient } from './client';

/*
 * `dockhand verify task <id>`: asks the server to recompute the task's event hash chain
 * (`GET /v1/tasks/:id/chain`), prints each check and exits 1 when one fails, naming the first
 * event that does not match. `verify` is the group other provenance checks join (`verify commit`).
 * `--local` recomputes it here, from this machine's store (DOCKHAND_DATA_DIR's SQLite file, or
 * DOCKHAND_DATABASE_URL), with no server and no token: for whoever holds the database.
 */

interface Deps {
  client(options: { server?: string; token?: string }): ApiClient;
  out(line: string): void;
  clientOptions(command: Command): Command;
  withStore<T>(fn: (store: Store) => Promise<T>): Promise<T>;
  /** The data dir's SQLite database; undefined with Postgres. */
  localDatabase(): { path: string; exists: boolean } | undefined;
}

async function localReport(deps: Deps, taskId: string): Promise<TaskChainReport> {
  const database = deps.localDatabase();
  if (database && !database.exists) {
    throw new DockhandError('not_found', `--local: no database at ${database.path}`, { field: '--local', hint: 'set DOCKHAND_DATA_DIR to the server\'s data dir (or DOCKHAND_DATABASE_URL to its Postgres)' });
  }
  return deps.withStore((store) => verifyTaskChain(store, taskId));
}

/** The report as the CLI prints it: one line per check, then the verdict. */
export function chainReportLines(report: TaskChainReport): string[] {
  const lines = [`task ${report.taskId}: event hash chain (last seq ${report.lastSeq})`];
  for (const check of report.checks) lines.push(`${check.ok ? 'ok  ' : 'FAIL'} ${check.name}: ${check.detail}`);
  if (report.failure) {
    const { seq, type, kind } = report.failure;
    lines.push(`not verified: seq ${seq}${type ? ` (${type})` : ''} does not match (${kind.replace('_', ' ')})`);
  } else if (report.head) {
    lines.push(`verified: head seq ${report.head.seq} ${report.head.hash}${report.unchainedThrough > 0 ? ` (events 1–${report.unchainedThrough} predate the chain and were not checked)` : ''}`);
  } else {
    lines.push(`nothing chained: events 1–${report.lastSeq} predate the chain`);
  }
  return lines;
}

export function addVerifyCommands(program: Command, deps: Deps): Command {
  const verify = program.command('verify').description('check provenance: a task\'s event log');
  deps.clientOptions(verify.command('task <id>'))
    .description('recompute the task\'s event hash chain on the server; exits 1 naming the first event that does not match')
    .option('--local', 'recompute it here from this machine\'s store (DOCKHAND_DATA_DIR, or DOCKHAND_DATABASE_URL), without a server')
    .action(async (taskId: string, options: { server?: string; token?: string; local?: boolean }) => {
      if (options.local && options.server) {
        throw new DockhandError('bad_request', '--local: reads this machine\'s store; it cannot be combined with --server', { field: '--local', hint: 'give one of --local and --server' });
      }
      const report = options.local
        ? await localReport(deps, taskId)
        : await deps.client(options).request('GET', `/v1/tasks/${encodeURIComponent(taskId)}/chain`, TaskChainReport);
      for (const line of chainReportLines(report)) deps.out(line);
      if (!report.ok) process.exitCode = 1;
    });
  return verify;
}
