export { AnthropicModelClient, type AnthropicModelOptions } from './anthropic-client';
export { DEFAULT_PRICES, ModelPrices, PriceTable, costOf, mergePrices, pricesFor, promptTokensOf, type BilledUsage } from './pricing';
export { RetryPolicy, classifyFailure, retryDelayMs, type RetryPolicyInput } from './retry';
export type { FallbackNotice, ModelClient, ModelTurnRequest, ModelTurnResult, RetryNotice } from './types';
export { Cassette, loadCassette, parseCassette, type CassetteInput } from './replay/cassette';
export { startReplayServer, type ReplayRequestRecord, type ReplayServer, type ReplayServerOptions } from './replay/server';
