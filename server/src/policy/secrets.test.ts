import { describe, expect, it } from 'vitest';
import type { AddedLine } from './diff';
import { SECRET_RULES } from './secret-rules';
import { classSwitchRate, HIGH_ENTROPY_RULE, looksRandom, scanSecrets, scanText, secretMarker, shannonEntropy } from './secrets';
import { HEX, samples } from './testing/samples';
import { distinctRules, secretFormats } from './testing/secret-formats';

const s = samples(7);

function lines(...texts: string[]): AddedLine[] {
  return texts.map((text, index) => ({ line: index + 1, text }));
}

function rulesFound(path: string, ...texts: string[]): string[] {
  return scanSecrets(path, lines(...texts)).map((finding) => finding.rule);
}

interface Case {
  rule: string;
  positive: string[];
  negative: string[];
  path?: string;
}

/** One positive and at least one negative per rule; the negatives must produce no finding at all. */
const CASES: Case[] = [
  {
    rule: 'aws-access-token',
    positive: [`aws_access_key_id = ${s.awsAccessKeyId()}`],
    negative: ['aws_access_key_id = AKIAIOSFODNN7EXAMPLE', 'const id = "AKIAAAAAAAAAAAAAAAAA";'],
  },
  {
    rule: 'aws-secret-access-key',
    positive: [`aws_secret_access_key = ${s.awsSecretAccessKey()}`],
    negative: [
      'aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
      'aws_commit = "da39a3ee5e6b4b0d3255bfef95601890afd80709"',
    ],
  },
  { rule: 'github-pat', positive: [`token: "${s.github('ghp')}"`], negative: [`token: "ghp_${'x'.repeat(36)}"`] },
  { rule: 'github-oauth', positive: [`GH=${s.github('gho')}`], negative: [`GH=gho_${'a'.repeat(36)}`] },
  { rule: 'github-app-token', positive: [`t = '${s.github('ghs')}'`, `u = '${s.github('ghu')}'`], negative: ['ghs_short'] },
  { rule: 'github-refresh-token', positive: [`refresh ${s.github('ghr')}`], negative: [`ghr_${'0'.repeat(36)}`] },
  { rule: 'github-fine-grained-pat', positive: [s.githubFineGrained()], negative: ['github_pat_too_short'] },
  { rule: 'gitlab-pat', positive: [`GITLAB=${s.gitlab('glpat')}`], negative: [`glpat-${'x'.repeat(20)}`] },
  { rule: 'gitlab-ptt', positive: [`trigger ${s.gitlabTrigger()}`], negative: [`glptt-${'0'.repeat(40)}`] },
  { rule: 'gitlab-rrt', positive: [`reg ${s.gitlabRunnerRegistration()}`], negative: [`GR1348941${'a'.repeat(20)}`] },
  { rule: 'gitlab-runner-authentication-token', positive: [s.gitlab('glrt')], negative: [`glrt-${'b'.repeat(20)}`] },
  { rule: 'gitlab-deploy-token', positive: [s.gitlab('gldt')], negative: [`gldt-${'c'.repeat(20)}`] },
  { rule: 'slack-bot-token', positive: [`SLACK=${s.slackBot()}`], negative: ['xoxb-123-456'] },
  { rule: 'slack-user-token', positive: [`SLACK=${s.slackUser()}`], negative: ['xoxp-1-2-3-abc'] },
  { rule: 'slack-app-token', positive: [`SLACK=${s.slackApp()}`], negative: ['xapp-token-name'] },
  { rule: 'slack-legacy-token', positive: [`SLACK=${s.slackLegacy()}`], negative: ['xoxs-abc-def'] },
  {
    rule: 'slack-webhook-url',
    positive: [`url = "${s.slackWebhook()}"`],
    negative: ['see https://hooks.slack.com/services/T000/B000/XXX for the format'],
  },
  {
    rule: 'stripe-access-token',
    positive: [`stripe.key = "${s.stripe()}"`],
    negative: [`publishable = "pk_live_${s.pick(HEX, 24)}"`],
  },
  { rule: 'gcp-api-key', positive: [`key: "${s.gcpApiKey()}"`], negative: [`key: "AIza${'x'.repeat(35)}"`] },
  {
    rule: 'private-key',
    positive: s.privateKey('RSA'),
    negative: ["if (pem.startsWith('-----BEGIN RSA PRIVATE KEY-----')) return 'rsa';"],
  },
  { rule: 'private-key', positive: s.privateKey('EC'), negative: ['-----BEGIN PUBLIC KEY-----', 'MFkwEwYHKoZI', '-----END PUBLIC KEY-----'] },
  { rule: 'private-key', positive: s.privateKey('OPENSSH'), negative: ['# paste your -----BEGIN OPENSSH PRIVATE KEY----- here'] },
  { rule: 'private-key', positive: s.privateKey('PGP'), negative: ['-----BEGIN PGP PUBLIC KEY BLOCK-----'] },
  { rule: 'jwt', positive: [`Authorization: Bearer ${s.jwt()}`], negative: ['const header = "eyJhbGciOiJIUzI1NiJ9";'] },
  { rule: 'npm-access-token', positive: [`//registry.npmjs.org/:_authToken=${s.npm()}`], negative: [`npm_${'a'.repeat(36)}`] },
  { rule: 'anthropic-api-key', positive: [`ANTHROPIC_API_KEY=${s.anthropic()}`], negative: ['ANTHROPIC_API_KEY=sk-ant-api03-...'] },
  { rule: 'anthropic-admin-api-key', positive: [`KEY=${s.anthropicAdmin()}`], negative: ['KEY=sk-ant-admin01-'] },
  { rule: 'openai-api-key', positive: [`OPENAI_API_KEY=${s.openai()}`], negative: ['OPENAI_API_KEY=sk-proj-abc'] },
  {
    rule: 'generic-api-key',
    positive: [`db_password = "${s.password()}"`],
    negative: [
      'const password = getPassword();',
      'token: process.env.API_TOKEN,',
      'password = "correcthorsebatterystaple"',
      'api_version = "2024-06-01.preview"',
      'secret_name = "prod-db-password-v2"',
      'const password = "changeme-example-1234";',
    ],
  },
  {
    rule: HIGH_ENTROPY_RULE,
    positive: [`const blob = "${s.randomBlob(44)}";`],
    negative: [
      'class AbstractSingletonProxyFactoryBeanHTTP2024Handler {}',
      'const sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";',
      'import x from "src/components/UserProfileSettingsPanel/index2";',
      '// from https://github.com/JS-DevTools/host-environment/blob/b1ab79ecde37db5d6e163c050e54fe7d287d7c92/src/isomorphic.browser.ts',
      'background: url(data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==)',
    ],
  },
];

describe('secret rules', () => {
  it('has a test case for every rule', () => {
    const tested = new Set([...CASES.map((testCase) => testCase.rule), ...distinctRules(secretFormats(1))]);
    for (const rule of SECRET_RULES) expect(tested, rule.id).toContain(rule.id);
  });

  for (const testCase of CASES) {
    it(`${testCase.rule}: finds ${testCase.positive[0]!.slice(0, 24)}…`, () => {
      expect(rulesFound(testCase.path ?? 'src/config.ts', ...testCase.positive)).toContain(testCase.rule);
    });
    it(`${testCase.rule}: ignores ${testCase.negative[0]!.slice(0, 40)}`, () => {
      for (const negative of testCase.negative) {
        expect(rulesFound(testCase.path ?? 'src/config.ts', negative), negative).toEqual([]);
      }
      // Multi-line negatives (a public key block) are checked as one block too.
      expect(rulesFound(testCase.path ?? 'src/config.ts', ...testCase.negative)).toEqual([]);
    });
  }
});

describe('scanSecrets', () => {
  it('reports the line number in the new file and masks the secret in the excerpt', () => {
    const token = s.github('ghp');
    const findings = scanSecrets('src/a.ts', [
      { line: 10, text: 'const a = 1;' },
      { line: 11, text: `const token = "${token}";` },
    ]);
    expect(findings).toHaveLength(1);
    expect(findings[0]!.line).toBe(11);
    expect(findings[0]!.excerpt).toBe(`const token = "[secret:github-pat …${token.slice(-4)}]";`);
  });

  it('finds a private key written as one JSON string with \\n escapes (service-account files)', () => {
    const key = s.privateKey('RSA');
    const json = `  "private_key": "${key.join('\\n')}\\n",`;
    expect(rulesFound('sa.json', json)).toContain('private-key');
  });

  it('reports a private key at its BEGIN line without leaking key material', () => {
    const key = s.privateKey('RSA');
    const findings = scanSecrets('deploy/key.pem', key.map((text, index) => ({ line: 20 + index, text })));
    expect(findings.map((finding) => [finding.rule, finding.line])).toEqual([['private-key', 20]]);
    for (const bodyLine of key.slice(1, -1)) expect(findings[0]!.excerpt).not.toContain(bodyLine);
  });

  it('still finds a random token inside a URL', () => {
    expect(rulesFound('src/a.ts', `fetch("https://api.example.com/v1/hooks/${s.randomBlob(40)}?x=1")`)).toEqual(['high-entropy-string']);
  });

  it('does not report one secret twice (specific rule wins over generic and entropy)', () => {
    expect(rulesFound('src/a.ts', `api_token = "${s.github('ghp')}"`)).toEqual(['github-pat']);
  });

  it('skips entropy and generic checks in lockfiles but still finds named tokens there', () => {
    const integrity = `"integrity": "sha512-${s.randomBlob(86)}=="`;
    expect(rulesFound('package-lock.json', integrity, `"token": "${s.password()}"`)).toEqual([]);
    expect(rulesFound('package-lock.json', `"resolved": "https://x/${s.github('ghp')}"`)).toEqual(['github-pat']);
  });
});

describe('entropy helpers', () => {
  it('computes Shannon entropy in bits per character', () => {
    expect(shannonEntropy('')).toBe(0);
    expect(shannonEntropy('aaaa')).toBe(0);
    expect(shannonEntropy('abcd')).toBe(2);
  });

  it('tells random strings from identifiers', () => {
    expect(classSwitchRate('HTTPRequestHandlerFactory')).toBeLessThan(0.35);
    const random = samples(99);
    let hits = 0;
    for (let i = 0; i < 200; i += 1) if (looksRandom(random.randomBlob(40))) hits += 1;
    expect(hits).toBeGreaterThan(190);
    expect(looksRandom('getUserAccountSettingsForTenant2AndRegion')).toBe(false);
  });

  it('masks to the kind and at most the last four characters', () => {
    expect(secretMarker('github-pat', `ghp_${'abcdefghijklmnopqrstuvwxyz0123456789'}`)).toBe('[secret:github-pat …6789]');
    expect(secretMarker('password-assignment', 'Tr0ub4dor&3')).toBe('[secret:password-assignment]');
  });
});

/**
 * Whether an excerpt shows five or more characters of the secret in a row (markers taken out, and
 * runs that the line shows outside the secret anyway, like the variable name, not counted).
 */
function leaksSecret(excerpt: string, secret: string, line: string): boolean {
  const shown = excerpt.replace(/\[secret:[^\]]*\]/g, ' ');
  const around = line.split(secret).join(' ');
  for (let start = 0; start + 5 <= secret.length; start += 1) {
    const piece = secret.slice(start, start + 5);
    if (shown.includes(piece) && !around.includes(piece)) return true;
  }
  return false;
}

describe('secret formats (fresh values each run)', () => {
  const seed = Math.floor(Math.random() * 2 ** 31);
  const formats = secretFormats(seed);

  it(`covers at least 45 distinct formats (seed ${seed})`, () => {
    expect(distinctRules(formats).length).toBeGreaterThanOrEqual(45);
  });

  for (const format of formats) {
    it(`${format.rule}: found, and its excerpt shows only the kind and a few characters (seed ${seed})`, () => {
      for (let round = 0; round < 5; round += 1) {
        const { secret, line } = format.make();
        const findings = scanText(line, 'src/settings.ts');
        expect(findings.map((finding) => finding.rule), line).toContain(format.rule);
        for (const finding of findings) {
          if (format.rule !== 'private-key') expect(finding.excerpt).toContain(`[secret:${finding.rule}`);
          expect(leaksSecret(finding.excerpt, secret, line), finding.excerpt).toBe(false);
        }
      }
    });
  }

  it('finds every format in a PR summary and a commit message written as prose', () => {
    for (const format of formats) {
      const { line } = format.make();
      expect(scanText(`Fixed the typo.\n\nFor reference, the config had:\n${line}\n`).map((finding) => finding.rule), line).toContain(format.rule);
    }
  });
});

describe('no false positives on look-alikes', () => {
  const negatives = [
    'const id = "3f2c7a1e-9b4d-4c8e-a1f2-7d3e9b0c6a15";', // UUID
    'commit 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b', // git SHA
    'const image = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";',
    'const passwordLabel = "Password (8+ characters)";',
    'const tokenUrl = "https://auth.example.com/oauth/token";',
    'password: ${DB_PASSWORD}',
    'DATABASE_URL=postgres://app:${DB_PASSWORD}@db:5432/app',
    'const password = process.env.DB_PASSWORD;',
    'const secret = config.get("secret");',
    'password = os.environ["DB_PASSWORD"]',
    'const apiKeyHeader = "X-Api-Key";',
    'url = "https://github.com/acme/app/blob/main/README.md"',
    'git clone git@github.com:acme/app.git',
    'password: "<your password>"',
    'token_type: "Bearer"',
    'const tokenTtlSeconds = 3600;',
    'secret_name = "prod-db-password-v2"',
  ];
  for (const negative of negatives) {
    it(`ignores ${negative.slice(0, 50)}`, () => {
      expect(scanText(negative, 'src/app.ts').map((finding) => finding.rule)).toEqual([]);
    });
  }

  it('ignores lockfile integrity hashes and base64 fixtures in lockfiles', () => {
    const s2 = samples(5);
    const lock = [`"integrity": "sha512-${s2.randomBlob(86)}=="`, `"resolved": "https://registry.npmjs.org/x/-/x-1.0.0.tgz"`].join('\n');
    expect(scanText(lock, 'package-lock.json')).toEqual([]);
    expect(scanText(`integrity sha512-${s2.randomBlob(86)}==`, 'yarn.lock')).toEqual([]);
  });
});
