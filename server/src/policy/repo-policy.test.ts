import { describe, expect, it } from 'vitest';
import type { NewEvent } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { checkPolicy } from './check';
import {
  blockedReason,
  checkPolicyWithOverrides,
  isBlocked,
  diffDigest,
  findOverride,
  policyOverride,
  policyOverrideId,
  policyOverrideRequest,
} from './override';
import { DEFAULT_REPO_POLICY, parseRepoPolicy } from './repo-policy';
import { modifiedFile } from './testing/diffs';

function failure(text: string): DockhandError {
  try {
    parseRepoPolicy(text);
  } catch (error) {
    if (error instanceof DockhandError) return error;
    throw error;
  }
  throw new Error('expected parseRepoPolicy to fail');
}

describe('parseRepoPolicy', () => {
  it('gives the defaults for a missing or empty file', () => {
    expect(parseRepoPolicy(undefined)).toEqual(DEFAULT_REPO_POLICY);
    expect(parseRepoPolicy('  \n')).toEqual(DEFAULT_REPO_POLICY);
    expect(parseRepoPolicy('# only a comment\n')).toEqual(DEFAULT_REPO_POLICY);
    expect(DEFAULT_REPO_POLICY).toMatchObject({ maxChangedLines: 800, maxChangedFiles: 40, requiredApprovals: 1, owners: [] });
  });

  it('reads every field', () => {
    const policy = parseRepoPolicy(
      [
        'version: 1',
        'protectedPaths: ["db/migrations/**"]',
        'maxChangedLines: 300',
        'maxChangedFiles: 12',
        'requiredApprovals: 2',
        'allowedEgressHosts: [registry.npmjs.org, "*.pypi.org"]',
        'model: claude-sonnet-4-5',
        'testCommand: npm test --silent',
        'owners: [alice, bob]',
        'supplyChain: { newDependencies: allow }',
      ].join('\n'),
    );
    expect(policy).toEqual({
      version: 1,
      protectedPaths: ['db/migrations/**'],
      maxChangedLines: 300,
      maxChangedFiles: 12,
      requiredApprovals: 2,
      allowedEgressHosts: ['registry.npmjs.org', '*.pypi.org'],
      model: 'claude-sonnet-4-5',
      testCommand: 'npm test --silent',
      owners: ['alice', 'bob'],
      supplyChain: { installScripts: 'override', dependencySources: 'override', registryConfig: 'override', newDependencies: 'allow' },
    });
    expect(failure('supplyChain: { newDependencies: sometimes }').field).toBe('supplyChain.newDependencies');
  });

  it('names the field in errors', () => {
    const wrongType = failure('maxChangedLines: lots');
    expect(wrongType.code).toBe('bad_request');
    expect(wrongType.field).toBe('maxChangedLines');
    expect(wrongType.message).toMatch(/^\.dockhand\/policy\.yml: maxChangedLines: /);

    expect(failure('protectedPaths: ["../etc/**"]').field).toBe('protectedPaths[0]');
    expect(failure('allowedEgressHosts: ["https://evil.example/x"]').field).toBe('allowedEgressHosts[0]');
    expect(failure('requiredApprovals: 0').field).toBe('requiredApprovals');

    const unknown = failure('maxLines: 10');
    expect(unknown.field).toBe('maxLines');
    expect(unknown.message).toMatch(/unknown field; allowed fields are .*maxChangedLines/);
  });

  it('reports YAML syntax errors with the line', () => {
    const error = failure('owners: [alice\nmodel: x');
    expect(error.message).toMatch(/not valid YAML \(line \d+\)/);
    expect(error.field).toBe('.dockhand/policy.yml');
  });
});

describe('policy override', () => {
  const diff = modifiedFile('.github/workflows/ci.yml', ['a'], ['b']);
  const policy = parseRepoPolicy('owners: [alice]');
  const result = checkPolicy({ diff, policy, allowTestEdits: false, stage: 'push' });

  it('is requested and resolved as approval events tied to the diff', () => {
    const request = policyOverrideRequest(diff, result, policy);
    expect(request).toMatchObject({ type: 'approval.requested', data: { kind: 'policy_override', approvalId: policyOverrideId(diff), diffDigest: diffDigest(diff) } });
    expect(request.type === 'approval.requested' && request.data.reason).toBe(
      '1 policy violation blocks this diff: ci-config (.github/workflows/ci.yml); a repo owner (alice) may override them for this exact diff',
    );

    const override = policyOverride({ diff, result, policy, by: 'alice', comment: 'the runner label moved' });
    expect(override).toEqual({
      type: 'approval.resolved',
      data: {
        approvalId: policyOverrideId(diff),
        decision: 'approved',
        by: 'alice',
        comment: 'override of ci-config: the runner label moved',
      },
    });
    expect(findOverride(diff, [request, override], policy)).toEqual({ approvalId: policyOverrideId(diff), by: 'alice', comment: 'override of ci-config: the runner label moved' });
    expect(findOverride(diff + modifiedFile('src/a.ts', ['x'], ['y']), [request, override], policy)).toBeUndefined();
    expect(findOverride(diff, [request, override], parseRepoPolicy('owners: [carol]'))).toBeUndefined();
    // A decision without the request that binds it to this diff counts for nothing.
    expect(findOverride(diff, [override], policy)).toBeUndefined();
  });

  it('binds a request with a store-given id to its diff only, by digest', () => {
    const other = modifiedFile('.github/workflows/ci.yml', ['a'], ['c']);
    const requested: NewEvent = { type: 'approval.requested', data: { approvalId: 'apr_1', kind: 'policy_override', reason: 'r', diffDigest: diffDigest(diff) } };
    const decided = (decision: 'approved' | 'denied'): NewEvent => ({ type: 'approval.resolved', data: { approvalId: 'apr_1', decision, by: 'alice' } });
    expect(findOverride(diff, [requested, decided('approved')], policy)).toMatchObject({ approvalId: 'apr_1', by: 'alice' });
    expect(findOverride(other, [requested, decided('approved')], policy)).toBeUndefined();
    expect(findOverride(diff, [requested, decided('denied')], policy)).toBeUndefined();
  });

  it('is refused to non-owners and without a reason', () => {
    expect(() => policyOverride({ diff, result, policy, by: 'mallory', comment: 'trust me' })).toThrow(/not an owner/);
    expect(() => policyOverride({ diff, result, policy: DEFAULT_REPO_POLICY, by: 'alice', comment: 'x' })).toThrow(/not an owner/);
    expect(() => policyOverride({ diff, result, policy, by: 'alice', comment: '  ' })).toThrow(/needs a reason/);
  });

  it('lets a blocked diff through the gate only with an owner\'s override of exactly that diff', () => {
    const override = policyOverride({ diff, result, policy, by: 'alice', comment: 'the runner label moved' });
    const gate = (overrides: Parameters<typeof checkPolicyWithOverrides>[0]['overrides'], changed = diff) =>
      checkPolicyWithOverrides({ diff: changed, policy, allowTestEdits: false, stage: 'push', overrides });

    const request = policyOverrideRequest(diff, result, policy);
    const overridden = gate([request, override]);
    expect(overridden).toMatchObject({ ok: false, overridden: true, overriddenBy: 'alice', violations: [{ rule: 'ci-config' }] });
    expect(isBlocked(overridden)).toBe(false);

    const none = gate([]);
    expect(isBlocked(none)).toBe(true);
    expect(blockedReason(none)).toBe('ci-config (.github/workflows/ci.yml)');
    // The agent changed the diff after the override: it no longer applies.
    expect(isBlocked(gate([request, override], diff + modifiedFile('src/a.ts', ['x'], ['y'])))).toBe(true);
    // A clean diff is never reported as overridden.
    expect(gate([request, override], modifiedFile('src/a.ts', ['x'], ['y']))).toMatchObject({ ok: true, overridden: false });
  });
});

describe('routineModel (cost routing per repository)', () => {
  it('names a model with prices for the repository\'s routine tasks, and refuses one without, naming the field', () => {
    expect(parseRepoPolicy('routineModel: claude-haiku-4-5\n').routineModel).toBe('claude-haiku-4-5');
    expect(parseRepoPolicy(undefined).routineModel).toBeUndefined();
    const error = failure('routineModel: claude-haiku-4.5\n');
    expect(error.code).toBe('bad_request');
    expect(error.message).toMatch(/routineModel: model "claude-haiku-4.5" has no prices in model\/pricing.ts/);
  });
});
