import type { TicketSummary } from '@dockhand/protocol';

/*
 * A pasted issue URL names one issue of one repository. It is taken only when it names the
 * repository this window sends to, on its forge, and one of its open issues the server listed:
 * never matched by number alone, so another repository's issue #1 cannot become this
 * repository's #1, and an unknown number is not sent with an empty body.
 *
 * The window's repository is known by its open issues' URLs (what the server's forge calls it),
 * by the folder's `origin` when that is a web or ssh URL, and, when neither names it (the local
 * forge lists issues as `dockhand-local://<repo>/issues/N` and an `origin` may be a path), by the
 * local forge's own form of the registered name. So the check is never skipped: there is always
 * at least one repository to compare with. Pure, so the rules are tested without VS Code.
 */

export type IssueUrlMatch = { ticket: TicketSummary } | { problem: string };

/** An issue URL on the web (`https://host/owner/name/issues/N`) or on the local forge (`dockhand-local://name/issues/N`). */
const ISSUE_URL = /^((?:https?|dockhand-local):\/\/\S+?)\/issues\/(\d+)\/?$/i;

const SHAPE_PROBLEM = 'Paste an issue URL ending in /issues/<number> (https://… or dockhand-local://…)';

/**
 * The repository a URL names, as one comparable string: `https://host/owner/name` for an https,
 * ssh or scp-like git URL, `dockhand-local://name` for the local forge; undefined for a local path.
 */
export function repositoryPage(url: string): string | undefined {
  const trimmed = url.trim().replace(/\/+$/, '').replace(/\.git$/i, '');
  const local = /^dockhand-local:\/\/([^/?#\s]+)$/i.exec(trimmed);
  if (local) return `dockhand-local://${decodeName(local[1] ?? '')}`.toLowerCase();
  const scp = /^[\w.-]+@([\w.-]+):(?!\/)(.+)$/.exec(trimmed);
  if (scp) return `https://${scp[1]}/${scp[2]}`.toLowerCase();
  const parsed = /^(?:https?|ssh|git):\/\/(?:[^@/]+@)?([^/:]+)(?::\d+)?\/(.+)$/i.exec(trimmed);
  return parsed ? `https://${parsed[1]}/${parsed[2]}`.toLowerCase() : undefined;
}

function decodeName(name: string): string {
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

/** The shape check the input box runs on every keystroke. */
export function issueUrlShape(value: string): string | undefined {
  return ISSUE_URL.test(value.trim()) ? undefined : SHAPE_PROBLEM;
}

/** The pages this window's repository is known by (never empty: see the header). */
export function repositoryPages(open: readonly TicketSummary[], origin: string, repoName: string): Set<string> {
  const pages = new Set<string>();
  for (const ticket of open) {
    const prefix = ticket.url ? ISSUE_URL.exec(ticket.url)?.[1] : undefined;
    const known = prefix ? repositoryPage(prefix) : undefined;
    if (known) pages.add(known);
  }
  const fromOrigin = repositoryPage(origin);
  if (fromOrigin) pages.add(fromOrigin);
  if (pages.size === 0) pages.add(`dockhand-local://${repoName}`.toLowerCase());
  return pages;
}

const shown = (page: string): string => page.replace(/^https:\/\//, '');

export function matchIssueUrl(input: string, open: readonly TicketSummary[], origin: string, repoName: string): IssueUrlMatch {
  const url = input.trim();
  const parsed = ISSUE_URL.exec(url);
  if (!parsed) return { problem: SHAPE_PROBLEM };
  const page = repositoryPage(parsed[1] ?? '');
  const number = parsed[2] ?? '';
  const pages = repositoryPages(open, origin, repoName);
  if (!page || !pages.has(page)) {
    const here = [...pages].map(shown).join(' or ');
    return { problem: `That is an issue of ${page ? shown(page) : parsed[1]}, not of ${repoName} (${here}). Paste an issue of this repository, or describe the task.` };
  }
  const ticket = open.find((candidate) => candidate.id === number);
  if (!ticket) {
    return { problem: `#${number} is not an open issue of ${repoName} (the server lists ${open.length} open issue${open.length === 1 ? '' : 's'}). Pick one from the list, or describe the task.` };
  }
  return { ticket: { ...ticket, url } };
}
