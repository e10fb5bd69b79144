import { schema as published } from '@octokit/graphql-schema';
import { buildClientSchema, graphql, parse, validate, type ExecutionResult, type GraphQLSchema, type IntrospectionQuery } from 'graphql';

/*
 * GitHub's own description of its GraphQL API (`@octokit/graphql-schema`, the schema GitHub
 * publishes) as the judge of the documents our GitHub forge sends in tests: each document must
 * validate against it, and the variables must coerce to the types it declares. The fake answers
 * are then produced by executing the document against that same schema over test data, so what
 * the forge reads back has the shape GitHub's schema gives it (a field the schema lacks, or a
 * renamed one, fails in the test, not on GitHub). The data is ours; the shapes are GitHub's.
 */

let schema: GraphQLSchema | undefined;

export function gitHubSchema(): GraphQLSchema {
  // The published SDL defines two fields twice (graphql-js refuses it); the introspection JSON is the same schema, built as the package's own validator does.
  schema ??= buildClientSchema(published.json as IntrospectionQuery);
  return schema;
}

export interface GraphqlCall {
  query: string;
  variables?: Record<string, unknown>;
}

/** What is wrong with a document by GitHub's schema; empty when nothing is. */
export function graphqlProblems(call: GraphqlCall): string[] {
  let document;
  try {
    document = parse(call.query);
  } catch (error) {
    return [`the document does not parse: ${error instanceof Error ? error.message : String(error)}`];
  }
  return validate(gitHubSchema(), document).map((error) => error.message);
}

/**
 * Executes the call against GitHub's schema with `root` as the data (fields may be functions of
 * their arguments, as graphql-js's default resolver calls them). A document or variables the
 * schema refuses come back as errors, as GitHub would answer them.
 */
export async function executeAsGitHub(call: GraphqlCall, root: Record<string, unknown>): Promise<ExecutionResult> {
  return graphql({ schema: gitHubSchema(), source: call.query, variableValues: call.variables ?? {}, rootValue: root });
}

export interface ReviewThreadData {
  id: string;
  isResolved: boolean;
  viewerCanResolve?: boolean;
  /** REST ids of the thread's review comments. */
  commentIds: number[];
}

/**
 * A PR's review threads as GitHub's GraphQL root data: `repository.pullRequest.reviewThreads`
 * (pages of `pageSize`) and the `resolveReviewThread` mutation, which resolves one (recorded in
 * `resolved`).
 */
export function reviewThreadsRoot(threads: ReviewThreadData[], options: { pageSize?: number; resolved?: string[] } = {}): Record<string, unknown> {
  const pageSize = options.pageSize ?? 100;
  return {
    repository: () => ({
      pullRequest: () => ({
        reviewThreads: ({ first, after }: { first: number; after?: string | null }) => {
          const start = after ? Number(after) : 0;
          const page = threads.slice(start, start + Math.min(first, pageSize));
          const end = start + page.length;
          return {
            pageInfo: { hasNextPage: end < threads.length, endCursor: String(end) },
            nodes: page.map((thread) => ({
              id: thread.id,
              isResolved: thread.isResolved,
              viewerCanResolve: thread.viewerCanResolve ?? true,
              comments: () => ({ nodes: thread.commentIds.map((id) => ({ fullDatabaseId: String(id), databaseId: id })) }),
            })),
          };
        },
      }),
    }),
    resolveReviewThread: ({ input }: { input: { threadId: string } }) => {
      const thread = threads.find((candidate) => candidate.id === input.threadId);
      if (!thread) return null;
      thread.isResolved = true;
      options.resolved?.push(thread.id);
      return { thread: { id: thread.id, isResolved: true } };
    },
  };
}
