import { inRecipeStep, selectableFiles, selectedPlan, wholeCommandPlan, wholeWorkspacePlans, type PlanContext, type RecipeStep, type SuitePlan } from './suite-plan';
import { planTestCommand, runsInWorkspaces, type WorkspaceMember } from './test-command';
import { shellQuote } from './runners';
import type { Selection } from './selection';

/*
 * The recipe's `test.steps`: the repository's CI runs its tests as separate steps (one workflow
 * `run:` each, with its `working-directory` and `env:`), and so does the engine. Each step is
 * planned like a test command of its own (its npm scripts followed, its chain split, the side
 * channel around every part), in its directory and environment; they run in order, a failing one
 * never stops the next, and each keeps its own cases, so the baseline judges each on its own.
 */

export interface StepSources {
  /** A repository file's text (undefined when absent). */
  read(path: string): Promise<string | undefined>;
  /** The workspace packages of the root package.json (read only for a step that runs in them). */
  members(packageJson: string | undefined): Promise<WorkspaceMember[]>;
}

export interface PlannedSteps {
  whole: SuitePlan[];
  /** For a selection: the steps that can take the selected files, on those files; undefined when none can. */
  selected?: { plans: SuitePlan[]; files: number };
}

export async function planRecipeSteps(steps: readonly RecipeStep[], sources: StepSources, context: PlanContext, tests: readonly string[] | undefined): Promise<PlannedSteps> {
  const whole: SuitePlan[] = [];
  const selected: SuitePlan[] = [];
  const taken = new Set<string>();
  for (const step of steps) {
    const cwd = step.cwd?.replace(/^\.\/|\/$/g, '');
    const dir = cwd && cwd !== '.' ? cwd : '';
    const packageJson = await sources.read(dir ? `${dir}/package.json` : 'package.json');
    const block = scriptBlock(step.command);
    const members = !block && !dir && runsInWorkspaces(step.command, packageJson) ? await sources.members(packageJson) : [];
    const plan = planTestCommand(block ?? step.command, packageJson, members);
    if (plan.workspaces) {
      whole.push(...wholeWorkspacePlans(plan, context).map((member) => inRecipeStep(step, member)));
      continue;
    }
    whole.push(inRecipeStep(step, wholeCommandPlan(plan, context, { dir, workspaces: false })));
    if (!tests || !plan.invocation) continue;
    const own = dir ? tests.filter((file) => file.startsWith(`${dir}/`)).map((file) => file.slice(dir.length + 1)) : [...tests];
    const selectable = selectableFiles(plan, own);
    if ('reason' in selectable) continue;
    selectable.files.forEach((file) => taken.add(dir ? `${dir}/${file}` : file));
    selected.push(inRecipeStep(step, selectedPlan(plan, selectable.files.map((file) => ({ file })), context, { dir, workspaces: false })));
  }
  return selected.length > 0 ? { whole, selected: { plans: selected, files: taken.size } } : { whole };
}

/**
 * A workflow's multi-line `run: |` is one script, run the way GitHub runs it (`bash --noprofile
 * --norc -eo pipefail`), never split into lines joined with `&&` (an `if … then … fi` block becomes
 * a syntax error that way). The side channel still counts the runners it starts.
 */
function scriptBlock(command: string): string | undefined {
  const text = command.trim();
  if (!text.includes('\n')) return undefined;
  return `bash --noprofile --norc -eo pipefail -c ${shellQuote(text)}`;
}

/** The reason line for a selection over the recipe's steps. */
export function stepsReason(selection: Selection, steps: readonly RecipeStep[], planned: PlannedSteps): string {
  const names = steps.map((step) => step.name).join('; ');
  if (selection.mode !== 'selected' || !planned.selected) return `the whole test command: ${steps.length} step(s) (${names})`;
  const left = selection.tests.length - planned.selected.files;
  return `passed to the runners of ${planned.selected.plans.length} of ${steps.length} step(s)${left > 0 ? ` (${left} selected file(s) are not run by them)` : ''}`;
}
