import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { changeRounds, type Task, type TaskEvent } from '@dockhand/protocol';
import { runAgent, type AgentConfigInput } from '../agent';
import { DockhandError } from '../errors';
import { GitChildren } from '../git-child';
import type { FeedbackEngine } from '../feedback/types';
import { buildPullRequestBody, branchName, deliverPullRequest, type Forge } from '../forge';
import { commitProvenance, type CommitSigner } from '../forge/push';
import type { ModelClient } from '../model/types';
import { parseRepoPolicy, POLICY_FILE_PATH, type RepoPolicy } from '../policy';
import { policyWorkers } from '../policy/pool';
import type { BaseFiles, TicketSource } from '../api/deps';
import type { AgentPort, AgentResult, PolicyPort, PublisherPort } from './ports';
import { rejectedThisRound } from './review-files';
import type { PushAttestor } from '../provenance/attestation-push';

/** A file's content at a full commit SHA never changes: answers (absent ones too) are kept, up to this many. */
const BASE_FILE_CACHE_ENTRIES = 512;
/** Bigger files are read each time (the cache is for policy and config files, read several times a task). */
const BASE_FILE_CACHE_MAX_BYTES = 256 * 1024;
const FULL_SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * Reads files at a commit of a repository the server can reach on disk (a local path, the local
 * forge's bare repo, or a server-side mirror). Remote-only repos need a mirror first.
 *
 * One `git cat-file --batch` per read (the object's type and content in one child process), and
 * what was read at a full SHA is remembered: a task reads its repository's `.dockhand/policy.yml`
 * at its base three times (after the finish, before the push, in the push). Children are started
 * by the spawner (`spawner.ts`), not forked from the server.
 */
export function gitBaseFiles(resolveRepoPath: (repo: string) => string = (repo) => repo): BaseFiles {
  const children = new GitChildren();
  const cache = new Map<string, string | null>();
  const remember = (key: string, value: string | null) => {
    if (value !== null && value.length > BASE_FILE_CACHE_MAX_BYTES) return;
    cache.set(key, value);
    if (cache.size > BASE_FILE_CACHE_ENTRIES) cache.delete(cache.keys().next().value!);
  };
  return {
    async read(repo, sha, path) {
      const dir = resolveRepoPath(repo);
      const key = `${dir}\0${sha}\0${path}`;
      if (FULL_SHA.test(sha) && cache.has(key)) return cache.get(key)!;
      if (!existsSync(dir) || /[\n\r]/.test(path)) return null;
      // The commit itself is asked too: "missing" is kept only when the commit is there (the path
      // is not in it), not when the commit has not reached this repository yet.
      const out = await children.run(['cat-file', '--batch'], { cwd: dir, stdin: `${sha}:${path}\n${sha}^{commit}\n`, what: 'git cat-file --batch', timeoutMs: 30_000 }).catch(() => undefined);
      if (!out) return null;
      const newline = out.stdout.indexOf(0x0a);
      // "<oid> <type> <size>", then the content; anything else ("<name> missing", "ambiguous") is no file.
      const header = /^[0-9a-f]{40,64} (\w+) (\d+)$/.exec(out.stdout.subarray(0, Math.max(newline, 0)).toString());
      if (!header) {
        const commit = out.stdout.subarray(newline + 1, out.stdout.indexOf(0x0a, newline + 1)).toString();
        if (FULL_SHA.test(sha) && /^[0-9a-f]{40,64} commit \d+$/.test(commit)) remember(key, null);
        return null;
      }
      const [, kind = '', size = '0'] = header;
      if (kind !== 'blob') {
        throw new DockhandError('bad_request', `path: ${path} is a ${kind === 'tree' ? 'directory' : kind} at ${sha.slice(0, 12)}, not a file`, {
          field: 'path',
          hint: 'ask for a file path; the diff lists the changed files',
        });
      }
      const content = out.stdout.subarray(newline + 1, newline + 1 + Number(size)).toString('utf8');
      if (FULL_SHA.test(sha)) remember(key, content);
      return content;
    },
    async list(repo, sha) {
      const dir = resolveRepoPath(repo);
      if (!existsSync(dir)) return null;
      return children.run(['-C', dir, 'ls-tree', '-r', '--name-only', '-z', sha], { maxBuffer: 256 * 1024 * 1024, what: 'git ls-tree' }).then(
        (result) => result.stdout.toString('utf8').split('\0').filter(Boolean),
        () => null,
      );
    },
  };
}

/** The repo's `.dockhand/policy.yml` at the task's base SHA (defaults when absent). */
export async function repoPolicy(baseFiles: BaseFiles, task: Pick<Task, 'context'>): Promise<RepoPolicy> {
  return parseRepoPolicy((await baseFiles.read(task.context.repo, task.context.baseSha, POLICY_FILE_PATH)) ?? undefined);
}

/** The policy gate with owners' overrides: the same evaluation as the forge's push gate. */
export function policyPort(baseFiles: BaseFiles, known: readonly string[] = []): PolicyPort {
  return {
    async check({ task, diff, stage, events, summary }) {
      const policy = await repoPolicy(baseFiles, task);
      // The same gate as the forge's push: the diff and the words that go with it into the PR.
      const text = { title: task.ticket.title, ...(summary !== undefined ? { summary } : {}) };
      // On a policy worker thread: the gate reads the whole diff, which may be tens of megabytes.
      const { stats: _stats, ...result } = await policyWorkers.run('gateOutbound', { diff, policy, allowTestEdits: task.allowTestEdits, stage, overrides: [...events], text, known: [...known] });
      return { ...result, owners: policy.owners };
    },
  };
}

export interface AgentPortOptions {
  model: (task: Task) => ModelClient;
  /** A separate client for the self-review call (the replay server plays it from its own cassette). */
  reviewModel?: (task: Task) => ModelClient;
  feedback: (task: Task) => FeedbackEngine;
  config?: AgentConfigInput;
}

/** The real agent loop behind the runner's `AgentPort`. */
export function agentPort(options: AgentPortOptions): AgentPort {
  return {
    async run(input): Promise<AgentResult> {
      {
        const outcome = await runAgent({
          task: {
            ticket: input.task.ticket,
            budgets: input.task.budgets,
            allowTestEdits: input.task.allowTestEdits,
            ...(input.task.reproducingTests ? { reproducingTests: input.task.reproducingTests } : {}),
          },
          sandbox: input.sandbox,
          model: options.model(input.task),
          ...(options.reviewModel ? { reviewModel: options.reviewModel(input.task) } : {}),
          events: input.events,
          approver: input.approver,
          feedback: options.feedback(input.task),
          priorEvents: input.priorEvents,
          signal: input.signal,
          steering: input.steering,
          ...(options.config ? { config: options.config } : {}),
        });
        const outcomeKind = outcome.status === 'finished_verified' ? 'finished' : outcome.status;
        const result: AgentResult = { outcome: outcomeKind, summary: outcome.summary, diff: outcome.diff };
        if (outcome.status === 'failed') result.error = { code: outcome.reason ?? 'internal', message: outcome.summary };
        return result;
      }
    },
  };
}

function lastOf<T extends TaskEvent['type']>(events: TaskEvent[], type: T): Extract<TaskEvent, { type: T }> | undefined {
  const isType = (event: TaskEvent): event is Extract<TaskEvent, { type: T }> => event.type === type;
  return [...events].reverse().find(isType);
}

export interface PublisherOptions {
  forge: Forge;
  /** Where the server keeps its own clones (one per repo). */
  clonesDir: string;
  /** The forge's name for the task's repo (local forge: name or bare path; GitHub: owner/name). */
  forgeRepo?: (repo: string) => string;
  /** Secrets to keep out of the PR body (the push token). */
  secrets?: string[];
  /** Values the push gate blocks in the diff and PR text (repository secrets: `EventLog.knownSecrets`). */
  known?: readonly string[];
  /** For the repo policy at the base SHA (the forge's push gate re-checks it). */
  baseFiles: BaseFiles;
  /**
   * Checked right before the push (a shared store: the worker's lease on the task is still its
   * own, and is extended); throws when it is not, so a worker that lost the task does not push.
   */
  confirmLease?: (taskId: string) => Promise<void>;
  /** The server's signing key: every pushed commit is SSH-signed with it. */
  signer?: CommitSigner;
  /** The server's public URL (`DOCKHAND_PUBLIC_URL`): the commit links the task's trajectory under it. */
  publicUrl?: string;
  /** Signs each push's attestation and names it in the commit (`provenance/attestation-push.ts`). */
  attestor?: PushAttestor;
}

/** Push decisions of the current review round (after the task last entered awaiting_review). */
export function pushDecisions(events: TaskEvent[]): Array<{ by: string; decision: 'approved' | 'denied' }> {
  let start = 0;
  const pushIds = new Set<string>();
  for (const event of events) {
    if (event.type === 'task.state' && event.data.state === 'awaiting_review') start = event.seq;
    if (event.type === 'approval.requested' && event.data.kind === 'push') pushIds.add(event.data.approvalId);
  }
  return events.flatMap((event) =>
    event.seq > start && event.type === 'approval.resolved' && pushIds.has(event.data.approvalId)
      ? [{ by: event.data.by, decision: event.data.decision }]
      : [],
  );
}

/** Push + draft PR through the forge helper's `deliverPullRequest` (idempotent by design). */
export function publisherPort(options: PublisherOptions): PublisherPort {
  return {
    async publish({ task, diff, summary, events, policy }) {
      const repo = options.forgeRepo ? options.forgeRepo(task.context.repo) : task.context.repo;
      const tests = lastOf(events, 'tests.finished');
      const turn = lastOf(events, 'model.turn');
      const approved = [...events].reverse().find((e) => e.type === 'task.state' && e.data.state === 'pushing');
      const ticketId = task.ticket.kind === 'issue' ? task.ticket.id : task.id.slice(-8);
      const leftOut = rejectedThisRound(events);
      const body = buildPullRequestBody(
        {
          ticket: { title: task.ticket.title, ...(task.ticket.kind === 'issue' ? { id: task.ticket.id, ...(task.ticket.url ? { url: task.ticket.url } : {}) } : {}) },
          summary,
          // Every review round's account, not only the last one's summary (issue 24 item 2).
          rounds: changeRounds(events, summary),
          taskId: task.id,
          requester: task.owner,
          allowTestEdits: task.allowTestEdits,
          ...(task.allowTestEditsLabel ? { allowTestEditsLabel: task.allowTestEditsLabel } : {}),
          ...(tests
            ? {
                tests: {
                  command: tests.data.command,
                  passed: tests.data.passed,
                  failed: tests.data.failed,
                  skipped: tests.data.skipped,
                  log: tests.data.output,
                  scope: tests.data.scope,
                  ...(tests.data.preExisting ? { preExisting: tests.data.preExisting } : {}),
                  ...(tests.data.reproducing ? { reproducing: tests.data.reproducing } : {}),
                },
              }
            : {}),
          quarantined: tests?.data.quarantined ?? [],
          usage: task.usage,
          ...(turn ? { model: turn.data.model } : {}),
          ...(policy?.overridden ? { policyOverride: { by: policy.overriddenBy ?? 'a repo owner', violations: policy.violations } } : {}),
          ...(leftOut.files.length ? { leftOut } : {}),
          ...(options.attestor ? { attestation: { path: `/v1/tasks/${task.id}/attestation` } } : {}),
        },
        options.secrets ?? [],
      );
      const cloneDir = join(options.clonesDir, createHash('sha256').update(repo).digest('hex').slice(0, 16));
      const gatePolicy = await repoPolicy(options.baseFiles, task);
      // Last thing before the push: the fence stops this worker's writes, but not a git push.
      await options.confirmLease?.(task.id);
      const branch = branchName(ticketId, task.ticket.title, task.id);
      const delivered = await deliverPullRequest({
        forge: options.forge,
        repo,
        cloneDir,
        baseSha: task.context.baseSha,
        diff,
        branch,
        // The PR goes back into the branch the task started from (else the default branch).
        ...(task.context.branch ? { startBranch: task.context.branch } : {}),
        title: task.ticket.title,
        body,
        requester: { name: task.owner, email: `${task.owner}@users.dockhand.invalid` },
        // The same commit on a retry: the time the push was approved, not the time of the attempt.
        ...(approved ? { date: approved.ts } : {}),
        ...(options.signer ? { signer: options.signer } : {}),
        provenance: commitProvenance(task.id, options.publicUrl),
        // The push's attestation, signed for the commit's tree and parent (`Dockhand-Attestation:`).
        ...(options.attestor ? { trailers: options.attestor.trailers({ task, events, round: 1, repository: repo, branch, diff, requiredApprovals: gatePolicy.requiredApprovals }) } : {}),
        gate: {
          policy: gatePolicy,
          allowTestEdits: task.allowTestEdits,
          decisions: pushDecisions(events),
          overrides: events,
          bots: ['dockhand', 'dockhand-policy'],
          known: [...(options.known ?? [])],
        },
      });
      return { number: delivered.pr.number, url: delivered.pr.url, branch: delivered.pr.branch, headSha: delivered.pr.headSha };
    },
  };
}

export function forgeTickets(forge: Forge, forgeRepo: (repo: string) => string = (repo) => repo): TicketSource {
  return {
    async listOpenIssues(repo) {
      const issues = await forge.listOpenIssues(forgeRepo(repo));
      return issues.map((issue) => ({ id: String(issue.number), title: issue.title, body: issue.body, url: issue.url, labels: issue.labels }));
    },
  };
}
