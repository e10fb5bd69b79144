import { button, h } from './dom';
import { refusalReason, summarizeToolInput, toolOutcome } from './tool-summary';
import { formatDuration, type Row } from './trajectory';

/*
 * Draws one trajectory row. Rows are rebuilt from data whenever their version changes, so they
 * hold no state of their own beyond what `RowContext` keeps (expanded outputs, loaded text).
 */

export interface RowContext {
  /** Full outputs fetched with "load more", by event seq. */
  loadedOutputs: Map<number, string>;
  /** Original length of outputs the extension clipped, by event seq. */
  clippedOutputs: Map<number, number>;
  /** Rows whose details the developer opened, by row seq. */
  expanded: Set<number>;
  loadOutput(seq: number): void;
  openDiff(path: string): void;
  /** A row changed height on its own (details toggled). */
  resized(element: HTMLElement): void;
}

export function renderRow(row: Row, context: RowContext): HTMLElement {
  switch (row.kind) {
    case 'text':
      return h('div', { className: 'row row-text', dataset: { seq: String(row.seq) } }, h('div', { className: 'prose' }, row.text));
    case 'user':
      return h(
        'div',
        { className: 'row row-user', dataset: { seq: String(row.seq) } },
        h('span', { className: 'who' }, `${row.from}:`),
        ' ',
        row.text,
      );
    case 'note':
      return h('div', { className: `row row-note tone-${row.tone}`, dataset: { seq: String(row.seq) } }, row.text);
    case 'tool':
      return renderTool(row, context);
    case 'tests':
      return renderTests(row, context);
    case 'runner':
      return renderRunner(row, context);
    case 'snapshot':
      return h(
        'div',
        { className: `row row-snapshot${row.done ? '' : ' active'}`, dataset: { seq: String(row.seq) } },
        h('div', {}, h('strong', {}, row.done ? (row.stage === 'failed' ? 'Sandbox snapshot build failed' : 'Sandbox snapshot built') : 'Building the sandbox snapshot'), ' ', h('span', { className: 'badge' }, `${row.stage} · ${formatDuration(row.elapsedMs)}`)),
        row.line ? h('code', { className: 'snapshot-line' }, row.line) : null,
      );
    case 'file':
      return renderFile(row, context);
    case 'approval': {
      // A push approval is decided in the Review section, not by a card of its own.
      // A policy override is decided by an owner of the repo, who may not be the one watching.
      const push = row.approvalKind === 'push';
      const override = row.approvalKind === 'policy_override';
      const waiting = push ? 'waiting for your review' : override ? 'waiting for a repo owner' : 'waiting for your decision';
      const status = row.resolved
        ? h('span', { className: `badge ${row.resolved.decision === 'approved' ? 'tone-ok' : 'tone-error'}` }, `${row.resolved.decision} by ${row.resolved.by}`)
        : h('span', { className: 'badge tone-warn' }, waiting);
      return h(
        'div',
        { className: 'row row-approval', dataset: { seq: String(row.seq) } },
        h('div', {}, h('strong', {}, push ? 'Push approval ' : override ? 'Policy override ' : 'Approval needed '), status),
        row.command ? h('code', { className: 'command' }, row.command) : null,
        h('div', { className: 'reason' }, row.reason),
      );
    }
  }
}

function collapsible(
  row: Row,
  context: RowContext,
  summary: HTMLElement,
  body: () => HTMLElement[],
  openByDefault = false,
): HTMLDetailsElement {
  const details = h('details', {}, summary);
  const open = context.expanded.has(row.seq) || (openByDefault && !context.expanded.has(-row.seq));
  if (open) {
    details.open = true;
    details.append(...body());
  }
  details.addEventListener('toggle', () => {
    if (details.open) {
      context.expanded.add(row.seq);
      context.expanded.delete(-row.seq);
      if (details.children.length === 1) details.append(...body());
    } else {
      context.expanded.delete(row.seq);
      context.expanded.add(-row.seq);
    }
    const container = details.closest<HTMLElement>('.row');
    if (container) context.resized(container);
  });
  return details;
}

function outputBlock(seq: number, output: string, context: RowContext): HTMLElement[] {
  const full = context.loadedOutputs.get(seq);
  const text = full ?? output;
  const total = context.clippedOutputs.get(seq);
  const blocks: HTMLElement[] = [h('pre', { className: 'output', attrs: { tabindex: '0' } }, text)];
  if (full === undefined && total !== undefined && total > text.length) {
    blocks.push(
      button(`Load more (${(total - text.length).toLocaleString('en')} more characters)`, 'link load-more', () => context.loadOutput(seq)),
    );
  }
  return blocks;
}

/**
 * The badge of a test run: a run whose only failures were already failing at the base is not a
 * plain green "tests pass" beside a count of failures; it says "no new failures" in amber.
 */
export function testsBadge(row: { ok: boolean; interrupted?: boolean; failed: number; preExisting: string[]; unjudged?: boolean }): { tone: string; label: string } {
  if (row.interrupted) return { tone: 'tone-muted', label: 'tests interrupted' };
  if (!row.ok) return { tone: 'tone-error', label: 'tests fail' };
  // Every step red at the base by its exit status alone: green here proves nothing.
  if (row.unjudged) return { tone: 'tone-warn', label: 'cannot judge' };
  if (row.failed > 0 || row.preExisting.length > 0) return { tone: 'tone-warn', label: 'no new failures' };
  return { tone: 'tone-ok', label: 'tests pass' };
}

function renderTool(row: Extract<Row, { kind: 'tool' }>, context: RowContext): HTMLElement {
  const result = row.result;
  const outcome = toolOutcome(result, row.interrupted);
  const duration = result ? formatDuration(result.durationMs) : '';
  const status = {
    interrupted: h('span', { className: 'badge tone-muted' }, 'interrupted'),
    running: h('span', { className: 'badge tone-info' }, 'running…'),
    refused: h('span', { className: 'badge tone-refused' }, 'refused'),
    error: h('span', { className: 'badge tone-error' }, `error · ${duration}`),
    ok: h('span', { className: 'badge tone-ok' }, duration),
  }[outcome];
  const summary = h(
    'summary',
    {},
    h('span', { className: 'tool-name' }, row.name),
    ' ',
    // The outcome before the input: a long path or command is cut at the edge, the outcome never.
    status,
    ' ',
    h('span', { className: 'tool-input', attrs: { title: summarizeToolInput(row.name, row.input) } }, summarizeToolInput(row.name, row.input)),
    outcome === 'refused' && result ? h('div', { className: 'refusal' }, refusalReason(result.output)) : null,
  );
  const body = (): HTMLElement[] => [
    h('div', { className: 'label' }, 'Input'),
    h('pre', { className: 'input', attrs: { tabindex: '0' } }, JSON.stringify(row.input, null, 2) ?? ''),
    ...(result
      ? [
          h('div', { className: 'label' }, result.truncated ? 'Output (cut by the server)' : 'Output'),
          ...outputBlock(result.seq, result.output, context),
        ]
      : []),
  ];
  return h('div', { className: `row row-tool outcome-${outcome}`, dataset: { seq: String(row.seq) } }, collapsible(row, context, summary, body));
}

function renderTests(row: Extract<Row, { kind: 'tests' }>, context: RowContext): HTMLElement {
  const pre = row.preExisting.length;
  const counts = `${row.passed} passed, ${row.failed} failed${pre ? ` (${pre} already failing at the base)` : ''}${row.skipped ? `, ${row.skipped} skipped` : ''}`;
  const { tone, label } = testsBadge(row);
  const summary = h(
    'summary',
    {},
    h('span', { className: `badge ${tone}` }, label),
    ' ',
    h('span', { className: 'test-counts' }, counts),
    ' ',
    h('span', { className: 'muted' }, `${row.scope} · ${formatDuration(row.durationMs)}`),
  );
  const body = (): HTMLElement[] => [
    h('code', { className: 'command' }, row.command),
    ...(pre
      ? [h('div', { className: 'label' }, 'Already failing at the base commit (not the agent\'s):'), h('ul', { className: 'pre-existing' }, ...row.preExisting.map((name) => h('li', {}, name)))]
      : []),
    ...(row.cannotJudge?.length
      ? [
          h('div', { className: 'label' }, row.unjudged ? 'No step can judge this change: counted by exit status, failing at the base commit:' : 'Cannot judge (counted by exit status, failing at the base commit):'),
          h('ul', { className: 'cannot-judge' }, ...row.cannotJudge.map((name) => h('li', {}, name))),
        ]
      : []),
    ...outputBlock(row.seq, row.output, context),
  ];
  return h('div', { className: 'row row-tests', dataset: { seq: String(row.seq) } }, collapsible(row, context, summary, body, !row.ok && !row.interrupted));
}

const RUNNER_FAILURES: Record<string, string> = {
  missing: 'the test runner is not installed',
  start: 'the test runner could not start',
  crash: 'the test runner crashed',
  timeout: 'the test runner timed out',
  no_report: 'the test runner gave no report',
  no_tests: 'the test suite ran no test',
};

function renderRunner(row: Extract<Row, { kind: 'runner' }>, context: RowContext): HTMLElement {
  const summary = h(
    'summary',
    {},
    h('span', { className: 'badge tone-error' }, 'test infrastructure'),
    ' ',
    `${RUNNER_FAILURES[row.failure] ?? row.failure}: ${row.message}`,
  );
  const body = (): HTMLElement[] => [h('code', { className: 'command' }, row.command), ...(row.output ? outputBlock(row.seq, row.output, context) : [])];
  return h('div', { className: 'row row-runner', dataset: { seq: String(row.seq) } }, collapsible(row, context, summary, body));
}

export function renderPatch(patch: string): HTMLElement {
  // Focusable: a long diff scrolls sideways, and a keyboard user must be able to scroll it too.
  const pre = h('pre', { className: 'diff', attrs: { tabindex: '0' } });
  for (const line of patch.split('\n')) {
    let className = 'diff-context';
    if (line.startsWith('+++') || line.startsWith('---') || line.startsWith('diff ') || line.startsWith('index ')) className = 'diff-meta';
    else if (line.startsWith('@@')) className = 'diff-hunk';
    else if (line.startsWith('+')) className = 'diff-add';
    else if (line.startsWith('-')) className = 'diff-del';
    pre.append(h('span', { className }, line), '\n');
  }
  return pre;
}

function renderFile(row: Extract<Row, { kind: 'file' }>, context: RowContext): HTMLElement {
  const added = row.patch.split('\n').filter((l) => l.startsWith('+') && !l.startsWith('+++')).length;
  const removed = row.patch.split('\n').filter((l) => l.startsWith('-') && !l.startsWith('---')).length;
  const summary = h(
    'summary',
    {},
    h('span', { className: `badge change-${row.change}` }, row.change),
    ' ',
    h('span', { className: 'file-path' }, row.path),
    ' ',
    h('span', { className: 'diff-stat' }, h('span', { className: 'diff-add' }, `+${added}`), ' ', h('span', { className: 'diff-del' }, `−${removed}`)),
  );
  const body = (): HTMLElement[] => [
    button('Open diff', 'link open-diff', () => context.openDiff(row.path), `Compare ${row.path} with the base`),
    renderPatch(row.patch),
  ];
  return h('div', { className: 'row row-file', dataset: { seq: String(row.seq) } }, collapsible(row, context, summary, body, true));
}
