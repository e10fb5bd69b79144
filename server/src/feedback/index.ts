/**
 * The feedback engine: what the run_tests tool and the verified stop call. The lead wires
 * `SmartFeedbackEngine` (one per repo/task, sharing a `GraphCache` and a `FlakyStore`), uses
 * `feedbackVerdict` in the verified stop and `quarantineMarkdown` in the PR body, and exposes
 * `listQuarantine` / `clearQuarantine` to repo owners.
 */
export { runBaseline, SmartFeedbackEngine, type RunBaselineOptions, type SmartFeedbackEngineOptions } from './engine';
export { feedbackVerdict, formatDiagnostics, type StopVerdict } from './checks';
export { clearQuarantine, InMemoryFlakyStore, listQuarantine, quarantineMarkdown, SqliteFlakyStore } from './flaky';
export { GraphCache } from './graph';
export type * from './types';
export { InMemoryBaselineStore } from './baseline';
export { planTestCommand, type TestPlan } from './test-command';
