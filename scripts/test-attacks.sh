#!/usr/bin/env bash
# npm run test:attacks: the attack suites (test/attacks/), then their counts summed into one JSON
# object as the last line. Each suite appends one JSON line (`part`) to the report file; a part
# that is missing (a suite that crashed before writing) counts as a failure.
set -u
cd "$(dirname "$0")/.."
# `--summarize FILE` sums the parts an earlier run wrote (`npm test` with DOCKHAND_ATTACKS_REPORT=FILE
# runs the same suites in its e2e project) without running them again.
if [ "${1:-}" = --summarize ] && [ -n "${2:-}" ]; then
  report="$2"
  code=0
else
  report="$(mktemp)"
  DOCKHAND_ATTACKS_REPORT="$report" npx vitest run --project e2e test/attacks
  code=$?
fi
node - "$report" <<'JS' || code=1
const fs = require('node:fs');
const lines = fs.readFileSync(process.argv[2], 'utf8').split('\n').filter(Boolean);
const parts = Object.fromEntries(lines.map((line) => JSON.parse(line)).map((part) => [part.part, part]));
const real = parts['real-fleet'] ?? {};
const gate = parts['content-gate'] ?? {};
const host = parts['host-and-socket'] ?? {};
const life = parts['sandbox-life'] ?? {};
const policy = parts['policy-gate'] ?? {};
// Issue #31: the cross-build front, setup secrets in the image, invisible text, API hardening.
const cross = parts['cross-build'] ?? {};
const setup = parts['setup-secrets'] ?? {};
const invisible = parts['invisible-text'] ?? {};
const api = parts['api-hardening'] ?? {};
const missing = ['real-fleet', 'content-gate', 'sandbox-life', 'host-and-socket', 'policy-gate', 'cross-build', 'setup-secrets', 'invisible-text', 'api-hardening'].filter((name) => !parts[name]);
const sum = (key) => (real[key] ?? 0) + (gate[key] ?? 0);
const summary = {
  hostile_cases: real.hostile_cases ?? 0,
  hostile_failed: (real.hostile_failed ?? 0) + (missing.includes('real-fleet') ? 1 : 0),
  scripted_cases: (gate.hostile_cases ?? 0) + (policy.hostile_cases ?? 0),
  scripted_failed: (gate.hostile_failed ?? 0) + (policy.hostile_failed ?? 0) + (missing.includes('content-gate') || missing.includes('policy-gate') ? 1 : 0),
  secret_formats: Math.max(real.secret_formats ?? 0, gate.secret_formats ?? 0),
  secrets_missed: sum('secrets_missed'),
  secrets_stored_plaintext: sum('secrets_stored_plaintext'),
  fuzz_routes: real.fuzz_routes ?? 0,
  fuzz_requests: real.fuzz_requests ?? 0,
  fuzz_5xx: real.fuzz_5xx ?? (missing.includes('real-fleet') ? 1 : 0),
  token_checks: real.token_checks ?? 0,
  token_failures: real.token_failures ?? (missing.includes('real-fleet') ? 1 : 0),
  cross_user_checks: real.cross_user_checks ?? 0,
  cross_user_leaks: real.cross_user_leaks ?? (missing.includes('real-fleet') ? 1 : 0),
  unregistered_repo_accepted: real.unregistered_repo_accepted ?? 0,
  // sandbox-life (issue #23 items 4-6): -1 / false when the case did not get as far as measuring.
  hung_tasks: life.hung_tasks ?? -1,
  resume_lost_changes: life.resume_lost_changes ?? -1,
  disk_quota_enforced: life.disk_quota_enforced === true,
  // Issue #23: -1 / false when the part did not get as far as measuring (a failure too).
  build_egress_escapes: host.build_egress_escapes ?? -1,
  revoked_socket_events: host.revoked_socket_events ?? -1,
  data_dir_private: host.data_dir_private ?? false,
  // policy-gate (issue #23 item 2): the slowest /healthz while a 30 MB binary diff is processed; -1 when not measured.
  api_stall_max_ms: policy.api_stall_max_ms ?? -1,
  // Issue #31 (-1 when the part did not get as far as measuring: a failure too).
  cross_build_front_reads: cross.cross_build_front_reads ?? -1,
  setup_secret_forms_in_image: setup.setup_secret_forms_in_image ?? -1,
  invisible_chars_unmarked: invisible.invisible_chars_unmarked ?? -1,
  forge_text_unneutralised: invisible.forge_text_unneutralised ?? -1,
  healthz_max_ms_under_1000: api.healthz_max_ms_under_1000 ?? -1,
  metrics_max_ms_under_1000: api.metrics_max_ms_under_1000 ?? -1,
  api_hardening_failures: ['comment_path_5xx', 'comment_path_magic_stored', 'wrapped_destructive_unapproved', 'oversize_resets', 'hidden_repo_not_404', 'front_encoded_path_passed'].reduce((sum, key) => sum + (api[key] ?? 0), 0),
  seconds: real.seconds,
  seeds: [real.seed, gate.seed].filter((seed) => seed !== undefined),
  ...(missing.length ? { missing_parts: missing } : {}),
};
console.log(JSON.stringify(summary));
const failures = ['hostile_failed', 'scripted_failed', 'secrets_missed', 'secrets_stored_plaintext', 'fuzz_5xx', 'token_failures', 'cross_user_leaks', 'unregistered_repo_accepted'];
const lifeFailures = ['hung_tasks', 'resume_lost_changes'];
const hostFailed = summary.build_egress_escapes !== 0 || summary.revoked_socket_events !== 0 || summary.data_dir_private !== true;
const lifeFailed = lifeFailures.some((key) => summary[key] !== 0) || summary.disk_quota_enforced !== true;
const stallFailed = summary.api_stall_max_ms < 0 || summary.api_stall_max_ms >= 500;
const issue31Failed = ['cross_build_front_reads', 'setup_secret_forms_in_image', 'invisible_chars_unmarked', 'forge_text_unneutralised', 'api_hardening_failures'].some((key) => summary[key] !== 0) || ['healthz_max_ms_under_1000', 'metrics_max_ms_under_1000'].some((key) => summary[key] < 0 || summary[key] >= 1000);
process.exit(hostFailed || lifeFailed || stallFailed || issue31Failed || failures.some((key) => summary[key] !== 0) || missing.length ? 1 : 0);
JS
rm -f "$report"
exit $code
