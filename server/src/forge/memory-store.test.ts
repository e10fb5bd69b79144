import { InMemoryPullRequestStore } from './memory-store';
import { pullRequestStoreContract } from './testing/store-contract';

pullRequestStoreContract('InMemoryPullRequestStore', () => new InMemoryPullRequestStore());
