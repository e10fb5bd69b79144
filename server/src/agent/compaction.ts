import type Anthropic from '@anthropic-ai/sdk';
import type { ModelClient } from '../model/types';
import { withCacheBreakpoints } from './cache';
import { appendUserBlocks, applySummary, compactionCut, dropOldToolOutputs, toolUsesOf, userText } from './conversation';
import { recordModelTurn, textOf } from './model-turn';
import type { EventSink } from './ports';

/*
 * Keeps the context under a ceiling without touching the stable prefix (tools, system prompt,
 * ticket). First the cheap step: outputs of old tool results are replaced by a marker. If the
 * context is still large, the model summarises the older turns into a note that replaces them.
 * Each step invalidates the prompt cache from the first changed message, so compaction works in
 * big steps (down to `targetRatio` of the threshold) rather than nibbling every turn.
 */

export interface CompactionConfig {
  enabled: boolean;
  /** Compact when the estimated context passes this many tokens. */
  thresholdTokens: number;
  /** After compacting, aim for this share of the threshold. */
  targetRatio: number;
  /** The newest assistant turns (and their tool results) are never compacted. */
  keepRecentTurns: number;
}

/** Characters per token of the estimate; the API's tokenizer averages close to this on code. */
const CHARS_PER_TOKEN = 4;

export function charsOf(value: unknown): number {
  return JSON.stringify(value).length;
}

/**
 * Estimates the next request's context from the last real count plus the size of what changed
 * since: real usage anchors the estimate, the character delta covers the new turn.
 */
export class ContextMeter {
  private anchorTokens: number | undefined;
  private anchorChars = 0;

  constructor(private readonly prefixChars: number) {}

  /** After a model call: `tokens` is what the API counted for `messages` as sent. */
  observe(tokens: number, messages: Anthropic.MessageParam[]): void {
    this.anchorTokens = tokens;
    this.anchorChars = charsOf(messages);
  }

  estimate(messages: Anthropic.MessageParam[]): number {
    const chars = charsOf(messages);
    if (this.anchorTokens === undefined) return Math.ceil((this.prefixChars + chars) / CHARS_PER_TOKEN);
    return Math.max(0, Math.ceil(this.anchorTokens + (chars - this.anchorChars) / CHARS_PER_TOKEN));
  }
}

export const SUMMARY_REQUEST =
  'The conversation is getting long and older turns will be removed. Write a concise summary for yourself to ' +
  'continue from: what the ticket needs, what you learned about the code (files, functions, line numbers), what ' +
  'you changed so far, the latest test results, and what remains to do. Reply with text only; do not call tools.';

/** A summary without a model: the calls that were made and whether they worked. */
export function mechanicalSummary(messages: Anthropic.MessageParam[]): string {
  const failed = new Set<string>();
  for (const message of messages) {
    if (message.role !== 'user' || typeof message.content === 'string') continue;
    for (const block of message.content) if (block.type === 'tool_result' && block.is_error) failed.add(block.tool_use_id);
  }
  const lines: string[] = [];
  for (const message of messages) {
    if (message.role !== 'assistant' || typeof message.content === 'string') continue;
    for (const use of toolUsesOf(message.content)) {
      lines.push(`- ${use.name} ${JSON.stringify(use.input).slice(0, 200)}${failed.has(use.id) ? ' (failed)' : ''}`);
    }
  }
  return `Tool calls made so far:\n${lines.join('\n')}`;
}

export interface CompactInput {
  messages: Anthropic.MessageParam[];
  meter: ContextMeter;
  config: CompactionConfig;
  model: ModelClient;
  system: Anthropic.TextBlockParam[];
  tools: Anthropic.Tool[];
  events: EventSink;
  turn: number;
  maxTokens: number;
  cacheBreakpoints: boolean;
  signal: AbortSignal;
}

/** Returns the conversation to send next: the same array when nothing needed compacting. */
export async function compactIfNeeded(input: CompactInput): Promise<Anthropic.MessageParam[]> {
  const { config, meter } = input;
  if (!config.enabled) return input.messages;
  const tokensBefore = meter.estimate(input.messages);
  if (tokensBefore <= config.thresholdTokens) return input.messages;
  const target = config.thresholdTokens * config.targetRatio;

  const messages = [...input.messages];
  const dropped = dropOldToolOutputs(messages, config.keepRecentTurns);
  const afterDrop = meter.estimate(messages);
  const cut = compactionCut(messages, config.keepRecentTurns);
  if ((dropped > 0 && afterDrop <= target) || cut === undefined) {
    if (dropped === 0) return input.messages;
    await input.events.append({
      type: 'context.compacted',
      data: { tokensBefore, tokensAfter: afterDrop, turnsCompacted: 0, summary: '' },
    });
    return messages;
  }

  // The summary is written from the turns as they were (outputs included): the same tools, system
  // and messages as earlier requests, so that prefix is read from the cache, not rewritten.
  const prefix = input.messages.slice(0, cut);
  appendUserBlocks(prefix, [userText(SUMMARY_REQUEST)]);
  const request = withCacheBreakpoints({ system: input.system, tools: input.tools, messages: prefix }, input.cacheBreakpoints);
  let summary = '';
  try {
    const result = await input.model.turn({ ...request, maxTokens: input.maxTokens, signal: input.signal });
    await recordModelTurn(input.events, input.turn, result, 'compaction');
    summary = textOf(result.message);
  } catch (error) {
    if (input.signal.aborted) throw error;
    // A failed summary call must not stop the task: fall back to a summary built from the calls.
  }
  if (summary === '') summary = mechanicalSummary(messages.slice(0, cut));
  const turnsCompacted = messages.slice(0, cut).filter((message) => message.role === 'assistant').length;
  const compacted = applySummary(messages, turnsCompacted, summary);
  await input.events.append({
    type: 'context.compacted',
    data: { tokensBefore, tokensAfter: meter.estimate(compacted), turnsCompacted, summary },
  });
  return compacted;
}
