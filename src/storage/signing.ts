import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * HMAC-signed, expiring URLs for the local backend. The signature covers the method, the path
 * and every signed query value, so a URL cannot be reused for another part, object or name.
 */
export class UrlSigner {
  constructor(private readonly secret: Buffer) {}

  private mac(method: string, pathname: string, params: [string, string][]): string {
    const canonical = [method.toUpperCase(), pathname, ...params.map(([k, v]) => `${k}=${v}`)].join('\n');
    return createHmac('sha256', this.secret).update(canonical).digest('hex');
  }

  sign(method: string, baseUrl: string, pathname: string, expiresInSeconds: number, extra: Record<string, string> = {}, now = Date.now()): string {
    const expires = String(Math.floor(now / 1000) + expiresInSeconds);
    const params: [string, string][] = [...Object.entries(extra).sort(([a], [b]) => a.localeCompare(b)), ['expires', expires]];
    const q = new URLSearchParams(params);
    q.set('signature', this.mac(method, pathname, params));
    return `${baseUrl}${pathname}?${q.toString()}`;
  }

  /** 'ok', or why the URL is refused. */
  verify(method: string, pathname: string, query: URLSearchParams, extraKeys: string[], now = Date.now()): 'ok' | 'expired' | 'bad_signature' {
    const signature = query.get('signature') ?? '';
    const expires = query.get('expires') ?? '';
    if (!/^[0-9a-f]{64}$/.test(signature) || !/^\d{1,12}$/.test(expires)) return 'bad_signature';
    const params: [string, string][] = [
      ...[...extraKeys].sort((a, b) => a.localeCompare(b)).map((k): [string, string] => [k, query.get(k) ?? '']),
      ['expires', expires],
    ];
    const expected = Buffer.from(this.mac(method, pathname, params), 'hex');
    if (!timingSafeEqual(expected, Buffer.from(signature, 'hex'))) return 'bad_signature';
    if (Number(expires) * 1000 <= now) return 'expired';
    return 'ok';
  }
}
