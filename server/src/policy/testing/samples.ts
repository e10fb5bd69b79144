/**
 * Fake credentials for the policy tests, generated from a seeded PRNG at run time so that no
 * token-shaped literal sits in this repository (our own gate, and forges' push protection, would
 * rightly refuse such a file). The values have the shape and randomness of real tokens and grant
 * nothing.
 */

export const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
export const LOWER = 'abcdefghijklmnopqrstuvwxyz';
export const DIGITS = '0123456789';
export const BASE62 = UPPER + LOWER + DIGITS;
export const HEX = '0123456789abcdef';

export function samples(seed = 42) {
  let state = seed >>> 0;
  // mulberry32
  function next(): number {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  function pick(alphabet: string, length: number): string {
    let out = '';
    for (let i = 0; i < length; i += 1) out += alphabet[Math.floor(next() * alphabet.length)];
    return out;
  }
  const b64url = (text: string) => Buffer.from(text).toString('base64url');
  return {
    pick,
    awsAccessKeyId: () => 'AKIA' + pick(UPPER + '234567', 16),
    awsSecretAccessKey: () => pick(BASE62 + '/+', 40),
    github: (prefix: 'ghp' | 'gho' | 'ghu' | 'ghs' | 'ghr') => `${prefix}_${pick(BASE62, 36)}`,
    githubFineGrained: () => `github_pat_${pick(BASE62 + '_', 82)}`,
    gitlab: (prefix: 'glpat' | 'glrt' | 'gldt') => `${prefix}-${pick(BASE62 + '_-', 20)}`,
    gitlabTrigger: () => `glptt-${pick(HEX, 40)}`,
    gitlabRunnerRegistration: () => `GR1348941${pick(BASE62 + '_-', 20)}`,
    slackBot: () => `xoxb-${pick(DIGITS, 11)}-${pick(DIGITS, 12)}-${pick(BASE62, 24)}`,
    slackUser: () => `xoxp-${pick(DIGITS, 11)}-${pick(DIGITS, 11)}-${pick(DIGITS, 12)}-${pick(LOWER + DIGITS, 32)}`,
    slackApp: () => `xapp-1-A${pick(UPPER + DIGITS, 10)}-${pick(DIGITS, 13)}-${pick(HEX, 64)}`,
    slackLegacy: () => `xoxs-${pick(DIGITS, 10)}-${pick(DIGITS, 10)}-${pick(DIGITS, 12)}-${pick(HEX, 64)}`,
    slackWebhook: () =>
      `https://hooks.slack.com/services/T${pick(UPPER + DIGITS, 8)}/B${pick(UPPER + DIGITS, 8)}/${pick(BASE62, 24)}`,
    stripe: () => 'sk_live_' + pick(BASE62, 24),
    gcpApiKey: () => 'AIza' + pick(BASE62 + '_-', 35),
    privateKey: (kind: 'RSA' | 'EC' | 'OPENSSH' | 'PGP') => {
      const label = kind === 'PGP' ? 'PGP PRIVATE KEY BLOCK' : `${kind} PRIVATE KEY`;
      const body = Array.from({ length: 6 }, () => pick(BASE62 + '+/', 64));
      return [`-----BEGIN ${label}-----`, ...body, `-----END ${label}-----`];
    },
    jwt: () =>
      `${b64url('{"alg":"HS256","typ":"JWT"}')}.${b64url(`{"sub":"${pick(DIGITS, 10)}","name":"Jo"}`)}.${pick(BASE62 + '_-', 43)}`,
    npm: () => `npm_${pick(LOWER + DIGITS, 36)}`,
    anthropic: () => 'sk-ant-api03-' + pick(BASE62 + '_-', 93) + 'AA',
    anthropicAdmin: () => 'sk-ant-admin01-' + pick(BASE62 + '_-', 93) + 'AA',
    openai: () => 'sk-proj-' + pick(BASE62 + '_-', 74) + 'T3BlbkFJ' + pick(BASE62 + '_-', 74),
    password: () => pick(BASE62, 20),
    randomBlob: (length = 40) => pick(BASE62, length),
  };
}
