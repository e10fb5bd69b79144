/**
 * The model's script for `npm run bench:scale`, and a check that it covers every point a worker can
 * be killed at. A task resumed from its log is told which tool call was cut short ("Interrupted: …
 * check the current state before repeating it"); a real model then redoes it. The first script
 * had only the straight path (fix, run the tests, finish), so a task whose edit or finish was cut
 * off by the kill asked for a turn the script did not have and failed as model_refused — 5 of the
 * 6 resumed tasks in the first 300-task run, all 9 in a 60-task one. Now: after an interrupted
 * call the fix is done again (it fails harmlessly when it had happened), then finish, for any
 * number of kills of the same task.
 *
 * A task's length: after the fix it explores (`bench explore`, a command the sandbox stand-in
 * answers) until the sandbox says "done exploring", then finishes. The stand-in decides how many
 * explorations a task takes (`ExploringSandbox`, from the task's id), so tasks of one fleet differ
 * in length as real ones do: 300 tasks started together then reach review over minutes, not in
 * one burst. A sandbox made after a kill carries on from the explorations in the task's log.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TaskEvent } from '@dockhand/protocol';
import { runAgent } from '../../server/src/agent/loop';
import { RecordingApprover } from '../../server/src/agent/testing/context';
import { MemoryEventSink } from '../../server/src/agent/testing/memory-sink';
import type { FeedbackEngine, TestReport } from '../../server/src/feedback/types';
import type { ExecOptions, ExecResult } from '../../server/src/sandbox/types';
import { AnthropicModelClient } from '../../server/src/model/anthropic-client';
import type { CassetteInput } from '../../server/src/model/replay/cassette';
import { startReplayServer } from '../../server/src/model/replay/server';
import { replayFileChanges } from '../../server/src/runner/task-runner';
import { MemorySandbox } from '../../server/src/runner/testing/fakes';

const FIX = { type: 'tool_use', name: 'edit_file', input: { path: 'src/calc.js', command: 'replace', old_text: 'let index = 1;', new_text: 'let index = 0;' } } as const;
const FINISH = { type: 'tool_use', name: 'finish', input: { summary: 'average() now starts summing at index 0.' } } as const;

/** The test runner's stand-in: green after `ms` (the scaled time of a real test run; a function is asked per run). */
export function greenTests(duration: number | (() => number)): FeedbackEngine {
  return {
    async runTests(): Promise<TestReport> {
      const ms = typeof duration === 'function' ? duration() : duration;
      await new Promise((resolve) => setTimeout(resolve, ms));
      return {
        command: 'npm test', scope: 'full', selectionReason: 'bench stand-in', passed: 3, failed: 0, skipped: 0, ok: true, quarantined: [],
        output: '3 passed', durationMs: ms, cases: [], runner: 'unknown', wholeCommand: true,
      };
    },
    async diagnostics() {
      return [];
    },
  };
}

const FIX_AGAIN = { name: 'fix again (a call was interrupted by a kill: check by redoing the edit)', when: { toolResultContains: 'Interrupted' }, content: [FIX] };
const EXPLORE = { name: 'explore', content: [{ type: 'tool_use', name: 'run_command', input: { command: 'bench explore' } } as const] };
const FINISH_WHEN_EXPLORED = { name: 'finish', when: { toolResultContains: 'done exploring' }, content: [FINISH] };

/**
 * How many explorations a task takes: EXPLORE_MIN–EXPLORE_MAX (3–33: tasks of 5–35 turns, under the
 * default budget of 40 with room for a resume; the script is sized by the maximum).
 */
export const EXPLORE_MAX = Number(process.env.EXPLORE_MAX ?? 33);
export const EXPLORE_MIN = Math.min(EXPLORE_MAX, Number(process.env.EXPLORE_MIN ?? 3));

/**
 * A memory sandbox that answers `bench explore` with "keep exploring" until it has been asked
 * `explorations` times, then "done exploring". `explorationsFor` spreads a fleet's tasks evenly
 * between EXPLORE_MIN and EXPLORE_MAX by their ids.
 */
export class ExploringSandbox extends MemorySandbox {
  constructor(id: string, baseSha: string, files: Record<string, string>, private readonly explorations: number, private explored = 0) {
    super(id, baseSha, files);
  }

  override async exec(options: ExecOptions): Promise<ExecResult> {
    if (!options.cmd.some((arg) => arg.includes('bench explore'))) return super.exec(options);
    this.explored += 1;
    const stdout = this.explored < this.explorations ? `explored ${this.explored} of ${this.explorations}: keep exploring\n` : 'done exploring\n';
    return { exitCode: 0, stdout, stderr: '', truncated: false, timedOut: false, durationMs: 0 };
  }
}

/** The explorations a task's log holds (answered ones), where a sandbox made after a kill carries on. */
export function exploredIn(events: readonly TaskEvent[]): number {
  return events.filter((e) => e.type === 'tool.finished' && e.data.name === 'run_command' && e.data.output.includes('explor')).length;
}

export function explorationsFor(taskId: string): number {
  let hash = 0;
  for (const char of taskId) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return EXPLORE_MIN + (hash % (EXPLORE_MAX - EXPLORE_MIN + 1));
}

export const SCALE_CASSETTE: CassetteInput = {
  turns: [
    { name: 'fix', content: [FIX] },
    // Then explore until the sandbox says done, and finish; after a kill, an interrupted call is
    // checked by redoing the fix (an edit already made fails harmlessly) and the exploring goes on
    // — a finish cut off in its verification included.
    ...Array.from({ length: EXPLORE_MAX + 12 }, () => ({ oneOf: [FIX_AGAIN, FINISH_WHEN_EXPLORED, EXPLORE] })),
  ],
};

/**
 * Plays one task to its end, then resumes it from every prefix of its log (a SIGKILL after each
 * event: a fresh sandbox with the logged file changes replayed, as the runner does), and each of
 * those again from every prefix of the resumed log (a second kill), and returns the points that
 * did not end in a verified finish. In-process, a few seconds.
 */
export async function unresumablePoints(fixturePath: string): Promise<string[]> {
  const files = { 'src/calc.js': readFileSync(join(fixturePath, 'src/calc.js'), 'utf8') };
  const replay = await startReplayServer({});
  replay.addCassette('scale', SCALE_CASSETTE);
  const run = async (prior: TaskEvent[]) => {
    const events = new MemoryEventSink('t');
    events.events.push(...prior);
    // Two explorations: the loop's both answers (keep exploring, done) at every kill point.
    const sandbox = new ExploringSandbox('s', 'a'.repeat(40), files, 2, exploredIn(prior));
    await replayFileChanges(sandbox, prior);
    const model = new AnthropicModelClient({ apiKey: 'replay:scale', baseURL: replay.url, model: 'claude-sonnet-4-6', retry: { maxAttempts: 1 } });
    const outcome = await runAgent({
      task: { ticket: { kind: 'text', title: 'average() is off by one', body: 'average([1, 2, 3]) should be 2.' } },
      sandbox, model, events, approver: new RecordingApprover(), feedback: greenTests(0), priorEvents: prior, config: { review: false },
    });
    return { outcome, events: events.events };
  };
  try {
    const full = await run([]);
    if (full.outcome.status !== 'finished_verified') return [`the straight run: ${full.outcome.status} ${full.outcome.summary}`];
    const bad: string[] = [];
    for (let k = 1; k < full.events.length; k++) {
      const once = await run(full.events.slice(0, k));
      if (once.outcome.status !== 'finished_verified') bad.push(`killed after event ${k} (${full.events[k - 1]?.type}): ${once.outcome.status} ${once.outcome.summary.slice(0, 200)}`);
      // Killed again, on the worker that resumed it.
      for (let j = k + 1; j < once.events.length; j++) {
        const { outcome } = await run(once.events.slice(0, j));
        if (outcome.status !== 'finished_verified') bad.push(`killed after events ${k} and ${j}: ${outcome.status} ${outcome.summary.slice(0, 200)}`);
      }
    }
    return bad;
  } finally {
    await replay.close();
  }
}
