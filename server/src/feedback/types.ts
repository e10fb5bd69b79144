import type { Sandbox } from '../sandbox/types';

export interface TestCaseResult {
  id: string;
  file?: string;
  outcome: 'passed' | 'failed' | 'skipped';
  message?: string;
}

export interface TestReport {
  command: string;
  scope: 'selected' | 'full';
  /** Why this selection (e.g. "3 test files import src/paginate.ts" or "package.json changed: full suite"). */
  selectionReason: string;
  passed: number;
  failed: number;
  skipped: number;
  /** Green/red as the agent and the verified stop should treat it (quarantined tests excluded). */
  ok: boolean;
  quarantined: string[];
  /** Compact output for the model: summary plus failing tests' output. */
  output: string;
  durationMs: number;
  cases: TestCaseResult[];
}

export interface Diagnostic {
  tool: string;
  path: string;
  line: number;
  column?: number;
  severity: 'error' | 'warning';
  message: string;
}

/** The feedback engine the run_tests tool and the verified stop use. */
export interface FeedbackEngine {
  runTests(sandbox: Sandbox, opts: { scope: 'selected' | 'full'; signal?: AbortSignal }): Promise<TestReport>;
  diagnostics(sandbox: Sandbox, opts?: { paths?: string[] }): Promise<Diagnostic[]>;
}
