import { randomInt } from 'node:crypto';
import { looksRandom } from '../secrets';
import { BASE62, DIGITS, HEX, LOWER, samples, UPPER } from './samples';

/**
 * One generator per secret format the gate must catch, for the unit tests and `test:attacks`.
 * Each call makes a fresh value with the format's shape (seeded: a fresh seed per run gives fresh
 * secrets; no real key is ever committed). `secret` is the value that must never be stored or
 * published; `line` is how it would appear in code or a message.
 */

export interface SecretFormat {
  /** The rule id the gate reports for it (`secret:<rule>`). */
  rule: string;
  make(): { secret: string; line: string };
}

export function secretFormats(seed: number = randomInt(1, 2 ** 31)): SecretFormat[] {
  const s = samples(seed);
  const { pick } = s;
  const value = (rule: string, make: () => string, line: (secret: string) => string): SecretFormat => ({
    rule,
    make() {
      const secret = make();
      return { secret, line: line(secret) };
    },
  });
  // A password with symbols the generic rule's alphabet misses, always mixing classes.
  const password = () => `${pick(UPPER, 2)}${pick(LOWER, 4)}${pick('!#%&*?^~', 1)}${pick(DIGITS, 3)}${pick(BASE62, 6)}`;
  return [
    value('aws-access-token', s.awsAccessKeyId, (v) => `aws_access_key_id = ${v}`),
    value('aws-secret-access-key', s.awsSecretAccessKey, (v) => `aws_secret_access_key = ${v}`),
    value('github-pat', () => s.github('ghp'), (v) => `GITHUB_TOKEN=${v}`),
    value('github-oauth', () => s.github('gho'), (v) => `oauth: ${v}`),
    value('github-app-token', () => s.github('ghs'), (v) => `installation token ${v}`),
    value('github-refresh-token', () => s.github('ghr'), (v) => `refresh ${v}`),
    value('github-fine-grained-pat', s.githubFineGrained, (v) => `const gh = "${v}";`),
    value('gitlab-pat', () => s.gitlab('glpat'), (v) => `GITLAB_TOKEN=${v}`),
    value('gitlab-ptt', s.gitlabTrigger, (v) => `trigger: ${v}`),
    value('gitlab-rrt', s.gitlabRunnerRegistration, (v) => `registration ${v}`),
    value('gitlab-runner-authentication-token', () => s.gitlab('glrt'), (v) => `runner ${v}`),
    value('gitlab-deploy-token', () => s.gitlab('gldt'), (v) => `deploy ${v}`),
    value('slack-bot-token', s.slackBot, (v) => `SLACK_BOT=${v}`),
    value('slack-user-token', s.slackUser, (v) => `SLACK_USER=${v}`),
    value('slack-app-token', s.slackApp, (v) => `SLACK_APP=${v}`),
    value('slack-legacy-token', s.slackLegacy, (v) => `SLACK_LEGACY=${v}`),
    value('slack-webhook-url', s.slackWebhook, (v) => `webhook: "${v}"`),
    value('stripe-access-token', s.stripe, (v) => `stripe.apiKey = "${v}"`),
    value('gcp-api-key', s.gcpApiKey, (v) => `maps_key: "${v}"`),
    value('jwt', s.jwt, (v) => `Authorization: Bearer ${v}`),
    value('npm-access-token', s.npm, (v) => `//registry.npmjs.org/:_authToken=${v}`),
    value('anthropic-api-key', s.anthropic, (v) => `ANTHROPIC_API_KEY=${v}`),
    value('anthropic-admin-api-key', s.anthropicAdmin, (v) => `admin ${v}`),
    value('openai-api-key', s.openai, (v) => `OPENAI_API_KEY=${v}`),
    value('sendgrid-api-token', () => `SG.${pick(BASE62 + '_-', 22)}.${pick(BASE62 + '_-', 43)}`, (v) => `sendgrid.setApiKey("${v}");`),
    value('twilio-api-key', () => `SK${pick(HEX, 32)}`, (v) => `TWILIO_KEY_SID=${v}`),
    value('mailgun-private-api-token', () => `key-${pick(HEX, 32)}`, (v) => `mailgun({ key: "${v}" })`),
    value('mailchimp-api-key', () => `${pick(HEX, 32)}-us${pick(DIGITS, 1)}`, (v) => `MAILCHIMP=${v}`),
    value('shopify-access-token', () => `shpat_${pick(HEX, 32)}`, (v) => `X-Shopify-Access-Token: ${v}`),
    value('square-access-token', () => `EAAA${pick(BASE62 + '-_', 60)}`, (v) => `square_token: ${v}`),
    value('pypi-upload-token', () => `pypi-AgEIcHlwaS5vcmc${pick(BASE62 + '_-', 70)}`, (v) => `password = ${v}`),
    value('digitalocean-pat', () => `dop_v1_${pick(HEX, 64)}`, (v) => `DIGITALOCEAN_TOKEN=${v}`),
    value('huggingface-access-token', () => `hf_${pick(UPPER + LOWER, 34)}`, (v) => `HF_TOKEN=${v}`),
    value('databricks-api-token', () => `dapi${pick(HEX, 32)}`, (v) => `DATABRICKS_TOKEN=${v}`),
    value('postman-api-token', () => `PMAK-${pick(HEX, 24)}-${pick(HEX, 34)}`, (v) => `postman ${v}`),
    value('linear-api-key', () => `lin_api_${pick(BASE62, 40)}`, (v) => `LINEAR=${v}`),
    value('doppler-api-token', () => `dp.pt.${pick(BASE62, 43)}`, (v) => `DOPPLER_TOKEN=${v}`),
    value('pulumi-api-token', () => `pul-${pick(HEX, 40)}`, (v) => `PULUMI_ACCESS_TOKEN=${v}`),
    value('grafana-cloud-api-token', () => `glc_${pick(BASE62, 60)}`, (v) => `grafana: ${v}`),
    value('grafana-service-account-token', () => `glsa_${pick(BASE62, 32)}_${pick(HEX, 8)}`, (v) => `grafana ${v}`),
    value('new-relic-user-api-key', () => `NRAK-${pick(UPPER + DIGITS, 27)}`, (v) => `NEW_RELIC=${v}`),
    value('sentry-user-token', () => `sntryu_${pick(HEX, 64)}`, (v) => `SENTRY_AUTH_TOKEN=${v}`),
    value('telegram-bot-api-token', () => `${pick(DIGITS, 10)}:AA${pick(BASE62 + '_-', 33)}`, (v) => `bot = Bot("${v}")`),
    value('age-secret-key', () => `AGE-SECRET-KEY-1${pick('QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L', 58)}`, (v) => `# ${v}`),
    value('vault-service-token', () => `hvs.${pick(BASE62 + '_-', 95)}`, (v) => `VAULT_TOKEN=${v}`),
    value('hashicorp-tf-api-token', () => `${pick(LOWER + DIGITS, 14)}.atlasv1.${pick(BASE62, 64)}`, (v) => `token = "${v}"`),
    value('azure-storage-account-key', () => `${pick(BASE62 + '+/', 86)}==`, (v) => `DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=${v};EndpointSuffix=core.windows.net`),
    value('alibaba-access-key-id', () => `LTAI${pick(BASE62, 20)}`, (v) => `access_key_id: ${v}`),
    value('planetscale-password', () => `pscale_pw_${pick(BASE62, 43)}`, (v) => `DATABASE_PASSWORD=${v}`),
    value('heroku-api-key-v2', () => `HRKU-AA${pick(BASE62 + '_-', 58)}`, (v) => `HEROKU_API_KEY=${v}`),
    value('atlassian-api-token', () => `ATATT3${pick(BASE62 + '_-', 186)}`, (v) => `JIRA_TOKEN=${v}`),
    value('gcp-oauth-client-secret', () => `GOCSPX-${pick(BASE62 + '_-', 28)}`, (v) => `client_secret: ${v}`),
    value('dockerhub-pat', () => `dckr_pat_${pick(BASE62 + '_-', 27)}`, (v) => `docker login -p ${v}`),
    value('stripe-webhook-secret', () => `whsec_${pick(BASE62, 32)}`, (v) => `STRIPE_WEBHOOK_SECRET=${v}`),
    value('azure-sas-token', () => encodeURIComponent(`${pick(BASE62 + '+/', 43)}=`), (v) => `const url = "https://acme.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-31T00:00:00Z&sig=${v}";`),
    value('postmark-server-token', () => `${pick(HEX, 8)}-${pick(HEX, 4)}-4${pick(HEX, 3)}-a${pick(HEX, 3)}-${pick(HEX, 12)}`, (v) => `headers: { 'X-Postmark-Server-Token': '${v}' },`),
    value('credentialed-url', password, (v) => `DATABASE_URL=postgres://app:${v}@db.internal:5432/prod`),
    value('credentialed-url', () => s.github('ghp').slice(4), (v) => `git clone https://deploy:${v}@git.example.org/acme/app.git`),
    value('password-assignment', password, (v) => `const dbPassword = "${v}";`),
    value('password-assignment', password, (v) => `PASSWORD=${v}`),
    value('generic-api-key', () => `${pick(BASE62, 16)}${pick(DIGITS, 1)}${pick(BASE62, 15)}`, (v) => `"api_key": "${v}"`),
    // The entropy check is calibrated to pass about 99% of random base62 strings; the format is
    // "a string that is random-looking", so draw until it is one (rarely more than one draw).
    value('high-entropy-string', () => { let blob = s.randomBlob(44); while (!looksRandom(blob)) blob = s.randomBlob(44); return blob; }, (v) => `const blob = "${v}";`),
    {
      rule: 'private-key',
      make() {
        const key = s.privateKey('RSA');
        return { secret: key[2]!, line: key.join('\n') };
      },
    },
  ];
}

/** Formats counted once per distinct rule id. */
export function distinctRules(formats: SecretFormat[]): string[] {
  return [...new Set(formats.map((format) => format.rule))];
}
