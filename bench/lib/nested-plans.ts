/**
 * The plans of the statements a call runs inside PostgreSQL functions (the claim is one PL/pgSQL
 * function, migration 0025), which EXPLAIN of the call does not show: auto_explain logs each
 * nested statement's plan, and with client_min_messages at LOG the log line comes back to this
 * connection as a notice. Needs a superuser connection (LOAD); the settings are undone after.
 */
import type pg from 'pg';

export interface NestedPlan {
  query: string;
  /** The plan tree as EXPLAIN (FORMAT JSON) gives it. */
  plan: Record<string, unknown>;
  /** The statement's time, with analyze. */
  ms?: number;
}

export async function nestedPlans(client: pg.ClientBase, sql: string, values: unknown[], opts: { analyze?: boolean } = {}): Promise<NestedPlan[]> {
  const got: NestedPlan[] = [];
  const onNotice = (msg: { message?: string }) => {
    const text = msg.message ?? '';
    const at = text.indexOf('{');
    if (!/plan:/.test(text) || at < 0) return;
    const parsed = JSON.parse(text.slice(at)) as { 'Query Text': string; Plan: Record<string, unknown> };
    // auto_explain puts the statement's time before the plan: "duration: 0.042 ms  plan:".
    const ms = /duration: ([\d.]+) ms/.exec(text)?.[1];
    got.push({ query: parsed['Query Text'], plan: parsed.Plan, ...(ms === undefined ? {} : { ms: Number(ms) }) });
  };
  client.on('notice', onNotice);
  try {
    await client.query("LOAD 'auto_explain'");
    await client.query('SET auto_explain.log_min_duration = 0');
    await client.query('SET auto_explain.log_nested_statements = on');
    await client.query('SET auto_explain.log_format = json');
    await client.query(`SET auto_explain.log_analyze = ${opts.analyze ? 'on' : 'off'}`);
    await client.query(`SET auto_explain.log_buffers = ${opts.analyze ? 'on' : 'off'}`);
    await client.query('SET client_min_messages = log');
    await client.query(sql, values);
  } finally {
    await client.query('RESET client_min_messages');
    await client.query('SET auto_explain.log_min_duration = -1');
    client.off('notice', onNotice);
  }
  return got;
}

/** Every node of a plan tree, depth first. */
export function planNodes(plan: Record<string, unknown>): Record<string, unknown>[] {
  const children = (plan.Plans as Record<string, unknown>[] | undefined) ?? [];
  return [plan, ...children.flatMap(planNodes)];
}

/** A plan tree as indented lines: node, relation or index, and with analyze its rows and time. */
export function planOutline(plan: Record<string, unknown>, depth = 0): string[] {
  const where = [plan['Index Name'] ? `using ${String(plan['Index Name'])}` : '', plan['Relation Name'] ? `on ${String(plan['Relation Name'])}` : ''].filter(Boolean).join(' ');
  const actual = plan['Actual Total Time'] === undefined ? '' : ` (actual ${String(plan['Actual Total Time'])} ms, rows ${String(plan['Actual Rows'])}, loops ${String(plan['Actual Loops'])})`;
  const line = `${'  '.repeat(depth)}-> ${String(plan['Node Type'])}${where ? ` ${where}` : ''}${actual}`;
  const children = (plan.Plans as Record<string, unknown>[] | undefined) ?? [];
  return [line, ...children.flatMap((c) => planOutline(c, depth + 1))];
}
