import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { z } from 'zod';
import { PostCheckRequest, PostCommentRequest, PullRequestView } from '../api/pulls';
import { DockhandError } from '../errors';
import { CHECK_CONCLUSIONS, PullRequestCheckSchema, type PullRequestCheck } from '../forge/checks';
import { PullRequestCommentSchema, type PullRequestComment } from '../forge/comments';
import type { ApiClient } from './client';

/*
 * `dockhand pr comment|review|checks|check <repo> <n>`: what a reviewer and a CI post on a PR of
 * the local forge, over the API (the token says who is commenting; whether it steers the task is
 * the server's decision, printed back).
 *   pr comment <repo> <n> [--path P --line L] [--reply-to ID] TEXT
 *   pr review <repo> <n> --request-changes|--approve [TEXT]
 *   pr checks <repo> <n>
 *   pr check <repo> <n> --name N --conclusion failure [--log FILE]
 */

interface Deps {
  client(options: { server?: string; token?: string }): ApiClient;
  out(line: string): void;
  clientOptions(command: Command): Command;
}

interface ClientFlags {
  server?: string;
  token?: string;
}

const pullPath = (repo: string, number: string) => `/v1/repos/${encodeURIComponent(repo)}/pulls/${encodeURIComponent(number)}`;

function wholeNumber(name: string, value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1) throw new DockhandError('bad_request', `${name}: must be a whole number of at least 1, got ${JSON.stringify(value)}`, { field: name });
  return number;
}

export function describeComment(comment: PullRequestComment): string {
  const where = comment.path ? ` on ${comment.path}:${comment.line}` : '';
  const what = comment.kind === 'review' ? `review (${comment.verdict === 'approve' ? 'approved' : 'changes requested'})` : comment.inReplyTo ? `reply to #${comment.inReplyTo}` : 'comment';
  const steering = comment.steering === 'ignored' ? ` — ignored: ${comment.ignoredBecause ?? 'may not steer'}` : comment.steering === 'bot' ? '' : ' — steers the task';
  const resolved = comment.resolvedBy ? ` (resolved by ${comment.resolvedBy.slice(0, 12)})` : '';
  return `#${comment.id} ${comment.author} ${what}${where}${steering}${resolved}`;
}

export function describeCheck(check: PullRequestCheck): string {
  return `${check.conclusion.padEnd(9)} ${check.name} (by ${check.postedBy}, on ${check.sha.slice(0, 12)})`;
}

export function addPullRequestCommands(pr: Command, deps: Deps): void {
  const { client, out, clientOptions } = deps;

  clientOptions(pr.command('comment <repo> <number> <text>'))
    .description('comment on a PR of the local forge: general, or on a line of its diff (--path and --line)')
    .option('--path <path>', 'a file of the PR\'s diff')
    .option('--line <line>', 'a line of that file (new version) shown on the diff')
    .option('--reply-to <id>', 'reply in the thread of this comment')
    .action(async (repo: string, number: string, text: string, options: ClientFlags & { path?: string; line?: string; replyTo?: string }) => {
      const body = PostCommentRequest.parse({
        body: text,
        ...(options.path !== undefined ? { path: options.path } : {}),
        ...(options.line !== undefined ? { line: wholeNumber('--line', options.line) } : {}),
        ...(options.replyTo !== undefined ? { inReplyTo: wholeNumber('--reply-to', options.replyTo) } : {}),
      });
      const comment = await client(options).request('POST', `${pullPath(repo, number)}/comments`, PullRequestCommentSchema, body);
      out(describeComment(comment));
    });

  clientOptions(pr.command('review <repo> <number> [text]'))
    .description('review a PR of the local forge: --approve or --request-changes')
    .option('--approve', 'approve the PR')
    .option('--request-changes', 'ask for changes (the task goes back to work when you may steer it)')
    .action(async (repo: string, number: string, text: string | undefined, options: ClientFlags & { approve?: boolean; requestChanges?: boolean }) => {
      if (options.approve === options.requestChanges) {
        throw new DockhandError('bad_request', '--approve or --request-changes: give exactly one', { field: 'verdict' });
      }
      const verdict = options.approve ? 'approve' : 'request_changes';
      const review = await client(options).request('POST', `${pullPath(repo, number)}/reviews`, PullRequestCommentSchema, { verdict, ...(text ? { body: text } : {}) });
      out(describeComment(review));
    });

  clientOptions(pr.command('checks <repo> <number>'))
    .description('the PR\'s comments and the latest result of each check on its head')
    .action(async (repo: string, number: string, options: ClientFlags) => {
      const view = await client(options).request('GET', pullPath(repo, number), PullRequestView);
      out(`${view.pr.url} ${view.pr.state} head ${view.pr.headSha.slice(0, 12)} (${view.pr.branch} → ${view.pr.base})`);
      if (view.checks.length === 0) out('no checks on the head');
      for (const check of view.checks) out(describeCheck(check));
      for (const comment of view.comments) out(describeComment(comment));
    });

  clientOptions(pr.command('check <repo> <number>'))
    .description('post an outside CI\'s result on the PR\'s head (admins and repository owners)')
    .requiredOption('--name <name>', 'the check\'s name (a re-run posts the same name again)')
    .requiredOption('--conclusion <conclusion>', CHECK_CONCLUSIONS.join(', '))
    .option('--log <file>', 'the job\'s log (kept trimmed: head and tail)')
    .option('--sha <sha>', 'the commit it ran on (default: the PR\'s head)')
    .action(async (repo: string, number: string, options: ClientFlags & { name: string; conclusion: string; log?: string; sha?: string }) => {
      const conclusion = z.enum(CHECK_CONCLUSIONS).safeParse(options.conclusion);
      if (!conclusion.success) throw new DockhandError('bad_request', `--conclusion: one of ${CHECK_CONCLUSIONS.join(', ')}, got ${JSON.stringify(options.conclusion)}`, { field: 'conclusion' });
      let log: string | undefined;
      if (options.log !== undefined) {
        log = await readFile(options.log, 'utf8').catch((error: unknown) => {
          throw new DockhandError('bad_request', `--log: cannot read ${options.log} (${(error as NodeJS.ErrnoException).code ?? String(error)})`, { field: 'log' });
        });
      }
      const body = PostCheckRequest.parse({ name: options.name, conclusion: conclusion.data, ...(log !== undefined ? { log } : {}), ...(options.sha ? { sha: options.sha } : {}) });
      out(describeCheck(await client(options).request('POST', `${pullPath(repo, number)}/checks`, PullRequestCheckSchema, body)));
    });
}
