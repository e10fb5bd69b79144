import type Anthropic from '@anthropic-ai/sdk';

/** One model call as the agent loop sees it. SDK types throughout; no re-modelling. */
export interface ModelTurnRequest {
  system: Anthropic.TextBlockParam[];
  tools: Anthropic.Tool[];
  messages: Anthropic.MessageParam[];
  /**
   * How the model must use `tools` (the API's `tool_choice`; absent: `auto`). `any` and `tool`
   * force a tool call: the API then prefills the assistant turn, so the reply is the tool_use
   * block with no text before it, and it refuses the request if extended thinking is enabled
   * ("Thinking may not be enabled when tool_choice forces tool use"). A forced reply can still
   * be unusable: input that does not match the schema (the API does not check it), a reply cut
   * at max_tokens, or a refusal; the caller validates the input.
   */
  toolChoice?: Anthropic.ToolChoice;
  maxTokens?: number;
  signal?: AbortSignal;
  /** Streaming text as it arrives (for live display); the returned message is authoritative. */
  onTextDelta?: (text: string) => void;
}

export interface ModelTurnResult {
  message: Anthropic.Message;
  /** The model that actually answered (differs from the configured one after a fallback). */
  model: string;
  costUsd: number;
}

export interface FallbackNotice {
  from: string;
  to: string;
  reason: string;
}

/**
 * One failed attempt that will be retried (after `delayMs`, on `model`) — or, with `handBack`,
 * the last one: the task goes back to the queue and is taken up again after `delayMs`.
 */
export interface RetryNotice {
  attempt: number;
  /** Attempts in the turn's budget. */
  of?: number;
  model: string;
  reason: string;
  delayMs: number;
  handBack?: boolean;
}

/**
 * A turn waiting for the fleet's model rate budget (`budgeted-client.ts`): `waiting` before the
 * wait (`waitMs`: the budget's estimate), `done` when the turn goes ahead (`waitMs`: how long it
 * waited). The `model.budget_wait` event's data.
 */
export interface BudgetWaitNotice {
  phase: 'waiting' | 'done';
  limit: 'input_tokens_per_minute' | 'requests_per_minute';
  windowSeconds: number;
  tokens: number;
  waitMs: number;
}

/**
 * Retries, fallback and whole-turn retry of a dead stream live behind this interface, so the
 * loop never sees a half-applied turn.
 */
export interface ModelClient {
  turn(req: ModelTurnRequest): Promise<ModelTurnResult>;
  /** Called when the client switches to the fallback model. */
  onFallback?: (notice: FallbackNotice) => void;
  /**
   * Called before an attempt is retried. Text already passed to `onTextDelta` by the failed
   * attempt is void: the retried turn streams from its beginning again.
   */
  onRetry?: (notice: RetryNotice) => void;
  /** Called when a turn waits for the fleet's model rate budget, and when it goes ahead. */
  onBudgetWait?: (notice: BudgetWaitNotice) => void;
}
