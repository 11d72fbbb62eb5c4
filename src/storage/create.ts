import { randomBytes } from 'node:crypto';
import type { Config } from '../config/config.js';
import type { Queryable } from '../db/pool.js';
import { LocalStorage } from './local.js';
import { UrlSigner } from './signing.js';
import type { Storage } from './storage.js';

/**
 * The key that signs local storage URLs. It lives in PostgreSQL so that every API process, on
 * every machine, signs and verifies with the same key without extra configuration.
 */
export async function loadUrlSigningKey(db: Queryable): Promise<Buffer> {
  await db.query(
    `INSERT INTO service_secrets (name, value) VALUES ('url_signing', $1::bytea) ON CONFLICT (name) DO NOTHING`,
    [randomBytes(32)],
  );
  const { rows } = await db.query<{ value: Buffer }>(`SELECT value FROM service_secrets WHERE name = 'url_signing'`);
  if (!rows[0]) throw new Error('url signing key missing');
  return rows[0].value;
}

export async function createStorage(config: Config, db: Queryable): Promise<Storage> {
  // Loaded only for S3 deployments: the AWS SDK costs about 8 MiB of memory in every process.
  if (config.storage.kind === 's3') return new (await import('./s3.js')).S3Storage(config.storage);
  return new LocalStorage(config.storage.root, config.publicBaseUrl, new UrlSigner(await loadUrlSigningKey(db)), config.storage.partLockWaitMs);
}
