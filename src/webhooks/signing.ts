import { createHmac, randomBytes } from 'node:crypto';

/** whsec_ + 40 random characters (base62-ish from base64url). */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(30).toString('base64url')}`;
}

/** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "t." + the raw body>`, the scheme Stripe and Mux use. */
export function signatureHeader(secret: string, body: Buffer | string, timestampSeconds: number): string {
  const mac = createHmac('sha256', secret).update(`${timestampSeconds}.`).update(body).digest('hex');
  return `t=${timestampSeconds},v1=${mac}`;
}
