// A TCP proxy in front of PostgreSQL that reads the frontend/backend protocol of each connection
// through it, so a test can lose the answer to one COMMIT for real: armed with a piece of SQL, it
// lets the next COMMIT of a transaction that ran such a statement reach the server, waits until
// the server has answered it (the transaction is committed), swallows that answer and cuts the
// connection; or it cuts the connection before that COMMIT is sent on. Either way the client sees
// its COMMIT fail with a dropped connection, as after a network cut or a server crash, and cannot
// tell which happened. Plain TCP only (pg sends no SSLRequest unless told to).
import net from 'node:net';

/** Splits a byte stream into protocol messages: [type][int32 length][body], or untyped startup packets. */
class Framer {
  private buf = Buffer.alloc(0);
  constructor(private typed: boolean) {}

  push(chunk: Buffer): { type: string | null; body: Buffer; raw: Buffer }[] {
    this.buf = Buffer.concat([this.buf, chunk]);
    const out: { type: string | null; body: Buffer; raw: Buffer }[] = [];
    for (;;) {
      const head = this.typed ? 5 : 4;
      if (this.buf.length < head) return out;
      const len = this.buf.readInt32BE(this.typed ? 1 : 0);
      const total = (this.typed ? 1 : 0) + len;
      if (this.buf.length < total) return out;
      const raw = this.buf.subarray(0, total);
      this.buf = this.buf.subarray(total);
      const type = this.typed ? String.fromCharCode(raw[0]!) : null;
      const body = raw.subarray(head);
      if (!this.typed) {
        const code = raw.readInt32BE(4);
        if (code === 80877103 || code === 80877104) throw new Error('the commit-cut proxy does not speak SSL or GSS encryption');
        // After the StartupMessage every frontend message carries a type byte.
        this.typed = true;
      }
      out.push({ type, body, raw });
    }
  }
}

/** The SQL text of a simple Query ('Q') or a Parse ('P') message; null for other messages. */
function statementText(type: string | null, body: Buffer): string | null {
  if (type === 'Q') return body.toString('utf8', 0, body.indexOf(0));
  if (type === 'P') {
    const nameEnd = body.indexOf(0);
    return body.toString('utf8', nameEnd + 1, body.indexOf(0, nameEnd + 1));
  }
  return null;
}

interface Armed {
  sqlContains: string;
  /** 'after': the server commits, its answer is lost; 'before': the COMMIT never reaches the server. */
  when: 'after' | 'before';
  cut: () => void;
}

export class PgCommitCut {
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private armed: Armed | null = null;
  /** Connections opened through the proxy so far. */
  connections = 0;

  private constructor(
    private readonly target: { host: string; port: number },
    readonly port: number,
    server: net.Server,
  ) {
    this.server = server;
  }

  /** Listens on a free loopback port and forwards to the server of `databaseUrl`. */
  static async start(databaseUrl: string): Promise<PgCommitCut> {
    const u = new URL(databaseUrl);
    const target = { host: u.hostname, port: Number(u.port || 5432) };
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const port = (server.address() as net.AddressInfo).port;
    const proxy = new PgCommitCut(target, port, server);
    server.on('connection', (client) => proxy.handle(client));
    return proxy;
  }

  /** `databaseUrl` with its host and port replaced by the proxy's. */
  urlFor(databaseUrl: string): string {
    const u = new URL(databaseUrl);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  /**
   * Cuts the connection at the next COMMIT of a transaction that ran a statement containing
   * `sqlContains`: after the server answered it (committed, the answer lost), or before the COMMIT
   * is sent on (the server rolls the transaction back). Resolves once the connection is cut.
   */
  arm(sqlContains: string, when: 'after' | 'before' = 'after'): Promise<void> {
    return new Promise((resolve) => {
      this.armed = { sqlContains, when, cut: resolve };
    });
  }

  private handle(client: net.Socket): void {
    this.connections++;
    const upstream = net.connect(this.target.port, this.target.host);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    const fromClient = new Framer(false);
    const fromServer = new Framer(true);
    let sawStatement = false;
    let losing: Armed | null = null;
    client.on('data', (chunk: Buffer) => {
      for (const m of fromClient.push(chunk)) {
        const sql = statementText(m.type, m.body);
        const armed = this.armed;
        if (sql !== null && armed && sql.includes(armed.sqlContains)) sawStatement = true;
        if (sql !== null && /^\s*(COMMIT|ROLLBACK)\b/i.test(sql)) {
          if (armed && sawStatement && /^\s*COMMIT\b/i.test(sql)) {
            this.armed = null;
            if (armed.when === 'before') {
              client.destroy();
              upstream.destroy();
              armed.cut();
              return;
            }
            losing = armed;
          }
          sawStatement = false;
        }
        upstream.write(m.raw);
      }
    });
    upstream.on('data', (chunk: Buffer) => {
      for (const m of fromServer.push(chunk)) {
        if (!losing) {
          client.write(m.raw);
        } else if (m.type === 'Z') {
          // ReadyForQuery after the COMMIT: the server is done with it. Its answer never arrives.
          const done = losing;
          losing = null;
          client.destroy();
          upstream.destroy();
          done.cut();
          return;
        }
      }
    });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
