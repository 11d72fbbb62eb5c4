import pg from 'pg';

/** Drops the databases one test run made (named toolrun_t_<runId>_...). */
export async function dropTestDatabases(adminUrl: string, runId: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE datname LIKE $1::text",
      [`toolrun_t_${runId.toLowerCase()}_%`],
    );
    for (const { datname } of rows) {
      await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    }
  } finally {
    await client.end();
  }
}
