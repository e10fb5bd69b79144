import type { NewEvent } from '@dockhand/protocol';
import { pushChange, type Person, type PushChangeResult } from './push';
import { redact } from './redact';
import type { Forge, PullRequest, PullRequestOutcome } from './types';

/**
 * Push, then open the draft PR: the last step of a task. Both halves are idempotent (the push
 * checks the remote branch, the forge returns the open PR of the branch), so the runner may call
 * this again after a crash without a second push or a second PR.
 */

export interface DeliverInput {
  forge: Forge;
  repo: string;
  /** The server's own clone for this repo (see `pushChange`). */
  cloneDir: string;
  baseSha: string;
  diff: string;
  branch: string;
  /** PR title; also the commit subject unless `commitMessage` is given. */
  title: string;
  commitMessage?: string;
  /** PR body, e.g. from `buildPullRequestBody`. */
  body: string;
  requester?: Person;
  /** Base branch of the PR; default: the repo's default branch. */
  base?: string;
  /** Fixed commit date (ISO 8601), e.g. the time the push was approved. */
  date?: string;
}

export interface DeliverResult {
  pr: PullRequest;
  push: PushChangeResult;
}

export async function deliverPullRequest(input: DeliverInput): Promise<DeliverResult> {
  const target = await input.forge.pushTarget(input.repo);
  const push = await pushChange({
    cloneDir: input.cloneDir,
    remoteUrl: target.url,
    token: target.token,
    tokenUsername: target.username,
    baseSha: input.baseSha,
    diff: input.diff,
    branch: input.branch,
    message: input.commitMessage ?? input.title,
    requester: input.requester,
    date: input.date,
  });
  const pr = await input.forge.openPullRequest({
    repo: input.repo,
    branch: input.branch,
    base: input.base ?? target.defaultBranch,
    title: input.title,
    body: redact(input.body, [target.token]),
    draft: true,
  });
  return { pr, push };
}

export function prOpenedEvent(pr: PullRequest): NewEvent {
  return { type: 'pr.opened', data: { number: pr.number, url: pr.url, branch: pr.branch, headSha: pr.headSha } };
}

export function prOutcomeEvent(outcome: PullRequestOutcome): NewEvent {
  return { type: 'pr.outcome', data: { outcome: outcome.outcome, at: outcome.at } };
}
