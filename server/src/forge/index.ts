export { deliverPullRequest, enforcePushGate, prOpenedEvent, prOutcomeEvent } from './deliver';
export type { DeliverInput, DeliverResult, PushGate } from './deliver';
export { appInstallationTokens, appJwt, staticToken, PUSH_PERMISSIONS } from './github-auth';
export type { GitHubAppOptions, GitHubRepo, GitHubTokenProvider } from './github-auth';
export { GitHubForge, parseGitHubRepo } from './github-forge';
export type { GitHubForgeOptions } from './github-forge';
export { LocalForge, localPullRequestUrl } from './local-forge';
export type { LocalForgeOptions } from './local-forge';
export { InMemoryPullRequestStore } from './memory-store';
export { buildPullRequestBody } from './pr-body';
export type { PullRequestReport } from './pr-body';
export { reviewRounds } from './pr-rounds';
export type { ReviewRound } from './pr-rounds';
export { branchName, DOCKHAND_BOT, pushChange } from './push';
export type { Person, PushChangeInput, PushChangeResult } from './push';
export { createRedactor, redact, REDACTED } from './redact';
export { findRevert } from './revert';
export type { BranchCommit } from './revert';
export { isOutcomeFinal, DEFAULT_REVERT_WINDOW_DAYS } from './types';
export type * from './types';
export {
  handleGitHubWebhook,
  parsePullRequestWebhook,
  signWebhookBody,
  verifyWebhookSignature,
} from './webhook';
export type { PullRequestWebhookOutcome, WebhookRequest } from './webhook';
export { loadRepoPolicy, readFileAtCommit } from './repo-files';
export { pollOutcome } from './outcome';
export type { OutcomePoll } from './outcome';
