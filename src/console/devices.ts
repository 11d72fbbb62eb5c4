import type { Queryable } from '../db/pool.js';
import { hashToken, newToken } from './tokens.js';

/** How long a browser stays known to an account without signing in again. */
export const DEVICE_LIFETIME_SECONDS = 90 * 24 * 3600;

/** True when the device cookie's token was issued to this account and has not expired. */
export async function isDeviceOf(db: Queryable, token: string, account: string): Promise<boolean> {
  const { rows } = await db.query(
    'SELECT 1 FROM console_devices WHERE token_hash = $1::bytea AND account = $2::text AND expires_at > now()',
    [hashToken(token), account],
  );
  return rows.length > 0;
}

/**
 * A new device token for the account, issued on a successful sign-in. The one the browser sent
 * (if any) is deleted: its cookie is about to be replaced, so it only ever stands for one browser.
 */
export async function issueDevice(db: Queryable, account: string, previous: string | null): Promise<string> {
  const token = newToken();
  await db.query(
    `WITH gone AS (DELETE FROM console_devices WHERE token_hash = $3::bytea)
     INSERT INTO console_devices (token_hash, account, expires_at) VALUES ($1::bytea, $2::text, now() + make_interval(secs => $4::integer))`,
    [hashToken(token), account, previous === null ? null : hashToken(previous), DEVICE_LIFETIME_SECONDS],
  );
  return token;
}

/** Expired devices mark nothing; sign-ins sweep them. */
export async function deleteExpiredDevices(db: Queryable): Promise<void> {
  await db.query('DELETE FROM console_devices WHERE expires_at <= now()');
}
