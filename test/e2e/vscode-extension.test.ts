import { describeVsCodeFlows } from '../vscode/flows';
import { startRealServer } from '../vscode/real-server';

/*
 * The packaged extension in real VS Code against the real fleet server in-process (store, HTTP +
 * WebSocket API, auth, scheduler, task runner, policy gate, local forge, publisher). Its sandbox
 * and agent are the runner's stand-ins so this runs in seconds; vscode-full-stack.test.ts runs the
 * same flows against `dockhand serve` with gVisor and the replay model.
 */
describeVsCodeFlows('Dockhand in VS Code against the fleet server', {
  prefix: 'vscode',
  start: (repo) => startRealServer(repo),
  agentSays: 'average() starts summing at index 1; reading calc.js.',
  workMs: 90_000,
  comments: true,
});
