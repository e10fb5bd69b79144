import type { Ticket } from '@dockhand/protocol';

/*
 * Test edits are the requester's decision, never the model's: `--allow-test-edits` on the CLI,
 * the checkbox in the extension's send flow, or this label on the forge issue the task is for.
 * The server reads the label from the forge when the task is submitted (api/tasks.ts) and
 * records it on the task (`allowTestEditsLabel`) and in the PR body.
 */
export const ALLOW_TEST_EDITS_LABEL = 'dockhand:allow-test-edits';

/** The issue's label that allows test edits, as the forge spells it (compared case-insensitively). */
export function testEditsLabel(labels: readonly string[]): string | undefined {
  return labels.find((label) => label.trim().toLowerCase() === ALLOW_TEST_EDITS_LABEL);
}

export interface IssueLabels {
  listOpenIssues(repo: string): Promise<ReadonlyArray<{ id: string; labels?: readonly string[] }>>;
}

/**
 * The test-edits label of the issue a ticket names, read from the forge (undefined: a text
 * ticket, no forge, an issue without the label or no longer open). A forge that does not answer
 * throws: the caller decides (the submission goes on without the label and says so in the log).
 */
export async function issueTestEditsLabel(tickets: IssueLabels | undefined, repo: string, ticket: Ticket): Promise<string | undefined> {
  if (ticket.kind !== 'issue' || !tickets) return undefined;
  const issue = (await tickets.listOpenIssues(repo)).find((candidate) => candidate.id === ticket.id.replace(/^#/, ''));
  return issue ? testEditsLabel(issue.labels ?? []) : undefined;
}
