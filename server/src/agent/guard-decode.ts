/*
 * What a command line runs, not only what was typed (issue 31: `bash -c "$(echo … | base64 -d)"`
 * emptied a workspace without the approval `rm -rf .` needs). Two halves:
 *
 * - `commandForms` decodes the obvious wrappers into the command lines they become, so the
 *   guard's rules see the real command and name the real reason: ANSI-C strings (`$'\x72\x6d'`),
 *   literal variables (`X="rm -rf /"; $X`, `eval $X`), command substitutions whose text is a
 *   literal decoded by a pipeline (`echo … | base64 -d`, `base64 --decode <<< …`, `xxd -r -p`,
 *   `printf '\x..'`, `rev`), and literal text piped or fed to a shell. (`sh -c 'literal'`,
 *   `bash -c "literal"` and `eval literal` are unwrapped by the guard's own `program`.)
 * - `computedShellInput` says when a shell is handed a string computed at run time (command
 *   substitution, a variable, standard input from a pipe, process substitution): whatever it
 *   decodes to, that runs unseen, so it needs approval as it is.
 *
 * What it will NOT do: run anything, follow files (`base64 -d f | sh` is gated, not decoded), or
 * decode beyond a few rounds (`MAX_ROUNDS`); a wrapper it does not know is gated when its result
 * reaches a shell and let through when it is only printed.
 */

const SHELL_NAMES = '(?:ba|z|da|k|fi|tc)?sh';
const MAX_ROUNDS = 4;
const MAX_FORMS = 24;

/** Backslash escapes as `$'…'`, `printf` and `echo -e` read them. */
export function decodeEscapes(text: string): string {
  return text.replace(/\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|0?[0-7]{1,3}|.)/g, (_whole, escape: string) => {
    const head = escape[0];
    if (head === 'x' || head === 'u' || head === 'U') return String.fromCodePoint(parseInt(escape.slice(1), 16));
    if (/^[0-7]/.test(escape)) return String.fromCharCode(parseInt(escape, 8));
    const simple: Record<string, string> = { n: '\n', t: '\t', r: '\r', a: '\x07', b: '\b', e: '\x1b', E: '\x1b', f: '\f', v: '\v' };
    return simple[escape] ?? escape;
  });
}

/** The words of `text` when every one is literal (quotes removed); undefined when one is computed. */
export function literalWords(text: string): string[] | undefined {
  const words: string[] = [];
  const pattern = /\s*(?:'([^']*)'|"((?:[^"\\$`]|\\.)*)"|\$'((?:[^'\\]|\\.)*)'|([^\s'"`$;&|<>()\\]+))/gy;
  const trimmed = text.trim();
  let current: string | undefined;
  let index = 0;
  while (index < trimmed.length) {
    pattern.lastIndex = index;
    const match = pattern.exec(trimmed);
    if (!match) return undefined;
    const gap = /^\s/.test(match[0]);
    if (gap && current !== undefined) {
      words.push(current);
      current = undefined;
    }
    const piece = match[1] ?? (match[2] !== undefined ? match[2].replace(/\\(.)/g, '$1') : match[3] !== undefined ? decodeEscapes(match[3]) : match[4]);
    if (piece !== undefined) current = (current ?? '') + piece;
    index = pattern.lastIndex;
  }
  if (current !== undefined) words.push(current);
  return words;
}

/** `printf FORMAT ARGS…` as printf prints it (`%s`, `%b` take the arguments in turn). */
function printfOutput(words: string[]): string {
  const [format = '', ...args] = words;
  let next = 0;
  return decodeEscapes(format.replace(/%%/g, '\u0000')).replace(/%[sb]/g, () => args[next++] ?? '').replace(/\u0000/g, '%');
}

/** What a literal source stage prints: `echo [-neE] words`, `printf …`, `cat <<< word`. */
function sourceOutput(stage: string): string | undefined {
  const herestring = /^(.*?)<<<\s*(.+)$/s.exec(stage);
  if (herestring) {
    const word = literalWords(herestring[2]!);
    return word?.length === 1 ? `${word[0]}\n` : undefined;
  }
  const words = literalWords(stage);
  if (!words || words.length === 0) return undefined;
  const [name, ...args] = words;
  if (name === 'printf') return printfOutput(args);
  if (name !== 'echo') return undefined;
  let escapes = false;
  while (args[0] !== undefined && /^-[neE]+$/.test(args[0])) escapes ||= args.shift()!.includes('e');
  const text = args.join(' ');
  return `${escapes ? decodeEscapes(text) : text}\n`;
}

/** One decoding stage of a pipeline applied to its input; undefined when it is no known decoder. */
function filterOutput(stage: string, input: string): string | undefined {
  const words = literalWords(stage);
  if (!words || words.length === 0) return undefined;
  const [name, ...args] = words;
  const flags = args.filter((arg) => arg.startsWith('-')).join(' ');
  if (name === 'base64' && /(^|\s)(-[a-zA-Z]*[dD]|--decode)\b/.test(flags)) return Buffer.from(input.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (name === 'xxd' && /r/.test(flags) && /p/.test(flags)) return Buffer.from(input.replace(/[^0-9A-Fa-f]/g, ''), 'hex').toString('utf8');
  if (name === 'rev') return input.split('\n').map((line) => [...line].reverse().join('')).join('\n');
  if (name === 'cat' && args.length === 0) return input;
  return undefined;
}

/** The text a pipeline of a literal source and known decoders prints, or undefined. */
export function pipelineOutput(pipeline: string): string | undefined {
  const stages = pipeline.split(/(?<!\|)\|(?!\|)/).map((stage) => stage.trim());
  const first = stages.shift();
  if (first === undefined) return undefined;
  // `base64 -d <<< word`: a decoder fed a literal here-string.
  const fed = /^(.*?)<<<\s*(.+)$/s.exec(first);
  let output = fed && !/^(?:echo|printf|cat)\b/.test(fed[1]!.trim()) ? sourceOutput(`cat <<< ${fed[2]}`) : sourceOutput(first);
  if (output !== undefined && fed && !/^(?:echo|printf|cat)\b/.test(fed[1]!.trim())) output = filterOutput(fed[1]!, output);
  for (const stage of stages) {
    if (output === undefined) return undefined;
    output = filterOutput(stage, output);
  }
  return output;
}

/** Text put back into a command line as one quoted word. */
function quoted(text: string): string {
  const trimmed = text.replace(/\n+$/, '');
  return trimmed.includes("'") ? `"${trimmed.replace(/(["\\$`])/g, '\\$1')}"` : `'${trimmed}'`;
}

/** `$'…'` strings decoded (`$'\x72\x6d' -rf /` is `rm -rf /`). */
function decodeAnsiStrings(command: string): string {
  return command.replace(/\$'((?:[^'\\]|\\.)*)'/g, (_whole, body: string) => quoted(decodeEscapes(body)));
}

/** Innermost `$(…)` and backquoted substitutions whose pipeline decodes, replaced by what they print. */
function decodeSubstitutions(command: string): string {
  const replace = (whole: string, inner: string) => {
    const output = pipelineOutput(inner);
    return output === undefined ? whole : quoted(output);
  };
  return command.replace(/\$\(([^()]*)\)/g, replace).replace(/`([^`]*)`/g, replace);
}

/** Variables given a literal value in the command line itself, substituted where they are used. */
function substituteVariables(command: string): string {
  const values = new Map<string, string>();
  const assignment = /(?:^|[;&|\n\s(])(?:export\s+|local\s+|declare\s+)?([A-Za-z_]\w*)=('[^']*'|"(?:[^"\\$`]|\\.)*"|[^\s;&|$`'"()]*)(?=[\s;&|)]|$)/g;
  for (const match of command.matchAll(assignment)) {
    const words = match[2] === '' ? [''] : literalWords(match[2]!);
    if (words?.length === 1) values.set(match[1]!, words[0]!);
  }
  if (values.size === 0) return command;
  return command.replace(/\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)/g, (whole, braced: string | undefined, bare: string | undefined) => {
    const value = values.get(braced ?? bare ?? '');
    return value === undefined ? whole : value;
  });
}

/** Literal text handed to a shell on its standard input (`echo … | sh`, `sh <<< '…'`), as a command line. */
function shellInputs(command: string): string[] {
  const found: string[] = [];
  const piped = new RegExp(`(?:^|[;&\\n(]|&&|\\|\\|)([^;&\\n()]*?)\\|\\s*(?:sudo\\s+)?${SHELL_NAMES}\\b(?:\\s+-s)?\\s*(?=$|[;&|)\\n])`, 'g');
  for (const match of command.matchAll(piped)) {
    const output = pipelineOutput(match[1]!.trim());
    if (output !== undefined) found.push(output);
  }
  const fed = new RegExp(`\\b${SHELL_NAMES}\\s+<<<\\s*('[^']*'|"(?:[^"\\\\$\`]|\\\\.)*")`, 'g');
  for (const match of command.matchAll(fed)) {
    const words = literalWords(match[1]!);
    if (words?.length === 1) found.push(words[0]!);
  }
  return found;
}

/**
 * The command line and the command lines its wrappers decode to, the typed one first. Every one
 * is what the guard's rules check.
 */
export function commandForms(command: string): string[] {
  const forms: string[] = [command];
  const queue = [command];
  while (queue.length > 0 && forms.length < MAX_FORMS) {
    let current = queue.shift()!;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const next = substituteVariables(decodeSubstitutions(decodeAnsiStrings(current)));
      if (next === current) break;
      current = next;
      if (!forms.includes(current)) forms.push(current);
    }
    for (const inner of shellInputs(current)) {
      if (!forms.includes(inner) && forms.length < MAX_FORMS) {
        forms.push(inner);
        queue.push(inner);
      }
    }
  }
  return forms;
}

/**
 * Why the command hands a shell a string computed at run time, or undefined: `sh -c`/`bash -c`
 * or `eval` of a command substitution or variable, a pipe into a shell from anything but a
 * literal, process substitution run as a script, or a command substitution in a command's place.
 */
export function computedShellInput(command: string): string | undefined {
  const separator = String.raw`(?:^|[;&|\n({]|\b(?:then|do|else|if|while|until)\b)\s*`;
  const prefixes = String.raw`(?:(?:sudo|env|exec|command|nohup|time|nice|timeout\s+\S+|xargs)\s+|[A-Za-z_]\w*=\S*\s+)*`;
  const dashC = new RegExp(`\\b${SHELL_NAMES}\\s+(?:-[a-zA-Z]+\\s+)*-[a-zA-Z]*c[a-zA-Z]*\\s+(?:'[^']*'|"((?:[^"\\\\]|\\\\.)*)"|(\\S+))`, 'g');
  for (const match of command.matchAll(dashC)) {
    const script = match[1] ?? match[2];
    if (script !== undefined && /\$\(|`|\$\{?[A-Za-z_]\w*\}?|\$[@*0-9]/.test(script)) return 'a shell runs a string computed when the command runs (sh -c / bash -c of a command substitution or variable)';
  }
  if (new RegExp(`${separator}${prefixes}eval\\s+[^;&|\\n]*(?:\\$|\`)`).test(command)) return 'eval runs a string computed when the command runs (a command substitution or variable)';
  if (new RegExp(`\\b(?:${SHELL_NAMES}|source|\\.)\\s+(?:-[a-zA-Z]+\\s+)*<\\s*\\(`).test(command)) return 'a shell runs the output of another command (process substitution)';
  if (new RegExp(`\\b${SHELL_NAMES}\\s+<<<\\s*["']?\\s*(?:\\$|\`)`).test(command)) return 'a shell runs a string computed when the command runs (here-string of a command substitution or variable)';
  const piped = new RegExp(`(?:^|[;&\\n(]|&&|\\|\\|)([^;&\\n()]*?)\\|\\s*(?:sudo\\s+)?${SHELL_NAMES}\\b(?:\\s+-s)?\\s*(?=$|[;&|)\\n])`, 'g');
  for (const match of command.matchAll(piped)) {
    if (pipelineOutput(match[1]!.trim()) === undefined) return 'a shell runs what another command prints (a pipe into sh/bash)';
  }
  if (new RegExp(`${separator}${prefixes}["']?(?:\\$\\(|\`)`).test(command)) return 'the output of a command substitution runs as a command';
  return undefined;
}
