/*
 * bench:tokens — what prompt caching and compaction do to a long task.
 *
 * A scripted 40-turn trajectory (explore, read, search, run tests, fix, verify, finish) on the
 * test/fixtures/buggy-ledger repository, played by the replay model server through the real
 * Anthropic SDK (AnthropicModelClient) and the real agent loop, with tools running in a real gVisor
 * sandbox. The same trajectory runs twice: with cache breakpoints and without. The replay server
 * reports usage the way the API does for prompt caching (reads, writes, uncached input), and cost
 * comes from the model client's price table (claude-sonnet-4-6: $3 in, $15 out, $3.75 cache
 * write, $0.30 cache read per million tokens).
 *
 * Printed: per-turn context size and cache figures, the cache-read share of input tokens, cost
 * with and without caching and their ratio, and whether compaction kept every turn under the
 * configured ceiling. Targets: cache-read share >= 90 %, uncached/cached >= 3.5.
 * LAST line: one JSON object.
 *
 * Run: npm run bench:tokens   (needs Docker + runsc and dockhand/base, see scripts/setup-host.sh)
 */
import { AnthropicModelClient } from '../server/src/model/anthropic-client';
import type { CassetteInput } from '../server/src/model/replay/cassette';
import { runAgent, type AgentOutcome } from '../server/src/agent';
import { SimpleFeedbackEngine } from '../server/src/agent/simple-feedback';
import { RecordingApprover } from '../server/src/agent/testing/context';
import { MemoryEventSink } from '../server/src/agent/testing/memory-sink';
import { SUMMARY_REQUEST } from '../server/src/agent/compaction';
import { APPROVE_REVIEW, PRIMARY_MODEL, fixtureSandbox, startWorld, type AgentWorld } from '../test/e2e/agent-harness';
import { createFixtureRepo } from '../test/support/fixture-repo';

const THRESHOLD_TOKENS = 24_000;
const CEILING_TOKENS = 30_000;
/** Low enough that dropping old outputs alone is not enough once: the summary step runs too. */
const TARGET_RATIO = 0.3;

type Step = CassetteInput['turns'][number];
type Call = [text: string, name: string, input: Record<string, unknown>];

const read = (path: string, start: number, end: number): Record<string, unknown> => ({ path, start_line: start, end_line: end });

const TRAJECTORY: Call[] = [
  ['Let me look at the repository layout.', 'list_files', {}],
  ['Where is balance defined?', 'search', { pattern: 'function balance' }],
  ['Reading the entries module.', 'read_file', read('src/entries.js', 1, 150)],
  ['Continuing.', 'read_file', read('src/entries.js', 151, 300)],
  ['And the rest of it.', 'read_file', read('src/entries.js', 301, 467)],
  ['Running the tests to see what fails.', 'run_tests', {}],
  ['The balance test fails; reading it.', 'read_file', { path: 'test/entries.test.js' }],
  ['Outline of entries.', 'list_symbols', { path: 'src/entries.js' }],
  ['How are amounts used elsewhere?', 'search', { pattern: 'amount', glob: 'src/**', max_results: 60 }],
  ['Accounts may define the sign convention.', 'read_file', read('src/accounts.js', 1, 200)],
  ['More of accounts.', 'read_file', read('src/accounts.js', 201, 400)],
  ['Is balance defined anywhere else?', 'list_symbols', { name: 'balance' }],
  ['Currency helpers, for minor units.', 'read_file', read('src/currency.js', 1, 200)],
  ['Reports consume balances.', 'read_file', read('src/report.js', 1, 200)],
  ['Looking for the documented convention.', 'search', { pattern: 'minor units', context_lines: 2 }],
  ['Parsing may produce negative amounts.', 'read_file', read('src/parse.js', 1, 200)],
  ['Audit module.', 'read_file', read('src/audit.js', 1, 200)],
  ['History of the repository.', 'run_command', { command: 'git log --oneline' }],
  ['Sizes of the modules.', 'run_command', { command: 'wc -l src/*.js test/*.js' }],
  ['Rest of the report module.', 'read_file', read('src/report.js', 201, 400)],
  ['Account fields.', 'search', { pattern: 'account', path: 'src/accounts.js', max_results: 40 }],
  ['Rest of currency.', 'read_file', read('src/currency.js', 201, 400)],
  ['Outline of report.', 'list_symbols', { path: 'src/report.js' }],
  ['Rest of parse.', 'read_file', read('src/parse.js', 201, 400)],
  ['Reproducing the bug directly.', 'run_command', { command: `node -e "console.log(require('./src/entries').balance([{account:'a',amount:500},{account:'a',amount:-200}],'a'))"` }],
  ['Rest of audit.', 'read_file', read('src/audit.js', 201, 400)],
  ['Merge helpers, in case they filter amounts.', 'search', { pattern: 'function merge' }],
  ['Outline of audit.', 'list_symbols', { path: 'src/audit.js' }],
  ['Another test file for conventions.', 'read_file', { path: 'test/accounts.test.js' }],
  ['Debit convention in the docs.', 'search', { pattern: 'Debits' }],
  ['The agent notes.', 'read_file', { path: 'AGENTS.md' }],
  ['Every use of balance.', 'run_command', { command: 'grep -rn balance src test' }],
  ['The function once more.', 'read_file', read('src/entries.js', 450, 467)],
  ['Debits are negative amounts; balance drops them. Fixing.', 'edit_file', {
    path: 'src/entries.js', command: 'replace',
    old_text: '    if (entry.amount > 0) total += entry.amount;', new_text: '    total += entry.amount;',
  }],
  ['Running the tests.', 'run_tests', {}],
  ['What changed.', 'run_command', { command: 'git diff --stat' }],
  ['Checking the result.', 'read_file', read('src/entries.js', 455, 467)],
  ['Whole suite.', 'run_tests', { scope: 'full' }],
  ['Final look at the diff.', 'run_command', { command: 'git diff' }],
  ['Done.', 'finish', { summary: 'balance() ignored debits (negative amounts); it now sums every entry of the account.' }],
];

/** Every position can also answer a compaction request (same session, so it reads the same cache). */
function cassette(): CassetteInput {
  const turns: Step[] = TRAJECTORY.map(([text, name, input], index) => ({
    oneOf: [
      {
        name: `summary at ${index + 1}`,
        when: { userTextContains: SUMMARY_REQUEST.slice(0, 60) },
        content: [{ type: 'text', text: 'Summary: ticket is the wrong balance() in src/entries.js (around line 458). Debits are negative minor units. I read every module; nothing else filters amounts. Tests: 1 failing (balance counts debits and credits). Next: fix balance to sum all entries of the account, run tests, finish.' }],
      },
      { name: `turn ${index + 1}: ${name}`, content: [{ type: 'text', text }, { type: 'tool_use', name, input }] },
    ],
  }));
  return { description: 'bench:tokens 40-turn trajectory on buggy-ledger', turns };
}

interface RunFigures {
  outcome: AgentOutcome;
  events: MemoryEventSink;
}

async function runOnce(world: AgentWorld, session: string, cacheBreakpoints: boolean): Promise<RunFigures> {
  world.replay.addCassette(session, cassette());
  world.replay.addCassette(`${session}-review`, { turns: [APPROVE_REVIEW] });
  const repo = createFixtureRepo('buggy-ledger');
  const sandbox = await fixtureSandbox(world, repo);
  const events = new MemoryEventSink(session);
  try {
    const outcome = await runAgent({
      task: {
        ticket: { kind: 'text', title: 'Account balance ignores debits', body: 'balance() of an account with a debit of 200 and a credit of 500 returns 500, expected 300.' },
        budgets: { maxTurns: 60, maxCostUsd: 50 },
      },
      sandbox,
      model: new AnthropicModelClient({ apiKey: `replay:${session}`, baseURL: world.replay.url, model: PRIMARY_MODEL }),
      reviewModel: new AnthropicModelClient({ apiKey: `replay:${session}-review`, baseURL: world.replay.url, model: PRIMARY_MODEL }),
      events,
      approver: new RecordingApprover('denied'),
      feedback: new SimpleFeedbackEngine(),
      config: { cacheBreakpoints, compaction: { thresholdTokens: THRESHOLD_TOKENS, targetRatio: TARGET_RATIO, keepRecentTurns: 4 } },
    });
    return { outcome, events };
  } finally {
    await sandbox.destroy();
  }
}

function pad(value: string | number, width: number): string {
  return String(value).padStart(width);
}

async function main(): Promise<void> {
  const world = await startWorld();
  try {
    const stamp = Date.now().toString(36);
    const cached = await runOnce(world, `tokens-cached-${stamp}`, true);
    const uncached = await runOnce(world, `tokens-uncached-${stamp}`, false);
    for (const [label, run] of [['cached', cached], ['uncached', uncached]] as const) {
      if (run.outcome.status !== 'finished_verified') {
        for (const finished of run.events.ofType('tool.finished').slice(-4)) {
          console.error(`${finished.data.name} (error: ${finished.data.isError}): ${finished.data.output.slice(0, 1500)}`);
        }
        throw new Error(`${label} run ended ${run.outcome.status}: ${run.outcome.summary}`);
      }
    }

    const turns = cached.events.ofType('model.turn');
    console.log('turn  purpose      context   cache_read  cache_write   input  output   cost_usd');
    for (const turn of turns) {
      const usage = turn.data.usage;
      console.log(
        `${pad(turn.data.turn, 4)}  ${(turn.data.purpose ?? 'agent').padEnd(10)} ${pad(turn.data.contextTokens, 8)} ${pad(usage.cacheReadTokens, 11)} ${pad(usage.cacheWriteTokens, 12)} ${pad(usage.inputTokens, 7)} ${pad(usage.outputTokens, 7)} ${pad(turn.data.costUsd.toFixed(4), 10)}`,
      );
    }
    for (const compaction of cached.events.ofType('context.compacted')) {
      console.log(`compacted: ${compaction.data.tokensBefore} -> ${compaction.data.tokensAfter} tokens (${compaction.data.turnsCompacted} turns summarised)`);
    }

    const usage = cached.outcome.usage;
    const promptTokens = usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
    const cacheReadShare = usage.cacheReadTokens / promptTokens;
    const agentTurns = turns.filter((turn) => turn.data.purpose === undefined);
    const maxContext = Math.max(...agentTurns.map((turn) => turn.data.contextTokens));
    const costCached = cached.outcome.usage.costUsd;
    const costUncached = uncached.outcome.usage.costUsd;
    const ratio = costUncached / costCached;
    console.log('');
    console.log(`turns: ${usage.turns} (+ ${turns.length - agentTurns.length} review/compaction calls)`);
    console.log(`prompt tokens: ${promptTokens} = ${usage.cacheReadTokens} cache read + ${usage.cacheWriteTokens} cache write + ${usage.inputTokens} uncached`);
    console.log(`cache-read share of input tokens: ${(cacheReadShare * 100).toFixed(1)} % (target >= 90 %)`);
    console.log(`cost with caching: $${costCached.toFixed(4)}; without cache breakpoints: $${costUncached.toFixed(4)}; ratio ${ratio.toFixed(2)}x (target >= 3.5x)`);
    console.log(`max context: ${maxContext} tokens; compaction threshold ${THRESHOLD_TOKENS}, ceiling ${CEILING_TOKENS}: ${maxContext <= CEILING_TOKENS ? 'kept under' : 'EXCEEDED'}`);
    console.log(
      JSON.stringify({
        turns: usage.turns,
        cache_read_share: Number(cacheReadShare.toFixed(4)),
        cost_cached_usd: Number(costCached.toFixed(4)),
        cost_uncached_usd: Number(costUncached.toFixed(4)),
        uncached_over_cached: Number(ratio.toFixed(2)),
        max_context_tokens: maxContext,
        context_ceiling_tokens: CEILING_TOKENS,
        compactions: cached.events.ofType('context.compacted').length,
      }),
    );
  } finally {
    await world.close();
  }
}

await main();
