// The app the error-envelope tests (test/errors-*.test.ts) run against, and the requests they
// share. Each test file starts its own (its own database) from its before hook.
import { createTestApp, type TestApp } from './app.js';
import { makeTeam, type TeamFixture } from './fixtures.js';
import { testRoutes } from './test-routes.js';

export const JSON_HEADERS = { 'content-type': 'application/json' };
/** A body the test routes' CompleteBody schema accepts. */
export const GOOD_BODY = { upload_id: 'up_1', parts: [{ part_number: 1, etag: '"abc"' }] };
/** Small, so that bodies over and exactly at the limit are cheap to build. */
export const BODY_LIMIT = 1024;

// Live bindings: set by startErrorsApp(), read by the tests of the file that started it.
export let t: TestApp;
export let team: TeamFixture;

/** The real app with the test routes and BODY_LIMIT, and a team whose key the tests use. */
export async function startErrorsApp(): Promise<void> {
  t = await createTestApp({ extraRoutes: testRoutes, env: { TOOLRUN_BODY_LIMIT_BYTES: String(BODY_LIMIT) } });
  team = await makeTeam(t.database.db, { rate: 300 });
}
