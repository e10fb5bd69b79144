import { DEFAULT_REVERT_WINDOW_DAYS, type PullRequestOutcome } from './types';

/**
 * Revert detection, shared by both forges: a commit on the base branch, dated within the window
 * after the merge, whose message says `This reverts commit <sha>` (what `git revert` and GitHub's
 * Revert button write) for one of the PR's commits or its merge commit. Abbreviated SHAs of at
 * least 7 characters count.
 */

export interface BranchCommit {
  sha: string;
  message: string;
  /** Commit date, ISO 8601. */
  date: string;
}

const REVERTS = /This reverts commit ([0-9a-f]{7,40})/gi;
const DAY_MS = 86_400_000;

export function findRevert(options: {
  /** Commits on the base branch after the merge. */
  commits: BranchCommit[];
  /** The PR's own commits and its merge/squash commit. */
  prShas: string[];
  mergedAt: string;
  windowDays?: number;
}): PullRequestOutcome | undefined {
  // Commit dates have whole seconds; a revert in the same second as the merge still counts.
  const mergedMs = Math.floor(Date.parse(options.mergedAt) / 1000) * 1000;
  const windowEnd = mergedMs + (options.windowDays ?? DEFAULT_REVERT_WINDOW_DAYS) * DAY_MS;
  const shas = options.prShas.map((sha) => sha.toLowerCase());
  const candidates = options.commits
    .filter((commit) => {
      const at = Date.parse(commit.date);
      return at >= mergedMs && at <= windowEnd;
    })
    .sort((a, b) => Date.parse(a.date) - Date.parse(b.date));
  for (const commit of candidates) {
    for (const match of commit.message.matchAll(REVERTS)) {
      const reverted = match[1]!.toLowerCase();
      if (shas.some((sha) => sha.startsWith(reverted))) {
        return { outcome: 'reverted', at: new Date(Date.parse(commit.date)).toISOString(), revertSha: commit.sha };
      }
    }
  }
  return undefined;
}
