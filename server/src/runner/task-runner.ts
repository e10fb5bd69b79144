import { isFinalState, type NewEvent, type Task, type TaskEvent, type TaskState } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import type { Logger } from '../log';
import { blockedReason, isBlocked, policyCheckedEvent } from '../policy';
import type { Sandbox } from '../sandbox/types';
import type { EventLog } from '../store/hub';
import type { ApprovalKind } from '../store/types';
import { StoreApprover } from './approver';
import type { CheckpointStore } from './checkpoints';
import type { FollowUpPort } from '../followup/publish';
import { unpushedRound } from '../followup/rounds';
import { raisePolicyOverride } from './policy-override';
import { pushedDiff } from './review-files';
import { checkpointingSink, lossesSoFar, lostCallResults, replacedNote, restoreWorkspace, SANDBOX_NOTE_AUTHOR, SANDBOX_REPLACEMENTS, watchRun, type RunStop } from './sandbox-life';
import { hubSteering } from './steering';
import type { AgentPort, PolicyPort, PublisherPort, SandboxProvider, SnapshotProgress } from './ports';

/*
 * One task's life cycle, driven from its event log so that the same code starts a task and
 * resumes one after a crash:
 *
 *   queued → provisioning (sandbox acquired → sandbox.ready) → running (the agent loop)
 *     → finished and verified by the loop → policy.checked(stage review) → awaiting_review
 *     (blocked after the policy rounds, with repo owners: awaiting_review + a pending policy_override
 *      approval bound to the diff; an owner's approval asks for the push approval)
 *   awaiting_review --(API: approvals reached)--> pushing → policy.checked(stage push)
 *     (blocked with repo owners: back to awaiting_review with a policy_override request)
 *     → push + PR (idempotent; skipped when pr.opened is already in the log) → pr.opened → pr_open
 *   awaiting_review --(API: request changes)--> running (comments arrive as a user.message)
 *   pr_open --(followup/: an allowed PR comment, a red check the PR caused)--> running at the PR's head
 *     → … → pushing → ONE new commit on the PR's branch (pr.pushed; never a force-push) → pr_open
 *
 * Every event is written before the action it announces. A task in `cancelled` (the API wrote it
 * on interrupt) is never moved out of it by the runner.
 */

export interface RunnerDeps {
  log: EventLog;
  sandboxes: SandboxProvider;
  agent: AgentPort;
  policy: PolicyPort;
  publisher: PublisherPort;
  logger?: Logger;
  /** Review-stage policy failures sent back to the agent before the task fails. */
  maxPolicyRounds?: number;
  /** Workspace checkpoints (`checkpoints.ts`): a resumed task gets its workspace back, not only its logged edits. */
  checkpoints?: CheckpointStore;
  /** Pushes a follow-up round on the task's open PR (the local forge's follower, `followup/`). */
  followUp?: FollowUpPort;
  /** The wall-clock watch's grace past the budget and how long a stopped run may take (tests shorten them). */
  watchTiming?: { graceMs?: number; abandonAfterMs?: number };
}

const RESUMABLE: readonly TaskState[] = ['queued', 'provisioning', 'running', 'awaiting_approval', 'verifying', 'pushing'];

export class TaskRunner {
  /** Sandboxes this process holds, by task (released when the task stops needing one). */
  private readonly sandboxes = new Map<string, Sandbox>();
  /** Tasks that paused holding their sandbox: checked alive on resume (its wall-clock limit may have ended it). */
  private readonly pausedHolding = new Set<string>();

  constructor(private readonly deps: RunnerDeps) {}

  /**
   * The live workspace diff of a task this server is working on; when its sandbox is lost or
   * cannot answer, or none is held here, the task's last checkpoint (undefined without one).
   */
  async liveDiff(taskId: string): Promise<string | undefined> {
    const sandbox = this.sandboxes.get(taskId);
    if (sandbox && !sandbox.lost) {
      try {
        return await sandbox.diff();
      } catch (error) {
        this.deps.logger?.warn({ err: error, taskId }, 'live diff failed; answering with the last checkpoint');
      }
    }
    const checkpoint = await this.deps.checkpoints?.load(taskId).catch(() => undefined);
    return checkpoint && 'diff' in checkpoint ? checkpoint.diff : undefined;
  }

  /** Does the next piece of work for a leased task, until it waits for a human or ends. */
  async run(taskId: string, signal: AbortSignal): Promise<void> {
    const log = this.deps.logger?.child({ taskId });
    try {
      for (let step = 0; step < 20 && !signal.aborted; step++) {
        const task = await this.task(taskId);
        if (!RESUMABLE.includes(task.state)) break;
        if (task.state === 'pushing') await this.push(task);
        else await this.work(task, signal);
      }
    } catch (error) {
      // Aborted (lease lost or in doubt, server stopping, interrupted): what failed was cut short by
      // the abort, not by the task; it stays resumable and whoever holds it next carries on.
      if (signal.aborted) {
        log?.warn({ err: error, reason: String(signal.reason) }, 'task run stopped by its abort; left for its next holder');
        return;
      }
      const failure = error instanceof DockhandError ? error : new DockhandError('internal', error instanceof Error ? error.message : String(error), { cause: error });
      log?.error({ err: error }, 'task failed');
      const task = await this.deps.log.store.getTask(taskId);
      if (task && !isFinalState(task.state)) {
        await this.emit(taskId, { type: 'task.failed', data: { code: failure.code, message: failure.message } });
        await this.setState(taskId, 'failed', failure.message);
      }
    } finally {
      const task = await this.deps.log.store.getTask(taskId);
      const keeps = task?.state === 'running' || task?.state === 'paused';
      if (!keeps || signal.aborted) await this.releaseSandbox(taskId);
    }
  }

  private async task(taskId: string): Promise<Task> {
    const task = await this.deps.log.store.getTask(taskId);
    if (!task) throw new DockhandError('not_found', `task ${taskId} not found`);
    return task;
  }

  private emit(taskId: string, event: NewEvent): Promise<TaskEvent> {
    return this.deps.log.append(taskId, event);
  }

  /**
   * Writes a state unless the task already ended (an interrupt wins over whatever we were doing)
   * or is paused (only a resume, through the API, moves a paused task on).
   */
  private async setState(taskId: string, state: TaskState, reason?: string): Promise<boolean> {
    const task = await this.task(taskId);
    if ((isFinalState(task.state) || task.state === 'paused') && task.state !== state) return false;
    if (task.state === state) return true;
    await this.emit(taskId, { type: 'task.state', data: { state, ...(reason ? { reason } : {}) } });
    return true;
  }

  private async work(task: Task, signal: AbortSignal): Promise<void> {
    if (task.state === 'queued' && !(await this.setState(task.id, 'provisioning'))) return;
    const sandbox = await this.ensureSandbox(task, signal);
    await this.closeStaleApprovals(task.id);
    if (signal.aborted || !(await this.setState(task.id, 'running'))) return;
    const current = await this.task(task.id);
    const steering = hubSteering(this.deps.log.hub, task.id);
    const priorEvents = await this.deps.log.store.listEvents(task.id);
    // Outside every tool call: a lost sandbox or an exhausted wall clock ends this run whatever
    // the sandbox does.
    const watch = watchRun(sandbox, current, priorEvents, signal, this.deps.watchTiming);
    let result;
    try {
      steering.startAfter(priorEvents.at(-1)?.seq ?? 0, priorEvents);
      const running = this.deps.agent.run({
        task: current,
        sandbox,
        events: checkpointingSink(this.deps.log.sinkFor(task.id), sandbox, task.id, this.deps.checkpoints, this.deps.logger),
        approver: new StoreApprover(this.deps.log, task.id),
        priorEvents,
        steering,
        signal: watch.signal,
      });
      running.catch(() => undefined);
      result = await Promise.race([running, watch.abandoned]);
    } catch (error) {
      if (!watch.stopped) throw error;
    } finally {
      steering.close();
      watch.dispose();
    }
    // Aborted: interrupted (the API already wrote `cancelled`), lease lost or server stopping (the
    // task stays active and is resumed from its log by whoever leases it next). Write nothing.
    if (signal.aborted) return;
    const now = await this.task(task.id);
    if (isFinalState(now.state)) return;
    const stopped: RunStop | undefined = sandbox.lost ? { kind: 'lost', loss: sandbox.lost } : watch.stopped;
    if (stopped) {
      await this.stoppedByWatch(task.id, stopped);
      return;
    }
    if (!result) throw new DockhandError('internal', 'the agent run ended without a result');
    if (result.outcome === 'cancelled') {
      await this.deps.log.setResult(task.id, { diff: result.diff, summary: result.summary });
      await this.setState(task.id, 'cancelled', result.summary || 'cancelled');
      return;
    }
    if (result.outcome === 'paused') {
      // The sandbox stays (held in this process); a resume continues the conversation from the log.
      await this.setState(task.id, 'paused', result.summary);
      this.pausedHolding.add(task.id);
      return;
    }
    if (result.outcome === 'budget_exhausted') {
      await this.deps.log.setResult(task.id, { diff: result.diff, summary: result.summary });
      await this.setState(task.id, 'budget_exhausted', result.summary || 'budget exhausted');
      return;
    }
    if (result.outcome === 'failed') {
      await this.emit(task.id, { type: 'task.failed', data: result.error ?? { code: 'internal', message: result.summary } });
      await this.setState(task.id, 'failed', result.error?.message ?? result.summary);
      return;
    }
    await this.afterFinish(now, result.diff, result.summary);
  }

  /**
   * The watch ended the run. A lost sandbox: the calls it cut short get their results, and the
   * task continues in a new sandbox with its workspace restored (once; the next loss ends the task
   * `sandbox_lost`, naming what ran). Wall clock: the task ends `budget_exhausted` with its last
   * checkpoint as the result.
   */
  private async stoppedByWatch(taskId: string, stopped: RunStop): Promise<void> {
    const events = await this.deps.log.store.listEvents(taskId);
    const diff = (await this.liveDiff(taskId).catch(() => undefined)) ?? '';
    await this.releaseSandbox(taskId);
    if (stopped.kind === 'wall_clock') {
      this.deps.logger?.warn({ taskId, ...stopped }, 'wall clock over and the run did not stop by itself; ended');
      await this.emit(taskId, { type: 'budget.exceeded', data: { budget: 'wall_clock', limit: stopped.limitSeconds, used: stopped.usedSeconds } });
      await this.deps.log.setResult(taskId, { diff, summary: 'Stopped: the wall_clock budget is used up.' });
      await this.setState(taskId, 'budget_exhausted', `the wall_clock budget is used up (${stopped.usedSeconds} of ${stopped.limitSeconds} s)`);
      return;
    }
    const { loss } = stopped;
    this.deps.logger?.warn({ taskId, loss }, 'sandbox lost');
    const cut = lostCallResults(events, loss);
    for (const result of cut) await this.emit(taskId, result);
    if (lossesSoFar(events) >= SANDBOX_REPLACEMENTS) {
      const tools = cut.flatMap((result) => (result.type === 'tool.finished' ? [result.data.name] : []));
      const during = tools.length > 0 ? ` during ${tools.join(', ')}` : '';
      const running = loss.running.length > 0 ? `; it was running: ${loss.running.map((command) => command.slice(0, 120)).join('; ')}` : '';
      const message = `the sandbox was lost again${during} (${loss.reason})${running}; the task had ${SANDBOX_REPLACEMENTS} replacement sandbox and stops here. Its workspace as of the last completed tool call is the task's diff.`;
      await this.emit(taskId, { type: 'task.failed', data: { code: 'sandbox_lost', message } });
      await this.deps.log.setResult(taskId, { diff, summary: message });
      await this.setState(taskId, 'failed', `sandbox lost: ${loss.reason}`);
      return;
    }
    // Still running: the runner's next step acquires a new sandbox and restores the workspace.
    await this.emit(taskId, { type: 'user.message', data: { from: SANDBOX_NOTE_AUTHOR, text: replacedNote(loss) } });
  }

  /**
   * Approvals still pending when the loop (re)starts are stale and are closed as denied instead
   * of waiting forever in the UI:
   * - a command approval belongs to a tool call of a run that died: the rebuilt conversation
   *   reports that call as interrupted and never re-runs it;
   * - a push or policy-override approval was for the diff the agent is now about to change (a
   *   developer's message sent the task back from review); the next review asks again.
   */
  private async closeStaleApprovals(taskId: string): Promise<void> {
    const why: Partial<Record<ApprovalKind, string>> = {
      command: 'the server restarted while this was pending; the command did not run',
      push: 'the agent went back to work on the diff; it will be reviewed again',
      policy_override: 'the agent went back to work on the diff; a new diff that breaks policy asks again',
    };
    for (const approval of await this.deps.log.store.listApprovals(taskId, 'pending')) {
      const comment = why[approval.kind];
      if (comment === undefined) continue;
      const resolved = await this.deps.log.store.resolveApproval(taskId, approval.id, { decision: 'denied', by: 'dockhand', comment });
      if (resolved) this.deps.log.published([resolved.event]);
    }
  }

  private async afterFinish(task: Task, rawDiff: string, rawSummary: string): Promise<void> {
    // Checked, stored and bound to an override in the masked form: the diff a person reviews and
    // the server pushes is the one the store holds (a masked secret is still a violation).
    const { diff, summary } = await this.deps.log.maskResult({ diff: rawDiff, summary: rawSummary });
    const policy = await this.deps.policy.check({ task, diff, summary, stage: 'review', events: await this.deps.log.store.listEvents(task.id) });
    await this.emit(task.id, policyCheckedEvent(policy));
    if (isBlocked(policy)) {
      const events = await this.deps.log.store.listEvents(task.id);
      const failures = events.filter((e) => e.type === 'policy.checked' && e.data.stage === 'review' && !e.data.ok && !e.data.overridden).length;
      const lines = policy.violations.map((v) => `- ${v.rule} ${v.path}${v.line ? `:${v.line}` : ''}: ${v.message}`);
      if (failures >= (this.deps.maxPolicyRounds ?? 2)) {
        await this.deps.log.setResult(task.id, { diff, summary });
        if (policy.owners.length > 0) {
          // The agent could not make it comply: a repo owner decides, on this exact diff.
          await raisePolicyOverride(this.deps.log, task.id, diff, policy, policy.owners);
          await this.setState(task.id, 'awaiting_review', `blocked by policy: ${blockedReason(policy)}; waiting for a repo owner's override`);
          await this.releaseSandbox(task.id);
          return;
        }
        await this.emit(task.id, {
          type: 'task.failed',
          data: { code: 'policy_violation', message: `policy violations remain (no owners in .dockhand/policy.yml may override them):\n${lines.join('\n')}` },
        });
        await this.setState(task.id, 'failed', 'policy violations remain');
        return;
      }
      await this.emit(task.id, {
        type: 'user.message',
        data: { from: 'dockhand-policy', text: `The change breaks repository policy; fix these and finish again:\n${lines.join('\n')}` },
      });
      return; // still running: the next step resumes the agent with this message
    }
    await this.deps.log.setResult(task.id, { diff, summary });
    const policyNote = policy.overridden ? `policy overridden by ${policy.overriddenBy ?? 'a repo owner'}` : 'policy ok';
    if (!(await this.setState(task.id, 'awaiting_review', `tests green, review approved, ${policyNote}`))) return;
    const pending = await this.deps.log.store.requestApproval(task.id, { kind: 'push', reason: 'review the diff before it is pushed' });
    this.deps.log.published([pending.event]);
    await this.releaseSandbox(task.id);
  }

  private async push(task: Task): Promise<void> {
    const events = await this.deps.log.store.listEvents(task.id);
    const opened = events.find((e) => e.type === 'pr.opened');
    // A follow-up round on the open PR (followup/): its one push is a new commit on the PR's branch.
    const round = opened ? unpushedRound(events) : undefined;
    if (!opened || round) {
      const stored = await this.deps.log.store.getResult(task.id);
      if (!stored) throw new DockhandError('conflict', `task ${task.id} has no diff to push`);
      // Files the approval rejected are left out: the push, its policy check and the PR see the rest.
      const result = { ...stored, diff: pushedDiff(stored.diff, events) };
      // The same evaluation as the forge's push gate: an owner's override in the log lets it through.
      const policy = await this.deps.policy.check({ task, diff: result.diff, summary: result.summary, stage: 'push', events });
      await this.emit(task.id, policyCheckedEvent(policy));
      if (isBlocked(policy)) {
        const reason = `push blocked by policy: ${blockedReason(policy)}`;
        if (policy.owners.length > 0) {
          // Back to review: the push approval is asked for again once an owner overrode this diff.
          await raisePolicyOverride(this.deps.log, task.id, result.diff, policy, policy.owners);
          await this.setState(task.id, 'awaiting_review', `${reason}; waiting for a repo owner's override`);
          return;
        }
        await this.emit(task.id, {
          type: 'task.failed',
          data: { code: 'policy_violation', message: `${reason}; fix the violations, or ask a repo owner to override them` },
        });
        await this.setState(task.id, 'failed', reason);
        return;
      }
      if (opened) {
        if (!this.deps.followUp) throw new DockhandError('internal', `task ${task.id} has a follow-up round to push and this server has no PR follower (a local forge)`);
        const pushed = await this.deps.followUp.push({ task, diff: result.diff, summary: result.summary, events });
        await this.emit(task.id, { type: 'pr.pushed', data: pushed });
      } else {
        const pr = await this.deps.publisher.publish({ task, diff: result.diff, summary: result.summary, events, policy });
        await this.emit(task.id, { type: 'pr.opened', data: pr });
      }
    }
    await this.deps.checkpoints?.remove(task.id).catch(() => undefined);
    await this.setState(task.id, 'pr_open');
  }

  /**
   * The task's sandbox: the one this process holds (unless it was lost); else the one named by
   * the last `sandbox.ready` if it survived; else a fresh one with the workspace restored: the
   * last checkpoint's diff (changes made by any tool, `run_command` included), then the edits
   * logged after it (`sandbox-life.ts`).
   */
  private async ensureSandbox(task: Task, signal?: AbortSignal): Promise<Sandbox> {
    if (this.sandboxes.get(task.id)?.lost) await this.releaseSandbox(task.id);
    const held = this.sandboxes.get(task.id);
    if (held && this.pausedHolding.delete(task.id)) {
      const alive = await held.exec({ cmd: ['true'] }).then((r) => r.exitCode === 0, () => false);
      if (alive) return held;
      await this.releaseSandbox(task.id);
    } else if (held) return held;
    const events = await this.deps.log.store.listEvents(task.id);
    const ready = [...events].reverse().find((e) => e.type === 'sandbox.ready');
    if (ready?.type === 'sandbox.ready' && this.deps.sandboxes.reattach) {
      const alive = await this.deps.sandboxes.reattach({ sandboxId: ready.data.sandboxId, baseSha: task.context.baseSha, taskId: task.id });
      if (alive) {
        this.sandboxes.set(task.id, alive);
        return alive;
      }
    }
    const progress = this.progressEvents(task.id);
    const acquired = await this.deps.sandboxes
      .acquire({ repo: task.context.repo, baseSha: task.context.baseSha, taskId: task.id, onProgress: progress.onProgress, ...(signal ? { signal } : {}) })
      .finally(() => progress.flushed());
    this.sandboxes.set(task.id, acquired.sandbox);
    const restored = await restoreWorkspace(acquired.sandbox, events, await this.deps.checkpoints?.load(task.id));
    await this.emit(task.id, {
      type: 'sandbox.ready',
      data: {
        sandboxId: acquired.sandbox.id,
        image: acquired.sandbox.image,
        baseSha: acquired.sandbox.baseSha,
        source: acquired.source,
        startMs: acquired.startMs,
      },
    });
    if (restored.note) await this.emit(task.id, { type: 'user.message', data: { from: SANDBOX_NOTE_AUTHOR, text: restored.note } });
    return acquired.sandbox;
  }

  /**
   * `snapshot.progress` events while a task waits for its snapshot to build: every stage change,
   * else at most one every 2 s (the build reports far more often). Appended in order.
   */
  private progressEvents(taskId: string): { onProgress: (progress: SnapshotProgress) => void; flushed: () => Promise<void> } {
    let chain: Promise<unknown> = Promise.resolve();
    let lastStage = '';
    let lastAt = 0;
    return {
      onProgress: (progress) => {
        const now = Date.now();
        if (progress.stage === lastStage && now - lastAt < 2000) return;
        lastStage = progress.stage;
        lastAt = now;
        chain = chain.then(() => this.emit(taskId, { type: 'snapshot.progress', data: progress })).catch((error: unknown) => this.deps.logger?.warn({ err: error, taskId }, 'snapshot progress event not written'));
      },
      flushed: async () => {
        await chain;
      },
    };
  }

  async releaseSandbox(taskId: string): Promise<void> {
    this.pausedHolding.delete(taskId);
    const sandbox = this.sandboxes.get(taskId);
    if (!sandbox) return;
    this.sandboxes.delete(taskId);
    await this.deps.sandboxes.release(sandbox).catch((error: unknown) => this.deps.logger?.warn({ err: error, taskId }, 'sandbox release failed'));
  }

  async releaseAll(): Promise<void> {
    await Promise.all([...this.sandboxes.keys()].map((taskId) => this.releaseSandbox(taskId)));
  }
}

export { replayFileChanges } from './sandbox-life';
