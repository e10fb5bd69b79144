import { editFileTool } from './edit-file';
import { finishTool } from './finish';
import { listFilesTool } from './list-files';
import { listSymbolsTool } from './list-symbols';
import { readFileTool } from './read-file';
import { runCommandTool } from './run-command';
import { runTestsTool } from './run-tests';
import { searchTool } from './search';
import type { AgentTool } from './types';

export { executeTool, ToolError, type AgentTool, type ToolContext, type ExecutedTool } from './types';
export { FINISH_TOOL_NAME, FinishInput } from './finish';
export { describeTestReport, testsFinishedData } from './run-tests';
export { isTestPath, isCiConfigPath, toWorkspacePath } from './paths';
export { capOutput } from './output';

/** The agent's tools in a fixed order (the order is part of the cached prompt prefix). */
export function defaultTools(): AgentTool[] {
  return [searchTool, readFileTool, listFilesTool, listSymbolsTool, editFileTool, runTestsTool, runCommandTool, finishTool];
}
