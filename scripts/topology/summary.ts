// The summary `npm run topology` prints: what ran where, each check, runs by tool, answers by API
// process, and the figures of the load.
import type { ScaleOutReport } from './scaleout.js';

export function table(head: string[], rows: (string | number)[][]): string {
  const cells = [head, ...rows.map((r) => r.map(String))];
  const widths = head.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...cells.slice(1).map(line)].join('\n');
}

function percentile(values: number[], p: number): number {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

export function formatReport(r: ScaleOutReport): string {
  const out: string[] = [];
  out.push(`Topology: ${r.mode === 'netns' ? 'each process in its own network namespace' : `all processes on loopback (${r.reason})`}`);
  out.push(
    table(
      ['process', 'address', 'pid'],
      [...r.apis.map((a) => [a.name, a.url, a.pid]), ...r.workers.map((w) => [w.name, w.ip, w.pid])],
    ),
  );
  out.push('', 'Checks:');
  out.push(table(['check', 'result', 'detail'], r.checks.map((c) => [c.name, c.ok ? 'PASS' : 'FAIL', c.detail])));
  for (const c of r.checks.filter((x) => !x.ok)) out.push(`\n${c.name}: FAILED\n  ${c.failures.join('\n  ')}`);

  const tools = [...new Set(r.runs.map((x) => x.tool_id))].sort();
  out.push('', 'Runs by tool (seconds from start to final state):');
  out.push(
    table(
      ['tool', 'runs', 'succeeded', 'failed', 'canceled', 'p50', 'p95', 'max'],
      tools.map((tool) => {
        const runs = r.runs.filter((x) => x.tool_id === tool);
        const secs = runs.map((x) => x.seconds);
        const n = (st: string) => runs.filter((x) => x.status === st).length;
        return [tool, runs.length, n('succeeded'), n('failed'), n('canceled'), percentile(secs, 50).toFixed(1), percentile(secs, 95).toFixed(1), Math.max(...secs).toFixed(1)];
      }),
    ),
  );
  out.push('', 'Answers by API process (from its request logs):');
  const statuses = [...new Set(Object.values(r.requests).flatMap((m) => Object.keys(m)))].sort();
  out.push(table(['process', ...statuses, 'total'], Object.entries(r.requests).map(([name, m]) => [name, ...statuses.map((st) => m[st] ?? 0), Object.values(m).reduce((a, b) => a + b, 0)])));
  const t = r.timings;
  out.push('', 'Figures:');
  out.push(
    table(
      ['figure', 'value'],
      [
        ['runs (load + ceiling probe)', r.runs.length],
        ['load duration', s(t.loadMs)],
        ['throughput of the load', `${((r.records.filter((x) => x.kind !== 'ceiling' && x.runId).length / t.loadMs) * 60_000).toFixed(0)} runs/min`],
        ['webhook deliveries expected / distinct received / requests', `${r.webhooks.expected} / ${r.webhooks.received_distinct} / ${r.webhooks.requests}`],
        ['webhook first attempts answered 500 (retried)', r.webhooks.answered_500 ?? 0],
        ['webhook events accepted (2xx) more than once', r.webhooks.accepted_twice ?? 0],
        ['client polls / 429 waits / connection retries', `${r.client.polls} / ${r.client.backoffs} / ${r.client.networkRetries}`],
        ['start-up / setup / load / checks / total', `${s(t.startupMs)} / ${s(t.setupMs)} / ${s(t.loadMs)} / ${s(t.checksMs)} / ${s(t.totalMs)}`],
      ],
    ),
  );
  return out.join('\n');
}
