import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** 32 random bytes, base64url: the secret of a session or an invite link. */
export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Tokens carry 256 random bits, so a plain SHA-256 is enough at rest. */
export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/**
 * The CSRF token of a session: derived from the session's secret (never from what is stored), so
 * nothing more is kept, and a page can only learn it by reading GET /console/api/session.
 */
export function csrfTokenOf(sessionToken: string): string {
  return createHash('sha256').update(`csrf:${sessionToken}`, 'utf8').digest('base64url');
}

export function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}
