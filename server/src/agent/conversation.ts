import type Anthropic from '@anthropic-ai/sdk';
import type { TaskEvent } from '@dockhand/protocol';
import { z } from 'zod';

/*
 * The conversation as Messages API `messages`, and how it is rebuilt from a task's event log.
 * Every change the loop makes to the conversation is mirrored by an event, so the log alone
 * recreates it after a crash:
 *   model.turn (purpose 'agent')  → an assistant message (its content exactly as returned)
 *   tool.finished                 → a tool_result in the next user message
 *   user.message                  → a text block in the next user message (steering and the
 *                                   loop's own notes, recorded when they are injected)
 *   context.compacted             → the same compaction applied again
 */

export const START_TEXT =
  'Work on the ticket in the system prompt. Explore the repository first, make the change, run the tests, then call finish.';

export const SUMMARY_HEADING = 'Summary of the earlier work on this ticket (older turns were compacted into this note):';

export const DROPPED_OUTPUT_PREFIX = '[output dropped to save context';

export function userText(text: string): Anthropic.TextBlockParam {
  return { type: 'text', text };
}

/** Adds blocks to the conversation as a user turn, merging into the last message if it is a user turn. */
export function appendUserBlocks(messages: Anthropic.MessageParam[], blocks: Anthropic.ContentBlockParam[]): void {
  if (blocks.length === 0) return;
  const last = messages[messages.length - 1];
  if (last !== undefined && last.role === 'user') {
    const existing = typeof last.content === 'string' ? [userText(last.content)] : last.content;
    messages[messages.length - 1] = { role: 'user', content: [...existing, ...blocks] };
    return;
  }
  messages.push({ role: 'user', content: [...blocks] });
}

/** Indexes of assistant messages, oldest first. */
function assistantIndexes(messages: Anthropic.MessageParam[]): number[] {
  const indexes: number[] = [];
  messages.forEach((message, index) => {
    if (message.role === 'assistant') indexes.push(index);
  });
  return indexes;
}

/**
 * Replaces the outputs of tool results older than the last `keepRecentTurns` assistant turns with a
 * short marker. Cheapest compaction: the calls stay visible, only their bulky outputs go.
 * Returns how many outputs were dropped.
 */
export function dropOldToolOutputs(messages: Anthropic.MessageParam[], keepRecentTurns: number, minChars = 400): number {
  const assistants = assistantIndexes(messages);
  const boundary = assistants[assistants.length - keepRecentTurns] ?? 0;
  let dropped = 0;
  for (let index = 0; index < boundary; index += 1) {
    const message = messages[index];
    if (message === undefined || message.role !== 'user' || typeof message.content === 'string') continue;
    let changed = false;
    const content = message.content.map((block) => {
      if (block.type !== 'tool_result' || typeof block.content !== 'string') return block;
      if (block.content.length < minChars || block.content.startsWith(DROPPED_OUTPUT_PREFIX)) return block;
      changed = true;
      dropped += 1;
      const lines = block.content.split('\n').length;
      return { ...block, content: `${DROPPED_OUTPUT_PREFIX}: ${block.content.length} characters, ${lines} lines; re-run the tool if you need it]` };
    });
    if (changed) messages[index] = { role: 'user', content };
  }
  return dropped;
}

/**
 * Where a summary compaction cuts: the index of the assistant message that starts the last
 * `keepRecentTurns` turns. Everything before it is summarised. Undefined when there is too little
 * to summarise.
 */
export function compactionCut(messages: Anthropic.MessageParam[], keepRecentTurns: number): number | undefined {
  const assistants = assistantIndexes(messages);
  if (assistants.length <= keepRecentTurns) return undefined;
  return assistants[assistants.length - keepRecentTurns];
}

/**
 * Replaces the first `turnsCompacted` assistant turns (and the user turns between them) with one
 * user note holding the summary. The tail keeps its tool_use/tool_result pairs intact because the
 * cut always falls on an assistant message.
 */
export function applySummary(messages: Anthropic.MessageParam[], turnsCompacted: number, summary: string): Anthropic.MessageParam[] {
  const assistants = assistantIndexes(messages);
  const cut = assistants[turnsCompacted] ?? messages.length;
  const note: Anthropic.MessageParam = {
    role: 'user',
    content: [userText(START_TEXT), userText(`${SUMMARY_HEADING}\n${summary}`)],
  };
  return [note, ...messages.slice(cut)];
}

const ToolUse = z.object({ type: z.literal('tool_use'), id: z.string(), name: z.string(), input: z.unknown() });

/** The tool_use blocks of an assistant message's content. */
export function toolUsesOf(content: readonly unknown[]): Array<z.infer<typeof ToolUse>> {
  const uses: Array<z.infer<typeof ToolUse>> = [];
  for (const block of content) {
    const parsed = ToolUse.safeParse(block);
    if (parsed.success) uses.push(parsed.data);
  }
  return uses;
}

/** Content blocks as recorded in model.turn, narrowed back to what the API accepts as assistant content. */
const AssistantBlock = z.union([
  z.object({ type: z.literal('text'), text: z.string() }),
  ToolUse,
  z.object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() }),
  z.object({ type: z.literal('redacted_thinking'), data: z.string() }),
]);

export function assistantContent(content: readonly unknown[]): Anthropic.ContentBlockParam[] {
  const blocks: Anthropic.ContentBlockParam[] = [];
  for (const raw of content) {
    const parsed = AssistantBlock.safeParse(raw);
    if (!parsed.success) continue;
    const block = parsed.data;
    if (block.type === 'text') blocks.push({ type: 'text', text: block.text });
    else if (block.type === 'tool_use') blocks.push({ type: 'tool_use', id: block.id, name: block.name, input: block.input ?? {} });
    else if (block.type === 'thinking') blocks.push({ type: 'thinking', thinking: block.thinking, signature: block.signature });
    else blocks.push({ type: 'redacted_thinking', data: block.data });
  }
  return blocks;
}

export const INTERRUPTED_TOOL_OUTPUT =
  'Interrupted: the server stopped while this tool call was running, so its result is unknown and it may have ' +
  'partly happened. Check the current state (read the file, git status) before repeating it.';

export interface RebuiltConversation {
  messages: Anthropic.MessageParam[];
  /** Conversation turns already taken (model.turn events with purpose 'agent'). */
  turns: number;
  /** Money already spent on this task, every model call included. */
  costUsd: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** Wall-clock time the task already ran (see activeMs). */
  elapsedMs: number;
  /** Tool calls that were started but never finished (reported to the model as interrupted). */
  interrupted: string[];
  /** Context size of the last conversation turn (input + cache read + cache write). */
  lastContextTokens: number;
}

/**
 * Turns a task's event log back into Messages API `messages`, so a crashed task resumes where it
 * stopped. Tool results come from tool.finished. A tool call without tool.finished is NOT re-run:
 * tools such as run_command and edit_file are not idempotent and may have half-happened, so the
 * model gets an is_error result saying it was interrupted and decides itself (after looking).
 */
export function rebuildConversation(
  events: readonly TaskEvent[],
  options: { keepRecentTurns?: number } = {},
): RebuiltConversation {
  let messages: Anthropic.MessageParam[] = [{ role: 'user', content: [userText(START_TEXT)] }];
  let pending: Anthropic.ContentBlockParam[] = [];
  let openToolUses: Array<{ id: string; name: string }> = [];
  const rebuilt: Omit<RebuiltConversation, 'messages'> = {
    turns: 0,
    costUsd: 0,
    inputTokens: 0,
    outputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    elapsedMs: 0,
    interrupted: [],
    lastContextTokens: 0,
  };

  const closeOpenToolUses = () => {
    const answered = new Set(
      pending.flatMap((block) => (block.type === 'tool_result' ? [block.tool_use_id] : [])),
    );
    const missing = openToolUses.filter((use) => !answered.has(use.id));
    // Results must come first in a user turn and follow the tool_use order.
    const results: Anthropic.ContentBlockParam[] = missing.map((use) => ({
      type: 'tool_result',
      tool_use_id: use.id,
      content: INTERRUPTED_TOOL_OUTPUT,
      is_error: true,
    }));
    rebuilt.interrupted.push(...missing.map((use) => use.name));
    pending = [...pending.filter((block) => block.type === 'tool_result'), ...results, ...pending.filter((block) => block.type !== 'tool_result')];
    openToolUses = [];
  };
  const flush = () => {
    closeOpenToolUses();
    appendUserBlocks(messages, pending);
    pending = [];
  };

  for (const event of events) {
    switch (event.type) {
      case 'model.turn': {
        rebuilt.costUsd += event.data.costUsd;
        rebuilt.inputTokens += event.data.usage.inputTokens;
        rebuilt.outputTokens += event.data.usage.outputTokens;
        rebuilt.cacheReadTokens += event.data.usage.cacheReadTokens;
        rebuilt.cacheWriteTokens += event.data.usage.cacheWriteTokens;
        if ((event.data.purpose ?? 'agent') !== 'agent') break;
        flush();
        rebuilt.turns += 1;
        rebuilt.lastContextTokens = event.data.contextTokens;
        messages.push({ role: 'assistant', content: assistantContent(event.data.content) });
        openToolUses = toolUsesOf(event.data.content).map((use) => ({ id: use.id, name: use.name }));
        break;
      }
      case 'tool.finished':
        if (!openToolUses.some((use) => use.id === event.data.toolUseId)) break;
        pending.push({ type: 'tool_result', tool_use_id: event.data.toolUseId, content: event.data.output, is_error: event.data.isError });
        break;
      case 'user.message':
        pending.push(userText(event.data.text));
        break;
      case 'context.compacted':
        flush();
        if (event.data.turnsCompacted > 0) messages = applySummary(messages, event.data.turnsCompacted, event.data.summary);
        else dropOldToolOutputs(messages, options.keepRecentTurns ?? DEFAULT_KEEP_RECENT_TURNS);
        break;
      default:
        break;
    }
  }
  flush();
  rebuilt.elapsedMs = activeMs(events);
  return { messages, ...rebuilt };
}

/** States in which the task's wall clock runs; time queued or waiting for a human review does not count. */
const CLOCKED_STATES = new Set(['provisioning', 'running', 'awaiting_approval', 'verifying']);

/**
 * Wall-clock time the task has already used: the gaps between consecutive events while the task
 * was in a clocked state. A task resumed hours after a review request is not out of time because
 * of the wait.
 */
export function activeMs(events: readonly TaskEvent[]): number {
  let state = 'running';
  let total = 0;
  let previous: number | undefined;
  for (const event of events) {
    const at = Date.parse(event.ts);
    if (Number.isNaN(at)) continue;
    if (previous !== undefined && CLOCKED_STATES.has(state)) total += Math.max(0, at - previous);
    previous = at;
    if (event.type === 'task.state') state = event.data.state;
  }
  return total;
}

export const DEFAULT_KEEP_RECENT_TURNS = 4;
