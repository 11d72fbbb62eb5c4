import type { Logger } from 'pino';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from '../db/pool.js';
import { readClusterFigures, type ClusterFigures } from './cluster.js';

/**
 * How one execution of a run in this process ended. `handed_back`: stopped by a shutdown after its
 * grace and given back to the queue; `lease_lost`: its lease lapsed and another worker may have it;
 * `interrupted`: it ended without a final state for another reason (the run stays with the queue).
 */
export type RunOutcome = 'succeeded' | 'failed' | 'canceled' | 'handed_back' | 'lease_lost' | 'interrupted';

/** `retry`: the attempt failed and another is scheduled; `given_up`: it failed and was the last. */
export type WebhookAttemptOutcome = 'delivered' | 'retry' | 'given_up';

/**
 * The steps of an execution, each timed alone: `inputs` (the input files made readable: in place
 * on local storage, downloaded from S3), `runner` (the tool's work), `store` (outputs checked,
 * checksummed and put into storage), `commit` (the success transaction), `check` (the outputs read
 * back from storage and compared with their checksums, after the commit).
 */
export type RunPhase = 'inputs' | 'runner' | 'store' | 'commit' | 'check';

/** What the run worker records (it needs nothing else of the metrics). */
export interface RunMetrics {
  runEnded(tool: string, outcome: RunOutcome, seconds: number): void;
  runPhase(tool: string, phase: RunPhase, seconds: number): void;
}

/** What the webhook worker records. */
export interface WebhookMetrics {
  webhookAttempt(outcome: WebhookAttemptOutcome, seconds: number): void;
}

export interface MetricsOptions {
  db: Db;
  logger: Logger;
  /** Tools that always have a queue series (0 when idle), so a graph never loses a line. */
  toolIds: string[];
  /**
   * Cluster-wide figures are read from PostgreSQL at most this often by one process; scrapes in
   * between (several Prometheus servers) get the last reading. Concurrent scrapes share one read.
   */
  clusterRefreshMs?: number;
}

const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** Ledger kind, label, and the sign that turns its effect on balances into an amount. */
const LEDGER_KINDS = [
  ['grant', 'granted', 1],
  ['hold', 'held', -1],
  ['charge', 'charged', -1],
  ['release', 'released', 1],
  ['refund', 'refunded', 1],
] as const;

/**
 * One process's metrics, in their own registry (never prom-client's global one): HTTP requests by
 * route pattern, run executions and webhook attempts made here, Node process figures, and the
 * cluster-wide queue and ledger figures read from PostgreSQL when scraped.
 */
export class Metrics implements RunMetrics, WebhookMetrics {
  readonly registry = new Registry();
  /** The PostgreSQL figures, left out of a scrape whose reading failed (a 0 would look real). */
  private readonly cluster = new Registry();
  private clusterOk = false;
  private readonly httpRequests: Counter<'route' | 'method' | 'status'>;
  private readonly httpDuration: Histogram<'route' | 'method' | 'status'>;
  private readonly runsTotal: Counter<'tool' | 'outcome'>;
  private readonly runDuration: Histogram<'tool' | 'outcome'>;
  private readonly runPhaseDuration: Histogram<'tool' | 'phase'>;
  private readonly webhookAttempts: Counter<'outcome'>;
  private readonly webhookDuration: Histogram<'outcome'>;
  private readonly queued: Gauge<'tool'>;
  private readonly running: Gauge<'tool'>;
  private readonly queuedOldest: Gauge<'tool'>;
  private readonly sparksHeld: Gauge;
  private readonly sparksAvailable: Gauge;
  private readonly ledger: Gauge<'kind'>;
  private readonly webhooksPending: Gauge;
  private readonly webhooksOldestDue: Gauge;
  private readonly clusterUp: Gauge;
  private reading: Promise<void> | null = null;
  private readAt = -Infinity;

  constructor(private readonly opts: MetricsOptions) {
    const registers = [this.registry];
    const clusterRegisters = [this.cluster];
    collectDefaultMetrics({ register: this.registry });
    this.httpRequests = new Counter({
      name: 'toolrun_http_requests_total',
      help: 'HTTP requests answered by this process, by route pattern (unmatched: no route), method and status.',
      labelNames: ['route', 'method', 'status'],
      registers,
    });
    this.httpDuration = new Histogram({
      name: 'toolrun_http_request_duration_seconds',
      help: 'Time from receiving a request to the end of its response, by route pattern, method and status.',
      labelNames: ['route', 'method', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.runsTotal = new Counter({
      name: 'toolrun_runs_total',
      help:
        'Run executions by the workers of this process that ended, by tool and outcome ' +
        '(handed_back, lease_lost and interrupted runs go on elsewhere).',
      labelNames: ['tool', 'outcome'],
      registers,
    });
    this.runDuration = new Histogram({
      name: 'toolrun_run_duration_seconds',
      help: 'Time from claiming a run to the end of its execution in this process, by tool and outcome.',
      labelNames: ['tool', 'outcome'],
      buckets: [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600],
      registers,
    });
    this.runPhaseDuration = new Histogram({
      name: 'toolrun_run_phase_seconds',
      help: 'Time each step of a run execution took in this process, by tool and phase (inputs, runner, store, commit, check).',
      labelNames: ['tool', 'phase'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800],
      registers,
    });
    this.webhookAttempts = new Counter({
      name: 'toolrun_webhook_attempts_total',
      help:
        'Webhook delivery attempts sent by this process, by outcome ' +
        '(delivered; retry: failed and rescheduled; given_up: failed for the last time).',
      labelNames: ['outcome'],
      registers,
    });
    this.webhookDuration = new Histogram({
      name: 'toolrun_webhook_attempt_duration_seconds',
      help: 'Time a webhook delivery attempt took, by outcome.',
      labelNames: ['outcome'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    const cluster = <L extends string>(name: string, help: string, labelNames: L[] = []) =>
      new Gauge<L>({ name, help, labelNames, registers: clusterRegisters });
    this.queued = cluster('toolrun_runs_queued', 'Runs waiting for a worker, cluster-wide, by tool.', ['tool']);
    this.running = cluster('toolrun_runs_running', 'Runs being worked on, cluster-wide, by tool.', ['tool']);
    this.queuedOldest = cluster(
      'toolrun_runs_queued_oldest_age_seconds',
      'Age of the oldest queued run, cluster-wide, by tool (0 when none is queued).',
      ['tool'],
    );
    this.sparksHeld = cluster('toolrun_sparks_held', 'Sparks held now by queued and running runs, all teams.');
    this.sparksAvailable = cluster('toolrun_sparks_available', 'Sparks the teams can spend now, all teams together.');
    this.ledger = cluster(
      'toolrun_ledger_sparks',
      'Sparks moved through the ledger since it began, by kind, all positive: granted (net of admin deductions), held, ' +
        'charged, released, refunded (charges given back for outputs that failed their check). ' +
        'available = granted - held + released - charged + refunded.',
      ['kind'],
    );
    this.webhooksPending = cluster('toolrun_webhook_deliveries_pending', 'Webhook deliveries not yet delivered or given up, cluster-wide.');
    this.webhooksOldestDue = cluster(
      'toolrun_webhook_deliveries_oldest_due_age_seconds',
      'How long the most overdue pending webhook delivery has been due, cluster-wide (0 when none is due).',
    );
    this.clusterUp = new Gauge({
      name: 'toolrun_cluster_metrics_up',
      help: '1 when the cluster-wide figures (queue, ledger, deliveries) were read from PostgreSQL for this scrape, 0 when not.',
      registers,
    });
  }

  observeHttp(route: string | undefined, method: string, status: number, seconds: number): void {
    // Route patterns (/v1/runs/:run_id), never raw URLs: ids must not become label values.
    const labels = { route: route ?? 'unmatched', method: HTTP_METHODS.has(method) ? method : 'OTHER', status: String(status) };
    this.httpRequests.inc(labels);
    this.httpDuration.observe(labels, seconds);
  }

  runEnded(tool: string, outcome: RunOutcome, seconds: number): void {
    this.runsTotal.inc({ tool, outcome });
    this.runDuration.observe({ tool, outcome }, seconds);
  }

  runPhase(tool: string, phase: RunPhase, seconds: number): void {
    this.runPhaseDuration.observe({ tool, phase }, seconds);
  }

  webhookAttempt(outcome: WebhookAttemptOutcome, seconds: number): void {
    this.webhookAttempts.inc({ outcome });
    this.webhookDuration.observe({ outcome }, seconds);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The Prometheus text exposition, with the cluster-wide figures read (or reused) first. */
  async render(): Promise<string> {
    await this.refreshCluster();
    const own = await this.registry.metrics();
    return this.clusterOk ? own + (await this.cluster.metrics()) : own;
  }

  private refreshCluster(): Promise<void> {
    if (this.reading) return this.reading;
    if (Date.now() - this.readAt < (this.opts.clusterRefreshMs ?? 5000)) return Promise.resolve();
    this.reading = readClusterFigures(this.opts.db)
      .then(
        (figures) => {
          this.setCluster(figures);
          this.readAt = Date.now();
        },
        (err: unknown) => {
          // Stale figures would look current: drop them and say so.
          this.opts.logger.warn({ err }, 'metrics: reading the cluster figures failed');
          this.clusterOk = false;
          this.clusterUp.set(0);
        },
      )
      .finally(() => {
        this.reading = null;
      });
    return this.reading;
  }

  private setCluster(f: ClusterFigures): void {
    // Tools whose runs are gone from the queue must not keep their last count.
    this.cluster.resetMetrics();
    for (const tool of this.opts.toolIds) {
      this.queued.set({ tool }, 0);
      this.running.set({ tool }, 0);
      this.queuedOldest.set({ tool }, 0);
    }
    let held = 0;
    for (const r of f.runs) {
      held += r.holdSparks;
      if (r.status === 'queued') {
        this.queued.set({ tool: r.tool }, r.count);
        this.queuedOldest.set({ tool: r.tool }, r.oldestAgeSeconds);
      } else {
        this.running.set({ tool: r.tool }, r.count);
      }
    }
    this.sparksHeld.set(held);
    this.sparksAvailable.set(f.sparksAvailable);
    for (const [kind, label, sign] of LEDGER_KINDS) this.ledger.set({ kind: label }, sign * f.ledger[kind]);
    this.webhooksPending.set(f.webhooks.pending);
    this.webhooksOldestDue.set(f.webhooks.oldestDueAgeSeconds);
    this.clusterOk = true;
    this.clusterUp.set(1);
  }
}
