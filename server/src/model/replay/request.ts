import { z } from 'zod';
import { positionOfToolUseId, stepTurns, type Cassette, type Expectation } from './cassette';
import { ToolChoice, describeToolChoice, toolChoiceMatches } from './tool-choice';

/*
 * The parts of a Messages API request the replay server reads. Everything else passes through
 * unchecked (the real API validates far more; the replay server only needs what it plays by).
 */

export const CacheControl = z.object({ type: z.literal('ephemeral'), ttl: z.enum(['5m', '1h']).optional() });
const Block = z.looseObject({ type: z.string(), cache_control: CacheControl.nullish() });
export type RequestBlock = z.infer<typeof Block>;
const MessageParam = z.looseObject({
  role: z.enum(['user', 'assistant', 'system']),
  content: z.union([z.string(), z.array(Block)]),
});
const promptFields = {
  model: z.string().min(1),
  messages: z.array(MessageParam).min(1),
  system: z.union([z.string(), z.array(Block)]).optional(),
  tools: z.array(z.looseObject({ name: z.string().min(1), cache_control: CacheControl.nullish() })).optional(),
  tool_choice: ToolChoice.optional(),
  /** Read only to refuse thinking with a forced tool_choice, as the API does. */
  thinking: z.looseObject({ type: z.string() }).optional(),
};
export const CountTokensRequest = z.looseObject(promptFields);
export type CountTokensRequest = z.infer<typeof CountTokensRequest>;
export const MessagesRequest = z.looseObject({
  ...promptFields,
  max_tokens: z.number().int().min(1),
  stream: z.boolean().optional(),
});
export type MessagesRequest = z.infer<typeof MessagesRequest>;

const ToolResultBlock = z.looseObject({
  type: z.literal('tool_result'),
  content: z.union([z.string(), z.array(z.looseObject({ type: z.string(), text: z.string().optional() }))]).optional(),
  is_error: z.boolean().optional(),
});
const ToolUseBlock = z.looseObject({ type: z.literal('tool_use'), id: z.string() });
const TextBlock = z.looseObject({ type: z.literal('text'), text: z.string() });

interface LastUserMessage {
  toolResults: { text: string; isError: boolean }[];
  text: string;
}

/** What the last user message carries: its tool results (text, error flag) and its own text. */
export function lastUserMessage(request: CountTokensRequest): LastUserMessage {
  const last = request.messages.findLast((message) => message.role === 'user');
  const out: LastUserMessage = { toolResults: [], text: '' };
  if (!last) return out;
  if (typeof last.content === 'string') return { ...out, text: last.content };
  const texts: string[] = [];
  for (const block of last.content) {
    const result = ToolResultBlock.safeParse(block);
    if (result.success) {
      const content = result.data.content ?? '';
      const text = typeof content === 'string' ? content : content.map((part) => part.text ?? '').join('\n');
      out.toolResults.push({ text, isError: result.data.is_error ?? false });
      continue;
    }
    const text = TextBlock.safeParse(block);
    if (text.success) texts.push(text.data.text);
  }
  return { ...out, text: texts.join('\n') };
}

/**
 * Which cassette position a request asks for. The request itself says it, so a retried turn
 * replays the same turn and an agent resumed from its log gets the right one: the position after
 * the turn that produced the last assistant message (known by its tool_use ids or its exact text),
 * else the number of assistant messages.
 */
export function positionOf(request: CountTokensRequest, cassette: Cassette): number {
  const assistants = request.messages.filter((message) => message.role === 'assistant');
  const last = assistants.at(-1);
  if (!last) return 0;
  if (typeof last.content !== 'string') {
    for (const block of last.content) {
      const toolUse = ToolUseBlock.safeParse(block);
      if (!toolUse.success) continue;
      const position = positionOfToolUseId(cassette, toolUse.data.id);
      if (position !== undefined) return position + 1;
    }
  }
  const text = assistantText(last.content);
  if (text) {
    const matches = cassette.turns.flatMap((step, position) =>
      stepTurns(step).some((turn) => turnText(turn) === text) ? [position] : [],
    );
    if (matches.length === 1 && matches[0] !== undefined) return matches[0] + 1;
  }
  return assistants.length;
}

function assistantText(content: string | RequestBlock[]): string {
  if (typeof content === 'string') return content;
  return content.flatMap((block) => {
    const text = TextBlock.safeParse(block);
    return text.success ? [text.data.text] : [];
  }).join('');
}

function turnText(turn: { content: { type: string; text?: string }[] }): string {
  return turn.content.map((block) => (block.type === 'text' ? (block.text ?? '') : '')).join('');
}

/** Why the request does not meet the expectation, or undefined when it does. */
export function unmetExpectation(expectation: Expectation, request: CountTokensRequest): string | undefined {
  const last = lastUserMessage(request);
  const results = last.toolResults;
  const shown = (): string => {
    if (results.length === 0) return 'the last user message has no tool results';
    const joined = results.map((result) => JSON.stringify(clip(result.text))).join(', ');
    return `the last tool results were: ${joined}`;
  };
  if (expectation.toolResultContains !== undefined) {
    const needle = expectation.toolResultContains;
    if (!results.some((result) => result.text.includes(needle))) {
      return `toolResultContains ${JSON.stringify(needle)} not met: ${shown()}`;
    }
  }
  if (expectation.toolResultMatches !== undefined) {
    const pattern = new RegExp(expectation.toolResultMatches);
    if (!results.some((result) => pattern.test(result.text))) {
      return `toolResultMatches /${expectation.toolResultMatches}/ not met: ${shown()}`;
    }
  }
  if (expectation.toolResultIsError !== undefined) {
    const wanted = expectation.toolResultIsError;
    if (!results.some((result) => result.isError === wanted)) {
      return `toolResultIsError ${String(wanted)} not met: ${shown()}`;
    }
  }
  if (expectation.toolChoice !== undefined && !toolChoiceMatches(request, expectation.toolChoice)) {
    const wanted = expectation.toolChoice;
    const shownWanted = wanted.name === undefined ? `{type: ${wanted.type}}` : `{type: ${wanted.type}, name: ${wanted.name}}`;
    return `toolChoice ${shownWanted} not met: the request sent ${describeToolChoice(request.tool_choice)}`;
  }
  if (expectation.userTextContains !== undefined) {
    if (!last.text.includes(expectation.userTextContains)) {
      return `userTextContains ${JSON.stringify(expectation.userTextContains)} not met: the last user text was ${JSON.stringify(clip(last.text))}`;
    }
  }
  return undefined;
}

function clip(text: string, limit = 300): string {
  return text.length <= limit ? text : `${text.slice(0, limit)}…`;
}
