import { applyPatch, parsePatch, reversePatch } from 'diff';
import { Budgets, type NewEvent, type Task, type TaskEvent } from '@dockhand/protocol';
import type { EventSink } from '../agent/ports';
import { roundActiveMs } from '../agent/budget';
import { DockhandError } from '../errors';
import type { Logger } from '../log';
import type { Sandbox, SandboxLoss } from '../sandbox/types';
import type { Checkpoint, CheckpointStore } from './checkpoints';

/*
 * A task's sandbox over its life: checkpoints of the workspace after each tool call that may
 * write, the workspace restored from them in a fresh sandbox, and the watch that ends a run when
 * its sandbox is lost or its wall clock is over, whatever the sandbox or a tool call is doing.
 */

/** `from` of the notes the runner writes into the conversation about the sandbox. */
export const SANDBOX_NOTE_AUTHOR = 'dockhand-sandbox';
/** A task gets this many replacement sandboxes; the next loss ends it (`sandbox_lost`). */
export const SANDBOX_REPLACEMENTS = 1;
/** Past the wall-clock budget, the loop gets this long to stop by itself before the run is ended. */
export const WALL_CLOCK_GRACE_MS = 30_000;
/** After the run was told to stop, how long it may take before it is abandoned. */
const ABANDON_AFTER_MS = 15_000;
/** Tools that may change the workspace: a checkpoint follows each of their results. */
const WRITING_TOOLS = new Set(['run_command', 'run_tests', 'edit_file', 'finish']);

/**
 * The loop's event sink, plus a checkpoint of the workspace after each writing tool call's
 * result is in the log (before the next model call). A sandbox that cannot give its diff keeps
 * the previous checkpoint; the run goes on.
 */
export function checkpointingSink(sink: EventSink, sandbox: Sandbox, taskId: string, checkpoints: CheckpointStore | undefined, logger?: Logger): EventSink {
  if (!checkpoints) return sink;
  return {
    async append(event) {
      const written = await sink.append(event);
      if (event.type === 'tool.finished' && WRITING_TOOLS.has(event.data.name) && !sandbox.lost) {
        try {
          const saved = await checkpoints.save(taskId, written.seq, await sandbox.diff());
          if ('omittedBytes' in saved) logger?.warn({ taskId, bytes: saved.omittedBytes }, 'workspace diff over the checkpoint bound; not kept');
        } catch (error) {
          logger?.warn({ err: error, taskId }, 'workspace checkpoint not written');
        }
      }
      return written;
    },
  };
}

/**
 * Puts a fresh sandbox's workspace where the task left it: the last checkpoint's diff applied
 * (`git apply`), then the `file.changed` edits logged after it. Without a checkpoint (none kept
 * on this node, or over the bound) only the logged edits are replayed; the answer then says what
 * could not be restored, for the agent.
 */
export async function restoreWorkspace(sandbox: Sandbox, events: TaskEvent[], checkpoint: Checkpoint | undefined): Promise<{ note?: string }> {
  if (checkpoint && 'diff' in checkpoint) {
    if (checkpoint.diff !== '') {
      const applied = await sandbox.exec({ cmd: ['git', 'apply', '--whitespace=nowarn', '-'], stdin: checkpoint.diff, timeoutMs: 120_000 });
      if (applied.exitCode !== 0) {
        await replayFileChanges(sandbox, events);
        return { note: `The workspace could not be restored from its last checkpoint (git apply: ${applied.stderr.trim().slice(0, 300)}); only the edit_file changes were replayed. Check the workspace (git status) and redo what is missing.` };
      }
    }
    await replayFileChanges(sandbox, events.filter((event) => event.seq > checkpoint.seq));
    return {};
  }
  await replayFileChanges(sandbox, events);
  if (checkpoint && 'omittedBytes' in checkpoint) {
    return { note: `The workspace's changes (${Math.round(checkpoint.omittedBytes / 1048576)} MiB) were over the checkpoint bound, so only the edit_file changes were restored in this sandbox. Check the workspace (git status) and redo what is missing.` };
  }
  return {};
}

function alreadyApplied(current: string, patch: string): boolean {
  try {
    const [parsed] = parsePatch(patch);
    return parsed !== undefined && applyPatch(current, reversePatch(parsed)) !== false;
  } catch {
    return false;
  }
}

/** Re-applies every `file.changed` patch given, in order, to a fresh workspace (one already in it is skipped). */
export async function replayFileChanges(sandbox: Sandbox, events: TaskEvent[]): Promise<number> {
  let applied = 0;
  for (const event of events) {
    if (event.type !== 'file.changed') continue;
    const { path, change, patch } = event.data;
    if (change === 'deleted') {
      await sandbox.exec({ cmd: ['rm', '-f', '--', path] });
      applied += 1;
      continue;
    }
    let current = '';
    if (change === 'modified') current = (await sandbox.readFile(path)).toString('utf8');
    const next = applyPatch(current, patch);
    if (next === false) {
      // Already there: a checkpoint taken after the write but before its file.changed was logged
      // holds it (the patch reversed applies to what the file is now).
      if (alreadyApplied(current, patch)) continue;
      throw new DockhandError('conflict', `recorded change to ${path} (seq ${event.seq}) does not apply to a fresh workspace`);
    }
    await sandbox.writeFile(path, next);
    applied += 1;
  }
  return applied;
}

export type RunStop = { kind: 'lost'; loss: SandboxLoss } | { kind: 'wall_clock'; limitSeconds: number; usedSeconds: number };

export interface RunWatch {
  /** The agent's signal: the scheduler's, and this watch's (sandbox lost, wall clock over). */
  signal: AbortSignal;
  /** Why the watch stopped the run, once it has. */
  readonly stopped: RunStop | undefined;
  /** Resolves `undefined` a while after the watch stopped the run: the run is then abandoned. */
  abandoned: Promise<undefined>;
  dispose(): void;
}

/**
 * A timer outside every tool call and a listener on the sandbox: when the sandbox is lost, or the
 * task's wall clock (its budget, less what earlier runs used, plus a grace) is over, the run is
 * aborted, and abandoned if it does not return soon after (a call stuck in a sandbox that no
 * longer answers cannot keep the task, its slot or its budget).
 */
export function watchRun(
  sandbox: Sandbox,
  task: Task,
  events: readonly TaskEvent[],
  signal: AbortSignal,
  timing: { graceMs?: number; abandonAfterMs?: number } = {},
): RunWatch {
  const controller = new AbortController();
  let stopped: RunStop | undefined;
  let abandonTimer: NodeJS.Timeout | undefined;
  let markAbandoned: (value: undefined) => void = () => undefined;
  const abandoned = new Promise<undefined>((resolve) => (markAbandoned = resolve));
  const stop = (why: RunStop): void => {
    if (stopped) return;
    stopped = why;
    controller.abort(new Error(why.kind === 'lost' ? `sandbox lost: ${why.loss.reason}` : 'wall clock over'));
    abandonTimer = setTimeout(() => markAbandoned(undefined), timing.abandonAfterMs ?? ABANDON_AFTER_MS);
    abandonTimer.unref();
  };
  const limitSeconds = Budgets.parse(task.budgets ?? {}).maxWallClockSeconds;
  // A PR's follow-up round has the wall clock of its own (agent/budget.ts `currentRound`).
  const used = roundActiveMs(events);
  const started = Date.now();
  const deadline = setTimeout(() => stop({ kind: 'wall_clock', limitSeconds, usedSeconds: Math.round((used + Date.now() - started) / 1000) }), Math.max(0, limitSeconds * 1000 - used) + (timing.graceMs ?? WALL_CLOCK_GRACE_MS));
  deadline.unref();
  sandbox.onLost?.((loss) => stop({ kind: 'lost', loss }));
  return {
    signal: AbortSignal.any([signal, controller.signal]),
    get stopped() {
      return stopped;
    },
    abandoned,
    dispose() {
      clearTimeout(deadline);
      clearTimeout(abandonTimer);
    },
  };
}

/**
 * Tool calls of the current sandbox's run that have no result: each gets one now, saying the
 * sandbox was lost while it ran, so the conversation (rebuilt on the next sandbox) tells the model
 * what happened instead of "the server stopped".
 */
export function lostCallResults(events: readonly TaskEvent[], loss: SandboxLoss): NewEvent[] {
  const since = events.findLastIndex((event) => event.type === 'sandbox.ready');
  const recent = events.slice(since + 1);
  const finished = new Set(recent.flatMap((event) => (event.type === 'tool.finished' ? [event.data.toolUseId] : [])));
  return recent.flatMap((event): NewEvent[] =>
    event.type === 'tool.called' && !finished.has(event.data.toolUseId)
      ? [{ type: 'tool.finished', data: { toolUseId: event.data.toolUseId, name: event.data.name, isError: true, output: lossText(loss), truncated: false, durationMs: 0 } }]
      : [],
  );
}

export function lossText(loss: SandboxLoss): string {
  const running = loss.running.length > 0 ? ` while it ran: ${loss.running.join('; ')}` : '';
  return `The sandbox was lost (${loss.reason})${running}. This call did not complete and its effects are gone.`;
}

/** Losses the task already had (each left a note from the runner). */
export function lossesSoFar(events: readonly TaskEvent[]): number {
  return events.filter((event) => event.type === 'user.message' && event.data.from === SANDBOX_NOTE_AUTHOR && event.data.text.startsWith(LOST_NOTE_PREFIX)).length;
}

const LOST_NOTE_PREFIX = 'The sandbox was lost';

/** The note the agent reads in its new sandbox. It has no tool to start sandboxes and is not asked to. */
export function replacedNote(loss: SandboxLoss): string {
  return (
    `${lossText(loss)} Dockhand has moved this task to a new sandbox with the workspace restored as it was after ` +
    'the last completed tool call. Do not repeat what killed the sandbox (a fork bomb, unbounded output or disk ' +
    'use, a runaway process); if the test suite itself does it, say so in the finish summary. Another loss ends the task.'
  );
}
