import type { Command } from 'commander';
import { z } from 'zod';
import { ErrorCode, ReadinessCheckStatus, RegistrationStatus, RepoListResponse, RepoRegistration, type ReadinessReport } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import type { ApiClient } from './client';
import { environmentDetail } from './format';

/*
 * `dockhand repo add|list|remove|check`: registered repositories through the server's API
 * (`/v1/repos`). Registering needs an admin token; the server does the git work (the local
 * forge's copy, the default branch) from the source named here.
 */

type Out = (line: string) => void;
type ClientOf = (options: { server?: string; token?: string }) => ApiClient;

const collect = (value: string, previous: string[] = []) => [...previous, value];

export function addRepoCommands(program: Command, client: ClientOf, out: Out, clientOptions: (command: Command) => Command): void {
  const repo = program.command('repo').description('registered repositories (a task names one)');

  clientOptions(repo.command('add <name>'))
    .description('register a repository from a path on the server host or an https/ssh URL (admins); again: refresh it')
    .requiredOption('--from <path|url>', 'an absolute path on the server host, https://…, ssh://… or git@host:path')
    .option('--owner <user>', 'an owner (repeat for more)', collect)
    .option('--submitter <user>', 'a user who may submit tasks (repeat; none = everyone)', collect)
    .action(async (name: string, options: { from: string; owner?: string[]; submitter?: string[]; server?: string; token?: string }) => {
      const api = client(options);
      // The server copies in the background and answers at once; this polls and shows the progress.
      const answer = await api.request('POST', '/v1/repos', z.union([RegistrationStatus, RepoRegistration]), {
        name,
        source: options.from,
        ...(options.owner ? { owners: options.owner } : {}),
        ...(options.submitter ? { submitters: options.submitter } : {}),
      }, { prefer: 'respond-async' });
      const registration = 'state' in answer ? await followRegistration(api, answer, out) : answer;
      out(`registered ${registration.name} from ${registration.source} (default branch ${registration.defaultBranch})`);
      if (registration.mirrorSource) out(`  local forge copy: ${registration.mirrorSource}`);
    });

  clientOptions(repo.command('list'))
    .description('repositories you may submit to (admins: all)')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean; server?: string; token?: string }) => {
      const { repos } = await client(options).request('GET', '/v1/repos', RepoListResponse);
      if (options.json) return out(JSON.stringify(repos, null, 2));
      if (repos.length === 0) return out('no repositories are registered (an admin adds one: dockhand repo add <name> --from <path or URL>)');
      out(table([
        ['NAME', 'DEFAULT BRANCH', 'SOURCE', 'OWNERS', 'SUBMITTERS'],
        ...repos.map((r) => [r.name, r.defaultBranch, r.source, r.owners.join(',') || '-', r.submitters.join(',') || 'everyone']),
      ]));
    });

  clientOptions(repo.command('remove <name>'))
    .description('remove a registration (admins); the forge repository, tasks and PRs stay')
    .action(async (name: string, options: { server?: string; token?: string }) => {
      await client(options).request('DELETE', `/v1/repos/${encodeURIComponent(name)}`, z.object({ removed: z.literal(true) }));
      out(`removed ${name}`);
    });

  clientOptions(repo.command('check <name>'))
    .description('readiness: build the snapshot, run the tests at the base, build the selection graph, list what blocks')
    .option('--sha <sha>', 'the commit to check (default: the head of the default branch at the registered source, fetched first)')
    .option('--json', 'print the report as JSON')
    .option('--timeout <seconds>', 'give up waiting after this long', '3600')
    .action(async (name: string, options: { sha?: string; json?: boolean; timeout: string; server?: string; token?: string }) => {
      const api = client(options);
      const path = `/v1/repos/${encodeURIComponent(name)}/check`;
      let status = await api.request('POST', path, ReadinessCheckStatus, options.sha ? { sha: options.sha } : {});
      const deadline = Date.now() + Number(options.timeout) * 1000;
      let shown = 0;
      const progress = () => {
        if (options.json) return;
        for (const entry of status.progress.slice(shown)) out(`[${(entry.elapsedMs / 1000).toFixed(1).padStart(6)} s] ${entry.stage}${entry.line ? `: ${entry.line}` : ''}`);
        shown = status.progress.length;
      };
      if (!options.json) out(`checking ${name} at ${status.sha}${checkedHead(status.head, ', fetched now')}`);
      progress();
      while (status.state === 'running') {
        if (Date.now() > deadline) throw new Error(`--timeout: the check of ${name} is still running after ${options.timeout} s (see it later: dockhand repo check ${name})`);
        await new Promise((resolve) => setTimeout(resolve, 1500));
        status = await api.request('GET', path, ReadinessCheckStatus);
        progress();
      }
      if (options.json) return out(JSON.stringify(status.report ?? status, null, 2));
      if (status.state === 'failed' || !status.report) {
        out(`check failed: ${status.error?.message ?? 'unknown error'}`);
        process.exitCode = 1;
        return;
      }
      for (const line of readinessLines(status.report)) out(line);
      if (!status.report.ready) process.exitCode = 1;
    });
}

/**
 * Polls a registration until it is done, printing its stage, the refs copied and git's progress
 * when they change (at most every 2 s for the same stage); a failure becomes the server's error.
 */
export async function followRegistration(api: ApiClient, first: RegistrationStatus, out: Out, pollMs = 1000): Promise<RepoRegistration> {
  const path = `/v1/repos/${encodeURIComponent(first.name)}/registration`;
  const started = Date.now();
  let status = first;
  let shown = '';
  let shownStage = '';
  let shownAt = 0;
  for (;;) {
    const line = registrationLine(status);
    const stage = `${status.stage} ${status.current ?? ''}`;
    if (line !== shown && (stage !== shownStage || Date.now() - shownAt >= 2000 || status.state !== 'running')) {
      out(`[${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] ${line}`);
      shown = line;
      shownStage = stage;
      shownAt = Date.now();
    }
    if (status.state === 'failed') {
      const error = status.error;
      throw new DockhandError(RegistrationError.parse(error?.code ?? 'internal'), error?.message ?? `the registration of ${status.name} failed`, { ...(error?.hint ? { hint: error.hint } : {}), ...(error?.field ? { field: error.field } : {}) });
    }
    if (status.state === 'done') {
      if (status.skipped) out(`  ${status.skipped}`);
      if (!status.registration) throw new DockhandError('internal', `the registration of ${status.name} ended without a registration`);
      return status.registration;
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
    status = await api.request('GET', path, RegistrationStatus);
  }
}

const RegistrationError = ErrorCode.catch('internal');

/** "default branch: refs/heads/main: Receiving objects 45% (1234/2740), 12.00 MiB" */
export function registrationLine(status: RegistrationStatus): string {
  if (status.state === 'done') return `copied ${status.refsDone} of ${status.refsTotal} refs`;
  if (status.state === 'failed') return `failed: ${status.error?.message ?? 'unknown error'}`;
  const stage = status.stage === 'default-branch' ? 'default branch' : `branches ${status.refsDone}/${status.refsTotal}`;
  const git = status.git;
  const counts = git ? `${git.stage}${git.percent !== undefined ? ` ${git.percent}% (${git.done}/${git.total})` : git.done !== undefined ? ` ${git.done}` : ''}${git.bytes ? `, ${git.bytes}` : ''}` : '';
  return [stage, status.current, counts].filter(Boolean).join(': ');
}

/** Where the checked commit came from when no --sha named it. */
function checkedHead(head: ReadinessReport['head'], when = ''): string {
  return head ? ` (the head of ${head.branch} at ${head.source}${when})` : '';
}

/** The readiness report as a table a person reads, then what blocks. */
export function readinessLines(report: ReadinessReport): string[] {
  const yes = (ok: boolean) => (ok ? 'ok' : 'NO');
  const env = report.environment;
  const seconds = (value: number | undefined) => (value === undefined ? '' : `${value.toFixed(1)} s`);
  const rows: string[][] = [
    ['CHECK', 'OK', 'TIME', 'DETAIL'],
    // An install that ran shows its command on its own row; the environment row names its source only.
    ['environment', env ? 'ok' : '-', '', env ? environmentDetail(env, { installShown: report.install.ok && report.install.detail.includes(env.install.command) }) : 'not detected (see install)'],
    ['install', yes(report.install.ok), seconds(report.install.seconds), report.install.detail],
    ['snapshot', report.snapshot ? 'ok' : 'NO', seconds(report.snapshot?.startSeconds), report.snapshot ? `${report.snapshot.image} (${report.snapshot.built ? `built in ${seconds(report.snapshot.buildSeconds)}` : 'reused'}; start ${seconds(report.snapshot.startSeconds)})` : 'none'],
    ['test command', report.tests.command ? 'ok' : '-', '', `${report.tests.command ?? 'none'}${report.tests.runner ? ` (${report.tests.runner})` : ''}${env ? `; from ${env.test.source}` : ''}`],
    ['tests at base', yes(report.tests.ok), seconds(report.tests.seconds), `${report.tests.passed} passed, ${report.tests.failed} failed, ${report.tests.flaky.length} flaky${report.tests.preExistingFailures.length ? `; pre-existing: ${report.tests.preExistingFailures.slice(0, 3).join(', ')}${report.tests.preExistingFailures.length > 3 ? ', …' : ''}` : ''}${report.tests.judgedBy === 'exit status' ? '; a change is judged by exit status only (no per-test results)' : ''}`],
    ['selection graph', yes(report.selection.ok), '', report.selection.detail],
  ];
  const lines = [table(rows), '', `${report.repo} at ${report.sha.slice(0, 12)}${checkedHead(report.head)}: ${report.ready ? 'READY' : 'NOT READY'}`];
  for (const block of report.blocking) lines.push(`  blocking: ${block.problem}`, `    what to do: ${block.action}`);
  return lines;
}

function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  return rows.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0))).join('  ')).join('\n');
}
