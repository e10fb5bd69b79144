/*
 * Turns a task's failure (the `task.failed` code and message, or a test runner's failure) into one
 * message in plain words: what kind of failure it was, what happened, and what to do. The raw text
 * (request ids, stack lines, regexes) stays in the extension's output channel, never in the panel.
 * Shared by the side panel (banner) and the extension (notification, status bar).
 */

export type FailureKind =
  | 'model_refused'
  | 'model_unreachable'
  | 'sandbox'
  | 'repository'
  | 'policy'
  | 'budget'
  | 'test_infrastructure'
  | 'internal';

export interface Failure {
  kind: FailureKind;
  /** A short heading: "The model could not be reached". */
  title: string;
  /** The server's message, first line only, cleaned of ids; may be empty. */
  detail: string;
  /** What the developer can do about it. */
  action: string;
}

const TITLES: Record<FailureKind, [string, string]> = {
  model_refused: ['The model declined this ticket', 'Reword the ticket or split it into smaller steps, then send it again.'],
  model_unreachable: ['The model could not be reached', 'Send the ticket again later; the server log has the model API\'s answer.'],
  sandbox: ['The sandbox could not run', 'Ask whoever runs the Dockhand server to check Docker and gVisor there (scripts/setup-host.sh).'],
  repository: ['The repository could not be prepared', 'Check that the repository is registered and that the base commit is pushed.'],
  policy: ['Repository policy blocked the change', 'Fix what the policy lists, or ask a repository owner to override it.'],
  budget: ['A budget ran out', 'Send the ticket again with a larger budget, or narrow the ticket.'],
  test_infrastructure: ['The repository\'s test runner failed (not the tests)', 'Check the test command in .dockhand/environment.yml; the output is in the Dockhand output channel.'],
  internal: ['Dockhand hit an internal error', 'Send the ticket again; if it repeats, the details are in the Dockhand output channel.'],
};

/** Which kind of failure a `task.failed` event reports. */
export function failureKind(code: string, message: string): FailureKind {
  if (code === 'model_unavailable') return 'model_unreachable';
  if (code === 'refusal' || /\brefus/i.test(message)) return 'model_refused';
  if (code === 'sandbox_unavailable') return 'sandbox';
  if (code === 'policy_violation') return 'policy';
  if (code === 'budget_exceeded') return 'budget';
  if (code === 'test_infrastructure') return 'test_infrastructure';
  if (/\b(repositor(y|ies)|mirror|clone|git|base sha|commit|branch)\b/i.test(message)) return 'repository';
  return 'internal';
}

/** The first line of a server message without request ids or trailing punctuation, at most 240 characters. */
export function plainDetail(message: string): string {
  const first = message.split('\n').find((line) => line.trim()) ?? '';
  const cleaned = first
    .replace(/\s*\(?\b(request[_ -]?id|req)[:= -]+[\w-]+\)?/gi, '')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[.:;]+$/, '');
  return cleaned.length > 240 ? `${cleaned.slice(0, 239)}…` : cleaned;
}

export function classifyFailure(code: string, message: string): Failure {
  const kind = failureKind(code, message);
  const [title, action] = TITLES[kind];
  return { kind, title, detail: plainDetail(message), action };
}

/** One line: "The sandbox could not run: sandbox sb-1 is gone." */
export function describeFailure(failure: Failure): string {
  return failure.detail ? `${failure.title}: ${failure.detail}.` : `${failure.title}.`;
}
