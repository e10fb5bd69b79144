import type { EnvironmentRecipe, Task, TaskEvent } from '@dockhand/protocol';

function oneLine(text: string, max = 100): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** One progress line per event (or nothing for the noisy ones). */
export function describeEvent(event: TaskEvent): string | undefined {
  switch (event.type) {
    case 'task.state':
      return event.data.state + (event.data.reason ? ` (${event.data.reason})` : '');
    case 'snapshot.progress':
      return `snapshot ${event.data.stage} (${(event.data.elapsedMs / 1000).toFixed(0)} s)${event.data.line ? `: ${oneLine(event.data.line, 80)}` : ''}`;
    case 'sandbox.ready':
      return `sandbox ready (${event.data.source}, ${event.data.startMs} ms)`;
    case 'model.turn':
      return `turn ${event.data.turn}: ${event.data.model}, $${event.data.costUsd.toFixed(4)}`;
    case 'model.budget_wait': {
      // The webview's note in one line: which limit is full and the estimate, then how long it took.
      const limit = event.data.limit === 'requests_per_minute' ? 'requests' : 'input tokens';
      const seconds = Math.max(1, Math.round(event.data.waitMs / 1000));
      if (event.data.phase === 'done') return `waited ${seconds} s for the fleet's model budget (${limit} per minute); the turn went ahead`;
      const turn = event.data.limit === 'input_tokens_per_minute' ? ` (this turn: ~${event.data.tokens.toLocaleString('en')} input tokens)` : '';
      return `waiting for the fleet's model budget: ${limit} per minute are used up; the turn goes ahead in about ${seconds} s${turn}`;
    }
    case 'assistant.text':
      return `  ${oneLine(event.data.text)}`;
    case 'tool.called':
      return `  → ${event.data.name} ${oneLine(JSON.stringify(event.data.input ?? {}), 80)}`;
    case 'tool.finished':
      return event.data.isError ? `  ✗ ${event.data.name}: ${oneLine(event.data.output)}` : undefined;
    case 'file.changed':
      return `  ✎ ${event.data.change} ${event.data.path}`;
    case 'tests.finished': {
      // Red while anything fails; failures that already fail at the base say so (they do not block).
      const preExisting = event.data.preExisting?.length ? `, ${event.data.preExisting.length} pre-existing` : '';
      // A step red at the base by its exit status judges nothing; a run with no other step verified nothing.
      const unjudgeable = (event.data.steps ?? []).filter((step) => step.judgement === 'cannot judge').map((step) => step.name);
      const cannotJudge = unjudgeable.length ? `; cannot judge: ${unjudgeable.join(', ')}` : '';
      const verdict = event.data.judged === false ? 'cannot judge' : event.data.ok && event.data.failed === 0 ? 'green' : 'red';
      return `tests ${verdict}: ${event.data.passed} passed, ${event.data.failed} failed (${event.data.scope}${preExisting}${cannotJudge})${event.data.judged === false ? ' — no step can judge this change' : ''}`;
    }
    case 'tests.runner_failed':
      return `test runner failed (${event.data.kind}): ${oneLine(event.data.message)}`;
    case 'review.finished':
      return `self-review: ${event.data.approved ? 'approved' : `problems: ${event.data.problems.join('; ')}`}`;
    case 'policy.checked':
      return `policy (${event.data.stage}): ${event.data.ok ? 'ok' : event.data.violations.map((v) => `${v.rule} ${v.path}`).join(', ')}`;
    case 'approval.requested':
      return `approval needed [${event.data.approvalId}] ${event.data.kind}: ${event.data.command ?? event.data.reason}`;
    case 'approval.resolved':
      return `approval ${event.data.approvalId} ${event.data.decision} by ${event.data.by}`;
    case 'budget.exceeded':
      return `budget exceeded: ${event.data.budget} (${event.data.used}/${event.data.limit})`;
    case 'pr.opened':
      return `PR opened: ${event.data.url}`;
    case 'pr.outcome':
      return `PR ${event.data.outcome}`;
    case 'pr.feedback': {
      // What came back on the PR and what was done about it (issue 26).
      const ignored = event.data.ignored.length ? `; ignored: ${event.data.ignored.map((entry) => `#${entry.id} by ${entry.author}`).join(', ')}` : '';
      const check = event.data.check ? `check ${event.data.check.name} ${event.data.check.conclusion}, ${event.data.check.triage.replace('_', '-')}: ${oneLine(event.data.check.evidence, 120)}` : '';
      const comments = event.data.comments.map((comment) => `#${comment.id} by ${comment.author}${comment.path ? ` on ${comment.path}:${comment.line}` : ''}`).join(', ');
      if (event.data.kind === 'round') return `PR #${event.data.number} round ${event.data.round}: ${comments || check}${ignored}`;
      if (event.data.kind === 'triaged') return `PR #${event.data.number}: ${check}; no round${ignored}`;
      if (event.data.kind === 'limit') return `PR #${event.data.number}: no more rounds (${event.data.reason ?? 'limit reached'})${ignored}`;
      return event.data.ignored.length ? `PR #${event.data.number}${ignored.replace(/^; /, ': ')}` : undefined;
    }
    case 'review.requested_changes':
      // A follow-up round heads its events (issue 26); a review before the PR is told by its state.
      return event.data.followUp ? `── PR #${event.data.followUp.number} round ${event.data.followUp.round} ── started by ${oneLine(event.data.by, 80)}` : undefined;
    case 'pr.pushed':
      return event.data.commit
        ? `PR #${event.data.number} round ${event.data.round}: pushed ${event.data.headSha.slice(0, 12)}${event.data.replied.length ? `, replied to ${event.data.replied.map((id) => `#${id}`).join(', ')}` : ''}`
        : `PR #${event.data.number} round ${event.data.round}: no code change needed, nothing pushed`;
    case 'attestation.signed':
      return `attestation signed (round ${event.data.round}): ${event.data.digest}, key ${event.data.keyId}`;
    case 'user.message':
      return `${event.data.from}: ${oneLine(event.data.text)}`;
    case 'task.failed':
      return `failed: ${event.data.code}: ${event.data.message}`;
    default:
      return undefined;
  }
}

/**
 * The readiness report's environment row: what was chosen and from where — the toolchains, the
 * Python requirements, the install and test commands. Python's version is the sandbox's own
 * python3 (the base image's) unless the recipe names one.
 */
/**
 * What was chosen and from where. `installShown`: the install command is on a line of its own
 * already (a readiness report whose install ran), so here only its source is named.
 */
export function environmentDetail(env: EnvironmentRecipe, options: { installShown?: boolean } = {}): string {
  const parts: string[] = [];
  if (env.node) parts.push(`node ${env.node.version} (${env.node.source})`);
  if (env.packageManager) parts.push(`${env.packageManager.name} ${env.packageManager.version} (${env.packageManager.source})`);
  if (env.python) {
    const requirements = env.python.requirements.length > 0 ? `requirements ${env.python.requirements.join(', ')}` : 'no requirements file';
    parts.push(`python ${env.python.version ?? "3 (the sandbox's python3)"}, ${requirements} (${env.python.source})`);
  }
  parts.push(options.installShown ? `install: as below (${env.install.source})` : `install: ${env.install.command} (${env.install.source})`, `test: ${env.test.command} (${env.test.source})`);
  return parts.join('; ');
}

export function taskLine(task: Task): string {
  const cost = `$${task.usage.costUsd.toFixed(2)}`;
  // A followed PR's task names its follow-up round next to its state ("pr_open round 2").
  const state = task.round ? `${task.state} round ${task.round}` : task.state;
  return [task.id, state.padEnd(16), cost.padStart(7), oneLine(task.ticket.title, 60), task.prUrl ?? ''].join('  ').trimEnd();
}
