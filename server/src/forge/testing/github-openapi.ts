import { createRequire } from 'node:module';
import { Ajv, type ValidateFunction } from 'ajv';

/*
 * GitHub's own description of its REST API (`@octokit/openapi`, api.github.com) as the judge of
 * the requests our GitHub forge makes in tests: the operation must exist for the method and path,
 * its path and query parameters must be ones the operation names, and a JSON body must validate
 * against the operation's request schema. The fake responses in the tests are ours; what we send
 * is checked against theirs.
 */

interface Operation {
  parameters?: Array<{ name?: string; in?: string; $ref?: string }>;
  requestBody?: { content?: Record<string, { schema?: unknown }> };
}
type Document = { paths: Record<string, Record<string, Operation>>; components: { parameters: Record<string, { name: string; in: string }> } };

let loaded: { document: Document; ajv: Ajv; routes: Array<{ template: string; pattern: RegExp }> } | undefined;
const validators = new Map<string, ValidateFunction>();

function load(): NonNullable<typeof loaded> {
  if (loaded) return loaded;
  const document = createRequire(import.meta.url)('@octokit/openapi/generated/api.github.com.json') as Document;
  // OpenAPI 3.0's `nullable` is not JSON Schema: turn it into a type that admits null, once, in place.
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (typeof node !== 'object' || node === null) return;
    const schema = node as Record<string, unknown>;
    if (schema.nullable === true && typeof schema.type === 'string') schema.type = [schema.type, 'null'];
    for (const value of Object.values(schema)) visit(value);
  };
  visit(document.components);
  visit(document.paths);
  const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false, validateFormats: false });
  ajv.addSchema(document as object, 'github');
  const routes = Object.keys(document.paths).map((template) => ({
    template,
    pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
  }));
  loaded = { document, ajv, routes };
  return loaded;
}

export interface RestCall {
  method: string;
  path: string;
  query: URLSearchParams;
  body: unknown;
}

/** What is wrong with a request by GitHub's OpenAPI description; empty when nothing is. */
export function openApiProblems(call: RestCall): string[] {
  const { document, ajv, routes } = load();
  const what = `${call.method} ${call.path}`;
  // The most specific template wins (`/repos/{owner}/{repo}/pulls/{pull_number}` over a longer wildcard match).
  const matches = routes.filter((route) => route.pattern.test(call.path)).sort((a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0));
  const route = matches.find((candidate) => document.paths[candidate.template]?.[call.method.toLowerCase()]);
  if (!route) return [`${what}: no such operation in GitHub's REST API (api.github.com)`];
  const operation = document.paths[route.template]?.[call.method.toLowerCase()] as Operation;
  const problems: string[] = [];
  const parameters = (operation.parameters ?? []).map((parameter) => (parameter.$ref ? document.components.parameters[parameter.$ref.split('/').pop() ?? ''] : parameter));
  const queryNames = new Set(parameters.filter((parameter) => parameter?.in === 'query').map((parameter) => parameter?.name));
  for (const name of call.query.keys()) if (!queryNames.has(name)) problems.push(`${what}: query parameter ${name} is not one of ${route.template}'s (${[...queryNames].join(', ') || 'none'})`);
  const schema = operation.requestBody?.content?.['application/json']?.schema;
  if (call.body !== undefined) {
    if (!schema) problems.push(`${what}: sends a body; ${route.template} takes none`);
    else {
      const key = `${call.method} ${route.template}`;
      const pointer = `github#/paths/${route.template.replace(/~/g, '~0').replace(/\//g, '~1')}/${call.method.toLowerCase()}/requestBody/content/application~1json/schema`;
      let validate = validators.get(key);
      if (!validate) {
        validate = ajv.compile({ $ref: pointer });
        validators.set(key, validate);
      }
      if (!validate(call.body)) problems.push(...(validate.errors ?? []).map((error) => `${what}: body${error.instancePath} ${error.message ?? 'is invalid'}`));
    }
  }
  return problems;
}
