import type Anthropic from '@anthropic-ai/sdk';
import { Budgets, type TaskEvent, type TaskUsage, type Ticket } from '@dockhand/protocol';
import type { FeedbackEngine, ReproducingSelection, TestInfrastructure, TestReport } from '../feedback/types';
import type { ModelClient, ModelTurnResult } from '../model/types';
import type { Sandbox } from '../sandbox/types';
import { BudgetTracker, currentRound, roundActiveMs, type BudgetExceeded } from './budget';
import { withCacheBreakpoints } from './cache';
import { ContextMeter, charsOf, compactIfNeeded, type CompactionConfig } from './compaction';
import {
  DEFAULT_KEEP_RECENT_TURNS,
  START_TEXT,
  appendUserBlocks,
  assistantContent,
  rebuildConversation,
  toolUsesOf,
  userText,
} from './conversation';
import { contextTokensOf, recordModelTurn, textOf } from './model-turn';
import type { Approver, EventSink } from './ports';
import { buildSystemPrompt, gatherRepoContext } from './prompt';
import type { ReviewVerdict } from './review';
import { StuckDetector } from './stuck';
import { TallyingSink, UsageTally } from './tally';
import { FINISH_TOOL_NAME, FinishInput, defaultTools, executeTool, type AgentTool, type ToolContext } from './tools';
import { describeBaseline, describeReproducing, runnerFailedData } from './tools/run-tests';
import { verifyFinish } from './verify';

/*
 * The agent loop: model turn → tool calls in the sandbox → results back, until a verified finish,
 * a budget, a stop (stuck, refusal, model failure) or cancellation. The pieces it composes are
 * separate modules: prompt (system prompt), cache (breakpoints), compaction, budget, stuck,
 * verify (the verified stop), conversation (messages ⇄ event log). Every step is an event.
 *
 * Task state (task.state, task.failed) belongs to the caller, which turns the outcome into state.
 */

export interface AgentTask {
  ticket: Ticket;
  budgets?: Partial<Budgets>;
  /** The ticket explicitly allows changing tests. */
  allowTestEdits?: boolean;
  /** Tests named at submission that reproduce the bug: they must pass before the task finishes. */
  reproducingTests?: readonly string[];
}

export interface AgentConfig {
  /** max_tokens per model turn. */
  maxTokens: number;
  /** Characters of one tool result the model sees (head and tail kept). */
  toolOutputCapChars: number;
  /** The same failing tool call this many times → one redirect, then stop. */
  stuckRepeatLimit: number;
  /** Consecutive turns without any tool call before the loop gives up. */
  maxTextOnlyTurns: number;
  /** Prompt-cache breakpoints (off only to measure what caching saves). */
  cacheBreakpoints: boolean;
  /** The self-review model call in the verified stop. */
  review: boolean;
  compaction: CompactionConfig;
  instructionFileCapChars: number;
  repoMapCapChars: number;
  now: () => number;
}

export const DEFAULT_AGENT_CONFIG: AgentConfig = {
  maxTokens: 8192,
  toolOutputCapChars: 20_000,
  stuckRepeatLimit: 3,
  maxTextOnlyTurns: 3,
  cacheBreakpoints: true,
  review: true,
  compaction: { enabled: true, thresholdTokens: 120_000, targetRatio: 0.6, keepRecentTurns: DEFAULT_KEEP_RECENT_TURNS },
  instructionFileCapChars: 12_000,
  repoMapCapChars: 4_000,
  now: Date.now,
};

export type AgentConfigInput = Partial<Omit<AgentConfig, 'compaction'>> & { compaction?: Partial<CompactionConfig> };

/**
 * Steering messages from the developer. The API records each as a `user.message` event when it
 * arrives (durable, visible at once) and the steering source delivers it here; the loop injects
 * it before its next model call without recording it again. The loop's own notes are recorded
 * with from 'dockhand' and are skipped if a source hands them back.
 *
 * On a rebuild the message sits where the log has it: if it arrived while a model call was in
 * flight, one turn earlier than the loop injected it. The rebuilt conversation is still valid.
 */
export interface SteeringMessage {
  from: string;
  text: string;
}

export interface SteeringSource {
  take(): SteeringMessage[];
  /**
   * Who asked the agent to pause, if someone did and it has not paused since. The loop asks
   * between turns (the current turn's tool calls have finished, no model call is in flight) and
   * returns `paused`; the caller keeps the sandbox and the conversation continues from the log.
   */
  pauseRequested?(): string | undefined;
}

export interface RunAgentOptions {
  task: AgentTask;
  sandbox: Sandbox;
  model: ModelClient;
  /** The verified stop's reviewer (default: `model`); a separate client may use another model or session. */
  reviewModel?: ModelClient;
  /** Writes compaction summaries (default: `model`, which reads the cached prefix). */
  compactionModel?: ModelClient;
  events: EventSink;
  approver: Approver;
  feedback: FeedbackEngine;
  /** The task's event log so far: the conversation is rebuilt from it and continued. */
  priorEvents?: readonly TaskEvent[];
  signal?: AbortSignal;
  config?: AgentConfigInput;
  steering?: SteeringSource;
  tools?: AgentTool[];
}

export type AgentStatus = 'finished_verified' | 'budget_exhausted' | 'failed' | 'cancelled' | 'paused';

export interface AgentOutcome {
  status: AgentStatus;
  /** The finish summary (for the PR) or what stopped the loop. */
  summary: string;
  /** The workspace diff against the base commit, kept whatever the status. */
  diff: string;
  /** Machine-readable cause for failed/budget_exhausted: 'stuck', 'refusal', 'no_finish', 'model_unavailable', 'test_infrastructure', budget name. */
  reason?: string;
  budget?: BudgetExceeded;
  usage: TaskUsage;
  tests?: TestReport;
  review?: ReviewVerdict;
}

/** `from` of the loop's own user.message notes (nudges, stuck redirects). */
export const NOTE_AUTHOR = 'dockhand';

export const NUDGE_TEXT =
  'You replied without calling a tool. If the ticket is done, call finish with a summary; otherwise continue with the tools.';
const MAX_TOKENS_TEXT = 'Your last reply was cut off at the output limit. Continue, with shorter replies and smaller edits.';

export function resolveConfig(input: AgentConfigInput = {}): AgentConfig {
  return {
    ...DEFAULT_AGENT_CONFIG,
    ...input,
    compaction: { ...DEFAULT_AGENT_CONFIG.compaction, ...input.compaction },
  };
}

export async function runAgent(options: RunAgentOptions): Promise<AgentOutcome> {
  const config = resolveConfig(options.config);
  const budgets = Budgets.parse(options.task.budgets ?? {});
  const prior = options.priorEvents && options.priorEvents.length > 0
    ? rebuildConversation(options.priorEvents, { keepRecentTurns: config.compaction.keepRecentTurns })
    : undefined;
  // A PR's follow-up round is budgeted on its own (`currentRound`).
  const round = currentRound(options.priorEvents ?? []);
  const budget = new BudgetTracker(budgets, config.now, prior ? roundActiveMs(options.priorEvents ?? []) : 0, round.before);
  const tally = new UsageTally(budget, prior);
  const events = new TallyingSink(options.events, tally);
  const { sandbox, model, feedback, approver, task } = options;
  const allowTestEdits = task.allowTestEdits ?? false;

  // Wall clock: one timer aborts whatever is running (model stream, tool, approval wait).
  const wallClock = new AbortController();
  const timer = setTimeout(() => wallClock.abort(), budget.remainingMs());
  const signal = options.signal ? AbortSignal.any([options.signal, wallClock.signal]) : wallClock.signal;

  const pendingWrites: Array<Promise<unknown>> = [];
  const previousOnFallback = model.onFallback;
  model.onFallback = (notice) => {
    previousOnFallback?.(notice);
    pendingWrites.push(events.append({ type: 'model.fell_back', data: notice }).catch(() => undefined));
  };
  // A model (or rate budget) that cannot be reached is retried, then the task goes back to the
  // queue: the user sees each step as the task's state with the reason and when it is tried again.
  const previousOnRetry = model.onRetry;
  model.onRetry = (notice) => {
    previousOnRetry?.(notice);
    const seconds = Math.max(1, Math.round(notice.delayMs / 1000));
    const what = notice.model === 'rate budget' ? 'the fleet rate budget' : `model ${notice.model}`;
    const reason = notice.handBack
      ? `${what} unreachable after ${notice.attempt} attempts (${notice.reason}); back in the queue, retried in ${seconds} s`
      : `${what} unreachable (${notice.reason}); retrying in ${seconds} s (attempt ${notice.attempt + 1}${notice.of ? ` of ${notice.of}` : ''})`;
    pendingWrites.push(events.append({ type: 'task.state', data: { state: notice.handBack ? 'queued' : 'running', reason } }).catch(() => undefined));
  };

  // A turn that waits for the fleet's model rate budget: an event when it starts waiting and one
  // when it goes ahead (the panel shows the wait; /metrics counts the finished ones).
  // The self-review and compaction clients (when they are others) wait for the same budget.
  const budgetClients = [...new Set([model, options.reviewModel, options.compactionModel].filter((client): client is ModelClient => client !== undefined))];
  const previousOnBudgetWait = budgetClients.map((client) => client.onBudgetWait);
  budgetClients.forEach((client, index) => {
    client.onBudgetWait = (notice) => {
      previousOnBudgetWait[index]?.(notice);
      pendingWrites.push(events.append({ type: 'model.budget_wait', data: { ...notice, tokens: Math.round(notice.tokens), waitMs: Math.round(notice.waitMs) } }).catch(() => undefined));
    };
  });

  const outcome = async (status: AgentStatus, summary: string, extra: Partial<AgentOutcome> = {}): Promise<AgentOutcome> => {
    const diff = extra.diff ?? (await sandbox.diff().catch(() => ''));
    return { status, summary, diff, usage: tally.usage(), ...extra };
  };
  const stopForBudget = async (exceeded: BudgetExceeded): Promise<AgentOutcome> => {
    await events.append({ type: 'budget.exceeded', data: exceeded });
    return outcome('budget_exhausted', `Stopped: the ${exceeded.budget} budget is used up (${exceeded.used} of ${exceeded.limit}).`, {
      reason: exceeded.budget,
      budget: exceeded,
    });
  };
  const stopForAbort = (): Promise<AgentOutcome> =>
    options.signal?.aborted ? outcome('cancelled', 'Cancelled.', { reason: 'cancelled' }) : stopForBudget(budget.wallClockExceeded());
  // The runner itself failed: no model turn can fix that, so the task stops with what to do.
  const stopForInfrastructure = (infrastructure: TestInfrastructure): Promise<AgentOutcome> =>
    outcome('failed', `${infrastructure.message}. ${infrastructure.action}`, { reason: 'test_infrastructure' });

  let messages: Anthropic.MessageParam[] = prior?.messages ?? [{ role: 'user', content: [userText(START_TEXT)] }];
  const addNote = async (text: string) => {
    appendUserBlocks(messages, [userText(text)]);
    await events.append({ type: 'user.message', data: { from: NOTE_AUTHOR, text } });
  };

  try {
    const repo = await gatherRepoContext(sandbox, config);
    const system = buildSystemPrompt({ ticket: task.ticket, allowTestEdits, repo });
    const tools = options.tools ?? defaultTools();
    const toolDefinitions = tools.map((tool) => tool.definition);
    const meter = new ContextMeter(charsOf(system) + charsOf(toolDefinitions));
    const stuck = new StuckDetector(config.stuckRepeatLimit);
    let textOnlyTurns = 0;

    // The baseline at the base commit, before the first change: what already fails is not the
    // agent's — except the ticket's reproducing tests, which must pass.
    const explicit = task.reproducingTests ?? [];
    let reproducing: ReproducingSelection = { tests: [...explicit], from: Object.fromEntries(explicit.map((test) => [test, 'explicit'] as const)), unknown: [] };
    let baselineNote: string | undefined;
    let baselineRan: number | undefined;
    if (feedback.baseline) {
      const baseline = await feedback.baseline(sandbox, { signal }).catch(() => undefined);
      if (signal.aborted) return await stopForAbort();
      if (baseline?.infrastructure) {
        await events.append({ type: 'tests.runner_failed', data: runnerFailedData(baseline.infrastructure) });
        return await stopForInfrastructure(baseline.infrastructure);
      }
      if (baseline) {
        baselineRan = baseline.ran;
        if (feedback.reproducingTests) reproducing = feedback.reproducingTests({ ticket: task.ticket, explicit, baseline });
        baselineNote = describeBaseline(baseline);
      }
    }
    const reproducingNote = describeReproducing(reproducing);
    const firstNote = [baselineNote, reproducingNote].filter(Boolean).join('\n');
    if (firstNote && !prior) await addNote(firstNote);
    const reproducingTests = reproducing.tests;

    for (;;) {
      if (signal.aborted) return await stopForAbort();
      // The safe point: no tool call or model call is in flight, every result is in the log.
      const pausedBy = options.steering?.pauseRequested?.();
      if (pausedBy !== undefined) return await outcome('paused', `Paused by ${pausedBy}.`, { reason: 'paused' });
      const exceeded = budget.exceeded();
      if (exceeded) return await stopForBudget(exceeded);

      const steering = (options.steering?.take() ?? []).filter((message) => message.from !== NOTE_AUTHOR);
      appendUserBlocks(messages, steering.map((message) => userText(message.text)));
      if (messages[messages.length - 1]?.role === 'assistant') await addNote(NUDGE_TEXT);

      const turn = budget.turns + 1;
      messages = await compactIfNeeded({
        messages,
        meter,
        config: config.compaction,
        model: options.compactionModel ?? model,
        system,
        tools: toolDefinitions,
        events,
        turn,
        maxTokens: config.maxTokens,
        cacheBreakpoints: config.cacheBreakpoints,
        signal,
      });
      const request = withCacheBreakpoints({ system, tools: toolDefinitions, messages }, config.cacheBreakpoints);
      let result: ModelTurnResult;
      try {
        result = await model.turn({ ...request, maxTokens: config.maxTokens, signal });
      } catch (error) {
        if (signal.aborted) return await stopForAbort();
        const message = error instanceof Error ? error.message : String(error);
        // A model that answered "invalid request" was reached: say so, so nobody waits for it to come back.
        if (error instanceof Error && 'code' in error && error.code === 'model_refused') {
          return await outcome('failed', `The model refused the request: ${message}`, { reason: 'model_refused' });
        }
        return await outcome('failed', `The model could not be reached: ${message}`, { reason: 'model_unavailable' });
      }
      await Promise.all(pendingWrites.splice(0));
      const usage = await recordModelTurn(events, turn, result, 'agent');
      meter.observe(contextTokensOf(usage), messages);
      const text = textOf(result.message);
      if (text) await events.append({ type: 'assistant.text', data: { turn, text } });
      messages.push({ role: 'assistant', content: assistantContent(result.message.content) });

      if (result.message.stop_reason === 'refusal') {
        return await outcome('failed', 'The model refused to continue with this ticket.', { reason: 'refusal' });
      }
      const uses = toolUsesOf(result.message.content);
      if (uses.length === 0) {
        textOnlyTurns += 1;
        if (textOnlyTurns >= config.maxTextOnlyTurns) {
          return await outcome('failed', `The model stopped using tools without calling finish: ${text.slice(0, 500)}`, {
            reason: 'no_finish',
          });
        }
        await addNote(result.message.stop_reason === 'max_tokens' ? MAX_TOKENS_TEXT : NUDGE_TEXT);
        continue;
      }
      textOnlyTurns = 0;

      const results: Anthropic.ToolResultBlockParam[] = [];
      const notes: string[] = [];
      let stopReason: string | undefined;
      let verified: Awaited<ReturnType<typeof verifyFinish>> | undefined;
      let finishSummary = '';
      let infrastructure: TestInfrastructure | undefined;
      for (const use of uses) {
        if (signal.aborted) break;
        await events.append({ type: 'tool.called', data: { turn, toolUseId: use.id, name: use.name, input: use.input } });
        const started = performance.now();
        let output: string;
        let isError: boolean;
        let truncated = false;
        if (use.name === FINISH_TOOL_NAME) {
          const finish = FinishInput.safeParse(use.input);
          if (!finish.success) {
            output = 'Invalid input for finish:\nsummary: give a non-empty summary for the pull request';
            isError = true;
          } else {
            try {
              const verification = await verifyFinish({
                sandbox, feedback, model: options.reviewModel ?? model, events, ticket: task.ticket, allowTestEdits, reproducingTests,
                unknownReproducingTests: reproducing.unknown, ...(baselineRan !== undefined ? { baselineRan } : {}),
                summary: finish.data.summary, signal, review: config.review, turn, maxTokens: config.maxTokens,
              });
              output = verification.feedback;
              isError = !verification.verified;
              if (verification.infrastructure) infrastructure = verification.infrastructure;
              if (verification.verified) {
                verified = verification;
                finishSummary = finish.data.summary;
              }
            } catch (error) {
              if (signal.aborted) break;
              output = `Finish could not be verified: ${error instanceof Error ? error.message : String(error)}. Try finish again.`;
              isError = true;
            }
          }
        } else {
          const context: ToolContext = { sandbox, signal, toolUseId: use.id, events, approver, feedback, allowTestEdits, reproducingTests };
          const executed = await executeTool(tools, use.name, use.input, context, config.toolOutputCapChars);
          if (signal.aborted) break;
          ({ output, isError, truncated } = executed);
        }
        await events.append({
          type: 'tool.finished',
          data: { toolUseId: use.id, name: use.name, isError, output, truncated, durationMs: performance.now() - started },
        });
        results.push({ type: 'tool_result', tool_use_id: use.id, content: output, is_error: isError });
        const verdict = stuck.record(use.name, use.input, isError);
        if (verdict.action === 'redirect') notes.push(verdict.note);
        if (verdict.action === 'stop') stopReason = verdict.reason;
      }
      if (signal.aborted) return await stopForAbort();
      appendUserBlocks(messages, results);
      if (infrastructure) return await stopForInfrastructure(infrastructure);
      if (verified) {
        return await outcome('finished_verified', finishSummary, {
          diff: verified.diff,
          ...(verified.tests ? { tests: verified.tests } : {}),
          ...(verified.review ? { review: verified.review } : {}),
        });
      }
      if (stopReason !== undefined) {
        return await outcome('failed', `Stopped: the agent is stuck (${stopReason}).`, { reason: 'stuck' });
      }
      for (const note of notes) await addNote(note);
    }
  } finally {
    clearTimeout(timer);
    model.onFallback = previousOnFallback;
    model.onRetry = previousOnRetry;
    budgetClients.forEach((client, index) => (client.onBudgetWait = previousOnBudgetWait[index]));
    await Promise.all(pendingWrites);
  }
}
