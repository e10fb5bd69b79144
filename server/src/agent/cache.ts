import type Anthropic from '@anthropic-ai/sdk';

/*
 * Prompt-cache breakpoints. The prefix order the API caches is tools → system → messages, so:
 *  1. the last tool definition (tools never change during a task),
 *  2. the last system block (role, rules, repo instructions, map, ticket: stable for the task),
 *  3. the latest user turn (written now, read by the next turn),
 *  4. the user turn before it (written by the previous turn: a guaranteed read even when the
 *     latest turn added more than the 20 blocks the API looks back from a breakpoint).
 * That is the API's maximum of four. The stored conversation is never mutated: breakpoints are
 * added to copies of the blocks they sit on, so they roll forward instead of piling up.
 */

const EPHEMERAL = { type: 'ephemeral' } as const;

export interface PromptParts {
  system: Anthropic.TextBlockParam[];
  tools: Anthropic.Tool[];
  messages: Anthropic.MessageParam[];
}

function markLastBlock(message: Anthropic.MessageParam): Anthropic.MessageParam {
  if (message.role !== 'user') return message;
  if (typeof message.content === 'string') {
    return { ...message, content: [{ type: 'text', text: message.content, cache_control: EPHEMERAL }] };
  }
  const blocks = [...message.content];
  const last = blocks[blocks.length - 1];
  // Thinking blocks cannot carry cache_control; our user turns only hold text and tool results.
  if (last === undefined || last.type === 'thinking' || last.type === 'redacted_thinking') return message;
  blocks[blocks.length - 1] = { ...last, cache_control: EPHEMERAL };
  return { ...message, content: blocks };
}

export function withCacheBreakpoints(parts: PromptParts, enabled: boolean): PromptParts {
  if (!enabled) return parts;
  const tools = parts.tools.map((tool, index) => (index === parts.tools.length - 1 ? { ...tool, cache_control: EPHEMERAL } : tool));
  const system = parts.system.map((block, index) =>
    index === parts.system.length - 1 ? { ...block, cache_control: EPHEMERAL } : block,
  );
  const userIndexes: number[] = [];
  parts.messages.forEach((message, index) => {
    if (message.role === 'user') userIndexes.push(index);
  });
  const marked = new Set(userIndexes.slice(-2));
  const messages = parts.messages.map((message, index) => (marked.has(index) ? markLastBlock(message) : message));
  return { system, tools, messages };
}
