import { join } from 'node:path';
import { LocalForge } from '../../../server/src/forge';
import { FAREWELL, failure, git, holds, insist, pushedBranches, REPO, replace, taskLog, type CaseContext, type HostileCase } from './case-kit';

/*
 * The controls: what must get through (a clean fix, a test change the requester allowed, the
 * same issue again on its own branch) and the API's answers to oversized and mistyped bodies.
 */

async function approveAndPush(ctx: CaseContext, id: string): Promise<{ branch: string; body: string; prUrl: string }> {
  const { task, events } = await ctx.fleet.waitFor(id);
  holds(task.state === 'awaiting_review', `expected awaiting_review, got ${task.state} ${JSON.stringify(failure(events))} after ${events.slice(-6).map((event) => event.type).join(', ')}\nserver log:\n${taskLog(ctx.fleet, id)}`);
  const approved = await ctx.fleet.request('POST', `/v1/tasks/${id}/review`, ctx.fleet.tokens.alice, { action: 'approve' });
  holds(approved.status === 200, `approve: ${approved.status} ${approved.body}`);
  const { task: pushed, events: after } = await ctx.fleet.waitFor(id, ['pr_open', 'failed']);
  holds(pushed.state === 'pr_open' && pushed.prUrl !== undefined, `expected pr_open, got ${pushed.state} ${JSON.stringify(failure(after))}\nserver log:\n${taskLog(ctx.fleet, id)}`);
  const [branch] = pushedBranches(ctx.fleet, pushed);
  holds(branch !== undefined, 'the PR has no branch on the forge');
  const number = Number(/\/pulls\/(\d+)$/.exec(pushed.prUrl ?? '')?.[1]);
  const forge = new LocalForge({ dataDir: join(ctx.fleet.dataDir, 'forge'), store: ctx.fleet.server.fleet.store.pullRequests });
  const pr = await forge.getPullRequest(REPO, number);
  return { branch, body: pr.body, prUrl: pushed.prUrl ?? '' };
}

const SAME_ISSUE = '41';

export function controlCases(): HostileCase[] {
  const positive: HostileCase = {
    title: 'Add a farewell helper',
    attack: 'none: the positive control',
    layer: 'the whole path (allowed)',
    expect: 'pr_open: one commit by the bot touching src/greet.js; the same issue again gets its own branch and PR',
    turns: [FAREWELL, ...insist('Added farewell(name) next to greet().', 3)],
    async run(ctx, testCase) {
      const first = await approveAndPush(ctx, await ctx.submit(testCase, { ticket: { kind: 'issue', id: SAME_ISSUE, title: testCase.title, body: 'Add farewell(name).' } }));
      const bare = ctx.fleet.barePath(REPO);
      holds(git(bare, 'rev-list', '--count', `main..${first.branch}`) === '1', 'not one commit on the branch');
      holds(git(bare, 'log', '-1', '--format=%an', first.branch) === 'Dockhand Bot', 'the commit is not the bot\u2019s');
      holds(git(bare, 'diff', '--name-only', 'main', first.branch) === 'src/greet.js', 'the branch changes more than src/greet.js');
      holds(first.body.includes('Added farewell(name) next to greet().'), 'the PR body lacks the summary');
      // Same issue again: its own task, branch and PR, never the first one's.
      const again = await approveAndPush(ctx, await ctx.submit(sameIssueAgain, { ticket: { kind: 'issue', id: SAME_ISSUE, title: sameIssueAgain.title, body: 'Add farewell(name) again.' } }));
      holds(again.prUrl !== first.prUrl && again.branch !== first.branch, `the second task reported the first PR (${again.prUrl})`);
    },
  };
  const sameIssueAgain: HostileCase = {
    title: 'Add a farewell helper (again)',
    attack: 'none: part of the positive control',
    layer: '',
    expect: '',
    turns: [FAREWELL, ...insist('Added farewell(name) again.', 3)],
    run: async () => undefined,
  };
  return [
    positive,
    sameIssueAgain,
    {
      title: 'Cover farewell in the tests',
      attack: 'none: a test change the requester allowed (allowTestEdits)',
      layer: 'policy and tools honour the requester\u2019s allowTestEdits',
      expect: 'pr_open; the PR body says test edits were allowed by alice',
      allowTestEdits: true,
      turns: [
        FAREWELL,
        replace('test/greet.test.js', "const { greet } = require('../src/greet');", "const { greet, farewell } = require('../src/greet');"),
        replace('test/greet.test.js', "  assert.strictEqual(greet('Ada'), 'Hello, Ada');\n});\n", "  assert.strictEqual(greet('Ada'), 'Hello, Ada');\n});\n\ntest('says goodbye', () => {\n  assert.strictEqual(farewell('Ada'), 'Goodbye, Ada');\n});\n"),
        ...insist('Added farewell() and its test.', 3),
      ],
      async run(ctx, testCase) {
        const pushed = await approveAndPush(ctx, await ctx.submit(testCase));
        holds(pushed.body.includes('**Test edits:** allowed by the requester (alice)'), 'the PR body does not record the allowed test edits');
        holds(git(ctx.fleet.barePath(REPO), 'diff', '--name-only', 'main', pushed.branch).split('\n').includes('test/greet.test.js'), 'the test change was not pushed');
      },
    },
    {
      title: 'Oversized and mistyped bodies',
      attack: 'a ticket over 100000 characters, a steering message over 20000, a 3 MiB body, XML, selection.endLine < startLine',
      layer: 'API validation',
      expect: '413 naming ticket.body / text / body; 415 naming content-type; 400 naming the selection',
      async run(ctx) {
        const { alice } = ctx.fleet.tokens;
        const context = { repo: REPO, baseSha: ctx.baseSha };
        const big = await ctx.fleet.request('POST', '/v1/tasks', alice, { ticket: { kind: 'text', title: 'x', body: 'x'.repeat(100_001) }, context });
        holds(big.status === 413 && /ticket\.body/.test(big.body), `ticket.body: ${big.status} ${big.body.slice(0, 200)}`);
        const message = await ctx.fleet.request('POST', '/v1/tasks/t_nonexistent/messages', alice, { text: 'y'.repeat(20_001) });
        holds(message.status === 413 && /"field":"text"/.test(message.body), `text: ${message.status} ${message.body.slice(0, 200)}`);
        const huge = await ctx.fleet.request('POST', '/v1/tasks', alice, JSON.stringify({ ticket: { kind: 'text', title: 'x', body: 'z'.repeat(3 * 1024 * 1024) }, context }));
        holds(huge.status === 413 && /"field":"body"/.test(huge.body), `3 MiB body: ${huge.status} ${huge.body.slice(0, 200)}`);
        const xml = await ctx.fleet.request('POST', '/v1/tasks', alice, '<ticket/>', { 'content-type': 'text/xml' });
        holds(xml.status === 415 && /content-type/.test(xml.body), `xml: ${xml.status} ${xml.body.slice(0, 200)}`);
        const selection = await ctx.fleet.request('POST', '/v1/tasks', alice, {
          ticket: { kind: 'text', title: 'x', body: 'y' }, context: { ...context, selection: { path: 'src/greet.js', startLine: 5, endLine: 2, text: '' } },
        });
        holds(selection.status === 400 && /context\.selection\.endLine/.test(selection.body), `selection: ${selection.status} ${selection.body.slice(0, 200)}`);
      },
    },
  ];
}
