import type { TicketSummary } from '@dockhand/protocol';

/*
 * A pasted issue URL names one issue of one repository. It is taken only when it is an issue of
 * the repository this window sends to (its open issues' URLs, or the folder's origin) and one of
 * its open issues the server listed: never matched by number alone, so another repository's
 * issue #1 cannot become this repository's #1, and an unknown number is not sent with an empty
 * body. Pure, so the rules are tested without VS Code.
 */

export type IssueUrlMatch = { ticket: TicketSummary } | { problem: string };

const ISSUE_URL = /^(https?:\/\/\S+?)\/issues\/(\d+)\/?$/i;

/** `https://host/owner/name` for an issue prefix, an https/ssh/scp-like git URL; undefined for a local path. */
export function repositoryPage(url: string): string | undefined {
  const trimmed = url.trim().replace(/\/+$/, '').replace(/\.git$/i, '');
  const scp = /^[\w.-]+@([\w.-]+):(?!\/)(.+)$/.exec(trimmed);
  if (scp) return `https://${scp[1]}/${scp[2]}`.toLowerCase();
  const parsed = /^(?:https?|ssh|git):\/\/(?:[^@/]+@)?([^/:]+)(?::\d+)?\/(.+)$/i.exec(trimmed);
  return parsed ? `https://${parsed[1]}/${parsed[2]}`.toLowerCase() : undefined;
}

/** The shape check the input box runs on every keystroke. */
export function issueUrlShape(value: string): string | undefined {
  return ISSUE_URL.test(value.trim()) ? undefined : 'Paste an issue URL ending in /issues/<number>';
}

export function matchIssueUrl(input: string, open: readonly TicketSummary[], origin: string, repoName: string): IssueUrlMatch {
  const url = input.trim();
  const parsed = ISSUE_URL.exec(url);
  if (!parsed) return { problem: 'Paste an issue URL ending in /issues/<number>' };
  const page = repositoryPage(parsed[1] ?? '');
  const number = parsed[2] ?? '';
  const pages = new Set<string>();
  for (const ticket of open) {
    const prefix = ticket.url ? ISSUE_URL.exec(ticket.url)?.[1] : undefined;
    const known = prefix ? repositoryPage(prefix) : undefined;
    if (known) pages.add(known);
  }
  const fromOrigin = repositoryPage(origin);
  if (fromOrigin) pages.add(fromOrigin);
  if (pages.size > 0 && (!page || !pages.has(page))) {
    const here = [...pages][0] ?? repoName;
    return { problem: `That is an issue of ${page ? page.replace(/^https:\/\//, '') : url}, not of ${repoName} (${here.replace(/^https:\/\//, '')}). Paste an issue of this repository, or describe the task.` };
  }
  const ticket = open.find((candidate) => candidate.id === number);
  if (!ticket) {
    return { problem: `#${number} is not an open issue of ${repoName} (the server lists ${open.length} open issue${open.length === 1 ? '' : 's'}). Pick one from the list, or describe the task.` };
  }
  return { ticket: { ...ticket, url } };
}
