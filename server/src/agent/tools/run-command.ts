import { z } from 'zod';
import { checkCommand } from '../guard';
import { toWorkspacePath } from './paths';
import { ToolError, defineTool } from './types';

const RunCommandInput = z.object({
  command: z.string().min(1).describe('A bash command line, run in the repository root (or cwd)'),
  timeout_seconds: z.number().int().min(1).max(1800).default(120).describe('The command is killed after this long'),
  cwd: z.string().optional().describe('Working directory relative to the repository root'),
});

const OUTPUT_CAP_BYTES = 64 * 1024;

export const runCommandTool = defineTool({
  name: 'run_command',
  description:
    'Run a shell command (bash) inside the sandbox: no network, no credentials. Output is capped (head and tail ' +
    'kept). Destructive commands (deleting outside the workspace, git push, dropping databases, ...) wait for a ' +
    'human approval and may be denied. Prefer the dedicated tools for searching, reading and editing files.',
  input: RunCommandInput,
  async run(input, { sandbox, signal, approver, toolUseId }) {
    const cwd = input.cwd === undefined ? undefined : toWorkspacePath(input.cwd, 'cwd');
    const match = checkCommand(input.command);
    if (match) {
      const decision = await approver.request(
        { kind: 'command', command: input.command, reason: `${match.reason} [${match.rule}]`, toolUseId },
        signal,
      );
      if (decision.decision !== 'approved') {
        const comment = decision.comment ? ` Their comment: ${decision.comment}` : '';
        throw new ToolError(
          `Denied by ${decision.by}: this command needs approval (${match.reason}) and was not run.${comment} ` +
            'Do not retry it; find another way or explain in the finish summary why it is needed.',
        );
      }
    }
    const result = await sandbox.exec({
      // Not a login shell: Debian's /etc/profile resets PATH and would drop the snapshot's
      // toolchains (the repository's Node, pnpm, yarn) for the Debian defaults.
      cmd: ['bash', '-c', input.command],
      cwd,
      timeoutMs: input.timeout_seconds * 1000,
      outputCapBytes: OUTPUT_CAP_BYTES,
      signal,
    });
    const parts: string[] = [];
    if (result.timedOut) parts.push(`Timed out after ${input.timeout_seconds} s; the process tree was killed.`);
    parts.push(`Exit code ${result.exitCode} (${Math.round(result.durationMs)} ms).`);
    if (result.stdout) parts.push(`stdout:\n${result.stdout.replace(/\n$/, '')}`);
    if (result.stderr) parts.push(`stderr:\n${result.stderr.replace(/\n$/, '')}`);
    if (result.truncated) parts.push('[output was cut in the middle by the sandbox cap]');
    return { output: parts.join('\n'), isError: result.timedOut || result.exitCode !== 0, truncated: result.truncated };
  },
});
