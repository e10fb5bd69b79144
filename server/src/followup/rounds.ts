import type { TaskEvent } from '@dockhand/protocol';
import { modelText, type PullRequestComment } from '../forge/comments';
import type { PullRequestCheck } from '../forge/checks';
import { hiddenNote, markHidden, type HiddenForm } from '../policy/neutralise';

/*
 * A followed PR's rounds, read from the task's log: which comments and checks were already taken
 * into account, how many rounds ran, which round still has to push. Pure functions of the events,
 * so a server killed in the middle of a round finds where it was.
 */

export type FeedbackEvent = Extract<TaskEvent, { type: 'pr.feedback' }>;
export type PushedEvent = Extract<TaskEvent, { type: 'pr.pushed' }>;

/** Round 1 is the task's first run; follow-up rounds count from 2. */
export const DEFAULT_MAX_ROUNDS = 3;

export function feedbackEvents(events: readonly TaskEvent[]): FeedbackEvent[] {
  return events.filter((event): event is FeedbackEvent => event.type === 'pr.feedback');
}

/** Highest comment and check ids already taken into account. */
export function seenThrough(events: readonly TaskEvent[]): { comments: number; checks: number } {
  let comments = 0;
  let checks = 0;
  for (const event of feedbackEvents(events)) {
    comments = Math.max(comments, event.data.seenThrough);
    checks = Math.max(checks, event.data.checksSeenThrough);
  }
  return { comments, checks };
}

/** Follow-up rounds started so far. */
export function roundsStarted(events: readonly TaskEvent[]): number {
  return feedbackEvents(events).filter((event) => event.data.kind === 'round').length;
}

/** The latest follow-up round's number (2, 3, …); undefined before any (the task's `round`). */
export function latestRound(events: readonly TaskEvent[]): number | undefined {
  return feedbackEvents(events).filter((event) => event.data.kind === 'round').at(-1)?.data.round;
}

/** The follow-up round that started and has not pushed yet (the runner's next push is its). */
export function unpushedRound(events: readonly TaskEvent[]): FeedbackEvent | undefined {
  const pushed = new Set(events.flatMap((event) => (event.type === 'pr.pushed' ? [event.data.round] : [])));
  return feedbackEvents(events).filter((event) => event.data.kind === 'round' && event.data.round !== undefined && !pushed.has(event.data.round)).at(-1);
}

/** The PR branch's head as Dockhand last pushed it. */
export function lastPushedHead(events: readonly TaskEvent[]): string | undefined {
  for (const event of [...events].reverse()) {
    if (event.type === 'pr.pushed') return event.data.headSha;
    if (event.type === 'pr.opened') return event.data.headSha;
  }
  return undefined;
}

/**
 * A round whose start was cut short: its `pr.feedback` is written but the task never went back to
 * `running` (the server died between the two). The follower finishes it.
 */
export function startCutShort(events: readonly TaskEvent[]): FeedbackEvent | undefined {
  const last = feedbackEvents(events).at(-1);
  if (!last || last.data.kind !== 'round') return undefined;
  const movedOn = events.some((event) => event.seq > last.seq && event.type === 'task.state');
  return movedOn ? undefined : last;
}

const MESSAGE_LIMIT = 19_000;

/** The round's instructions for the model: each comment with its file, line and hunk; hidden content left out. */
export function roundMessage(round: number, number: number, comments: readonly PullRequestComment[]): string {
  const parts = comments.map((comment, index) => {
    const what = comment.kind === 'review' ? 'review asking for changes' : 'comment';
    const where = comment.path ? ` on ${comment.path}${comment.line !== undefined ? ` line ${comment.line}` : ' (a removed line)'}` : '';
    const hunk = comment.hunk ? `\n\`\`\`diff\n${comment.hunk}\n\`\`\`` : '';
    return `[${index + 1}] ${comment.author}'s ${what}${where}:${hunk}\n${modelText(comment) || '(no text)'}`;
  });
  const text = [
    `Review on pull request #${number} (round ${round}). The workspace is the PR branch's head. Make the changes these ask for; where one needs no code change, say why in the finish summary. Then call finish: your changes become one new commit on the PR.`,
    ...parts,
  ].join('\n\n');
  return text.length > MESSAGE_LIMIT ? `${text.slice(0, MESSAGE_LIMIT)}\n[… cut: the comments are longer than a message holds]` : text;
}

/**
 * The round's instructions when a red check caused by the PR starts it. The check's name and log
 * are an outside CI's text (anyone who can push a workflow writes them): what would not show in
 * a rendered log (invisible and TAG characters, HTML comments …) is marked, and said so.
 */
export function checkMessage(round: number, number: number, check: PullRequestCheck, evidence: string, failingTests: readonly string[]): string {
  const hidden = new Set<HiddenForm>();
  const shown = (text: string, source: string) => {
    const marked = markHidden(text, source);
    for (const form of marked.hidden) hidden.add(form);
    return marked.text;
  };
  const tests = failingTests.length > 0 ? `\nFailing tests named in the log: ${failingTests.map((test) => shown(test, 'CI log')).join(', ')}` : '';
  const log = shown(check.log, 'CI log');
  const note = hidden.size > 0 ? `\n\n${hiddenNote("the check's name and log", [...hidden])}` : '';
  const text = `The check "${shown(check.name, 'check name')}" failed (${check.conclusion}) on pull request #${number}'s head, and triage found this PR caused it: ${shown(evidence, 'CI log')}${tests}${note}\nFix it (round ${round}), then call finish: your changes become one new commit on the PR.\n\nThe check's log (head and tail):\n${log}`;
  return text.length > MESSAGE_LIMIT ? `${text.slice(0, MESSAGE_LIMIT)}\n[… cut]` : text;
}
