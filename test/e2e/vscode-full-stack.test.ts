import { describeVsCodeFlows } from '../vscode/flows';
import { startFullServer } from '../vscode/full-server';

/*
 * The packaged extension in real VS Code against the whole server as it ships: `dockhand serve`
 * with the agent loop on the real Anthropic SDK against the replay model server, a gVisor sandbox
 * from dockhand/base, the policy gate and the local forge (see test/vscode/full-server.ts).
 */
describeVsCodeFlows('Dockhand in VS Code against dockhand serve (gVisor, replay model)', {
  prefix: 'vscode-full',
  start: (repo) => startFullServer(repo),
  agentSays: 'average() starts summing at index 1, so the first value is lost.',
  workMs: 300_000,
  comments: false,
});
