import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { Task, TaskEvent } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import type { FollowedThreads, PullRequestThreadStore } from '../forge/comments';
import { enforcePushGateOffThread, type PushGate } from '../forge/deliver';
import { pushFollowUp } from '../forge/follow-push';
import { commitProvenance, type CommitSigner } from '../forge/push';
import { commitText, neutralizeInline, neutralizeMarkdown, quoted } from '../forge/pr-text';
import { commitSubject, forgeCode } from '../policy/neutralise';
import type { Forge } from '../forge/types';
import { lastPushedHead, unpushedRound } from './rounds';
import type { PushAttestor } from '../provenance/attestation-push';

/*
 * The end of an approved follow-up round: one new commit on the PR's branch (`forge/follow-push.ts`),
 * the PR record's head moved to it, a reply on each thread the round addressed (with the commit)
 * and the thread resolved, and a short summary on the PR. Safe to run again after a crash: the
 * same commit is rebuilt and found on the branch, and a reply already posted is not posted twice
 * (on GitHub, a reply posted just before a crash that kept it from the store is found on the PR by
 * its hidden marker: `replyOnce`).
 */

export interface FollowUpResult {
  round: number;
  number: number;
  headSha: string;
  commit: boolean;
  replied: number[];
}

/** What the runner asks when a task in a follow-up round reaches `pushing`. */
export interface FollowUpPort {
  push(input: { task: Task; diff: string; summary: string; events: TaskEvent[] }): Promise<FollowUpResult>;
}

/** The local forge (its PR record's head moves with the push), or GitHub (it moves its own). */
export type FollowUpForge = Pick<Forge, 'kind' | 'pushTarget' | 'getPullRequest' | 'openPullRequest'> & { repositoryName?(repo: string): string };

export interface FollowUpPublisherOptions {
  forge: FollowUpForge;
  threads: FollowedThreads;
  threadStore: PullRequestThreadStore;
  /** The server's clones (one per repository, as the first push's). */
  clonesDir: string;
  confirmLease?: (taskId: string) => Promise<void>;
  /**
   * The forge's push gate, as for the first push: the repository's policy on the task's whole diff
   * (an owner's override in the log counts) and the required approvals of this round's review.
   */
  gate?: (task: Task, events: TaskEvent[]) => Promise<PushGate>;
  /** The server's signing key: the round's commit is SSH-signed with it. */
  signer?: CommitSigner;
  /** The server's public URL: the commit links the task's trajectory under it. */
  publicUrl?: string;
  /** Signs the round's attestation, chained to the previous one, and names it in the commit (`provenance/attestation-push.ts`). */
  attestor?: PushAttestor;
}

/** Where a pushed commit is seen: the local forge's link, or the commit's page next to the PR's on GitHub. */
export function commitUrl(repo: string, sha: string, prUrl?: string): string {
  const onGitHub = prUrl ? /^(https?:\/\/[^/]+\/[^/]+\/[^/]+)\/pull\/\d+\/?$/.exec(prUrl) : null;
  return onGitHub ? `${onGitHub[1]}/commit/${sha}` : `dockhand-local://${repo}/commit/${sha}`;
}

export function followUpPublisher(options: FollowUpPublisherOptions): FollowUpPort {
  return {
    async push({ task, diff, summary, events }) {
      const round = unpushedRound(events);
      const opened = [...events].reverse().find((event) => event.type === 'pr.opened');
      if (!round || round.data.round === undefined || opened?.type !== 'pr.opened') {
        throw new DockhandError('conflict', `task ${task.id} has no follow-up round waiting to push`);
      }
      const parentSha = lastPushedHead(events)!;
      const repo = options.forge.repositoryName?.(task.context.repo) ?? task.context.repo;
      const target = await options.forge.pushTarget(repo);
      const approved = [...events].reverse().find((event) => event.type === 'task.state' && event.data.state === 'pushing');
      const number = opened.data.number;
      const addressed = round.data.comments.map((comment) => `#${comment.id}`).join(', ');
      // A check's name is the CI's text: one clean line in the commit subject, a code span on the PR.
      const subjectTrigger = round.data.check ? `the red check "${commitSubject(round.data.check.name, 40)}"` : `review comments ${addressed}`;
      const trigger = round.data.check ? `the red check ${forgeCode(round.data.check.name)}` : `review comments ${addressed}`;
      // The agent's summary is model text: no trailers in the commit, nothing active (mentions, HTML, links) on the PR.
      const message = `Address ${subjectTrigger} (round ${round.data.round})\n\n${commitText(summary.slice(0, 4000))}`;
      const said = quoted(neutralizeMarkdown(summary.slice(0, 2000)));
      const gate = options.gate ? await options.gate(task, events) : undefined;
      if (gate) await enforcePushGateOffThread(diff, gate, { commitMessage: message });
      await options.confirmLease?.(task.id);
      const pushed = await pushFollowUp({
        cloneDir: join(options.clonesDir, createHash('sha256').update(repo).digest('hex').slice(0, 16)),
        remoteUrl: target.url,
        ...(target.token ? { token: target.token, tokenUsername: target.username ?? 'x-access-token' } : {}),
        baseSha: task.context.baseSha,
        parentSha,
        diff,
        branch: opened.data.branch,
        message,
        requester: { name: task.owner, email: `${task.owner}@users.dockhand.invalid` },
        ...(approved ? { date: approved.ts } : {}),
        ...(options.signer ? { signer: options.signer } : {}),
        provenance: commitProvenance(task.id, options.publicUrl),
        ...(options.attestor
          ? { trailers: options.attestor.trailers({ task, events, round: round.data.round, repository: repo, branch: opened.data.branch, diff, requiredApprovals: gate?.policy.requiredApprovals ?? 0 }) }
          : {}),
      });
      // The local forge's PR record learns its new head from this; GitHub moves the PR's head itself.
      const pr = pushed.commit && options.forge.kind === 'local'
        ? await options.forge.openPullRequest({ repo, branch: opened.data.branch, base: (await options.forge.getPullRequest(repo, number)).base, title: task.ticket.title, body: '' })
        : await options.forge.getPullRequest(repo, number);
      const existing = await options.threadStore.listComments(pr.repo, number);
      const marker = `(round ${round.data.round})`;
      const already = (id: number | undefined) => existing.some((comment) => comment.steering === 'bot' && comment.inReplyTo === id && comment.body.includes(marker));
      const what = pushed.commit ? `Addressed in ${pushed.headSha.slice(0, 12)} ${marker}: ${commitUrl(repo, pushed.headSha, pr.url)}` : `No code change was needed ${marker}.`;
      const replied: number[] = [];
      const reply = (body: string, key: string, inReplyTo?: number) => (options.threads.replyOnce ? options.threads.replyOnce(pr, body, key, inReplyTo) : options.threads.reply(pr, body, inReplyTo));
      for (const comment of round.data.comments) {
        if (!already(comment.id)) await reply(`${what}\n\n${said}`, `round:${round.data.round}:comment:${comment.id}`, comment.id);
        if (pushed.commit) {
          await options.threadStore.resolveComment(pr.repo, comment.id, pushed.headSha);
          await options.threads.resolveThread?.(pr, comment.id);
        }
        replied.push(comment.id);
      }
      if (!already(undefined)) {
        const change = pushed.commit ? `one new commit ${pushed.headSha.slice(0, 12)} on ${opened.data.branch}` : 'no new commit (no code change was needed)';
        await reply(`Follow-up ${marker} for ${trigger}: ${change}.${round.data.ignored.length ? ` Ignored (may not steer): ${round.data.ignored.map((entry) => `#${entry.id} by ${neutralizeInline(entry.author)}`).join(', ')}.` : ''}`, `round:${round.data.round}:summary`);
      }
      return { round: round.data.round, number, headSha: pushed.headSha, commit: pushed.commit, replied };
    },
  };
}
