import { z } from 'zod';
import { defineTool } from './types';

export const FINISH_TOOL_NAME = 'finish';

export const FinishInput = z.object({
  summary: z
    .string()
    .min(1)
    .describe('For the pull request: what was wrong, what you changed and why, and how it was tested'),
});

/**
 * The model's claim that it is done. The loop intercepts this tool: the server then runs the tests
 * and a review itself, and only a verified result ends the task. This implementation is only
 * reached if the loop did not intercept (it never should).
 */
export const finishTool = defineTool({
  name: FINISH_TOOL_NAME,
  description:
    'Call when the ticket is done. The server then runs the tests and a code review itself; if either fails you ' +
    'get the problems back and continue. Give a summary suitable for the pull request description.',
  input: FinishInput,
  async run() {
    return { output: 'finish is handled by the agent loop.', isError: true };
  },
});
