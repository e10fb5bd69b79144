import type { SecretRule } from './secret-rules';

/**
 * More provider token formats, each with a fixed prefix or shape that makes it precise. Most are
 * gitleaks' default rules (ids kept); the few that are not say where their shape comes from.
 * `RULES.md` lists them all. The credentialed-URL and password-assignment rules, which need
 * allowlists rather than a prefix, are in `secret-assignments.ts`.
 */

/** gitleaks' common right-hand boundary of a token: quote, backtick, space, `;`, `\n` escape or end. */
const END = String.raw`(?:[\x60'"\s;,)\]}>]|\\[nr]|$)`;

function rx(source: string, flags = ''): RegExp {
  return new RegExp(source, `g${flags}`);
}

export const PROVIDER_RULES: readonly SecretRule[] = [
  {
    id: 'sendgrid-api-token',
    keywords: ['sg.'],
    description: 'SendGrid API key',
    regex: rx(String.raw`\b(?<secret>SG\.[a-zA-Z0-9_-]{22}\.[a-zA-Z0-9_-]{43})${END}`, 'm'),
    entropy: 2,
  },
  {
    id: 'twilio-api-key',
    keywords: ['sk'],
    description: 'Twilio API key',
    regex: rx(String.raw`\b(?<secret>SK[0-9a-fA-F]{32})\b`),
    entropy: 3,
  },
  {
    id: 'mailgun-private-api-token',
    keywords: ['key-'],
    description: 'Mailgun private API key',
    regex: rx(String.raw`\b(?<secret>key-[a-f0-9]{32})\b`),
    entropy: 3,
  },
  {
    id: 'mailchimp-api-key',
    keywords: ['-us'],
    description: 'Mailchimp API key',
    regex: rx(String.raw`\b(?<secret>[0-9a-f]{32}-us[0-9]{1,2})\b`),
    entropy: 3,
  },
  {
    id: 'shopify-access-token',
    keywords: ['shpat_', 'shpca_', 'shppa_', 'shpss_'],
    description: 'Shopify access token or shared secret',
    regex: rx(String.raw`\b(?<secret>shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})\b`),
    entropy: 2,
  },
  {
    id: 'square-access-token',
    keywords: ['sq0atp-', 'eaaa'],
    description: 'Square access token',
    regex: rx(String.raw`\b(?<secret>(?:EAAA|sq0atp-)[\w-]{22,60})${END}`, 'm'),
    entropy: 2,
  },
  {
    id: 'pypi-upload-token',
    keywords: ['pypi-ageichlwas5vcmc'],
    description: 'PyPI upload token',
    regex: rx(String.raw`(?<secret>pypi-AgEIcHlwaS5vcmc[\w-]{50,1000})`),
  },
  {
    id: 'digitalocean-pat',
    keywords: ['dop_v1_', 'doo_v1_', 'dor_v1_'],
    description: 'DigitalOcean personal access, OAuth or refresh token',
    regex: rx(String.raw`\b(?<secret>do[opr]_v1_[a-f0-9]{64})\b`),
    entropy: 3,
  },
  {
    id: 'huggingface-access-token',
    keywords: ['hf_'],
    description: 'Hugging Face access token',
    regex: rx(String.raw`\b(?<secret>hf_[a-zA-Z]{34})\b`),
    entropy: 2,
  },
  {
    id: 'databricks-api-token',
    keywords: ['dapi'],
    description: 'Databricks API token',
    regex: rx(String.raw`\b(?<secret>dapi[a-f0-9]{32}(?:-\d)?)\b`),
    entropy: 3,
  },
  {
    id: 'postman-api-token',
    keywords: ['pmak-'],
    description: 'Postman API key',
    regex: rx(String.raw`\b(?<secret>PMAK-[a-f0-9]{24}-[a-f0-9]{34})\b`, 'i'),
    entropy: 3,
  },
  {
    id: 'linear-api-key',
    keywords: ['lin_api_'],
    description: 'Linear API key',
    regex: rx(String.raw`\b(?<secret>lin_api_[a-zA-Z0-9]{40})\b`),
    entropy: 2,
  },
  {
    id: 'doppler-api-token',
    keywords: ['dp.pt.'],
    description: 'Doppler API token',
    regex: rx(String.raw`(?<secret>dp\.pt\.[a-zA-Z0-9]{43})`),
    entropy: 2,
  },
  {
    id: 'pulumi-api-token',
    keywords: ['pul-'],
    description: 'Pulumi access token',
    regex: rx(String.raw`\b(?<secret>pul-[a-f0-9]{40})\b`),
    entropy: 2,
  },
  {
    id: 'grafana-cloud-api-token',
    keywords: ['glc_'],
    description: 'Grafana Cloud access policy token',
    regex: rx(String.raw`\b(?<secret>glc_[A-Za-z0-9+/]{32,400}={0,2})${END}`, 'm'),
    entropy: 3,
  },
  {
    id: 'grafana-service-account-token',
    keywords: ['glsa_'],
    description: 'Grafana service account token',
    regex: rx(String.raw`\b(?<secret>glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})\b`),
    entropy: 3,
  },
  {
    id: 'new-relic-user-api-key',
    keywords: ['nrak-'],
    description: 'New Relic user API key',
    regex: rx(String.raw`\b(?<secret>NRAK-[a-zA-Z0-9]{27})\b`),
    entropy: 3,
  },
  {
    id: 'sentry-user-token',
    keywords: ['sntryu_'],
    description: 'Sentry user auth token',
    regex: rx(String.raw`\b(?<secret>sntryu_[a-f0-9]{64})\b`),
    entropy: 3.5,
  },
  {
    // gitleaks anchors this on a `telegram` name; we anchor on the token's own shape instead:
    // bot id, a colon, and a 35-character secret that Telegram always starts with "AA".
    id: 'telegram-bot-api-token',
    keywords: [':aa'],
    description: 'Telegram bot API token',
    regex: rx(String.raw`\b(?<secret>[0-9]{8,10}:AA[0-9A-Za-z_-]{33})${END}`, 'm'),
    entropy: 3,
  },
  {
    id: 'age-secret-key',
    keywords: ['age-secret-key-1'],
    description: 'age encryption secret key',
    regex: rx(String.raw`(?<secret>AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})`),
  },
  {
    id: 'vault-service-token',
    keywords: ['hvs.', 'hvb.'],
    description: 'HashiCorp Vault service or batch token',
    regex: rx(String.raw`\b(?<secret>hv[sb]\.[\w-]{90,120})${END}`, 'm'),
    entropy: 3.5,
  },
  {
    id: 'hashicorp-tf-api-token',
    keywords: ['atlasv1'],
    description: 'Terraform Cloud / Enterprise API token',
    regex: rx(String.raw`(?<secret>[a-zA-Z0-9]{14}\.atlasv1\.[a-zA-Z0-9_=-]{60,70})`),
    entropy: 3.5,
  },
  {
    // Not a gitleaks rule: the `AccountKey=` part of an Azure Storage connection string, whose
    // 64-byte key is always 88 base64 characters ending in "==" (Azure's documented format).
    id: 'azure-storage-account-key',
    keywords: ['accountkey='],
    description: 'Azure Storage account key in a connection string',
    regex: rx(String.raw`AccountKey=(?<secret>[A-Za-z0-9+/]{86}==)`, 'i'),
    entropy: 4,
  },
  {
    id: 'alibaba-access-key-id',
    keywords: ['ltai'],
    description: 'Alibaba Cloud AccessKey ID',
    regex: rx(String.raw`\b(?<secret>LTAI[a-zA-Z0-9]{20})\b`),
    entropy: 2,
  },
  {
    id: 'planetscale-password',
    keywords: ['pscale_pw_', 'pscale_tkn_', 'pscale_oauth_'],
    description: 'PlanetScale password or token',
    regex: rx(String.raw`\b(?<secret>pscale_(?:pw|tkn|oauth)_[\w=.-]{32,64})${END}`, 'm'),
    entropy: 3,
  },
  {
    id: 'heroku-api-key-v2',
    keywords: ['hrku-aa'],
    description: 'Heroku API key',
    regex: rx(String.raw`\b(?<secret>HRKU-AA[0-9a-zA-Z_-]{58})(?![\w-])`),
    entropy: 4,
  },
  {
    id: 'atlassian-api-token',
    keywords: ['atatt3'],
    description: 'Atlassian (Jira, Confluence) API token',
    regex: rx(String.raw`\b(?<secret>ATATT3[A-Za-z0-9_=-]{186})${END}`, 'm'),
    entropy: 3.5,
  },
  {
    id: 'gcp-oauth-client-secret',
    keywords: ['gocspx-'],
    description: 'Google OAuth client secret',
    regex: rx(String.raw`\b(?<secret>GOCSPX-[a-zA-Z0-9_-]{28})${END}`, 'm'),
    entropy: 3,
  },
  {
    // Not a gitleaks rule: Docker Hub's documented personal access token prefix.
    id: 'dockerhub-pat',
    keywords: ['dckr_pat_'],
    description: 'Docker Hub personal access token',
    regex: rx(String.raw`\b(?<secret>dckr_pat_[a-zA-Z0-9_-]{27})${END}`, 'm'),
    entropy: 3,
  },
  {
    id: 'stripe-webhook-secret',
    keywords: ['whsec_'],
    description: 'Stripe webhook signing secret',
    regex: rx(String.raw`\b(?<secret>whsec_[a-zA-Z0-9]{32,64})\b`),
    entropy: 3,
  },
  {
    // Not a gitleaks rule: an Azure shared access signature (Microsoft's "Create a service SAS"
    // documentation). `sig` is the HMAC-SHA256 of the grant in base64 (44 characters, URL-encoded
    // in a query); a SAS always carries its version `sv` and usually `se`/`sp`/`srt`/`ss` beside it.
    id: 'azure-sas-token',
    keywords: ['sig='],
    description: 'Azure shared access signature (sig= with sv=/se=/sp=)',
    regex: rx(String.raw`(?:^|[?&;\s'"\x60])sig=(?<secret>(?:[A-Za-z0-9+/]|%2[BbFf]){30,120}(?:=|%3[Dd]){0,2})`, 'm'),
    context: /(?:^|[?&;\s'"\x60])(?:sv|se|sp|srt|ss|sr|st|spr)=/,
    entropy: 3.5,
  },
  {
    // Not a gitleaks rule: a Postmark server or account token is a bare UUID, so only a UUID
    // named by Postmark (a postmark setting, the X-Postmark-Server-Token header) is taken as one.
    id: 'postmark-server-token',
    keywords: ['postmark'],
    description: 'Postmark server or account token',
    regex: rx(String.raw`postmark[\w.-]{0,40}['"\]]{0,2}[^\n]{0,24}?\b(?<secret>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b`, 'i'),
    entropy: 3,
  },
];
