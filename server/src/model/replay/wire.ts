import { randomBytes } from 'node:crypto';
import type Anthropic from '@anthropic-ai/sdk';
import { replayToolUseId, stopReasonOf, type Turn } from './cassette';
import type { CacheUsage } from './prompt-cache';

/*
 * The Messages API wire format, built from a cassette turn. Shapes follow the SDK's own types so
 * the real SDK (and its stream accumulator) is the judge of whether they are right.
 */

export type ApiErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error';

export const ERROR_STATUS: Record<ApiErrorType, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  not_found_error: 404,
  rate_limit_error: 429,
  api_error: 500,
  overloaded_error: 529,
};

export function newRequestId(): string {
  return `req_replay_${randomBytes(12).toString('hex')}`;
}

export function errorBody(type: ApiErrorType, message: string, requestId: string): object {
  return { type: 'error', error: { type, message }, request_id: requestId };
}

/** The assistant message a turn plays, with the usage the request earned. */
export function buildMessage(
  turn: Turn,
  where: { model: string; position: number; alternative: number },
  usage: CacheUsage,
): Anthropic.Message {
  const content: Anthropic.ContentBlock[] = turn.content.map((block, index) =>
    block.type === 'text'
      ? { type: 'text', text: block.text, citations: null }
      : {
          type: 'tool_use',
          id: block.id ?? replayToolUseId(where.position, where.alternative, index),
          name: block.name,
          input: block.input,
          caller: { type: 'direct' },
        },
  );
  return {
    id: `msg_replay_${randomBytes(12).toString('hex')}`,
    type: 'message',
    role: 'assistant',
    model: where.model,
    content,
    stop_reason: stopReasonOf(turn),
    stop_sequence: null,
    stop_details: null,
    container: null,
    diagnostics: null,
    usage: {
      ...usage,
      output_tokens: outputTokens(content),
      inference_geo: null,
      output_tokens_details: null,
      server_tool_use: null,
      service_tier: 'standard',
      speed: null,
    },
  };
}

/** Estimated like input: ceil(chars / 4) of the text and of the tool inputs' JSON, at least 1. */
function outputTokens(content: Anthropic.ContentBlock[]): number {
  let characters = 0;
  for (const block of content) {
    if (block.type === 'text') characters += block.text.length;
    else if (block.type === 'tool_use') characters += block.name.length + JSON.stringify(block.input).length;
  }
  return Math.max(1, Math.ceil(characters / 4));
}

export interface SseEvent {
  event: string;
  data: unknown;
  /** Counted by `cut` and `stream_error` faults. */
  isDelta: boolean;
}

/**
 * The stream for a message: message_start (usage so far, output 1), a ping, each block as
 * start / deltas / stop (text in short slices, tool input as `input_json_delta` partial JSON
 * in several chunks, the first one empty as the API sends it), message_delta with the stop
 * reason and the final cumulative usage, message_stop.
 */
export function streamEvents(message: Anthropic.Message): SseEvent[] {
  const events: SseEvent[] = [];
  const push = (data: Anthropic.RawMessageStreamEvent | { type: 'ping' }, isDelta = false): void => {
    events.push({ event: data.type, data, isDelta });
  };
  push({
    type: 'message_start',
    message: { ...message, content: [], stop_reason: null, usage: { ...message.usage, output_tokens: 1 } },
  } satisfies Anthropic.RawMessageStartEvent);
  push({ type: 'ping' });
  message.content.forEach((block, index) => {
    if (block.type === 'text') {
      push({ type: 'content_block_start', index, content_block: { ...block, text: '' } });
      for (const text of slices(block.text, 24)) {
        push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } }, true);
      }
    } else if (block.type === 'tool_use') {
      push({ type: 'content_block_start', index, content_block: { ...block, input: {} } });
      const json = JSON.stringify(block.input);
      for (const partial_json of ['', ...slices(json, Math.max(1, Math.ceil(json.length / 4)))]) {
        push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } }, true);
      }
    }
    push({ type: 'content_block_stop', index });
  });
  const { input_tokens, cache_creation_input_tokens, cache_read_input_tokens, output_tokens } = message.usage;
  push({
    type: 'message_delta',
    delta: { stop_reason: message.stop_reason, stop_sequence: null, stop_details: null, container: null },
    usage: {
      input_tokens,
      cache_creation_input_tokens,
      cache_read_input_tokens,
      output_tokens,
      output_tokens_details: null,
      server_tool_use: null,
    },
  } satisfies Anthropic.RawMessageDeltaEvent);
  push({ type: 'message_stop' });
  return events;
}

function slices(text: string, size: number): string[] {
  if (text.length === 0) return [];
  const out: string[] = [];
  for (let start = 0; start < text.length; start += size) out.push(text.slice(start, start + size));
  return out;
}

export function formatSse(event: SseEvent): string {
  return `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}
