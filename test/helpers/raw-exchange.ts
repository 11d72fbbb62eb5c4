// Raw bytes over a TCP socket, a whole exchange at once (raw-http.ts drives one connection step
// by step): for requests no HTTP client will send (broken framing, lying Content-Length, chunked
// garbage), and a reader for every HTTP/1.1 response that comes back.
import net from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RawExchange {
  responses: RawResponse[];
  /** The server closed (or reset) the connection; false when it was still open at the end. */
  closedByServer: boolean;
  /** Bytes after the last whole response (a truncated one, or not HTTP at all). */
  rest: string;
}

/** Parses consecutive responses (bodies framed by Content-Length; chunked ones are decoded). */
export function parseResponses(data: Buffer): { responses: RawResponse[]; rest: string } {
  const responses: RawResponse[] = [];
  let text = data.toString('latin1');
  for (;;) {
    const end = text.indexOf('\r\n\r\n');
    if (end === -1) break;
    const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
    if (!m) break;
    const headers: Record<string, string> = {};
    for (const l of lines) {
      const i = l.indexOf(':');
      if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    let rest = text.slice(end + 4);
    let body = '';
    if (headers['transfer-encoding']?.includes('chunked')) {
      for (;;) {
        const nl = rest.indexOf('\r\n');
        const size = parseInt(rest.slice(0, nl), 16);
        if (nl === -1 || Number.isNaN(size)) return { responses, rest: text };
        body += rest.slice(nl + 2, nl + 2 + size);
        rest = rest.slice(nl + 2 + size + 2);
        if (size === 0) break;
      }
    } else {
      const length = Number(headers['content-length'] ?? 0);
      if (rest.length < length) break;
      body = rest.slice(0, length);
      rest = rest.slice(length);
    }
    responses.push({ status: Number(m[1]), headers, body: Buffer.from(body, 'latin1').toString('utf8') });
    text = rest;
  }
  return { responses, rest: text };
}

/**
 * Connects, writes the chunks (halfClose: then ends our side), and reads until the server closes
 * the connection or stays silent for idleMs (then we close it).
 */
export function rawExchange(port: number, chunks: (string | Buffer)[], opts: { halfClose?: boolean; idleMs?: number } = {}): Promise<RawExchange> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    let closedByServer = false;
    let timer: NodeJS.Timeout | undefined;
    const idle = () => {
      clearTimeout(timer);
      timer = setTimeout(() => socket.destroy(), opts.idleMs ?? 1500);
    };
    socket.on('connect', () => {
      for (const c of chunks) socket.write(c);
      if (opts.halfClose) socket.end();
      idle();
    });
    socket.on('data', (c: Buffer) => {
      received.push(c);
      idle();
    });
    socket.on('end', () => {
      closedByServer = true;
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      // A reset is the server closing on us; anything else is a failure of the test itself.
      if (err.code === 'ECONNRESET' || err.code === 'EPIPE') closedByServer = true;
      else reject(err);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      const { responses, rest } = parseResponses(Buffer.concat(received));
      resolve({ responses, closedByServer, rest });
    });
  });
}
