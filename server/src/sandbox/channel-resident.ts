/**
 * The resident tools of the in-sandbox command channel (part of CHANNEL_PROGRAM, plain CommonJS
 * text run by the sandbox's Node 18): content search from an in-memory copy of the workspace, and
 * symbols from one long-lived universal-ctags.
 *
 * Why: under gVisor every system call and every new process is far dearer than on the host (on the
 * ptrace platform here about 30 µs a call and 10–40 ms a process), so ripgrep walking a large tree
 * per query spends almost all its time in the sandbox kernel. A process that already holds the
 * files answers a query with no system calls at all; a ctags that is already running parses a file
 * without a process start. See server/src/sandbox/README.md ("Resident tools") for the contract.
 *
 * Search keeps ripgrep's meaning, or declines:
 * - the file set is ripgrep's own (`rg --files --no-require-git --hidden -g !.git`, so .gitignore,
 *   .ignore and hidden files count as they do for the search tool), read once, then kept current
 *   from inotify: a changed file is read again, a created, removed or renamed entry (or a changed
 *   ignore file) makes the next query list the files again;
 * - the pattern is translated from ripgrep's (Rust) syntax into an equivalent JavaScript regular
 *   expression that, like ripgrep, cannot match across a line end and gives \d \w \s \b their
 *   Unicode meaning; syntax outside what the translation covers (inline flags, look-around,
 *   POSIX or nested classes, \x escapes, ...) and patterns whose backtracking could blow up (a
 *   repeated group holding a repetition or an alternation) are declined;
 * - anything else it cannot answer exactly (a glob with a directory part, a file outside the
 *   in-memory set, binary or very long-lined files in scope, a workspace over the memory budget)
 *   is declined too, and the caller runs ripgrep itself. A declined query says why.
 */
export const RESIDENT_PROGRAM = String.raw`
const { spawnSync } = require('child_process');

// ---------- content search ----------

const WORD_CLASS = '\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}';
// Unicode White_Space without the line feed (a match never spans lines).
const SPACE_CLASS = '\\t\\x0B\\f\\r \\x85\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000';
const WORD_BOUNDARY = '(?:(?<=[' + WORD_CLASS + '])(?![' + WORD_CLASS + '])|(?<![' + WORD_CLASS + '])(?=[' + WORD_CLASS + ']))';
const NOT_WORD_BOUNDARY = '(?:(?<=[' + WORD_CLASS + '])(?=[' + WORD_CLASS + '])|(?<![' + WORD_CLASS + '])(?![' + WORD_CLASS + ']))';
const SYNTAX_CHARS = '^$\\.*+?()[]{}|/';
const LONGEST_LINE = 4096;
const IGNORE_FILES = new Set(['.gitignore', '.ignore', '.rgignore']);
const MAX_FILE_BYTES = 4 * 1024 * 1024;

function declined(reason) {
  return { served: false, reason: reason };
}

// ripgrep pattern -> JavaScript source, or a string reason it cannot be translated exactly.
function translatePattern(pattern) {
  let out = '';
  let inClass = false;
  let classNegated = false;
  const groups = [{ alt: false, quant: false }];
  let closed = null; // the group that just closed, for a quantifier right after it
  for (let i = 0; i < pattern.length; i += 1) {
    const c = pattern[i];
    const afterGroup = closed;
    closed = null;
    if (c === '\\') {
      const n = pattern[i + 1];
      i += 1;
      if (n === undefined) return 'ends with a backslash';
      if (n === 'd') out += '\\p{Nd}';
      else if (n === 'D' && !inClass) out += '[^\\p{Nd}\\n]';
      else if (n === 'w') out += inClass ? WORD_CLASS : '[' + WORD_CLASS + ']';
      else if (n === 'W' && !inClass) out += '[^' + WORD_CLASS + '\\n]';
      else if (n === 's') out += inClass ? SPACE_CLASS : '[' + SPACE_CLASS + ']';
      else if (n === 'S' && !inClass) out += '[^' + SPACE_CLASS + '\\n]';
      else if (n === 'b' && !inClass) out += WORD_BOUNDARY;
      else if (n === 'B' && !inClass) out += NOT_WORD_BOUNDARY;
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
      inClass = true;
      classNegated = pattern[i + 1] === '^';
      out += classNegated ? '[^' : '[';
      if (classNegated) i += 1;
      // A ] right after [ or [^ is a literal in ripgrep and an empty class in JavaScript.
      if (pattern[i + 1] === ']') return 'has a leading ] in a character class';
      continue;
    }
    if (c === '(') {
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
      groups[groups.length - 1].alt = true;
      out += '|';
      continue;
    }
    if (c === '*' || c === '+' || c === '?' || c === '{') {
      const lazyOrPart = c === '?' && /[*+?}]/.test(pattern[i - 1] || '');
      // Backtracking blows up only when a group that can match in several ways is repeated.
      if (!lazyOrPart && c !== '?' && afterGroup && (afterGroup.alt || afterGroup.quant)) return 'repeats a group that holds a repetition or an alternation';
      if (!lazyOrPart) groups[groups.length - 1].quant = true;
      if (c === '{') {
        const end = pattern.indexOf('}', i);
        if (end === -1 || !/^\{\d+(,\d*)?\}$/.test(pattern.slice(i, end + 1))) return 'has a { that is not a repetition';
        out += pattern.slice(i, end + 1);
        i = end;
        continue;
      }
      out += c;
      continue;
    }
    if (c === '.') out += '[^\\n]';
    else if (c === '^') out += '(?<![^\\n])';
    else if (c === '$') out += '(?![^\\n])';
    else if (c === '\n') return 'has a line break';
    else if (c === '/' ) out += '\\/';
    else if (c === '}' || c === ']') out += '\\' + c;
    else out += c;
  }
  if (inClass) return 'has an unclosed character class';
  if (groups.length !== 1) return 'has an unclosed group';
  return { source: out };
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

const corpus = {
  files: null, // Map: relative path -> { text, searchable } once loaded
  bytes: 0,
  listingStale: true,
  dirty: new Set(),
  watchers: new Map(),
  disabled: null,
  loads: 0,
};

function listFilesAsRipgrepDoes() {
  const listed = spawnSync('rg', ['--files', '--no-require-git', '--hidden', '-g', '!.git'], {
    cwd: ROOT,
    maxBuffer: 256 * 1024 * 1024,
    encoding: 'buffer',
  });
  if (listed.error) throw listed.error;
  if (listed.status !== 0 && listed.status !== 1) throw new Error('rg --files failed: ' + String(listed.stderr).slice(0, 500));
  return String(listed.stdout).split('\n').filter((line) => line.length > 0);
}

function loadFile(relative) {
  let buffer;
  try {
    const stat = fs.lstatSync(ROOT + '/' + relative);
    if (!stat.isFile()) return null;
    if (stat.size > MAX_FILE_BYTES) return { text: '', searchable: false, bytes: 0 };
    buffer = fs.readFileSync(ROOT + '/' + relative);
  } catch (error) {
    return null;
  }
  // ripgrep skips files it finds to be binary; a file with a NUL byte counts as binary here.
  if (buffer.includes(0)) return { text: '', searchable: true, binary: true, bytes: 0 };
  const text = buffer.toString('utf8');
  let longest = 0;
  let start = 0;
  for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
    if (end - start > longest) longest = end - start;
    start = end + 1;
  }
  if (text.length - start > longest) longest = text.length - start;
  return { text: text, searchable: longest <= LONGEST_LINE, bytes: buffer.length };
}

function watchDirectory(relativeDir) {
  if (corpus.watchers.has(relativeDir)) return;
  const absolute = relativeDir === '' ? ROOT : ROOT + '/' + relativeDir;
  let watcher;
  try {
    watcher = fs.watch(absolute, { persistent: false }, (event, name) => {
      if (!name) {
        corpus.listingStale = true;
        return;
      }
      const relative = relativeDir === '' ? String(name) : relativeDir + '/' + name;
      // A changed ignore file changes which files ripgrep searches: list them again.
      if (IGNORE_FILES.has(String(name))) corpus.listingStale = true;
      else if (event === 'change' && corpus.files && corpus.files.has(relative)) corpus.dirty.add(relative);
      else corpus.listingStale = true;
    });
  } catch (error) {
    // A directory that went away between the listing and here: the next listing settles it.
    corpus.listingStale = true;
    return;
  }
  watcher.on('error', () => {
    corpus.listingStale = true;
    watcher.close();
    corpus.watchers.delete(relativeDir);
  });
  corpus.watchers.set(relativeDir, watcher);
}

function forget(relative) {
  const entry = corpus.files.get(relative);
  if (entry) corpus.bytes -= entry.bytes;
  corpus.files.delete(relative);
}

function remember(relative) {
  forget(relative);
  const entry = loadFile(relative);
  if (!entry) return;
  corpus.files.set(relative, entry);
  corpus.bytes += entry.bytes;
}

// Brings the in-memory copy up to date; returns a reason when it cannot serve at all.
function refreshCorpus(budgetBytes) {
  if (corpus.disabled) return corpus.disabled;
  if (!corpus.files) corpus.files = new Map();
  if (corpus.listingStale) {
    corpus.listingStale = false;
    corpus.loads += 1;
    const listed = listFilesAsRipgrepDoes();
    const wanted = new Set(listed);
    for (const known of Array.from(corpus.files.keys())) if (!wanted.has(known)) forget(known);
    const directories = new Set(['']);
    for (const relative of listed) {
      if (!corpus.files.has(relative)) remember(relative);
      for (let slash = relative.lastIndexOf('/'); slash > 0; slash = relative.lastIndexOf('/', slash - 1)) {
        const dir = relative.slice(0, slash);
        if (directories.has(dir)) break;
        directories.add(dir);
      }
      if (corpus.bytes > budgetBytes) {
        corpus.disabled = 'the workspace has more text than the in-memory search budget (' + Math.round(budgetBytes / 1048576) + ' MiB)';
        corpus.files = new Map();
        corpus.bytes = 0;
        for (const watcher of corpus.watchers.values()) watcher.close();
        corpus.watchers.clear();
        return corpus.disabled;
      }
    }
    for (const [dir, watcher] of corpus.watchers) {
      if (!directories.has(dir)) {
        watcher.close();
        corpus.watchers.delete(dir);
      }
    }
    for (const dir of directories) watchDirectory(dir);
  }
  // Changed files still in the set (a listing just now may have dropped some) are read again.
  for (const relative of corpus.dirty) if (corpus.files.has(relative)) remember(relative);
  corpus.dirty.clear();
  return null;
}

function isBelow(relative, scope) {
  return scope === '.' || relative === scope || relative.startsWith(scope + '/');
}

// Mirrors: rg --json --no-require-git --hidden -g '!.git' --max-count maxCount [-C context] [-i] [-F] [-g glob] -e pattern -- scope
// Answers { served: true, matches, hits: [[path, line, text, isMatch]] } with hits for the first
// 'limit' matches (and their context), files in path order.
function search(request) {
  const scope = request.path;
  if (typeof scope !== 'string' || scope.startsWith('/') || scope.split('/').includes('..')) return declined('the path is not a plain workspace path');
  let source;
  if (request.fixedStrings) {
    if (request.pattern.includes('\n')) return declined('the literal has a line break');
    source = escapeLiteral(request.pattern);
  } else {
    const translated = translatePattern(request.pattern);
    if (typeof translated === 'string') return declined('the pattern ' + translated);
    source = translated.source;
  }
  let regex;
  try {
    regex = new RegExp(source, 'gu' + (request.caseInsensitive ? 'i' : ''));
  } catch (error) {
    return declined('the pattern does not translate: ' + error.message);
  }
  const lineRegex = new RegExp(source, 'u' + (request.caseInsensitive ? 'i' : ''));
  let glob = null;
  let globNegated = false;
  if (request.glob) {
    globNegated = request.glob.startsWith('!');
    glob = globToRegExp(globNegated ? request.glob.slice(1) : request.glob);
    if (typeof glob === 'string') return declined('the ' + glob);
  }
  const unavailable = refreshCorpus(request.budgetBytes);
  if (unavailable) return declined(unavailable);

  const inScope = [];
  for (const relative of corpus.files.keys()) if (isBelow(relative, scope)) inScope.push(relative);
  if (inScope.length === 0) return declined('no file of the in-memory set is under ' + scope);
  if (glob && inScope.length === 1 && inScope[0] === scope) return declined('a glob with a single file');
  inScope.sort();

  const contextLines = request.context || 0;
  const hits = [];
  let matches = 0;
  let shown = 0;
  for (const relative of inScope) {
    if (glob) {
      const below = scope === '.' ? relative : relative.slice(scope.length + 1);
      const parts = below.split('/');
      const name = parts[parts.length - 1];
      const dirMatch = parts.slice(0, -1).some((part) => glob.test(part));
      if (globNegated) {
        if (glob.test(name) || dirMatch) continue;
      } else {
        if (dirMatch) return declined('the glob also names a directory');
        if (!glob.test(name)) continue;
      }
    }
    const entry = corpus.files.get(relative);
    if (entry.binary) continue;
    if (!entry.searchable) return declined(relative + ' is too large or has very long lines');
    const text = entry.text;
    regex.lastIndex = 0;
    let found = 0;
    let lineNumber = 1;
    let counted = 0; // where line numbers were counted up to
    const fileMatches = [];
    while (found < request.maxCount) {
      const match = regex.exec(text);
      if (!match) break;
      const lineStart = match.index === 0 ? 0 : text.lastIndexOf('\n', match.index - 1) + 1;
      let lineEnd = text.indexOf('\n', match.index);
      if (lineEnd === -1) lineEnd = text.length;
      // An empty match after the last line end is not on a line.
      if (match.index === text.length && lineStart === text.length) break;
      for (let at = text.indexOf('\n', counted); at !== -1 && at < lineStart; at = text.indexOf('\n', at + 1)) lineNumber += 1;
      counted = lineStart;
      fileMatches.push([lineNumber, lineStart, lineEnd]);
      found += 1;
      regex.lastIndex = lineEnd + 1;
      if (lineEnd + 1 > text.length) break;
    }
    if (found === 0) continue;
    const lines = contextLines > 0 ? text.split('\n') : null;
    // Once a file's count is reached ripgrep still prints the last match's after-context, and
    // shows (and counts) the lines in it that match as matches.
    const lateMatches = new Set();
    if (lines && found === request.maxCount) {
      const last = fileMatches[fileMatches.length - 1][0];
      const end = Math.min(lines.length - (text.endsWith('\n') ? 1 : 0), last + contextLines);
      for (let k = last + 1; k <= end; k += 1) if (lineRegex.test(lines[k - 1])) lateMatches.add(k);
    }
    matches += found + lateMatches.size;
    if (shown >= request.limit) continue;
    // Lines around the matches, merged as ripgrep prints them.
    const emitted = new Set();
    for (const [number, start, end] of fileMatches) {
      if (shown >= request.limit) break;
      shown += 1;
      if (lines) {
        for (let k = Math.max(1, number - contextLines); k < number; k += 1) {
          if (!emitted.has(k)) hits.push([relative, k, lines[k - 1], 0]);
          emitted.add(k);
        }
      }
      if (emitted.has(number)) {
        // A context line that turned out to be a match: ripgrep prints it as a match.
        for (let h = hits.length - 1; h >= 0; h -= 1) {
          if (hits[h][0] === relative && hits[h][1] === number) {
            hits[h][3] = 1;
            break;
          }
        }
      } else hits.push([relative, number, text.slice(start, end), 1]);
      emitted.add(number);
      if (lines) {
        const last = Math.min(lines.length - (text.endsWith('\n') ? 1 : 0), number + contextLines);
        for (let k = number + 1; k <= last; k += 1) {
          if (!emitted.has(k)) hits.push([relative, k, lines[k - 1], lateMatches.has(k) ? 1 : 0]);
          emitted.add(k);
        }
      }
    }
  }
  return { served: true, matches: matches, hits: hits, files: inScope.length };
}

// ---------- symbols ----------

const ctags = { child: null, buffered: '', queue: [], current: null };

function startCtags() {
  const child = spawn('ctags', ['--_interactive', '--output-format=json', '--fields=+nKS', '--sort=no'], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  ctags.child = child;
  ctags.buffered = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (data) => {
    ctags.buffered += data;
    let newline;
    while ((newline = ctags.buffered.indexOf('\n')) !== -1) {
      const line = ctags.buffered.slice(0, newline);
      ctags.buffered = ctags.buffered.slice(newline + 1);
      const job = ctags.current;
      if (!job) continue;
      if (line.startsWith('{"_type": "completed"') || line.startsWith('{"_type":"completed"')) {
        ctags.current = null;
        job.resolve({ served: true, output: job.lines.join('\n') });
        nextCtags();
      } else if (line.startsWith('{"_type": "error"') || line.startsWith('{"_type":"error"')) {
        ctags.current = null;
        job.reject(failure(1, 'ctags: ' + line));
        nextCtags();
      } else if (line.startsWith('{"_type": "tag"') || line.startsWith('{"_type":"tag"')) job.lines.push(line);
    }
  });
  const gone = () => {
    if (ctags.child !== child) return;
    ctags.child = null;
    const job = ctags.current;
    ctags.current = null;
    if (job) job.resolve(declined('ctags stopped'));
    nextCtags();
  };
  child.on('exit', gone);
  child.on('error', gone);
  child.stdin.on('error', () => undefined);
}

function nextCtags() {
  if (ctags.current || ctags.queue.length === 0) return;
  const job = ctags.queue.shift();
  if (!ctags.child) startCtags();
  ctags.current = job;
  ctags.child.stdin.write(JSON.stringify({ command: 'generate-tags', filename: job.filename }) + '\n');
}

// One regular file's tags as ctags JSON lines, from the resident ctags.
async function tags(request) {
  const resolved = await resolveInside(request.path);
  let stat;
  try {
    stat = fs.statSync(resolved);
  } catch (error) {
    return declined('cannot stat ' + request.path + ': ' + error.code);
  }
  if (!stat.isFile()) return declined('not a regular file');
  const filename = resolved === ROOT ? '.' : resolved.slice(ROOT.length + 1);
  return new Promise((resolve, reject) => {
    ctags.queue.push({ filename: filename, lines: [], resolve: resolve, reject: reject });
    nextCtags();
  });
}
`;
