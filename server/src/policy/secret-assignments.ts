import type { SecretRule } from './secret-rules';

/**
 * Secrets without a provider prefix: a password inside a URL, and a password or secret assigned to
 * a secret-like name. gitleaks covers the second with `generic-api-key`, whose value alphabet
 * (`[\w.=-]`) misses real passwords (`Tr0ub4dor&3!`); these rules take any non-space value and lean
 * on allowlists instead: template references (`${DB_PASSWORD}`, `{{ .Values.pw }}`, `<password>`),
 * code expressions (`os.environ["X"]`, `config.password`), paths and URLs, and names that hold no
 * secret (`passwordLabel`, `tokenUrl`, `secretName`).
 *
 * Not caught: a password built by concatenation, or one whose value is only letters (it reads as
 * an identifier; `hunter` is indistinguishable from `config`).
 */

function rx(source: string, flags = ''): RegExp {
  return new RegExp(source, `g${flags}`);
}

/** Values that refer to a secret rather than being one. */
const REFERENCES: RegExp[] = [
  /^\$\{?[\w.:-]+\}?$/, // $DB_PASSWORD, ${DB_PASSWORD}, ${env:DB_PASSWORD}
  /\$\{/, // "postgres-${password}"
  /\{\{/, // {{ .Values.password }}
  /^<[^>]*>$/, // <password>
  /^\*+$/, // ******
  /^%\(?\w*\)?s/, // %(password)s, %s
  /^\[secret:/, // already masked by Dockhand
  /\.\.\.|…/, // elided in documentation: sk-ant-api03-...
];

const NON_SECRET_VALUES: RegExp[] = [
  ...REFERENCES,
  /^[A-Za-z_.-]+$/, // identifiers: process.env.TOKEN, config.password, None, null
  /^[\w.]+[([]/, // calls and lookups: os.getenv("X"), env["X"], getSecret(
  /^\d+$/, // numbers: tokenTtl = 3600
  /:\/\//, // URLs (a URL with a password is the credentialed-url rule's)
  /^[./~]/, // paths: /run/secrets/db_password
  /^(?:true|false|null|none|undefined)[,;]?$/i,
  /^[a-z]+(?:[:_-][a-z]+)+$/, // lower-case words: replay:fix, prod-db-password
];

/** Name endings that hold no secret: `passwordLabel`, `token_type`, `secretName`, `api_key_id`. */
const NON_SECRET_NAME =
  /(?:label|placeholder|hint|prompt|message|msg|error|text|title|field|input|regex|pattern|policy|reset|forgot|confirm(?:ation)?|length|len|min|max|type|name|url|uri|path|file|dir|header|endpoint|id|ids|count|env|var|mode|strength|format|validator|rule|style|class|icon|ttl|expiry|expires(?:at|in)?|timeout|version|hash(?:er|ing)|salt(?:rounds)?|column|param|key(?:name|id))[\s'"]*$/i;

const PLACEHOLDERS = ['example', 'sample', 'placeholder', 'changeme', 'change_me', 'dummy', 'fake', 'xxxx', '0000', 'your_', 'your-', 'redacted', 'password', 'secret', 'todo', 'test'];

const NAME_KEYWORDS = ['passw', 'pwd', 'secret', 'api_key', 'apikey', 'api-key', 'token', 'credential'];
const SECRET_NAME = String.raw`[\w.-]{0,40}?(?:passw(?:or)?d|pwd|secret|api[_-]?key|token|credential)s?[\w.-]{0,20}`;

export const CREDENTIALED_URL_RULE = 'credentialed-url';
export const PASSWORD_ASSIGNMENT_RULE = 'password-assignment';

export const ASSIGNMENT_RULES: readonly SecretRule[] = [
  {
    // gitleaks has no default rule for this; its shape is RFC 3986's userinfo (`user:password@`).
    // Only the password is the secret, so the excerpt keeps scheme, user and host readable.
    id: CREDENTIALED_URL_RULE,
    keywords: ['://'],
    description: 'URL with a password in it (scheme://user:password@host)',
    regex: rx(String.raw`\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@'"\x60]{1,100}:(?<secret>[^\s:/@'"\x60]{1,200})@[^\s/@'"\x60]+`, 'i'),
    allow: REFERENCES,
  },
  {
    // In code: a quoted literal (`const dbPassword = "…"`, `"api_key": "…"`, `password: '…'`).
    id: PASSWORD_ASSIGNMENT_RULE,
    keywords: NAME_KEYWORDS,
    description: 'Password or secret assigned to a secret-like name (password = "…", DB_PASSWORD=…)',
    regex: rx(String.raw`(?<name>${SECRET_NAME})['"\]]{0,2}\s{0,3}(?:=|:=|:|=>|\?=)\s{0,3}(?<quote>['"\x60])(?<secret>(?:(?!\k<quote>)[^\s\\]){8,200})\k<quote>`, 'i'),
    entropy: 3,
    allow: NON_SECRET_VALUES,
    stopwords: PLACEHOLDERS,
    nameAllow: NON_SECRET_NAME,
  },
  {
    // In configuration (.env, YAML, ini, compose files): an unquoted value, with the name at the
    // start of its line (after a diff's `+`/`-` in free text such as edit_file's answer, which
    // is masked as text, not as a diff). Unquoted values elsewhere are code (`secrets: ReadonlyArray<string>`).
    id: PASSWORD_ASSIGNMENT_RULE,
    keywords: NAME_KEYWORDS,
    description: 'Password or secret assigned to a secret-like name (password = "…", DB_PASSWORD=…)',
    regex: rx(String.raw`^[+-]?\s*(?:export\s+|-\s+)?(?<name>${SECRET_NAME})\s{0,3}(?:=|:)\s{0,3}(?<secret>[^\s'"\x60]{7,199}[^\s'"\x60,;)])(?:\s+#.*)?\s*$`, 'im'),
    entropy: 3,
    allow: NON_SECRET_VALUES,
    stopwords: PLACEHOLDERS,
    nameAllow: NON_SECRET_NAME,
  },
];
