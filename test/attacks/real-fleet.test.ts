import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateTaskResponse } from '@dockhand/protocol';
import { distinctRules, secretFormats } from '../../server/src/policy/testing/secret-formats';
import { startAttackFleet, type AttackFleet } from './support/attack-fleet';
import { createFixture, REPO, type CaseContext, type HostileCase } from './support/case-kit';
import { contentCases, type Planted, type SecretTally } from './support/content-cases';
import { controlCases } from './support/control-cases';
import { crossUserChecks, type CrossUserResult } from './support/cross-user';
import { fuzzApi, type FuzzResult } from './support/fuzz';
import { writeReportPart } from './support/report';
import { sandboxCases } from './support/sandbox-cases';

/*
 * `npm run test:attacks`, all real: `dockhand serve`'s composition on a real port, gVisor
 * sandboxes booted from one snapshot of a small fixture repository, the replay model obeying
 * each hostile ticket (a cassette per case), the local forge's git push. Every case says what it
 * tries, the layer that must hold and the outcome, and asserts it. While the cases run, the API
 * fuzzer goes over every OpenAPI route; afterwards user B tries every route and the WebSocket on
 * user A's tasks. Then the raw SQLite bytes and the server's log are searched for every planted
 * secret. The counts go to the report (`scripts/test-attacks.sh` prints them as the last line).
 */

const CONCURRENCY = 3;
// A new seed each run; ATTACK_SEED replays a run's (its describe line names it).
const seed = process.env.ATTACK_SEED ? Number(process.env.ATTACK_SEED) : Math.floor(Math.random() * 2 ** 31);
const formats = secretFormats(seed);
const secrets = formats.map((format) => ({ rule: format.rule, ...format.make() }));

let fleet: AttackFleet;
let fixture: { path: string; sha: string };
let cases: HostileCase[] = [];
const outcomes = new Map<string, Promise<void>>();
const results = new Map<string, { passed: boolean; error?: string; ms: number }>();
const tally: SecretTally = { missed: 0 };
let fuzz: Promise<FuzzResult>;
let crossUser: CrossUserResult | undefined;
let planted: Planted;
const started = Date.now();

beforeAll(async () => {
  fleet = await startAttackFleet({ concurrency: CONCURRENCY });
  planted = { formats, secrets, values: [...secrets.map((entry) => entry.secret), fleet.pushToken, fleet.modelKey] };
  fixture = createFixture();
  const registered = await fleet.request('POST', '/v1/repos', fleet.tokens.root, { name: REPO, source: fixture.path });
  if (registered.status !== 201) throw new Error(`registering ${REPO}: ${registered.status} ${registered.body}`);
  cases = [...controlCases(), ...contentCases(planted, fleet.pushToken, fleet.modelKey, tally), ...sandboxCases(fleet.dataDir, fleet.replay.url, fleet.barePath(REPO), fixture.sha)];
  for (const testCase of cases) if (testCase.turns) fleet.script(testCase.title, { description: testCase.attack, turns: testCase.turns });
  let ticket = 100;
  const ctx: CaseContext = {
    fleet,
    baseSha: fixture.sha,
    async submit(testCase, extra = {}, token = fleet.tokens.alice) {
      ticket += 1;
      const answer = await fleet.request('POST', '/v1/tasks', token, {
        ticket: { kind: 'issue', id: String(ticket), title: testCase.title, body: testCase.body ?? testCase.attack },
        context: { repo: REPO, baseSha: fixture.sha },
        allowTestEdits: testCase.allowTestEdits ?? false,
        ...extra,
      });
      if (answer.status !== 202) throw new Error(`submitting ${testCase.title}: ${answer.status} ${answer.body}`);
      return CreateTaskResponse.parse(answer.json).id;
    },
  };
  for (const testCase of cases.filter((entry) => entry.layer !== '')) {
    const begun = Date.now();
    const outcome = testCase.run(ctx, testCase).then(
      () => void results.set(testCase.title, { passed: true, ms: Date.now() - begun }),
      (error: unknown) => {
        results.set(testCase.title, { passed: false, error: error instanceof Error ? error.message : String(error), ms: Date.now() - begun });
        throw error;
      },
    );
    outcome.catch(() => undefined);
    outcomes.set(testCase.title, outcome);
  }
  // Hostile clients meanwhile, against the same server.
  fuzz = fuzzApi(fleet, { seed, repo: REPO, baseSha: fixture.sha });
  fuzz.catch(() => undefined);
}, 600_000);

afterAll(async () => {
  if (!fleet) return;
  const fuzzed = await fuzz.catch((error: unknown) => ({ requests: 0, fiveHundreds: 1, unregisteredAccepted: 0, routes: 0, tokenChecks: 0, tokenFailures: 1, failures: [String(error)] }));
  const dbPath = join(fleet.dataDir, 'dockhand.db');
  // Every byte SQLite wrote (database and write-ahead log while running, the database after close) and every log line.
  const raw = () => ['', '-wal'].filter((suffix) => existsSync(`${dbPath}${suffix}`)).map((suffix) => readFileSync(`${dbPath}${suffix}`).toString('latin1')).join('');
  let bytes = raw();
  await fleet.close();
  bytes += raw();
  const logs = fleet.logs();
  const ruleOf = (value: string) => secrets.find((entry) => entry.secret === value)?.rule ?? (value === fleet.pushToken ? 'push token' : 'model key');
  // Where a value was found, with the value itself blanked out, so the report can be read safely.
  const around = (text: string, value: string) => {
    const at = text.indexOf(value);
    return `${ruleOf(value)}: …${text.slice(Math.max(0, at - 80), at).replace(/[^\x20-\x7e]/g, '.')}<VALUE>${text.slice(at + value.length, at + value.length + 40).replace(/[^\x20-\x7e]/g, '.')}…`;
  };
  const storedRules = planted.values.filter((value) => bytes.includes(value)).map((value) => around(bytes, value));
  const loggedRules = planted.values.filter((value) => logs.includes(value)).map(ruleOf);
  const inDb = storedRules.length;
  const inLogs = loggedRules.length;
  fleet.remove();
  rmSync(fixture.path, { recursive: true, force: true });
  const hostile = cases.filter((entry) => entry.layer !== '');
  const failed = hostile.filter((entry) => results.get(entry.title)?.passed !== true);
  const part = {
    part: 'real-fleet',
    hostile_cases: hostile.length,
    hostile_failed: failed.length,
    failed: failed.map((entry) => `${entry.title}: ${results.get(entry.title)?.error ?? 'did not finish'}`.slice(0, 300)),
    secret_formats: distinctRules(formats).length,
    secrets_planted: planted.values.length,
    secrets_missed: tally.missed,
    secrets_stored_plaintext: inDb + inLogs,
    secrets_logged: inLogs,
    stored_plaintext_rules: [...storedRules, ...loggedRules.map((rule) => `${rule} (log)`)],
    fuzz_routes: fuzzed.routes,
    fuzz_requests: fuzzed.requests,
    fuzz_5xx: fuzzed.fiveHundreds,
    fuzz_failures: fuzzed.failures.slice(0, 10),
    token_checks: fuzzed.tokenChecks,
    token_failures: fuzzed.tokenFailures,
    cross_user_checks: crossUser?.checks ?? 0,
    cross_user_leaks: crossUser?.leaks.length ?? 1,
    cross_user_findings: crossUser?.leaks.slice(0, 10) ?? ['cross-user checks did not run'],
    unregistered_repo_accepted: fuzzed.unregisteredAccepted,
    seconds: Math.round((Date.now() - started) / 1000),
    seed,
  };
  writeReportPart(part);
  expect(inDb, 'planted secrets in the raw SQLite bytes').toBe(0);
  expect(inLogs, 'planted secrets in the server log').toBe(0);
}, 300_000);

describe(`hostile tickets through the real fleet (seed ${seed})`, () => {
  it('every case holds', { timeout: 900_000 }, async () => {
    await Promise.allSettled(outcomes.values());
    const failed = [...results.entries()].filter(([, result]) => !result.passed).map(([title, result]) => `${title}: ${result.error ?? ''}`);
    for (const [title, result] of results) console.log(`${result.passed ? 'held' : 'BROKE'} ${(result.ms / 1000).toFixed(0)}s ${title}${result.error ? `: ${result.error}` : ''}`);
    expect(cases.filter((entry) => entry.layer !== '').length).toBeGreaterThanOrEqual(25);
    expect(failed).toEqual([]);
  });

  it('the API fuzzer gets no 5xx and no hostile repo value is accepted', { timeout: 600_000 }, async () => {
    const result = await fuzz;
    expect(result.failures).toEqual([]);
    expect(result.fiveHundreds).toBe(0);
    expect(result.unregisteredAccepted).toBe(0);
    expect(result.tokenFailures).toBe(0);
    expect(result.tokenChecks).toBeGreaterThanOrEqual(3 * 15);
    expect(result.routes).toBeGreaterThanOrEqual(15);
  });

  it('user B gets nothing of user A on any route or the WebSocket', { timeout: 300_000 }, async () => {
    crossUser = await crossUserChecks(fleet, { repo: REPO, baseSha: fixture.sha });
    expect(crossUser.leaks).toEqual([]);
    expect(crossUser.checks).toBeGreaterThan(20);
  });
});
