import type { Command } from 'commander';
import { z } from 'zod';
import { Task } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import type { ApiClient } from './client';

/*
 * `dockhand approve|reject <task> [approval]`: decide a task's review (POST /v1/tasks/:id/review),
 * or one approval request when its id is given. `approve --reject-file <path>` (repeatable) pushes
 * the diff without those files (the API's `rejectedFiles`); the server checks each path against
 * the diff under review, and its refusal is told in the option's terms.
 */

interface Deps {
  client(options: { server?: string; token?: string }): ApiClient;
  out(line: string): void;
  clientOptions(command: Command): Command;
}

export interface ReviewOptions {
  comment?: string;
  rejectFile?: string[];
  server?: string;
  token?: string;
}

/** The review request for `approve`/`reject` with these options; a misuse of `--reject-file` is refused before anything is sent. */
export function reviewBody(name: 'approve' | 'reject', options: ReviewOptions): { action: 'approve' | 'reject'; comments: Array<{ body: string }>; rejectedFiles?: string[] } {
  // The server de-duplicates too; doing it here keeps its `rejectedFiles.N` pointing at the Nth path sent.
  const rejected = [...new Set(options.rejectFile ?? [])];
  const comments = options.comment ? [{ body: options.comment }] : [];
  return { action: name, comments, ...(rejected.length ? { rejectedFiles: rejected } : {}) };
}

/**
 * A server refusal about `rejectedFiles` (`rejectedFiles.N`: not a file of the diff; all files
 * rejected; an owner's override) in the CLI's words: the option and the path it was given.
 */
export function rejectFileError(error: unknown, rejected: readonly string[]): unknown {
  if (!(error instanceof DockhandError) || !error.field?.startsWith('rejectedFiles')) return error;
  // `rejectedFiles.N` from the review's check, `rejectedFiles[N]` from the request's schema.
  const index = /^rejectedFiles(?:\.(\d+)|\[(\d+)\])$/.exec(error.field)?.slice(1).find((group) => group !== undefined);
  const path = index === undefined ? undefined : rejected[Number(index)];
  const message = error.message.replace(/^rejectedFiles(\.\d+|\[\d+\])?: /, '');
  const hint = index === undefined ? error.hint : `name files as the diff under review lists them (GET /v1/tasks/:id/diff, or the review panel)`;
  // "src/x.ts is not a file of the diff …" reads as "--reject-file src/x.ts is not a file of the diff …".
  const text = path === undefined ? `--reject-file: ${message}` : message.startsWith(`${path} `) ? `--reject-file ${message}` : `--reject-file ${path}: ${message}`;
  return new DockhandError(error.code, text, {
    field: '--reject-file',
    ...(hint ? { hint } : {}),
    cause: error,
  });
}

export function addReviewCommands(program: Command, deps: Deps): void {
  for (const [name, decision] of [['approve', 'approved'], ['reject', 'denied']] as const) {
    const command = deps.clientOptions(program.command(`${name} <task> [approval]`))
      .description(`${name} a task's diff (review) or one approval request`)
      .option('--comment <text>', 'comment');
    if (name === 'approve') {
      command.option('--reject-file <path>', 'leave this file of the diff out of the push (repeatable; as the diff names it)', (value: string, previous: string[]) => [...previous, value], []);
    }
    command.action(async (taskId: string, approvalId: string | undefined, options: ReviewOptions) => {
      const api = deps.client(options);
      if (approvalId) {
        if (options.rejectFile?.length) {
          throw new DockhandError('bad_request', '--reject-file: leaves files out of a reviewed diff; an approval request has no files', {
            field: '--reject-file',
            hint: `drop the approval id to approve the review: dockhand approve ${taskId} --reject-file <path>`,
          });
        }
        const result = await api.request('POST', `/v1/tasks/${taskId}/approvals/${approvalId}`, z.object({ state: z.string() }), {
          decision, ...(options.comment ? { comment: options.comment } : {}),
        });
        deps.out(`approval ${approvalId}: ${result.state}`);
        return;
      }
      const body = reviewBody(name, options);
      const task = await api.request('POST', `/v1/tasks/${taskId}/review`, Task, body).catch((error: unknown) => {
        throw rejectFileError(error, body.rejectedFiles ?? []);
      });
      deps.out(`task ${taskId}: ${task.state}${body.rejectedFiles ? ` (left out of the push: ${body.rejectedFiles.join(', ')})` : ''}`);
    });
  }
}
