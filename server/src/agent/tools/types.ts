import type Anthropic from '@anthropic-ai/sdk';
import { formatFieldPath } from '@dockhand/protocol';
import { z } from 'zod';
import type { FeedbackEngine } from '../../feedback/types';
import type { Sandbox } from '../../sandbox/types';
import type { Approver, EventSink } from '../ports';
import { capOutput } from './output';

/**
 * A refusal or failure the model should read. Tools throw it; `executeTool` turns it (and any other
 * error) into an `is_error` tool result, so nothing escapes the loop.
 */
export class ToolError extends Error {
  override readonly name = 'ToolError';
}

export interface ToolContext {
  sandbox: Sandbox;
  signal: AbortSignal;
  toolUseId: string;
  events: EventSink;
  approver: Approver;
  feedback: FeedbackEngine;
  /** The ticket explicitly allows changing tests. */
  allowTestEdits: boolean;
  /** The task's reproducing tests (feedback/reproducing.ts): they must pass, though they fail at the base. */
  reproducingTests?: readonly string[];
}

export interface ToolOutput {
  output: string;
  isError: boolean;
  /** The tool itself dropped part of what it found (result cap, line cap). */
  truncated?: boolean;
}

/** A tool as written: definition (name, description, zod input) beside its implementation. */
export interface ToolSpec<Schema extends z.ZodType> {
  name: string;
  description: string;
  input: Schema;
  run(input: z.output<Schema>, context: ToolContext): Promise<ToolOutput>;
}

/** A tool with its input type erased, so tools of different inputs share one list. */
export interface AgentTool {
  name: string;
  definition: Anthropic.Tool;
  execute(rawInput: unknown, context: ToolContext): Promise<ToolOutput>;
}

export interface ExecutedTool {
  output: string;
  isError: boolean;
  truncated: boolean;
}

/** JSON schema for the Messages API from the zod schema; defaults make a field optional for the model. */
export function toInputSchema(schema: z.ZodType): Anthropic.Tool.InputSchema {
  const { $schema: _ignored, ...json } = z.toJSONSchema(schema, { io: 'input' });
  return { ...json, type: 'object' };
}

export function defineTool<Schema extends z.ZodType>(spec: ToolSpec<Schema>): AgentTool {
  return {
    name: spec.name,
    definition: { name: spec.name, description: spec.description, input_schema: toInputSchema(spec.input) },
    async execute(rawInput, context) {
      const parsed = spec.input.safeParse(rawInput ?? {});
      if (!parsed.success) {
        const problems = parsed.error.issues.map((issue) => {
          const field = formatFieldPath(issue.path) || '(input)';
          return `${field}: ${issue.message}`;
        });
        return { output: `Invalid input for ${spec.name}:\n${problems.join('\n')}`, isError: true };
      }
      return spec.run(parsed.data, context);
    },
  };
}

/**
 * Runs one tool call to a result the model can read. Unknown tools, invalid input, refusals and
 * unexpected exceptions all come back as `isError`; the output is capped head+tail.
 */
export async function executeTool(
  tools: readonly AgentTool[],
  name: string,
  rawInput: unknown,
  context: ToolContext,
  outputCapChars: number,
): Promise<ExecutedTool> {
  const tool = tools.find((candidate) => candidate.name === name);
  let result: ToolOutput;
  if (!tool) {
    const known = tools.map((candidate) => candidate.name).join(', ');
    result = { output: `Unknown tool "${name}". Available tools: ${known}.`, isError: true };
  } else {
    try {
      result = await tool.execute(rawInput, context);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      result = { output: error instanceof ToolError ? message : `${name} failed: ${message}`, isError: true };
    }
  }
  const capped = capOutput(result.output, outputCapChars);
  const output = capped.text.length > 0 ? capped.text : '(no output)';
  return { output, isError: result.isError, truncated: capped.truncated || result.truncated === true };
}
