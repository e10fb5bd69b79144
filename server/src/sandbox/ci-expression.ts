import { data, Evaluator, Lexer, Parser, type Expr } from '@actions/expressions';
import { ContextAccess, type Binary, type FunctionCall, type IndexAccess, type Logical, type Unary } from '@actions/expressions/ast';

/*
 * GitHub Actions expressions (`${{ matrix.node }}`, `if: runner.os == 'Linux'`) evaluated for one
 * matrix cell of a job, with GitHub's own parser and evaluator (@actions/expressions: its
 * comparison, coercion and functions). What the sandbox cannot know (the event's payload, other
 * jobs' outputs, inputs, vars, secrets, step outputs) is UNKNOWN, and an expression answers
 * UNKNOWN unless the known part decides it (`matrix.os == 'windows' && github.x` is false for
 * an ubuntu cell whatever github.x is). A reader keeps what it cannot rule out.
 */

/** A value that cannot be known outside GitHub's runner. */
class Unknown extends data.Null {}
const UNKNOWN = new Unknown();

/** What the sandbox stands for when asked: a pull request's run on Linux, in /workspace. */
const GITHUB_KNOWN = { event_name: 'pull_request', ref: 'refs/pull/1/merge', workspace: '/workspace', ref_type: 'branch' };
const RUNNER = { os: 'Linux', arch: 'X64', temp: '/tmp', tool_cache: '/opt/hostedtoolcache' };
const CONTEXTS = ['github', 'env', 'matrix', 'runner', 'strategy', 'job', 'steps', 'needs', 'inputs', 'vars', 'secrets'];
const STATUS_FUNCTIONS = ['success', 'always', 'failure', 'cancelled'];

export interface ExpressionScope {
  matrix: Record<string, unknown>;
  /** The env values known at this point (workflow, job, step); those not known are absent. */
  env: Record<string, string>;
  /** A reusable workflow's inputs (the caller's `with:` over the defaults); absent: unknown. */
  inputs?: Record<string, unknown>;
}

function toData(value: unknown): data.ExpressionData {
  return JSON.parse(JSON.stringify(value ?? null), data.reviver) as data.ExpressionData;
}

const statusFunctions = new Map(
  STATUS_FUNCTIONS.map((name) => [name, { name, minArgs: 0, maxArgs: 0, call: () => new data.BooleanData(name === 'success' || name === 'always') }]),
);

/** Evaluates with UNKNOWN for anything outside the scope, short-circuiting as GitHub does. */
class PartialEvaluator extends Evaluator {
  private readonly names: data.Dictionary;

  constructor(expression: Expr, scope: data.Dictionary) {
    super(expression, scope, statusFunctions);
    this.names = scope;
  }

  override visitContextAccess(access: ContextAccess): data.ExpressionData {
    return this.names.get(access.name.lexeme) ?? UNKNOWN;
  }

  override visitIndexAccess(access: IndexAccess): data.ExpressionData {
    const object = this.eval(access.expr);
    if (object instanceof Unknown || this.eval(access.index) instanceof Unknown) return UNKNOWN;
    const result = super.visitIndexAccess(access);
    // github.* beyond the few fields known: the event payload, the repository, the actor.
    const partial = access.expr instanceof ContextAccess && access.expr.name.lexeme.toLowerCase() === 'github';
    return partial && result.kind === data.Kind.Null ? UNKNOWN : result;
  }

  override visitUnary(unary: Unary): data.ExpressionData {
    return this.eval(unary.expr) instanceof Unknown ? UNKNOWN : super.visitUnary(unary);
  }

  override visitBinary(binary: Binary): data.ExpressionData {
    return this.eval(binary.left) instanceof Unknown || this.eval(binary.right) instanceof Unknown ? UNKNOWN : super.visitBinary(binary);
  }

  override visitLogical(logical: Logical): data.ExpressionData {
    const and = logical.operator.lexeme === '&&';
    let unknown = false;
    let last: data.ExpressionData = UNKNOWN;
    for (const argument of logical.args) {
      last = this.eval(argument);
      if (last instanceof Unknown) unknown = true;
      else if (and ? !truthy(last) : truthy(last)) return last;
    }
    return unknown ? UNKNOWN : last;
  }

  override visitFunctionCall(call: FunctionCall): data.ExpressionData {
    return call.args.some((argument) => this.eval(argument) instanceof Unknown) ? UNKNOWN : super.visitFunctionCall(call);
  }
}

function truthy(value: data.ExpressionData): boolean {
  switch (value.kind) {
    case data.Kind.Null:
      return false;
    case data.Kind.Boolean:
      return (value as data.BooleanData).value;
    case data.Kind.Number: {
      const number = (value as data.NumberData).value;
      return number !== 0 && !Number.isNaN(number);
    }
    case data.Kind.String:
      return (value as data.StringData).value !== '';
    default:
      return true;
  }
}

function scopeData(scope: ExpressionScope): data.Dictionary {
  return toData({ matrix: scope.matrix, env: scope.env, runner: RUNNER, github: GITHUB_KNOWN, strategy: { 'fail-fast': true }, ...(scope.inputs ? { inputs: scope.inputs } : {}) }) as data.Dictionary;
}

/** The value of one expression (without `${{ }}`), or undefined when it cannot be known or parsed. */
function evaluate(text: string, scope: ExpressionScope): data.ExpressionData | undefined {
  try {
    const { tokens } = new Lexer(text).lex();
    const expression = new Parser(tokens, CONTEXTS, [...statusFunctions.values()]).parse();
    const value = new PartialEvaluator(expression, scopeData(scope)).evaluate();
    return value instanceof Unknown ? undefined : value;
  } catch {
    return undefined;
  }
}

/** An `if:` condition: true, false, or undefined when what decides it is not known here. */
export function condition(value: unknown, scope: ExpressionScope): boolean | undefined {
  if (value === undefined || value === null) return true;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') return value !== 0;
  if (typeof value !== 'string') return undefined;
  // `if:` may be written with or without `${{ }}`; a status function is implied when none is named.
  const whole = /^\s*\$\{\{([\s\S]*)\}\}\s*$/.exec(value);
  const result = evaluate(whole ? (whole[1] ?? '') : value, scope);
  return result === undefined ? undefined : truthy(result);
}

/**
 * A string with every `${{ … }}` replaced by its value as GitHub would print it; undefined when
 * one cannot be known here (an input, a secret, a step's output) or reads a secret.
 */
export function expand(text: string, scope: ExpressionScope): string | undefined {
  let failed = false;
  const expanded = text.replace(/\$\{\{([\s\S]*?)\}\}/g, (_, inner: string) => {
    if (/\bsecrets\b/.test(inner)) failed = true;
    const value = failed ? undefined : evaluate(inner, scope);
    if (value === undefined) failed = true;
    return value === undefined ? '' : value.coerceString();
  });
  return failed ? undefined : expanded;
}
