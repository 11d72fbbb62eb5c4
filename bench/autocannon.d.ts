// The part of autocannon's programmatic API the benchmarks use (the package ships no types).
declare module 'autocannon' {
  namespace autocannon {
    interface Options {
      url: string;
      method?: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'HEAD';
      headers?: Record<string, string>;
      connections?: number;
      pipelining?: number;
      /** Seconds. */
      duration?: number;
      timeout?: number;
      title?: string;
    }

    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      total: number;
      p50: number;
      p90: number;
      p99: number;
      p99_9?: number;
    }

    interface Result {
      title?: string;
      url: string;
      connections: number;
      pipelining: number;
      /** Seconds. */
      duration: number;
      errors: number;
      timeouts: number;
      non2xx: number;
      '2xx': number;
      statusCodeStats: Record<string, { count: number }>;
      /** Milliseconds. */
      latency: Histogram;
      /** Requests per second, sampled once a second. */
      requests: Histogram & { sent: number };
      /** Bytes per second. */
      throughput: Histogram;
    }
  }

  function autocannon(opts: autocannon.Options): PromiseLike<autocannon.Result>;
  export = autocannon;
}
