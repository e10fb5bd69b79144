import { isFinalState, type TaskState } from '@dockhand/protocol';
import { button, h } from './dom';
import type { FromWebview, PendingComment, ReviewAction, ReviewFile } from './messages';
import type { TrajectorySummary } from './trajectory';

/*
 * The one compact area under the trajectory where the developer acts on a task: one text box whose
 * buttons change with the state (steer and cancel while the agent works; approve, request changes
 * and reject in review; the pull request once it is open), the review's verdicts on one line, and
 * the line comments waiting to go out with "Request changes". It never scrolls inside itself
 * except a long list of changed files, so the trajectory keeps the height.
 */

export interface ActionAreaInput {
  taskId: string;
  state: TaskState;
  summary: TrajectorySummary;
  /** False for a viewer who is not the requester: no review, steering or cancel. */
  mayReview: boolean;
  requester?: string;
  pending: PendingComment[];
  /**
   * The diff under review's files with the decisions, as the extension read them from the server
   * (never the trajectory's change events): unchecked ones are left out of the push; a row without
   * a change was left out at an earlier approval and is not in the diff.
   */
  files: ReviewFile[];
}

/** The counts the area shows: files of the diff, those left out of it, and files left out earlier. */
export function fileCounts(files: readonly ReviewFile[]): { changed: number; leftOut: number; pushed: number } {
  const changed = files.filter((file) => file.change !== undefined);
  const pushed = changed.filter((file) => file.accepted).length;
  return { changed: changed.length, pushed, leftOut: files.filter((file) => !file.accepted).length };
}

export interface ActionCallbacks {
  post(message: FromWebview): void;
  draftChanged(text: string): void;
}

type Mode = 'work' | 'paused' | 'review' | 'none';

function modeOf(input: ActionAreaInput): Mode {
  if (!input.mayReview) return 'none';
  if (input.state === 'awaiting_review') return 'review';
  if (input.state === 'paused') return 'paused';
  if (isFinalState(input.state) || input.state === 'pr_open' || input.state === 'pushing') return 'none';
  return 'work';
}

/* Short, so the one-line box (it grows with what is written) shows all of it; the tooltip says more. */
const PLACEHOLDERS: Record<Mode, string> = {
  work: 'Message the agent (Ctrl+Enter)',
  paused: 'What should the agent do next?',
  review: 'What should change? (Ctrl+Enter)',
  none: '',
};
const TOOLTIPS: Record<Mode, string> = {
  work: 'The agent reads it before its next step. Ctrl+Enter sends.',
  paused: 'The agent reads it when you resume. Ctrl+Enter resumes.',
  review: 'Sent with your line comments by "Request changes". Ctrl+Enter sends.',
  none: '',
};

export class ActionArea {
  readonly element: HTMLElement;
  readonly input: HTMLTextAreaElement;
  private readonly verdicts = h('div', { className: 'verdicts' });
  private readonly comments = h('div', { className: 'pending-comments' });
  private readonly extra = h('div', { className: 'action-extra' });
  private readonly hint = h('div', { className: 'action-hint', attrs: { role: 'status', 'aria-live': 'polite' } });
  private readonly buttons = h('div', { className: 'buttons' });
  private readonly composer: HTMLElement;
  private current: ActionAreaInput | null = null;
  private renderedKey = '';
  private busy = false;
  /**
   * In review the text box shows only once there is something to say: a draft, pending line
   * comments, or "Request changes" pressed with nothing yet (then it opens, focused). Approving
   * needs no text, and a 720-pixel side bar needs the room for the trajectory. Kept per task, state and round.
   */
  private writingFor = '';

  constructor(private readonly callbacks: ActionCallbacks) {
    const label = h('label', { className: 'visually-hidden', attrs: { for: 'action-input' } }, 'Message for the agent');
    this.input = h('textarea', { className: 'action-input', attrs: { id: 'action-input', rows: '1' } });
    this.composer = h('div', { className: 'composer' }, label, this.input, this.hint, this.buttons);
    this.element = h(
      'section',
      { className: 'review actions', attrs: { 'aria-label': 'Review and steering' } },
      this.verdicts,
      this.comments,
      this.extra,
      this.composer,
    );
    this.input.addEventListener('input', () => {
      this.input.classList.remove('invalid');
      this.hint.textContent = '';
      this.callbacks.draftChanged(this.input.value);
      this.renderButtons();
    });
    this.input.addEventListener('keydown', (event) => {
      if (event.key !== 'Enter' || !(event.ctrlKey || event.metaKey)) return;
      event.preventDefault();
      const mode = this.current ? modeOf(this.current) : 'none';
      if (mode === 'work') this.sendMessage();
      if (mode === 'paused') this.resume();
      if (mode === 'review') this.review('request_changes');
    });
  }

  setDraft(text: string): void {
    this.input.value = text;
  }

  /** The server refused the last action: the buttons work again. */
  enable(): void {
    this.busy = false;
    this.renderedKey = '';
    this.render(this.current);
  }

  render(input: ActionAreaInput | null): void {
    const key = input ? renderKey(input) : '';
    if (key !== this.renderedKey.replace(/^busy:/, '')) this.busy = false;
    this.current = input;
    const fullKey = `${this.busy ? 'busy:' : ''}${key}`;
    if (fullKey === this.renderedKey) return;
    this.renderedKey = fullKey;
    if (!input) {
      this.element.hidden = true;
      return;
    }
    const mode = modeOf(input);
    this.renderVerdicts(input, mode);
    this.renderComments(input, mode);
    this.renderExtra(input);
    this.composer.hidden = mode === 'none';
    this.input.hidden = mode === 'review' && this.writingFor !== `${input.taskId}:${input.state}:${input.summary.round}` && !this.input.value && !input.pending.length;
    this.input.placeholder = PLACEHOLDERS[mode];
    this.input.title = TOOLTIPS[mode];
    this.input.setAttribute('aria-label', mode === 'review' ? 'Feedback for the agent' : 'Message for the agent');
    this.input.disabled = this.busy;
    this.renderButtons();
    this.element.hidden = mode === 'none' && !this.verdicts.childElementCount && !this.extra.childElementCount;
  }

  private renderVerdicts(input: ActionAreaInput, mode: Mode): void {
    const summary = input.summary;
    const parts: HTMLElement[] = [];
    const detail: HTMLElement[] = [];
    let warning: HTMLElement | null = null;
    if (summary.policy) {
      const policy = summary.policy;
      // An overridden check keeps its violations (`ok: false`) but did not block: a repo owner let it through.
      const [tone, label] = policy.ok
        ? ['tone-ok', '✓ Policy checks passed']
        : policy.overridden
          ? ['tone-warn', `⚠ Policy checks overridden by ${policy.overriddenBy ?? 'a repo owner'}`]
          : ['tone-error', '✗ Policy checks failed'];
      detail.push(
        h(
          'div',
          { className: `policy ${tone}` },
          label,
          ...policy.violations.map((v) => h('div', { className: 'violation' }, `${v.rule} — ${v.path}${v.line ? `:${v.line}` : ''}: ${v.message}`)),
        ),
      );
      parts.push(h('span', { className: `verdict ${tone}` }, label.replace(' checks', '')));
    }
    if (summary.review) {
      const review = summary.review;
      detail.push(
        h('div', { className: 'self-review' }, review.summary || (review.approved ? 'Self-review approved.' : 'Self-review found problems.'), ...review.problems.map((p) => h('div', { className: 'problem' }, `• ${p}`))),
      );
      parts.push(h('span', { className: `verdict ${review.approved ? 'tone-ok' : 'tone-warn'}` }, review.approved ? '✓ Self-review' : '⚠ Self-review'));
    }
    if (input.files.length) {
      const files = input.files;
      const reviewing = mode === 'review';
      const counts = fileCounts(files);
      const unreverted = reviewing ? files.filter((file) => file.notReverted).map((file) => file.path) : [];
      detail.push(
        h(
          'ul',
          { className: 'changed-files', attrs: { 'aria-label': reviewing ? 'Changed files: unchecked ones are left out of the push' : 'Changed files' } },
          ...files.map(({ path, change, accepted }) => {
            if (!change) {
              // Left out at an earlier approval: not in the diff (nor the PR), nothing to open or push.
              return h('li', { className: 'left-out earlier', attrs: { title: 'Left out of the push at an earlier approval; the pull request does not change it' } }, h('span', { className: 'badge change-left-out' }, 'not pushed'), ' ', h('span', { className: 'path' }, path), h('span', { className: 'left-out-note' }, ' (left out)'));
            }
            const link = button(path, 'link', () => this.post({ type: 'openDiff', taskId: this.taskId(), path }), `Open the diff of ${path}`);
            const toggle = reviewing ? this.acceptToggle(path, accepted) : null;
            const notReverted = reviewing && unreverted.includes(path);
            return h(
              'li',
              { className: accepted ? '' : 'left-out' },
              toggle,
              h('span', { className: `badge change-${change}` }, change),
              ' ',
              link,
              notReverted ? h('span', { className: 'badge tone-warn not-reverted' }, 'revert not done') : '',
              accepted ? '' : h('span', { className: 'left-out-note' }, ' (left out)'),
            );
          }),
        ),
      );
      if (unreverted.length) {
        // First on the folded line, where it is seen without opening it: round 2 must not look as if the revert happened.
        warning = h('span', { className: 'verdict tone-warn unreverted', attrs: { role: 'status' } }, `⚠ Revert not done: ${unreverted.join(', ')}`);
      }
      parts.push(h('span', { className: 'verdict' }, `${counts.changed} file${counts.changed === 1 ? '' : 's'} changed${counts.leftOut ? ` · ${counts.leftOut} left out` : ''}`));
    }
    if (input.summary.round > 1 && input.files.some((file) => file.change)) {
      // The round leads the folded line; its diffs are inside (and in the Changes view's title bar).
      const round = input.summary.round;
      parts.unshift(h('span', { className: 'verdict round' }, `Round ${round}`));
      detail.push(
        h(
          'div',
          { className: 'round-diffs' },
          `Round ${round}: `,
          button("This round's changes", 'link open-round-changes', () => this.post({ type: 'openChanges', taskId: input.taskId, scope: 'round' }), `Open what changed since changes were requested (round ${round - 1} → ${round}) in the diff editor`),
          ' · ',
          button('All changes', 'link open-all-changes', () => this.post({ type: 'openChanges', taskId: input.taskId, scope: 'all' }), 'Open the whole diff against the base in the diff editor'),
        ),
      );
    }
    if (warning) parts.unshift(warning);
    if (!parts.length) {
      this.verdicts.replaceChildren();
      return;
    }
    const open = this.verdicts.querySelector('details')?.open ?? false;
    // One line (the whole of it in the tooltip), so the trajectory keeps the height.
    const said = parts.map((p) => p.textContent).join(', ');
    const details = h('details', { className: 'verdict-details' }, h('summary', { title: said, attrs: { 'aria-label': `Review summary: ${said}` } }, ...joinWith(parts, ' · ')), ...detail);
    details.open = open;
    this.verdicts.replaceChildren(details);
  }

  /** A checkbox: checked pushes the file's changes, unchecked leaves them out (Space toggles it). */
  private acceptToggle(path: string, accepted: boolean): HTMLInputElement {
    const box = h('input', { className: 'accept-file', attrs: { type: 'checkbox', 'aria-label': `Push the changes to ${path}` } });
    box.checked = accepted;
    box.disabled = this.busy;
    box.title = accepted ? 'Pushed with the approval; uncheck to leave this file out' : 'Left out of the push; check to include it';
    box.addEventListener('change', () => this.post({ type: 'setFileAccepted', taskId: this.taskId(), path, accepted: box.checked }));
    return box;
  }

  private renderComments(input: ActionAreaInput, mode: Mode): void {
    const count = input.pending.length;
    if (!count || mode !== 'review') {
      this.comments.replaceChildren();
      this.comments.hidden = true;
      return;
    }
    const open = this.comments.querySelector('details')?.open ?? false;
    const details = h(
      'details',
      {},
      h('summary', { title: 'Sent together with the text by "Request changes"' }, `${count} line comment${count === 1 ? '' : 's'} pending`),
      h(
        'ul',
        { className: 'pending-list' },
        ...input.pending.map((comment) =>
          h(
            'li',
            {},
            button(`${comment.path}:${comment.line}`, 'link', () => this.post({ type: 'openDiff', taskId: input.taskId, path: comment.path, line: comment.line }), `Open ${comment.path} at line ${comment.line}`),
            ` ${comment.body}`,
          ),
        ),
      ),
    );
    details.open = open;
    this.comments.replaceChildren(details);
    this.comments.hidden = false;
  }

  private renderExtra(input: ActionAreaInput): void {
    const parts: HTMLElement[] = [];
    if (input.state === 'awaiting_review' && !input.mayReview) {
      parts.push(h('div', { className: 'waiting' }, `The review is ${input.requester ? `${input.requester}'s` : "the requester's"} to give.`));
    }
    if (input.state === 'paused') {
      parts.push(h('div', { className: 'pause-status', attrs: { role: 'status' } }, 'Paused: the agent waits for you; its sandbox is kept and the time budget is stopped.'));
    } else if (input.summary.pauseRequestedBy && input.state !== 'awaiting_review') {
      parts.push(h('div', { className: 'pause-status', attrs: { role: 'status' } }, 'Pausing after the current step…'));
    }
    if (input.summary.prUrl) {
      const url = input.summary.prUrl;
      parts.push(h('div', { className: 'pr-link' }, 'Pull request: ', button(url, 'link open-pr', () => this.post({ type: 'openExternal', url }))));
    }
    this.extra.replaceChildren(...parts);
  }

  private renderButtons(): void {
    const input = this.current;
    if (!input) return;
    const mode = modeOf(input);
    const focused = document.activeElement instanceof HTMLElement ? document.activeElement.dataset.action : undefined;
    const make = (label: string, className: string, action: string, run: () => void, title?: string): HTMLButtonElement => {
      const element = button(label, className, run, title);
      element.dataset.action = action;
      element.disabled = this.busy;
      return element;
    };
    const buttons: HTMLButtonElement[] = [];
    const cancel = () => make('Cancel task…', 'secondary interrupt action-cancel', 'cancel', () => this.post({ type: 'interrupt', taskId: input.taskId }), 'Stop the agent (asks first); the diff so far is kept');
    if (mode === 'work') {
      buttons.push(make('Send message', 'primary action-send', 'send', () => this.sendMessage()));
      if (input.summary.pauseRequestedBy) {
        buttons.push(make('Keep going', 'secondary action-resume', 'resume', () => this.resume(), 'Withdraw the pause: the agent does not stop'));
      } else {
        buttons.push(make('Pause', 'secondary action-pause', 'pause', () => this.pause(), 'Stop the agent after its current step; it waits until you resume'));
      }
      buttons.push(cancel());
    } else if (mode === 'paused') {
      const text = this.input.value.trim();
      buttons.push(make(text ? 'Send and resume' : 'Resume', 'primary action-resume', 'resume', () => this.resume(), 'The agent goes on (it reads your message first)'));
      buttons.push(cancel());
    } else if (mode === 'review') {
      const count = input.pending.length;
      const { changed: files, pushed } = fileCounts(input.files);
      const left = files - pushed;
      const approve = left ? `Approve and push ${pushed} of ${files} files` : 'Approve and push';
      const nothing = files > 0 && left === files;
      const approveButton = make(approve, 'primary review-approve', 'approve', () => this.review('approve'), nothing ? 'Every file is left out, so nothing would be pushed: check a file, or Reject' : left ? `Push the checked files only; ${left} left out` : 'Let the server push the branch and open a pull request');
      // The server refuses an approval that leaves every file out; say so here instead of after a round trip.
      if (nothing) approveButton.disabled = true;
      buttons.push(approveButton);
      buttons.push(make(count ? `Request changes (${count})` : 'Request changes', 'secondary review-changes', 'request_changes', () => this.review('request_changes'), 'Send the text and the pending line comments; the agent goes on'));
      buttons.push(make('Reject', 'secondary review-reject', 'reject', () => this.review('reject'), 'End the task; nothing is pushed'));
    }
    this.buttons.replaceChildren(...buttons);
    if (focused) buttons.find((b) => b.dataset.action === focused)?.focus();
  }

  private sendMessage(): void {
    const text = this.input.value.trim();
    if (!this.current || this.busy) return;
    if (!text) {
      this.refuse('Write a message for the agent first.');
      return;
    }
    this.post({ type: 'sendMessage', taskId: this.current.taskId, text });
    this.input.value = '';
    this.callbacks.draftChanged('');
  }

  private pause(): void {
    const input = this.current;
    if (!input || this.busy) return;
    this.hold(input);
    this.post({ type: 'pause', taskId: input.taskId });
  }

  private resume(): void {
    const input = this.current;
    if (!input || this.busy) return;
    const text = this.input.value.trim();
    this.hold(input);
    this.post({ type: 'resume', taskId: input.taskId, ...(text && input.state === 'paused' ? { text } : {}) });
    if (text && input.state === 'paused') {
      this.input.value = '';
      this.callbacks.draftChanged('');
    }
  }

  /** Buttons off until the server's answer changes what the area shows (or `enable` after a refusal). */
  private hold(input: ActionAreaInput): void {
    this.busy = true;
    this.renderedKey = `busy:${renderKey(input)}`;
    for (const b of this.buttons.querySelectorAll('button')) b.disabled = true;
  }

  private review(action: ReviewAction): void {
    const input = this.current;
    if (!input || this.busy) return;
    const text = this.input.value.trim();
    if (action === 'request_changes' && !text && input.pending.length === 0) {
      this.writingFor = `${input.taskId}:${input.state}:${input.summary.round}`;
      this.input.hidden = false;
      this.refuse('Write what should change (or add line comments in the diff), then Request changes again.');
      return;
    }
    this.busy = true;
    this.renderedKey = `busy:${renderKey(input)}`;
    this.input.disabled = true;
    for (const b of this.buttons.querySelectorAll('button')) b.disabled = true;
    this.post({ type: 'review', taskId: input.taskId, action, ...(text ? { comment: text } : {}) });
    if (action !== 'approve') {
      this.input.value = '';
      this.callbacks.draftChanged('');
    }
  }

  private refuse(text: string): void {
    this.input.classList.add('invalid');
    this.input.focus();
    this.hint.textContent = text;
  }

  private taskId(): string {
    return this.current?.taskId ?? '';
  }

  private post(message: FromWebview): void {
    this.callbacks.post(message);
  }
}

/** Everything the area shows, so an unchanged state is not redrawn (and focus stays where it is). */
function renderKey(input: ActionAreaInput): string {
  const s = input.summary;
  return JSON.stringify([
    input.taskId,
    input.state,
    input.mayReview,
    input.requester,
    input.pending,
    // The diff's files arrive after the round's events (read from the server): they must redraw the area.
    input.files,
    s.round,
    s.policy ?? null,
    s.review ?? null,
    s.prUrl ?? null,
    s.pauseRequestedBy ?? null,
  ]);
}

function joinWith(parts: HTMLElement[], separator: string): Array<HTMLElement | string> {
  return parts.flatMap((part, index) => (index ? [separator, part] : [part]));
}
