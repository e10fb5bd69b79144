import type Anthropic from '@anthropic-ai/sdk';
import type { ModelClient, ModelTurnRequest, ModelTurnResult } from '../../model/types';

/** What a scripted turn answers: content blocks in a compact form. */
export interface ScriptedReply {
  text?: string;
  tools?: Array<{ name: string; input: unknown; id?: string }>;
  stopReason?: Anthropic.StopReason;
}

export type ScriptStep = ScriptedReply | ((request: ModelTurnRequest, index: number) => ScriptedReply);

let nextId = 0;

/** Builds an SDK Message from a compact reply; usage is a size estimate of the request (chars / 4). */
export function scriptedMessage(reply: ScriptedReply, request: ModelTurnRequest, model = 'scripted-model'): Anthropic.Message {
  const content: Anthropic.ContentBlock[] = [];
  if (reply.text) content.push({ type: 'text', text: reply.text, citations: null });
  for (const tool of reply.tools ?? []) {
    nextId += 1;
    content.push({ type: 'tool_use', id: tool.id ?? `toolu_${nextId}`, name: tool.name, input: tool.input, caller: { type: 'direct' } });
  }
  const inputTokens = Math.ceil(JSON.stringify([request.system, request.tools, request.messages]).length / 4);
  const message = {
    id: `msg_${nextId}`,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: reply.stopReason ?? (reply.tools && reply.tools.length > 0 ? 'tool_use' : 'end_turn'),
    stop_sequence: null,
    usage: {
      input_tokens: inputTokens,
      output_tokens: Math.ceil(JSON.stringify(content).length / 4),
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  };
  return message as unknown as Anthropic.Message;
}

/**
 * A ModelClient that plays a script, for unit tests of the loop. Steps are consumed in order by
 * conversation turns; review calls (recognised by the submit_review tool) and compaction calls
 * (no new step consumed) are answered by `review` and `summary`.
 */
export class ScriptedModel implements ModelClient {
  readonly requests: ModelTurnRequest[] = [];
  private index = 0;
  onFallback?: ModelClient['onFallback'];
  onRetry?: ModelClient['onRetry'];
  onBudgetWait?: ModelClient['onBudgetWait'];

  constructor(
    private readonly steps: ScriptStep[],
    private readonly options: {
      review?: ScriptStep;
      summary?: string;
      costPerTurnUsd?: number;
      delayMs?: number;
    } = {},
  ) {}

  get turnsPlayed(): number {
    return this.index;
  }

  async turn(request: ModelTurnRequest): Promise<ModelTurnResult> {
    this.requests.push(request);
    if (this.options.delayMs) {
      await new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, this.options.delayMs);
        request.signal?.addEventListener('abort', () => {
          clearTimeout(timer);
          reject(new Error('aborted'));
        });
      });
    }
    request.signal?.throwIfAborted();
    const cost = this.options.costPerTurnUsd ?? 0.01;
    if (request.tools.some((tool) => tool.name === 'submit_review')) {
      const step = this.options.review ?? { tools: [{ name: 'submit_review', input: { approved: true, problems: [], summary: 'ok' } }] };
      const reply = typeof step === 'function' ? step(request, -1) : step;
      return { message: scriptedMessage(reply, request), model: 'scripted-model', costUsd: cost };
    }
    const last = request.messages[request.messages.length - 1];
    const lastText = last && typeof last.content !== 'string' ? last.content.at(-1) : undefined;
    if (lastText?.type === 'text' && lastText.text.startsWith('The conversation is getting long')) {
      return { message: scriptedMessage({ text: this.options.summary ?? 'summary of earlier turns' }, request), model: 'scripted-model', costUsd: cost };
    }
    const step = this.steps[this.index];
    if (step === undefined) throw new Error(`script exhausted after ${this.index} turns`);
    const reply = typeof step === 'function' ? step(request, this.index) : step;
    this.index += 1;
    return { message: scriptedMessage(reply, request), model: 'scripted-model', costUsd: cost };
  }
}
