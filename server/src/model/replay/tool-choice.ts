import type Anthropic from '@anthropic-ai/sdk';
import { z } from 'zod';
import type { Turn } from './cassette';

/*
 * `tool_choice` as the Messages API takes it, and the two things the replay server does with it:
 * reject a request the API would reject (400 invalid_request_error naming the field), and refuse
 * to play a cassette turn the API could not have produced under that choice. The second is what
 * lets a test prove the client really forced a tool: a turn scripted as prose, or as another
 * tool, fails loudly instead of being played.
 */

const disableParallel = { disable_parallel_tool_use: z.boolean().optional() };
export const ToolChoice = z.discriminatedUnion('type', [
  z.object({ type: z.literal('auto'), ...disableParallel }).strict(),
  z.object({ type: z.literal('any'), ...disableParallel }).strict(),
  z.object({ type: z.literal('tool'), name: z.string().min(1), ...disableParallel }).strict(),
  z.object({ type: z.literal('none') }).strict(),
]) satisfies z.ZodType<Anthropic.ToolChoice>;
export type ToolChoice = z.infer<typeof ToolChoice>;

/** The request fields the checks read; `thinking` is only looked at for its `type`. */
export interface ToolChoiceRequest {
  tool_choice?: ToolChoice | undefined;
  tools?: Array<{ name: string }> | undefined;
  thinking?: { type: string } | undefined;
}

function forcesTool(choice: ToolChoice | undefined): boolean {
  return choice?.type === 'any' || choice?.type === 'tool';
}

function toolNames(request: ToolChoiceRequest): string[] {
  return (request.tools ?? []).map((tool) => tool.name);
}

/** Why the API would reject this request's tool_choice (the message starts with the field), or undefined. */
export function invalidToolChoice(request: ToolChoiceRequest): string | undefined {
  const choice = request.tool_choice;
  if (!choice) return undefined;
  const names = toolNames(request);
  if (choice.type === 'any' && names.length === 0) {
    return 'tool_choice.type: "any" forces a tool call, but the request has no tools; send tools or drop tool_choice';
  }
  if (choice.type === 'tool' && !names.includes(choice.name)) {
    const known = names.length > 0 ? names.map((name) => JSON.stringify(name)).join(', ') : '(none)';
    return `tool_choice.name: tool ${JSON.stringify(choice.name)} is not among the request's tools: ${known}`;
  }
  if (forcesTool(choice) && request.thinking && request.thinking.type !== 'disabled') {
    return 'Thinking may not be enabled when tool_choice forces tool use.';
  }
  return undefined;
}

/** "tool_choice {type:tool, name:submit_review}": how a choice is shown in errors. */
export function describeToolChoice(choice: ToolChoice | undefined): string {
  if (!choice) return 'tool_choice absent (auto)';
  return choice.type === 'tool' ? `tool_choice {type: tool, name: ${choice.name}}` : `tool_choice {type: ${choice.type}}`;
}

function describeContent(turn: Turn): string {
  return turn.content.map((block) => (block.type === 'text' ? 'text' : `tool_use ${block.name}`)).join(', ');
}

/**
 * Why the API could not have answered this request with this turn, or undefined when it could.
 * Forced (`any`, `tool`): the API prefills the tool call, so the turn must open with a tool_use
 * of an offered tool (the named one for `tool`); `none`: no tool_use at all;
 * `disable_parallel_tool_use`: at most one tool_use. A refusal can cut any turn short, so a turn
 * that stops with `refusal` is not held to the choice.
 */
export function unmetToolChoice(request: ToolChoiceRequest, turn: Turn): string | undefined {
  const choice = request.tool_choice;
  if (!choice || turn.stop_reason === 'refusal') return undefined;
  const uses = turn.content.filter((block) => block.type === 'tool_use');
  const first = turn.content[0];
  const problem = (why: string): string => `${describeToolChoice(choice)} not met: ${why} (the turn plays: ${describeContent(turn)})`;
  if (choice.type === 'none') {
    return uses.length > 0 ? problem('the request allows no tool call but the turn calls one') : undefined;
  }
  if (choice.type === 'any' || choice.type === 'tool') {
    if (first?.type !== 'tool_use') {
      return problem('a forced tool call comes first, with no text before it (the API prefills it), but the turn opens with text');
    }
    if (choice.type === 'tool' && first.name !== choice.name) return problem(`the request forces ${choice.name} but the turn calls ${first.name}`);
    const names = toolNames(request);
    const unknown = uses.find((use) => !names.includes(use.name));
    if (unknown) return problem(`the turn calls ${unknown.name}, which is not among the request's tools`);
  }
  if (choice.disable_parallel_tool_use && uses.length > 1) {
    return problem(`disable_parallel_tool_use allows one tool call but the turn has ${uses.length}`);
  }
  return undefined;
}

/** The request's choice as a cassette `toolChoice` expectation compares it: type, and name for `tool`. */
export function toolChoiceMatches(request: ToolChoiceRequest, wanted: { type: ToolChoice['type']; name?: string | undefined }): boolean {
  const actual = request.tool_choice ?? { type: 'auto' as const };
  if (actual.type !== wanted.type) return false;
  return actual.type !== 'tool' || wanted.name === undefined || actual.name === wanted.name;
}
