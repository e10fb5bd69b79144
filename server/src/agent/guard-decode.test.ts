import { describe, expect, it } from 'vitest';
import { checkCommand } from './guard';
import { commandForms, literalWords, pipelineOutput } from './guard-decode';

// `rm -rf .` (the whole workspace) in the wrappings issue 31 names.
const RM_B64 = Buffer.from('rm -rf .').toString('base64');
const RM_HEX = Buffer.from('rm -rf .').toString('hex');
const RM_PRINTF = [...'rm -rf .'].map((char) => `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');

const decoded: Array<[rule: string, command: string]> = [
  ['rm-recursive-outside-workspace', `bash -c "$(echo ${RM_B64} | base64 -d)"`],
  ['rm-recursive-outside-workspace', `bash -c "$(echo ${RM_B64} | base64 --decode)"`],
  ['rm-recursive-outside-workspace', `sh -c "$(base64 -d <<< ${RM_B64})"`],
  ['rm-recursive-outside-workspace', `echo ${RM_B64} | base64 -d | sh`],
  ['rm-recursive-outside-workspace', `$(echo ${RM_B64} | base64 -d)`],
  ['rm-recursive-outside-workspace', `\`echo ${RM_B64} | base64 -d\``],
  ['rm-recursive-outside-workspace', `echo ${RM_HEX} | xxd -r -p | bash`],
  ['rm-recursive-outside-workspace', `printf '${RM_PRINTF}' | sh`],
  ['rm-recursive-outside-workspace', `bash -c "$(printf '${RM_PRINTF}')"`],
  ['rm-recursive-outside-workspace', `echo '. fr- mr' | rev | sh`],
  ['rm-recursive-outside-workspace', 'X="rm -rf ."; eval $X'],
  ['rm-recursive-outside-workspace', 'X="rm -rf ."; eval "$X"'],
  ['rm-recursive-outside-workspace', "P='rm -rf .' && bash -c \"$P\""],
  ['rm-recursive-outside-workspace', "$'\\x72\\x6d' -rf ."],
  ['rm-recursive-outside-workspace', `bash -c 'sh -c "rm -rf ."'`],
  ['rm-recursive-outside-workspace', 'bash -lc "rm -rf /"'],
  ['rm-recursive-outside-workspace', "sh <<< 'rm -rf .'"],
  ['git-push', `sh -c "$(echo ${Buffer.from('git push origin main').toString('base64')} | base64 -d)"`],
  ['shell-runs-computed-string', 'bash -c "$(cat /tmp/payload | base64 -d)"'],
  ['shell-runs-computed-string', 'eval "$PAYLOAD"'],
  ['shell-runs-computed-string', 'cat payload.b64 | base64 -d | bash'],
  ['shell-runs-computed-string', 'bash <(base64 -d payload.b64)'],
  ['shell-runs-computed-string', 'sh -c "`cat f`"'],
  ['shell-runs-computed-string', 'bash -c "$CMD"'],
  ['shell-runs-computed-string', 'X=$(cat f); $(cat f)'],
  ['shell-runs-computed-string', 'bash <<< "$(cat f)"'],
];

const ordinary = [
  `echo ${RM_B64} | base64 -d`,
  'bash -c "npm test"',
  "sh -c 'cd src && node --test'",
  'bash scripts/test.sh',
  'NODE_ENV=test npm test',
  'echo $(date) && npm test',
  "printf '%s\\n' hello",
  'for f in $(ls test); do node --test test/$f; done',
  'npm test 2>&1 | tee log.txt',
  'python3 -c "print(1)"',
  'echo "npm test" | sh',
  "git log --format='%H' | head -1",
  'X=1; echo $X',
  'npx vitest run $(git diff --name-only HEAD)',
  'cd "$(git rev-parse --show-toplevel)" && npm test',
  'bash -c "node --test test/greet.test.js"',
];

describe('command guard on what runs', () => {
  it.each(decoded)('%s catches: %s', (rule, command) => {
    expect(checkCommand(command)?.rule).toBe(rule);
  });

  it.each(ordinary)('lets through: %s', (command) => {
    expect(checkCommand(command)).toBeUndefined();
  });

  it('names the decoded command in the reason', () => {
    expect(checkCommand(`bash -c "$(echo ${RM_B64} | base64 -d)"`)?.reason).toContain('rm -rf .');
  });

  it('decodes literal words and pipelines, and nothing computed', () => {
    expect(literalWords(`'a b'"c"d $'\\x41'`)).toEqual(['a bcd', 'A']);
    expect(literalWords('echo $HOME')).toBeUndefined();
    expect(pipelineOutput(`echo ${RM_B64} | base64 -d`)).toBe('rm -rf .');
    expect(pipelineOutput('cat f | base64 -d')).toBeUndefined();
    expect(commandForms('X="rm -rf ."; $X')).toContain('X="rm -rf ."; rm -rf .');
  });
});
