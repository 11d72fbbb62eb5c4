/** The console's session cookie. */
export const SESSION_COOKIE = 'toolrun_session';

/**
 * Reads one cookie from a Cookie header (RFC 6265: `name=value` pairs separated by `;`). A name
 * sent twice keeps its first value, as browsers send the most specific path first.
 */
export function readCookie(header: string | undefined, name: string): string | null {
  if (!header) return null;
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=');
    if (eq < 0) continue;
    if (pair.slice(0, eq).trim() !== name) continue;
    let value = pair.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    return value;
  }
  return null;
}

export interface CookieOptions {
  secure: boolean;
  maxAgeSeconds: number;
}

/** HttpOnly (scripts never see it), SameSite=Lax, scoped to the console's paths. */
export function sessionCookie(token: string, opts: CookieOptions): string {
  return [
    `${SESSION_COOKIE}=${token}`,
    'Path=/console',
    `Max-Age=${Math.max(0, Math.floor(opts.maxAgeSeconds))}`,
    'HttpOnly',
    'SameSite=Lax',
    ...(opts.secure ? ['Secure'] : []),
  ].join('; ');
}

export function clearedSessionCookie(secure: boolean): string {
  return sessionCookie('', { secure, maxAgeSeconds: 0 });
}

/** The device cookie: marks a browser that signed in to an account before (see throttle.ts). */
export const DEVICE_COOKIE = 'toolrun_device';

/**
 * Sent only to the sign-in endpoint, which alone reads it; SameSite=Strict, as no other site has a
 * reason to make a browser sign in here.
 */
export function deviceCookie(token: string, opts: CookieOptions): string {
  return [
    `${DEVICE_COOKIE}=${token}`,
    'Path=/console/api/session',
    `Max-Age=${Math.max(0, Math.floor(opts.maxAgeSeconds))}`,
    'HttpOnly',
    'SameSite=Strict',
    ...(opts.secure ? ['Secure'] : []),
  ].join('; ');
}
