/**
 * Secret-detection rules, drawn from gitleaks' default rule set
 * (https://github.com/gitleaks/gitleaks, `config/gitleaks.toml`, MIT licence; rule ids kept so a
 * finding can be looked up there). `RULES.md` beside this file lists every rule, its source and
 * where we differ.
 *
 * Go's RE2 syntax was translated to JavaScript: inline `(?i)` / `(?-i)` groups became explicit
 * character classes or the `i` flag, `\x60` is a backtick. Each rule's `entropy` is the minimum
 * Shannon entropy (bits per character) of the captured secret, as in gitleaks, to drop
 * placeholder values like `ghp_xxxxxxxx…`.
 *
 * Secrets split across string concatenations and encoded (hex, base64, gzip and zip members)
 * copies are decoded or joined first (`secret-decode.ts`) and then meet these rules. What they
 * will not catch: provider formats not in this list; the entropy check in `secrets.ts` is the net
 * under them.
 */

import { ASSIGNMENT_RULES, PASSWORD_ASSIGNMENT_RULE } from './secret-assignments';
import { PROVIDER_RULES } from './secret-providers';

export interface SecretRule {
  id: string;
  description: string;
  /** Must be global (`g`). The named group `secret`, when present, is the secret; else the whole match. */
  regex: RegExp;
  /** Minimum Shannon entropy of the secret. */
  entropy?: number;
  /** A secret matching any of these is a known example value, not a leak. */
  allow?: RegExp[];
  /** Lower-case words that mark a placeholder when they occur inside the secret. */
  stopwords?: string[];
  /**
   * gitleaks' keywords: the rule only runs on text whose lower case contains one of them (a
   * cheap prefilter that keeps the gate fast on big diffs).
   */
  keywords: string[];
  /** Matches may span lines (key blocks); the rule then runs on runs of consecutive added lines. */
  multiline?: boolean;
  /** A finding whose `name` group matches this is not a secret (`passwordLabel`, `tokenUrl`). */
  nameAllow?: RegExp;
  /** The line must also match this (an Azure SAS `sig=` counts only beside `sv=`/`se=`…). */
  context?: RegExp;
}

/** gitleaks' common right-hand boundary of a token: quote, backtick, space, `;`, `\n` escape or end. */
const END = String.raw`(?:[\x60'"\s;]|\\[nr]|$)`;

function rx(source: string, flags = ''): RegExp {
  return new RegExp(source, `g${flags}`);
}

const GITLEAKS_CORE_RULES: readonly SecretRule[] = [
  {
    id: 'aws-access-token',
    keywords: ['a3t', 'akia', 'asia', 'abia', 'acca'],
    description: 'AWS access key id',
    regex: rx(String.raw`\b(?<secret>(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b`),
    entropy: 3,
    allow: [/.+EXAMPLE$/],
  },
  {
    // Not in gitleaks' current default set (it was dropped as too noisy); taken from gitleaks
    // v7's default config ("AWS Secret Key") and tightened with an entropy floor above what a
    // 40-character hex SHA reaches, so commit hashes near the word "aws" do not trip it.
    id: 'aws-secret-access-key',
    keywords: ['aws'],
    description: 'AWS secret access key next to an "aws" name',
    regex: rx(String.raw`[Aa][Ww][Ss][\w.-]{0,20}[\s'"]{0,3}(?:=|:|=>|:=)[\s'"\x60]{0,5}(?<secret>[0-9a-zA-Z/+]{40})(?![0-9a-zA-Z/+=])`),
    entropy: 4.2,
    allow: [/EXAMPLEKEY$/],
  },
  {
    id: 'github-pat',
    keywords: ['ghp_'],
    description: 'GitHub personal access token (classic)',
    regex: rx(String.raw`ghp_[0-9a-zA-Z]{36}`),
    entropy: 3,
  },
  {
    id: 'github-oauth',
    keywords: ['gho_'],
    description: 'GitHub OAuth access token',
    regex: rx(String.raw`gho_[0-9a-zA-Z]{36}`),
    entropy: 3,
  },
  {
    id: 'github-app-token',
    keywords: ['ghu_', 'ghs_'],
    description: 'GitHub App user-to-server or installation token',
    regex: rx(String.raw`(?:ghu|ghs)_[0-9a-zA-Z]{36}`),
    entropy: 3,
  },
  {
    id: 'github-refresh-token',
    keywords: ['ghr_'],
    description: 'GitHub refresh token',
    regex: rx(String.raw`ghr_[0-9a-zA-Z]{36}`),
    entropy: 3,
  },
  {
    id: 'github-fine-grained-pat',
    keywords: ['github_pat_'],
    description: 'GitHub fine-grained personal access token',
    regex: rx(String.raw`github_pat_\w{82}`),
    entropy: 3,
  },
  {
    id: 'gitlab-pat',
    keywords: ['glpat-'],
    description: 'GitLab personal access token',
    regex: rx(String.raw`glpat-[\w-]{20}`),
    entropy: 3,
  },
  {
    id: 'gitlab-ptt',
    keywords: ['glptt-'],
    description: 'GitLab pipeline trigger token',
    regex: rx(String.raw`glptt-[0-9a-f]{40}`),
    entropy: 3,
  },
  {
    id: 'gitlab-rrt',
    keywords: ['gr1348941'],
    description: 'GitLab runner registration token',
    regex: rx(String.raw`GR1348941[\w-]{20}`),
    entropy: 3,
  },
  {
    id: 'gitlab-runner-authentication-token',
    keywords: ['glrt-'],
    description: 'GitLab runner authentication token',
    regex: rx(String.raw`glrt-[0-9a-zA-Z_\-]{20}`),
    entropy: 3,
  },
  {
    id: 'gitlab-deploy-token',
    keywords: ['gldt-'],
    description: 'GitLab deploy token',
    regex: rx(String.raw`gldt-[0-9a-zA-Z_\-]{20}`),
    entropy: 3,
  },
  {
    id: 'slack-bot-token',
    keywords: ['xoxb'],
    description: 'Slack bot token',
    regex: rx(String.raw`xoxb-[0-9]{10,13}-[0-9]{10,13}[a-zA-Z0-9-]*`),
    entropy: 3,
  },
  {
    id: 'slack-user-token',
    keywords: ['xoxp-', 'xoxe-'],
    description: 'Slack user token',
    regex: rx(String.raw`xox[pe](?:-[0-9]{10,13}){3}-[a-zA-Z0-9-]{28,34}`),
    entropy: 2,
  },
  {
    id: 'slack-app-token',
    keywords: ['xapp'],
    description: 'Slack app-level token',
    regex: rx(String.raw`xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+`, 'i'),
    entropy: 2,
  },
  {
    id: 'slack-legacy-token',
    keywords: ['xoxo', 'xoxs'],
    description: 'Slack legacy token',
    regex: rx(String.raw`xox[os]-\d+-\d+-\d+-[a-fA-F\d]+`),
    entropy: 2,
  },
  {
    id: 'slack-webhook-url',
    keywords: ['hooks.slack.com'],
    description: 'Slack incoming webhook URL',
    regex: rx(String.raw`(?:https?://)?hooks.slack.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56}`),
  },
  {
    id: 'stripe-access-token',
    keywords: ['sk_test', 'sk_live', 'sk_prod', 'rk_test', 'rk_live', 'rk_prod'],
    description: 'Stripe secret or restricted key',
    regex: rx(String.raw`\b(?<secret>(?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,99})${END}`, 'm'),
    entropy: 2,
  },
  {
    id: 'gcp-api-key',
    keywords: ['aiza'],
    description: 'Google (GCP) API key',
    regex: rx(String.raw`\b(?<secret>AIza[\w-]{35})${END}`, 'm'),
    entropy: 4,
  },
  {
    // gitleaks requires the whole block (header, at least 64 characters of body, footer), so code
    // that merely compares against a `-----BEGIN … PRIVATE KEY-----` header is not a finding. We
    // also require the body to look like PEM/armour (base64, whitespace, `\n` escapes as in JSON
    // service-account files, and `Proc-Type:`/`DEK-Info:`/`Version:` header lines), so source
    // that mentions two headers a few lines apart is not a finding either.
    id: 'private-key',
    keywords: ['-----begin'],
    multiline: true,
    description: 'Private key block (RSA, EC, DSA, OpenSSH, PKCS#8, PGP, …)',
    regex: rx(String.raw`-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----[A-Za-z0-9+/=\s\\:,.()_-]{64,}?KEY(?: BLOCK)?-----`, 'i'),
  },
  {
    id: 'jwt',
    keywords: ['ey'],
    description: 'JSON Web Token',
    regex: rx(String.raw`\b(?<secret>ey[a-zA-Z0-9]{17,}\.ey[a-zA-Z0-9\/\\_-]{17,}\.(?:[a-zA-Z0-9\/\\_-]{10,}={0,2})?)${END}`, 'm'),
    entropy: 3,
  },
  {
    id: 'npm-access-token',
    keywords: ['npm_'],
    description: 'npm access token',
    regex: rx(String.raw`\b(?<secret>npm_[a-z0-9]{36})${END}`, 'im'),
    entropy: 2,
  },
  {
    id: 'anthropic-api-key',
    keywords: ['sk-ant-api03'],
    description: 'Anthropic API key',
    regex: rx(String.raw`\b(?<secret>sk-ant-api03-[a-zA-Z0-9_\-]{93}AA)${END}`, 'm'),
  },
  {
    id: 'anthropic-admin-api-key',
    keywords: ['sk-ant-admin01'],
    description: 'Anthropic admin API key',
    regex: rx(String.raw`\b(?<secret>sk-ant-admin01-[a-zA-Z0-9_\-]{93}AA)${END}`, 'm'),
  },
  {
    id: 'openai-api-key',
    keywords: ['t3blbkfj'],
    description: 'OpenAI API key',
    regex: rx(
      String.raw`\b(?<secret>sk-(?:proj|svcacct|admin)-(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})T3BlbkFJ(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})(?![\w-])|sk-[a-zA-Z0-9]{20}T3BlbkFJ[a-zA-Z0-9]{20})${END}`,
      'm',
    ),
    entropy: 3,
  },
  {
    // gitleaks' `generic-api-key`: a secret-ish name assigned a value with entropy >= 3.5. Its
    // allowlists are abridged: values made only of letters/dots/dashes (identifiers such as
    // `process.env.TOKEN`), names that are ids/urls/sizes rather than secrets, and a short list
    // of placeholder stopwords.
    id: 'generic-api-key',
    keywords: ['access', 'api', 'auth', 'key', 'credential', 'creds', 'passwd', 'password', 'secret', 'token'],
    description: 'Secret-like assignment (password=, secret=, token=, api_key= …) with a random value',
    regex: rx(
      String.raw`(?<name>[\w.-]{0,50}?(?:access|auth|api|credential|creds|key|passw(?:or)?d|secret|token)(?:[ \t\w.-]{0,20}))[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[\x60'"\s=]{0,5}(?<secret>[\w.=-]{10,150}|[a-z0-9][a-z0-9+/]{11,}={0,3})${END}`,
      'im',
    ),
    entropy: 3.5,
    allow: [/^[a-zA-Z_.-]+$/],
    stopwords: ['example', 'sample', 'placeholder', 'changeme', 'dummy', 'fake', 'xxxxxx', '000000', 'your_', 'your-', 'redacted'],
  },
];

/**
 * Every rule, in the order they claim a span: provider formats first (a GitHub token inside a URL
 * is a `github-pat`, not a `credentialed-url`), then the assignment rules, whose allowlists are
 * wider, last.
 */
export const SECRET_RULES: readonly SecretRule[] = [
  ...GITLEAKS_CORE_RULES.filter((rule) => rule.id !== 'generic-api-key'),
  ...PROVIDER_RULES,
  ...GITLEAKS_CORE_RULES.filter((rule) => rule.id === 'generic-api-key'),
  ...ASSIGNMENT_RULES,
];

/** Rules that judge a name and a value (skipped in lockfiles and minified files, like the entropy check). */
export const ASSIGNMENT_RULE_IDS: ReadonlySet<string> = new Set(['generic-api-key', PASSWORD_ASSIGNMENT_RULE]);

/**
 * Names that contain a secret-ish keyword but hold no secret (`public_key`, `token_url`,
 * `api_version`, `keyboard` …). Matched against the name part of a `generic-api-key` finding.
 */
export const GENERIC_NAME_ALLOW =
  /(?:access(?:ibility|or)|access[_.-]?id|random[_.-]?access|api[_.-]?(?:id|name|version|base|host|path)|rapid|capital|author|(?:credentials?[_.-]?id|withcredentials)|(?:bucket|foreign|hot|idx|natural|primary|pub(?:lic)?|schema|sequence|sort|partition|cache|storage|map|dict|object|row|react)[_.-]?key|key[_.-]?(?:alias|board|code|frame|id|length|name|pair|press(?:ed)?|ring|selector|signature|size|stone|word|up|down|left|right|path|file|type|s\b)|keying|monkey|turkey|(?:secret)[_.-]?(?:length|name|size|ref|arn|id)|(?:csrf|xsrf)[_.-]?token|(?:api|credentials|token|auth)[_.-]?(?:endpoint|ur[il]|header|type|expir\w*|ttl)|public[_.-]?token|(?:key|token)[_.-]?file)/i;
