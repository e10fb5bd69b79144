import type Anthropic from '@anthropic-ai/sdk';
import type { TurnUsage } from '@dockhand/protocol';
import type { ModelTurnResult } from '../model/types';
import type { EventSink } from './ports';

export type TurnPurpose = 'agent' | 'review' | 'compaction';

export function usageOf(message: Anthropic.Message): TurnUsage {
  return {
    inputTokens: message.usage.input_tokens,
    outputTokens: message.usage.output_tokens,
    cacheReadTokens: message.usage.cache_read_input_tokens ?? 0,
    cacheWriteTokens: message.usage.cache_creation_input_tokens ?? 0,
  };
}

/** Tokens the model read for this call: uncached input plus cache reads and writes. */
export function contextTokensOf(usage: TurnUsage): number {
  return usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
}

/** Records one model call (usage, cost, content) so cost accounting and rebuilds see it. */
export async function recordModelTurn(
  events: EventSink,
  turn: number,
  result: ModelTurnResult,
  purpose: TurnPurpose,
): Promise<TurnUsage> {
  const usage = usageOf(result.message);
  await events.append({
    type: 'model.turn',
    data: {
      turn: Math.max(1, turn),
      model: result.model,
      usage,
      costUsd: result.costUsd,
      stopReason: result.message.stop_reason ?? null,
      contextTokens: contextTokensOf(usage),
      content: result.message.content,
      ...(purpose === 'agent' ? {} : { purpose }),
    },
  });
  return usage;
}

export function textOf(message: Anthropic.Message): string {
  return message.content
    .flatMap((block) => (block.type === 'text' ? [block.text] : []))
    .join('\n')
    .trim();
}
