import { hashKey } from '../../src/auth/keys.js';
import { authenticateKey } from '../../src/auth/repository.js';
import { createDb } from '../../src/db/pool.js';
import type { Logger } from 'pino';

export interface ProbeResult {
  queriesPerSecond: number;
  meanMs: number;
}

/**
 * Diagnostic: the authentication + token-bucket query alone, no HTTP, from `concurrency` loops
 * over a pool the size the service uses. Its rate is a ceiling for authenticated requests.
 */
export async function probeAuthQuery(
  url: string,
  key: string,
  logger: Logger,
  opts: { seconds: number; concurrency: number; poolSize: number },
): Promise<ProbeResult> {
  const db = createDb({ connectionString: url, logger, max: opts.poolSize, applicationName: 'toolrun-bench-probe' });
  const hash = hashKey(key);
  try {
    await authenticateKey(db.relaxed, hash, 1); // connect + prepare once
    let count = 0;
    let totalMs = 0;
    const deadline = performance.now() + opts.seconds * 1000;
    const loop = async () => {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        const ctx = await authenticateKey(db.relaxed, hash, 1);
        totalMs += performance.now() - t0;
        if (!ctx?.taken) throw new Error('probe: the bench key was refused');
        count++;
      }
    };
    const start = performance.now();
    await Promise.all(Array.from({ length: opts.concurrency }, loop));
    const elapsed = (performance.now() - start) / 1000;
    return { queriesPerSecond: count / elapsed, meanMs: count ? totalMs / count : 0 };
  } finally {
    await db.close();
  }
}
