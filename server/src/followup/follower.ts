import type { Task, TaskEvent } from '@dockhand/protocol';
import { isRed, type PullRequestCheck } from '../forge/checks';
import { modelText, type FollowedThreads, type PullRequestComment, type PullRequestThreadStore } from '../forge/comments';
import { forgeBlock, forgeCode, markHidden } from '../policy/neutralise';
import type { FlakyStore } from '../feedback/types';
import type { PullRequest } from '../forge/types';
import type { Logger } from '../log';
import type { CheckpointStore } from '../runner/checkpoints';
import { pushedDiff } from '../runner/review-files';
import type { EventLog } from '../store/hub';
import { LOCAL_CHECK, type LocalCi } from './local-ci';
import { checkMessage, DEFAULT_MAX_ROUNDS, lastPushedHead, roundMessage, roundsStarted, seenThrough, startCutShort, unpushedRound } from './rounds';
import { triageCheck, type Triage } from './triage';

/*
 * Follows the PRs of tasks in `pr_open` on the local forge (issue 26): a new comment or a review
 * asking for changes from someone who may steer, or a red check the PR caused, sends the task back
 * to `running` at the PR branch's head for one more round. Everything is recorded on the task
 * first (`pr.feedback`): comments from others as ignored, a red check the PR did not cause with its
 * triage (and a PR comment saying so), a round past the PR's limits as a `limit` (and a PR comment).
 *
 * The warm start: the task's workspace checkpoint is set to the diff the PR holds, so the runner's
 * next sandbox is the base snapshot with the branch applied (no cold build), and the round's
 * `review.requested_changes` carries the same diff, so the developer's review shows this round's
 * changes only.
 */

export interface FollowerLimits {
  /** Follow-up rounds per PR (default 3). */
  maxRounds?: number;
  /** The task's whole cost (every round) past which no round starts (default: none). */
  maxCostUsd?: number;
}

export interface FollowerOptions {
  log: EventLog;
  /** The local forge's threads, or GitHub's (`forge/github-threads.ts`: deliveries and polls recorded in the store). */
  threads: FollowedThreads;
  /** The same store the threads use: checks at the base commit. */
  threadStore: PullRequestThreadStore;
  checkpoints?: CheckpointStore;
  /** Something became runnable. */
  wake: () => void;
  limits?: FollowerLimits;
  /** Test ids failing at a task's base (the baseline), when known. */
  baselineFailures?: (task: Task) => Promise<readonly string[] | undefined>;
  intervalMs?: number;
  logger?: Logger;
  /** Where a flaky check's failing tests are quarantined, as the feedback engine's flaky tests are. */
  flakyStore?: FlakyStore;
  /** The local forge's own CI on each new PR head (opt-in, `local-ci.ts`). */
  localCi?: LocalCi;
  /** On a fleet, only the leader follows (a comment starts one round, once). */
  leader?: () => Promise<boolean>;
}

type Opened = Extract<TaskEvent, { type: 'pr.opened' }>;

/** Where a follow-up round ends when it pushes nothing. */
const ROUND_ENDS = ['failed', 'budget_exhausted', 'cancelled'] as const;

export class PullRequestFollower {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<string[]> | undefined;
  private again = false;

  constructor(private readonly options: FollowerOptions) {}

  start(): void {
    this.timer = setInterval(() => void this.pollOnce().catch((error: unknown) => this.options.logger?.warn({ err: error }, 'PR follow-up poll failed')), this.options.intervalMs ?? 5000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** One pass over the followed PRs; returns the tasks sent back to work. A call during a pass runs once more after it. */
  async pollOnce(): Promise<string[]> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.pass().finally(() => {
      this.running = undefined;
    });
    const started = await this.running;
    if (this.again) {
      this.again = false;
      return [...started, ...(await this.pollOnce())];
    }
    return started;
  }

  private async pass(): Promise<string[]> {
    if (this.options.leader && !(await this.options.leader())) return [];
    const started: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.options.log.store.listTasks({ state: 'pr_open', limit: 200, ...(cursor ? { cursor } : {}) });
      for (const task of page.tasks) {
        try {
          if (await this.follow(task)) started.push(task.id);
        } catch (error) {
          this.options.logger?.warn({ err: error, taskId: task.id }, 'following the PR failed');
        }
      }
      cursor = page.nextCursor;
    } while (cursor);
    for (const state of ROUND_ENDS) {
      cursor = undefined;
      do {
        const page = await this.options.log.store.listTasks({ state, limit: 200, ...(cursor ? { cursor } : {}) });
        for (const task of page.tasks.filter((candidate) => candidate.prUrl !== undefined)) {
          await this.roundEnded(task).catch((error: unknown) => this.options.logger?.warn({ err: error, taskId: task.id }, 'taking back a PR whose round ended failed'));
        }
        cursor = page.nextCursor;
      } while (cursor);
    }
    return started;
  }

  /**
   * A follow-up round that ended without its push (it failed, ran out of its budget, or the
   * reviewer rejected it) leaves the PR as the last push left it. The PR is not dropped silently:
   * the task goes back to `pr_open` (still followed, its merge still recorded) saying why, the PR
   * gets a comment with the rounds left, and the stored diff is the branch's again, so the next
   * round starts from what the PR holds. The round counts against the PR's limits. True when it
   * was taken back.
   */
  async roundEnded(task: Task): Promise<boolean> {
    const { log } = this.options;
    const events = await log.store.listEvents(task.id);
    const round = unpushedRound(events);
    const opened = [...events].reverse().find((event): event is Opened => event.type === 'pr.opened');
    if (!round || round.data.round === undefined || !opened) return false;
    const start = [...events].reverse().find((event) => event.seq < round.seq && event.type === 'review.requested_changes');
    const ended = [...events].reverse().find((event) => event.type === 'task.state');
    const why = ended?.type === 'task.state' ? ended.data.reason ?? ended.data.state : task.state;
    const what = task.state === 'cancelled' ? `was rejected (${why})` : task.state === 'budget_exhausted' ? `ran out of its budget (${why})` : `failed (${why})`;
    const limit = this.limitReached(task, events);
    const next = limit ? `Dockhand stops here: ${limit}.` : `A new review comment starts the next round (${this.roundsLeft(events)} left).`;
    const marker = `Round ${round.data.round} ${what}`;
    const view = await this.options.threads.view(task.context.repo, opened.data.number);
    const said = (await this.options.threadStore.listComments(view.pr.repo, opened.data.number)).some((comment) => comment.steering === 'bot' && comment.body.startsWith(marker));
    if (!said && view.pr.state === 'open') await this.replyOnce(view.pr, `round:${round.data.round}:ended`, `${marker}: nothing was pushed, and the PR is as the last push left it (${lastPushedHead(events)?.slice(0, 12) ?? 'unknown'}). ${next}`);
    // What the branch holds again: the round's start recorded it.
    if (start?.type === 'review.requested_changes' && start.data.reviewedDiff !== undefined) {
      await log.store.setResult(task.id, { diff: start.data.reviewedDiff, summary: (await log.store.getResult(task.id))?.summary ?? '' });
    }
    await log.append(task.id, { type: 'task.state', data: { state: 'pr_open', reason: `round ${round.data.round} ${what}; nothing pushed, the PR is unchanged. ${next}` } });
    return true;
  }

  private roundsLeft(events: readonly TaskEvent[]): number {
    return Math.max(0, (this.options.limits?.maxRounds ?? DEFAULT_MAX_ROUNDS) - roundsStarted(events));
  }

  /** Looks at one task's PR; true when it went back to work. */
  async follow(task: Task): Promise<boolean> {
    const { log } = this.options;
    const events = await log.store.listEvents(task.id);
    const opened = [...events].reverse().find((event): event is Opened => event.type === 'pr.opened');
    if (!opened) return false;
    const cut = startCutShort(events);
    if (cut) {
      await this.toRunning(task, cut.data.round ?? 2, opened.data.number);
      return true;
    }
    const view = await this.options.threads.view(task.context.repo, opened.data.number);
    if (view.pr.state !== 'open') return false; // the outcome poller records merges and closes
    const seen = seenThrough(events);
    const fresh = view.comments.filter((comment) => comment.id > seen.comments && comment.steering !== 'bot');
    const headChecks = await this.options.threadStore.listChecks(view.pr.repo, view.pr.headSha);
    const { localCi } = this.options;
    if (localCi && !localCi.isRunning(view.pr) && !headChecks.some((check) => check.name === LOCAL_CHECK)) {
      const stored = await log.store.getResult(task.id);
      void localCi.checkHead(task, view.pr, stored ? pushedDiff(stored.diff, events) : '').then(() => this.pollOnce()).catch(() => undefined);
    }
    const freshChecks = headChecks.filter((check) => check.id > seen.checks);
    if (fresh.length === 0 && freshChecks.length === 0) return false;
    const marks = {
      number: opened.data.number,
      seenThrough: Math.max(seen.comments, ...fresh.map((comment) => comment.id)),
      checksSeenThrough: Math.max(seen.checks, ...freshChecks.map((check) => check.id)),
    };
    const ignored = fresh.filter((comment) => comment.steering === 'ignored').map((comment) => ({ id: comment.id, author: comment.author, reason: comment.ignoredBecause ?? 'may not steer' }));
    const steering = fresh.filter((comment) => comment.steering === 'allowed' && (comment.kind === 'comment' || comment.verdict === 'request_changes'));
    const red = await this.triageRed(task, freshChecks, headChecks);

    if (steering.length === 0 && red?.triage.triage !== 'caused') {
      if (red) {
        if (red.triage.triage === 'flaky') await this.quarantine(task, red.check, red.triage);
        // The check's name and the log line in the evidence are the CI's words, not the server's: quoted as code, nothing in them renders.
        await this.replyOnce(view.pr, `triage:check:${red.check.id}`, `Check ${forgeCode(red.check.name)} is red, and it is not this PR's doing: **${red.triage.triage.replace('_', '-')}**. No round was started. The evidence:\n\n${forgeBlock(red.triage.evidence)}`);
        await log.append(task.id, { type: 'pr.feedback', data: { ...marks, kind: 'triaged', comments: [], ignored, check: checkSummary(red.check, red.triage) } });
      } else {
        await log.append(task.id, { type: 'pr.feedback', data: { ...marks, kind: ignored.length > 0 ? 'ignored' : 'seen', comments: [], ignored } });
      }
      return false;
    }

    const limit = this.limitReached(task, events);
    if (limit) {
      await this.replyOnce(view.pr, `limit:${marks.seenThrough}:${marks.checksSeenThrough}`, `Dockhand stopped following this PR: ${limit}. Nothing more is changed automatically; push to the branch or open a new task.`);
      await log.append(task.id, { type: 'pr.feedback', data: { ...marks, kind: 'limit', comments: [], ignored, reason: limit } });
      return false;
    }

    const round = roundsStarted(events) + 2;
    const text = steering.length > 0 ? roundMessage(round, opened.data.number, steering) : checkMessage(round, opened.data.number, red!.check, red!.triage.evidence, red!.triage.failingTests);
    const stored = await log.store.getResult(task.id);
    const onBranch = stored ? pushedDiff(stored.diff, events) : '';
    // The warm start: the next sandbox gets the PR's diff on the base snapshot.
    await this.options.checkpoints?.save(task.id, events.at(-1)?.seq ?? 0, onBranch);
    const by = [...new Set(steering.map((comment) => comment.author))].join(', ') || `check ${markHidden(red!.check.name, 'check name').text}`;
    await log.append(task.id, {
      type: 'review.requested_changes',
      data: { by, comments: steering.map((comment) => ({ ...(comment.path ? { path: comment.path, line: comment.line } : {}), body: modelText(comment) || '(no text)' })), reviewedDiff: onBranch, followUp: { number: opened.data.number, round } },
    });
    await log.append(task.id, { type: 'user.message', data: { from: steering.length > 0 ? 'pr-review' : 'pr-check', text } });
    await log.append(task.id, {
      type: 'pr.feedback',
      data: { ...marks, kind: 'round', round, comments: steering.map(feedbackComment), ignored, ...(red && steering.length === 0 ? { check: checkSummary(red.check, red.triage) } : {}) },
    });
    await this.toRunning(task, round, opened.data.number);
    return true;
  }

  /** A PR comment written before the event that records it: posted once even if the server dies in between (`FollowedThreads.replyOnce`). */
  private async replyOnce(pr: PullRequest, key: string, body: string): Promise<void> {
    const { threads } = this.options;
    await (threads.replyOnce ? threads.replyOnce(pr, body, key) : threads.reply(pr, body));
  }

  private async toRunning(task: Task, round: number, number: number): Promise<void> {
    await this.options.log.append(task.id, { type: 'task.state', data: { state: 'running', reason: `round ${round}: review on PR #${number}` } });
    this.options.wake();
  }

  /** A flaky check's failing tests, as the log names them, join the repository's quarantine. */
  private async quarantine(task: Task, check: PullRequestCheck, triage: Triage): Promise<void> {
    const { flakyStore } = this.options;
    if (!flakyStore) return;
    for (const testId of triage.failingTests) {
      await flakyStore.quarantine(task.context.repo, testId, [
        { testId, diffHash: check.sha, outcome: 'failed', at: check.createdAt },
        { testId, diffHash: check.sha, outcome: 'passed', at: check.createdAt },
      ]);
    }
  }

  private limitReached(task: Task, events: readonly TaskEvent[]): string | undefined {
    const maxRounds = this.options.limits?.maxRounds ?? DEFAULT_MAX_ROUNDS;
    const rounds = roundsStarted(events);
    if (rounds >= maxRounds) return `its ${maxRounds} follow-up rounds are used`;
    const cap = this.options.limits?.maxCostUsd;
    if (cap !== undefined && task.usage.costUsd >= cap) return `the cost cap of $${cap.toFixed(2)} across its rounds is reached ($${task.usage.costUsd.toFixed(2)})`;
    return undefined;
  }

  /** The first check name with a new red result, triaged against its other runs and the base. */
  private async triageRed(task: Task, fresh: readonly PullRequestCheck[], headChecks: readonly PullRequestCheck[]): Promise<{ check: PullRequestCheck; triage: Triage } | undefined> {
    const red = [...fresh].reverse().find((check) => isRed(check.conclusion));
    if (!red) return undefined;
    const baseChecks = await this.options.threadStore.listChecks(task.context.repo, task.context.baseSha);
    const baselineFailures = await this.options.baselineFailures?.(task).catch(() => undefined);
    return { check: red, triage: triageCheck({ check: red, headChecks, baseChecks, ...(baselineFailures ? { baselineFailures } : {}) }) };
  }
}

function feedbackComment(comment: PullRequestComment): { id: number; author: string; path?: string; line?: number; body: string } {
  return { id: comment.id, author: comment.author, ...(comment.path ? { path: comment.path } : {}), ...(comment.line !== undefined ? { line: comment.line } : {}), body: modelText(comment).slice(0, 2000) };
}

function checkSummary(check: PullRequestCheck, triage: Triage) {
  return { id: check.id, name: check.name, conclusion: check.conclusion, triage: triage.triage, evidence: triage.evidence };
}
