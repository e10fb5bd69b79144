export { checkPolicy, diffStats, policyCheckedEvent } from './check';
export type { DiffStats, PolicyCheckInput, PolicyCheckResult, PolicyStage, PolicyViolation } from './check';
export { parseUnifiedDiff } from './diff';
export type { AddedLine, ChangedFile, FileChange } from './diff';
export {
  blockedReason,
  canOverridePolicy,
  checkPolicyWithOverrides,
  diffDigest,
  findOverride,
  isBlocked,
  policyOverride,
  policyOverrideComment,
  policyOverrideId,
  policyOverrideReason,
  policyOverrideRequest,
} from './override';
export type { FoundOverride, GatedPolicyResult, PolicyOverrideInput } from './override';
export { CI_CONFIG_GLOBS, DEFAULT_PROTECTED_GLOBS, TEST_CONFIG_GLOBS, TEST_GLOBS, isCiConfig, isTestConfig, isTestFile } from './paths';
export { DEFAULT_REPO_POLICY, POLICY_FILE_PATH, RepoPolicy, parseRepoPolicy } from './repo-policy';
export { findMaskedSecrets, scanSecrets, scanText, secretMarker, SECRET_MARKER, shannonEntropy } from './secrets';
export type { SecretFinding } from './secrets';
export { SECRET_RULES } from './secret-rules';
export { pushApprovalStatus } from './approvals';
export type { ApprovalStatus, PushDecision } from './approvals';
export { KNOWN_SECRET_RULE, maskDeep, maskDiff, maskEvent, maskSecrets } from './mask';
export type { MaskOptions } from './mask';
export { gateOutbound, OUTBOUND_FIELDS, textViolations } from './outbound';
export type { OutboundInput, OutboundText } from './outbound';
export { supplyChainViolations } from './supply-chain';
export type { SupplyChainKind } from './supply-chain';
export { escapeInvisible, invisibleCharacters, INVISIBLE_CHARACTERS } from './unicode';
export { commitSubject, forgeBlock, forgeCode, hasHiddenContent, hiddenNote, markHidden, removeHidden, visibleCharacters } from './neutralise';
export type { HiddenForm, NeutralisedText } from './neutralise';
