import net from 'node:net';

/** One HTTP/1.1 response read off a raw connection. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Bytes the response takes in the stream (head and body). */
  length: number;
}

/** A raw TCP connection to the server: write any bytes, read back what it answered, see when it closes. */
export class RawConnection {
  socket: net.Socket;
  private chunks: Buffer[] = [];
  /** Resolves when the connection closes, with the bytes written to it by then. */
  closed: Promise<{ bytesWritten: number }>;
  private isClosed = false;

  constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on('data', (c: Buffer) => this.chunks.push(c));
    // A reset by the server is an expected outcome here; `closed` reports it.
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) =>
      socket.once('close', () => {
        this.isClosed = true;
        resolve({ bytesWritten: socket.bytesWritten });
      }),
    );
  }

  static open(baseUrl: string): Promise<RawConnection> {
    const url = new URL(baseUrl);
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(url.port), url.hostname, () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  get open(): boolean {
    return !this.isClosed;
  }

  /** Writes if the connection still takes bytes; false once the server has closed it. */
  write(data: string | Buffer): boolean {
    if (this.isClosed || this.socket.destroyed || !this.socket.writable) return false;
    this.socket.write(data);
    return true;
  }

  received(): Buffer {
    return Buffer.concat(this.chunks);
  }

  /** The first response received, once it is complete. */
  response(): RawResponse | null {
    return parseResponse(this.received());
  }

  destroy(): void {
    this.socket.destroy();
  }

  /** Resolves once the server has closed the connection; rejects if it has not within ms. */
  async closedWithin(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.closed,
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`the server kept the connection open for ${ms} ms`)), ms);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The response at the start of buf (its body framed by Content-Length), or null while incomplete. */
export function parseResponse(buf: Buffer): RawResponse | null {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine, ...lines] = buf.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine ?? '')?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  if (buf.length < end + 4 + length) return null;
  return { status, headers, body: buf.subarray(end + 4, end + 4 + length).toString('utf8'), length: end + 4 + length };
}

export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Sends data `piece` bytes at a time, gapMs apart, until done, the connection closes or stop(); returns the bytes sent. */
export async function drip(conn: RawConnection, data: Buffer, piece: number, gapMs: number, stop: () => boolean = () => false): Promise<number> {
  let sent = 0;
  while (sent < data.length && conn.open && !stop()) {
    if (!conn.write(data.subarray(sent, sent + piece))) break;
    sent = Math.min(data.length, sent + piece);
    await pause(gapMs);
  }
  return sent;
}
