import Anthropic, { APIError } from '@anthropic-ai/sdk';
import { DockhandError } from '../errors';
import { DEFAULT_PRICES, costOf, mergePrices, pricesFor, type PriceTable } from './pricing';
import { RetryPolicy, classifyFailure, retriesExhausted, retryDelayMs, type Failure, type RetryPolicyInput } from './retry';
import type { FallbackNotice, ModelClient, ModelTurnRequest, ModelTurnResult, RetryNotice } from './types';

export interface AnthropicModelOptions {
  apiKey: string;
  /** The replay model server's URL in tests and the offline demo; absent: Anthropic's API. */
  baseURL?: string | undefined;
  model: string;
  fallbackModel?: string | undefined;
  maxTokens?: number;
  /** Merged over DEFAULT_PRICES. */
  prices?: PriceTable | undefined;
  retry?: RetryPolicyInput;
  /** Whole-request timeout of one attempt. */
  timeoutMs?: number;
  /** An attempt whose stream sends nothing for this long is abandoned and retried. */
  idleTimeoutMs?: number;
  onFallback?: (notice: FallbackNotice) => void;
  onRetry?: (notice: RetryNotice) => void;
  /** Injectable for tests: waiting between attempts, and the jitter source. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
}

/**
 * The Messages API through the official SDK, streaming, with our own retries: backoff with
 * jitter honouring `retry-after` for 429/5xx/529 and dead streams, a switch to the fallback model
 * after repeated failures, and a turn that is either complete or not returned at all (a stream
 * that dies mid-turn is retried from its beginning, never patched together).
 *
 * After a fallback the client stays on the fallback model for the rest of its life: each model
 * has its own prompt cache, so flapping between them would pay for cache writes twice. One client
 * per task keeps that decision scoped to the task.
 */
export class AnthropicModelClient implements ModelClient {
  onFallback?: (notice: FallbackNotice) => void;
  onRetry?: (notice: RetryNotice) => void;
  private readonly client: Anthropic;
  private readonly policy: RetryPolicy;
  private readonly prices: PriceTable;
  private activeModel: string;

  constructor(private readonly options: AnthropicModelOptions) {
    this.client = new Anthropic({
      apiKey: options.apiKey,
      // Only the configured key: an ANTHROPIC_AUTH_TOKEN in the environment is not sent along.
      authToken: null,
      // Absent: the SDK's own default (ANTHROPIC_BASE_URL, else Anthropic's API).
      ...(options.baseURL ? { baseURL: options.baseURL } : {}),
      maxRetries: 0,
      timeout: options.timeoutMs ?? 600_000,
    });
    this.policy = RetryPolicy.parse(options.retry ?? {});
    this.prices = mergePrices(DEFAULT_PRICES, options.prices);
    this.activeModel = options.model;
    if (options.onFallback) this.onFallback = options.onFallback;
    if (options.onRetry) this.onRetry = options.onRetry;
  }

  /** The model the next turn goes to. */
  get model(): string {
    return this.activeModel;
  }

  async turn(request: ModelTurnRequest): Promise<ModelTurnResult> {
    const { fallbackModel } = this.options;
    let failuresOnModel = 0;
    let lastFailure: Failure | undefined;
    for (let attempt = 1; attempt <= this.policy.maxAttempts; attempt++) {
      const model = this.activeModel;
      let failure: Failure;
      try {
        const message = await this.attempt(model, request);
        return { message, model, costUsd: costOf(message.usage, pricesFor(model, this.prices)) };
      } catch (error) {
        request.signal?.throwIfAborted();
        failure = error instanceof StalledStreamError ? stalled(error) : classifyFailure(error);
        if (!failure.retryable && refusedStatus(error)) {
          // The API read the request and rejected it (bad request, unknown model, prompt too
          // long): the model was reached, and trying again sends the same rejected request.
          throw new DockhandError('model_refused', `the model refused the request: model ${model} answered ${failure.reason}: ${messageOf(error)}`, {
            cause: error,
            hint: 'the model API rejected the request itself (its message says why: an unknown model, a prompt over the context window, invalid content); change the model setting or the ticket, then send it again',
          });
        }
        if (!failure.retryable) {
          throw new DockhandError('model_unavailable', `model ${model} failed: ${failure.reason}: ${messageOf(error)}`, {
            cause: error,
            hint: 'the request was rejected, not retried; check the model configuration and the API key',
          });
        }
      }
      lastFailure = failure;
      failuresOnModel++;
      if (attempt === this.policy.maxAttempts) break;
      const canFallBack = fallbackModel !== undefined && model !== fallbackModel && this.policy.whenUnavailable === 'fallback';
      if (canFallBack && failuresOnModel >= this.policy.fallbackAfter) {
        this.activeModel = fallbackModel;
        failuresOnModel = 0;
        this.onFallback?.({ from: model, to: fallbackModel, reason: failure.reason });
        continue; // another model draws on other capacity: no reason to wait first
      }
      const delayMs = retryDelayMs(failuresOnModel, this.policy, failure, this.options.random ?? Math.random);
      this.onRetry?.({ attempt, of: this.policy.maxAttempts, model, reason: failure.reason, delayMs });
      await (this.options.sleep ?? sleep)(delayMs, request.signal);
    }
    // Every attempt met a failure that may pass: under a scheduler the task goes back to the queue
    // (this aborts the turn's signal; the loop stops and writes nothing more) instead of failing.
    throw retriesExhausted({
      policy: this.policy,
      random: this.options.random ?? Math.random,
      subject: `model ${this.activeModel}`,
      model: this.activeModel,
      reason: lastFailure?.reason ?? 'unknown failure',
      onRetry: this.onRetry,
      hint: 'the model API kept failing; the task can be resumed later',
    });
  }

  /** One streamed request; resolves only with a message that reached `message_stop`. */
  private async attempt(model: string, request: ModelTurnRequest): Promise<Anthropic.Message> {
    const idle = new AbortController();
    const signal = request.signal ? AbortSignal.any([request.signal, idle.signal]) : idle.signal;
    const idleTimeoutMs = this.options.idleTimeoutMs ?? 120_000;
    let timer: NodeJS.Timeout | undefined;
    const arm = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => idle.abort(new StalledStreamError(idleTimeoutMs)), idleTimeoutMs);
    };
    const stream = this.client.messages.stream(
      {
        model,
        max_tokens: request.maxTokens ?? this.options.maxTokens ?? 8192,
        messages: request.messages,
        ...(request.system.length > 0 ? { system: request.system } : {}),
        ...(request.tools.length > 0 ? { tools: request.tools } : {}),
        ...(request.toolChoice ? { tool_choice: request.toolChoice } : {}),
      },
      { signal },
    );
    arm();
    stream.on('streamEvent', arm);
    const onTextDelta = request.onTextDelta;
    if (onTextDelta) stream.on('text', (delta) => onTextDelta(delta));
    try {
      return await stream.finalMessage();
    } catch (error) {
      if (idle.signal.aborted && !request.signal?.aborted) throw idle.signal.reason;
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }
}

class StalledStreamError extends Error {
  constructor(readonly idleMs: number) {
    super(`no stream event for ${idleMs} ms`);
  }
}

function stalled(error: StalledStreamError): Failure {
  return { retryable: true, aborted: false, reason: `stream stalled: ${error.message}`, retryAfterMs: undefined };
}

/** The API's own message (not the SDK's JSON dump of the body), with the request id to quote. */
function messageOf(error: unknown): string {
  if (error instanceof APIError && error.apiMessage) {
    return error.requestID ? `${error.apiMessage} (request-id ${error.requestID})` : error.apiMessage;
  }
  return error instanceof Error ? error.message : String(error);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Statuses where the model API answered the request as invalid (the API was reached). */
function refusedStatus(error: unknown): boolean {
  return error instanceof APIError && error.status !== undefined && [400, 404, 413, 422].includes(error.status);
}
