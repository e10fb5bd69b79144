/**
 * Pattern translation for the resident search (part of CHANNEL_PROGRAM, plain CommonJS text run by
 * the sandbox's Node 18; see channel-resident.ts): a ripgrep (Rust regex) pattern becomes an
 * equivalent JavaScript regular expression that, like ripgrep, cannot match across a line end and
 * gives \d \w \s \b their Unicode meaning (with an ASCII variant, equal on ASCII text and native
 * in V8); syntax outside what the translation covers (inline flags, look-around, POSIX or nested
 * classes, \x escapes, ...) and patterns whose backtracking could blow up (a repeated group holding
 * a repetition or an alternation, three or more unbounded repetitions) come back as a reason
 * instead. Also: the substring every match must contain, and globs without a directory part.
 */
export const PATTERN_PROGRAM = String.raw`
const WORD_CLASS = '\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}';
// Unicode White_Space without the line feed (a match never spans lines).
const SPACE_CLASS = '\\t\\x0B\\f\\r \\x85\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000';
const WORD_BOUNDARY = '(?:(?<=[' + WORD_CLASS + '])(?![' + WORD_CLASS + '])|(?<![' + WORD_CLASS + '])(?=[' + WORD_CLASS + ']))';
const NOT_WORD_BOUNDARY = '(?:(?<=[' + WORD_CLASS + '])(?=[' + WORD_CLASS + '])|(?<![' + WORD_CLASS + '])(?![' + WORD_CLASS + ']))';
const SYNTAX_CHARS = '^$\\.*+?()[]{}|/';

// Unicode meanings (ripgrep's), and the ASCII ones, equal to them on text that is all ASCII and
// much faster in V8 (\\b natively, no look-around over large Unicode sets).
const UNICODE_CLASSES = { digit: '\\p{Nd}', word: WORD_CLASS, boundary: WORD_BOUNDARY, notBoundary: NOT_WORD_BOUNDARY, dot: '[^\\n]', start: '(?<![^\\n])', end: '(?![^\\n])' };
// For ASCII text without carriage returns, where '.', '^' and '$' (with the m flag) mean what ripgrep's do.
const ASCII_CLASSES = { digit: '0-9', word: 'A-Za-z0-9_', boundary: '\\b', notBoundary: '\\B', dot: '.', start: '^', end: '$' };

const TOO_MANY_REPETITIONS = 'has three or more unbounded repetitions (JavaScript backtracking could take cubic time on a line; ripgrep cannot)';

// ripgrep pattern -> JavaScript source, or a string reason it cannot be translated exactly.
function translatePattern(pattern, classes) {
  let out = '';
  let inClass = false;
  let classNegated = false;
  const groups = [{ alt: false, quant: false }];
  // The longest run of plain characters every match must contain (top level, no top-level '|'):
  // files without it are skipped with a plain substring search.
  let run = '';
  let longest = '';
  let topAlternation = false;
  const endRun = () => {
    if (run.length > longest.length) longest = run;
    run = '';
  };
  let repeats = false; // any *, + or {..}: backtracking over a very long line can go quadratic
  let unbounded = 0; // *, + and wide {..}: three of them can backtrack in cubic time on one line
  let closed = null; // the group that just closed, for a quantifier right after it
  for (let i = 0; i < pattern.length; i += 1) {
    const c = pattern[i];
    const afterGroup = closed;
    closed = null;
    if (c === '\\') {
      const n = pattern[i + 1];
      i += 1;
      if (n === undefined) return 'ends with a backslash';
      if (n === 'd') out += inClass ? classes.digit : '[' + classes.digit + ']';
      else if (n === 'D' && !inClass) out += '[^' + classes.digit + '\\n]';
      else if (n === 'w') out += inClass ? classes.word : '[' + classes.word + ']';
      else if (n === 'W' && !inClass) out += '[^' + classes.word + '\\n]';
      else if (n === 's') out += inClass ? SPACE_CLASS : '[' + SPACE_CLASS + ']';
      else if (n === 'S' && !inClass) out += '[^' + SPACE_CLASS + '\\n]';
      else if (n === 'b' && !inClass) out += classes.boundary;
      else if (n === 'B' && !inClass) out += classes.notBoundary;
      else if (n === 't' || n === 'r' || n === 'f' || n === 'v') out += '\\' + n;
      else if ((n === 'p' || n === 'P') && pattern[i + 1] === '{') {
        const end = pattern.indexOf('}', i);
        if (end === -1) return 'unclosed \\p{';
        out += '\\' + n + pattern.slice(i + 1, end + 1);
        i = end;
      } else if (/[A-Za-z0-9]/.test(n)) return 'uses \\' + n;
      else if (SYNTAX_CHARS.includes(n) || (inClass && n === '-')) out += '\\' + n;
      else if (n === '\n') return 'has a line break';
      else out += inClass && n === ']' ? '\\]' : n;
      if (!inClass && groups.length === 1 && !/[A-Za-z0-9]/.test(n)) run += n;
      else if (!inClass) endRun();
      continue;
    }
    if (inClass) {
      if (c === ']') {
        out += classNegated ? '\\n]' : ']';
        inClass = false;
        continue;
      }
      if (c === '[') return 'has a nested or POSIX character class';
      if ((c === '&' || c === '-' || c === '~') && pattern[i + 1] === c) return 'has a class set operation';
      if (c === '\n') return 'has a line break';
      out += c === '/' ? '\\/' : c;
      continue;
    }
    if (c === '[') {
      endRun();
      inClass = true;
      classNegated = pattern[i + 1] === '^';
      out += classNegated ? '[^' : '[';
      if (classNegated) i += 1;
      // A ] right after [ or [^ is a literal in ripgrep and an empty class in JavaScript.
      if (pattern[i + 1] === ']') return 'has a leading ] in a character class';
      continue;
    }
    if (c === '(') {
      endRun();
      if (pattern[i + 1] === '?' && pattern[i + 2] !== ':') return 'uses (? syntax other than (?:';
      if (pattern[i + 1] === '?') {
        out += '(?:';
        i += 2;
      } else out += '(';
      groups.push({ alt: false, quant: false });
      continue;
    }
    if (c === ')') {
      if (groups.length === 1) return 'has an unbalanced )';
      const group = groups.pop();
      out += ')';
      groups[groups.length - 1].quant = groups[groups.length - 1].quant || group.quant;
      closed = group;
      continue;
    }
    if (c === '|') {
      if (groups.length === 1) topAlternation = true;
      groups[groups.length - 1].alt = true;
      out += '|';
      continue;
    }
    if (c === '*' || c === '+' || c === '?' || c === '{') {
      const lazyOrPart = c === '?' && /[*+?}]/.test(pattern[i - 1] || '');
      // Backtracking blows up only when a group that can match in several ways is repeated.
      if (!lazyOrPart && c !== '?' && afterGroup && (afterGroup.alt || afterGroup.quant)) return 'repeats a group that holds a repetition or an alternation';
      if (!lazyOrPart) groups[groups.length - 1].quant = true;
      // The character before a quantifier may be absent or repeated: it ends the run, not in it.
      run = run.slice(0, -1);
      endRun();
      if (c !== '?') repeats = true;
      if (c === '{') {
        const end = pattern.indexOf('}', i);
        const bounds = /^\{(\d+)(,(\d*))?\}$/.exec(pattern.slice(i, end + 1));
        if (end === -1 || !bounds) return 'has a { that is not a repetition';
        if (bounds[2] !== undefined && (bounds[3] === '' || Number(bounds[3]) > 16)) unbounded += 1;
        if (unbounded >= 3) return TOO_MANY_REPETITIONS;
        out += pattern.slice(i, end + 1);
        i = end;
        continue;
      }
      if (!lazyOrPart && c !== '?') unbounded += 1;
      if (unbounded >= 3) return TOO_MANY_REPETITIONS;
      out += c;
      continue;
    }
    if (groups.length === 1 && !'.^$/}]'.includes(c) && c !== '\n') run += c;
    else endRun();
    if (c === '.') out += classes.dot;
    else if (c === '^') out += classes.start;
    else if (c === '$') out += classes.end;
    else if (c === '\n') return 'has a line break';
    else if (c === '/' ) out += '\\/';
    else if (c === '}' || c === ']') out += '\\' + c;
    else out += c;
  }
  if (inClass) return 'has an unclosed character class';
  if (groups.length !== 1) return 'has an unclosed group';
  endRun();
  return { source: out, repeats: repeats, required: topAlternation ? '' : longest };
}

function escapeLiteral(text) {
  return text.replace(/[\\^$.*+?()[\]{}|\/]/g, '\\$&');
}

// A ripgrep glob without a directory part -> RegExp over a single name, or a string reason.
function globToRegExp(glob) {
  if (glob.includes('/') || glob.includes('**')) return 'glob has a directory part';
  let out = '';
  let braces = 0;
  for (let i = 0; i < glob.length; i += 1) {
    const c = glob[i];
    if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else if (c === '\\') {
      i += 1;
      if (i >= glob.length) return 'glob ends with a backslash';
      out += escapeLiteral(glob[i]);
    } else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end === -1) return 'glob has an unclosed [';
      let body = glob.slice(i + 1, end);
      if (body.startsWith('!')) body = '^' + body.slice(1);
      out += '[' + body.replace(/\\/g, '\\\\') + ']';
      i = end;
    } else if (c === '{') {
      braces += 1;
      out += '(?:';
    } else if (c === '}' && braces > 0) {
      braces -= 1;
      out += ')';
    } else if (c === ',' && braces > 0) out += '|';
    else out += escapeLiteral(c);
  }
  if (braces !== 0) return 'glob has an unclosed {';
  try {
    return new RegExp('^(?:' + out + ')$', 'u');
  } catch (error) {
    return 'glob is not understood';
  }
}
`;
