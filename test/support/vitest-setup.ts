import { afterAll } from 'vitest';
import { removeTemporaryDirs } from './temporary-dirs';

// Registered first, so it runs after the test file's own afterAll hooks (vitest runs them as a
// stack): servers and sandboxes using a fixture repository are closed before it is removed.
afterAll(removeTemporaryDirs);
