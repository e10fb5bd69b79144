import type { NewEvent } from '@dockhand/protocol';
import { checkPolicy, type PolicyCheckInput, type PolicyViolation } from './check';
import { findOverride, type GatedPolicyResult } from './override';
import { DEFAULT_REPO_POLICY } from './repo-policy';
import { STORED_SECRET_RULE, storedSecretInText } from './known-secrets';
import { scanText } from './secrets';
import { invisibleCharacters } from './unicode';

/**
 * The one content gate for everything that leaves the sandbox: the diff, and the words that go
 * with it (the PR title and body, the commit message, the task summary the model wrote). The
 * runner's policy stages and the forge's push gate both call `gateOutbound`, so a model that
 * pastes a key into its finish summary is blocked exactly like one that pastes it into code.
 *
 * Text fields are checked for secrets (raw or already masked: the stored summary holds markers)
 * and for bidi controls (a PR title that reads differently from what it is). An owner's
 * override of the diff covers the whole verdict; the forge still masks every text before it
 * sends it, so an override can never publish a raw secret.
 */

export interface OutboundText {
  title?: string;
  body?: string;
  commitMessage?: string;
  summary?: string;
}

/** Where each text field is reported (the violation's `path`). */
export const OUTBOUND_FIELDS: Record<keyof OutboundText, string> = {
  title: 'pr-title',
  body: 'pr-body',
  commitMessage: 'commit-message',
  summary: 'task-summary',
};

const FIELD_NAMES: Record<keyof OutboundText, string> = {
  title: 'the PR title',
  body: 'the PR body',
  commitMessage: 'the commit message',
  summary: 'the task summary',
};

function isField(name: string): name is keyof OutboundText {
  return name in OUTBOUND_FIELDS;
}

/** Violations in the words that accompany a diff. */
export function textViolations(text: OutboundText, known: readonly (string | undefined)[] = []): PolicyViolation[] {
  const violations: PolicyViolation[] = [];
  for (const [name, value] of Object.entries(text)) {
    if (!isField(name) || typeof value !== 'string' || value === '') continue;
    const where = OUTBOUND_FIELDS[name];
    const stored = storedSecretInText(value, known);
    if (stored !== undefined) violations.push({ rule: STORED_SECRET_RULE, path: where, line: stored, message: `a value this server holds as a secret (raw, URL-encoded or base64) is in ${FIELD_NAMES[name]} (line ${stored}); secrets never go into a pull request` });
    // The PR body is built from stored (masked) events: its markers, in the test log say, are
    // already harmless, and the summary's are reported under `task-summary` by the runner.
    const findings = scanText(value).filter((finding) => name !== 'body' || !finding.secret.startsWith('[secret:'));
    for (const finding of findings) {
      violations.push({
        rule: `secret:${finding.rule}`,
        path: where,
        line: finding.line,
        excerpt: finding.excerpt,
        message: `${finding.description} in ${FIELD_NAMES[name]} (line ${finding.line}); secrets never go into a pull request`,
      });
    }
    const invisible = invisibleCharacters(value);
    const first = invisible[0];
    if (first) {
      violations.push({
        rule: 'trojan-source',
        path: where,
        line: first.line,
        message: `${first.name} in ${FIELD_NAMES[name]} (line ${first.line}${invisible.length > 1 ? `; ${invisible.length} invisible characters in all` : ''}); it makes the text read differently from what it is`,
      });
    }
  }
  return violations;
}

export type OutboundInput = PolicyCheckInput & {
  /** Events that may hold an owner's override of this exact diff (usually the task's log). */
  overrides: readonly NewEvent[];
  text?: OutboundText;
};

/** The diff's policy check plus the text fields, with an owner's override of this exact diff. */
export function gateOutbound(input: OutboundInput): GatedPolicyResult {
  const { overrides, text, ...check } = input;
  const result = checkPolicy(check);
  const violations = [...result.violations, ...textViolations(text ?? {}, check.known ?? [])];
  const combined = { ...result, ok: violations.length === 0, violations };
  if (combined.ok) return { ...combined, overridden: false };
  const found = findOverride(check.diff, overrides, check.policy ?? DEFAULT_REPO_POLICY);
  return found ? { ...combined, overridden: true, overriddenBy: found.by } : { ...combined, overridden: false };
}
