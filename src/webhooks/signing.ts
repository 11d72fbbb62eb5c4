import { createHmac, randomBytes } from 'node:crypto';

/** whsec_ + 40 random characters (base62-ish from base64url). */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(30).toString('base64url')}`;
}

/**
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "t." + the raw body>`, the scheme Stripe and Mux use,
 * with one v1 per live secret, the newest first: while a rotated-out secret is still live, a
 * receiver holding either one verifies (Stripe's and the SDK's verifiers accept any match).
 */
export function signatureHeader(secrets: string | readonly string[], body: Buffer | string, timestampSeconds: number): string {
  let header = `t=${timestampSeconds}`;
  for (const secret of typeof secrets === 'string' ? [secrets] : secrets) {
    header += `,v1=${createHmac('sha256', secret).update(`${timestampSeconds}.`).update(body).digest('hex')}`;
  }
  return header;
}
