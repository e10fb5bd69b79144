/**
 * The model's script for `npm run bench:scale`, and a check that it covers every point a worker can
 * be killed at. A task resumed from its log is told which tool call was cut short ("Interrupted: …
 * check the current state before repeating it"); a real model then redoes it. The first script
 * had only the straight path (fix, run the tests, finish), so a task whose edit or finish was cut
 * off by the kill asked for a turn the script did not have and failed as model_refused — 5 of the
 * 6 resumed tasks in the first 300-task run, all 9 in a 60-task one. Now: an interrupted fix is
 * done again, and a finish cut off during its verification is called again.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TaskEvent } from '@dockhand/protocol';
import { runAgent } from '../../server/src/agent/loop';
import { RecordingApprover } from '../../server/src/agent/testing/context';
import { MemoryEventSink } from '../../server/src/agent/testing/memory-sink';
import type { FeedbackEngine, TestReport } from '../../server/src/feedback/types';
import { AnthropicModelClient } from '../../server/src/model/anthropic-client';
import type { CassetteInput } from '../../server/src/model/replay/cassette';
import { startReplayServer } from '../../server/src/model/replay/server';
import { replayFileChanges } from '../../server/src/runner/task-runner';
import { MemorySandbox } from '../../server/src/runner/testing/fakes';

const FIX = { type: 'tool_use', name: 'edit_file', input: { path: 'src/calc.js', command: 'replace', old_text: 'let index = 1;', new_text: 'let index = 0;' } } as const;
const FINISH = { type: 'tool_use', name: 'finish', input: { summary: 'average() now starts summing at index 0.' } } as const;

/** The test runner's stand-in: green after `ms` (the scaled time of a real test run). */
export function greenTests(ms: number): FeedbackEngine {
  return {
    async runTests(): Promise<TestReport> {
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

export const SCALE_CASSETTE: CassetteInput = {
  turns: [
    { name: 'fix', content: [FIX] },
    {
      oneOf: [
        { name: 'fix again (the edit was interrupted by a kill)', when: { toolResultContains: 'Interrupted' }, content: [FIX] },
        { name: 'run the tests', content: [{ type: 'tool_use', name: 'run_command', input: { command: 'npm test' } }] },
      ],
    },
    { name: 'finish', content: [FINISH] },
    { name: 'finish again (its verification was interrupted by a kill)', content: [FINISH] },
  ],
};

/**
 * Plays one task to its end, then resumes it from every prefix of its log (a SIGKILL after each
 * event: a fresh sandbox with the logged file changes replayed, as the runner does) and returns
 * the prefixes that did not end in a verified finish. In-process, about a second.
 */
export async function unresumablePoints(fixturePath: string): Promise<string[]> {
  const files = { 'src/calc.js': readFileSync(join(fixturePath, 'src/calc.js'), 'utf8') };
  const replay = await startReplayServer({});
  replay.addCassette('scale', SCALE_CASSETTE);
  const run = async (prior: TaskEvent[]) => {
    const events = new MemoryEventSink('t');
    events.events.push(...prior);
    const sandbox = new MemorySandbox('s', 'a'.repeat(40), files);
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
      const { outcome } = await run(full.events.slice(0, k));
      if (outcome.status !== 'finished_verified') bad.push(`killed after event ${k} (${full.events[k - 1]?.type}): ${outcome.status} ${outcome.summary.slice(0, 200)}`);
    }
    return bad;
  } finally {
    await replay.close();
  }
}
