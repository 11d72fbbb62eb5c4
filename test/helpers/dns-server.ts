// A DNS server on loopback UDP for the outbound tests: it answers A and AAAA questions from a
// table (NXDOMAIN for names not in it), or, silent, reads every query and never answers. Queries
// are recorded, so tests can wait on them.
import dgram from 'node:dgram';
import { Resolver } from 'node:dns/promises';
import type { AddressInfo } from 'node:net';

export interface DnsRecords {
  a?: string[];
  aaaa?: string[];
}

export interface DnsQuery {
  name: string;
  type: 'A' | 'AAAA' | number;
}

const TYPE_A = 1;
const TYPE_AAAA = 28;

function ipv6Bytes(ip: string): Buffer {
  const [head = '', tail = ''] = ip.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t] : h;
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

/** The question's name, type and where the question section ends. */
function readQuestion(msg: Buffer): { name: string; type: number; end: number } | null {
  const labels: string[] = [];
  let i = 12;
  while (i < msg.length && msg[i] !== 0) {
    const len = msg[i]!;
    labels.push(msg.subarray(i + 1, i + 1 + len).toString('latin1'));
    i += 1 + len;
  }
  if (i + 5 > msg.length) return null;
  return { name: labels.join('.').toLowerCase(), type: msg.readUInt16BE(i + 1), end: i + 5 };
}

export class DnsServer {
  readonly queries: DnsQuery[] = [];

  private constructor(
    private readonly socket: dgram.Socket,
    private readonly records: ReadonlyMap<string, DnsRecords> | null,
  ) {
    socket.on('message', (msg, from) => this.answer(msg, from));
  }

  /** records: answer from this table; null: a server that reads every query and stays silent. */
  static async start(records: Record<string, DnsRecords> | null): Promise<DnsServer> {
    const socket = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return new DnsServer(socket, records ? new Map(Object.entries(records)) : null);
  }

  /** `host:port`, as Resolver.setServers takes it. */
  get server(): string {
    const { address, port } = this.socket.address() as AddressInfo;
    return `${address}:${port}`;
  }

  /** A real c-ares resolver asking only this server (one try, so a test sees each query once). */
  resolver(timeoutMs = 60_000): Resolver {
    const r = new Resolver({ timeout: timeoutMs, tries: 1 });
    r.setServers([this.server]);
    return r;
  }

  private answer(msg: Buffer, from: dgram.RemoteInfo): void {
    const q = readQuestion(msg);
    if (!q) return;
    this.queries.push({ name: q.name, type: q.type === TYPE_A ? 'A' : q.type === TYPE_AAAA ? 'AAAA' : q.type });
    if (!this.records) return;
    const entry = this.records.get(q.name);
    const rdata =
      q.type === TYPE_A
        ? (entry?.a ?? []).map((ip) => Buffer.from(ip.split('.').map(Number)))
        : q.type === TYPE_AAAA
          ? (entry?.aaaa ?? []).map(ipv6Bytes)
          : [];
    const header = Buffer.alloc(12);
    header.writeUInt16BE(msg.readUInt16BE(0), 0);
    // QR, opcode 0, AA, RD copied, RA; rcode 3 (NXDOMAIN) for a name not in the table.
    header.writeUInt16BE(0x8400 | (msg.readUInt16BE(2) & 0x0100) | 0x0080 | (entry ? 0 : 3), 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(rdata.length, 6);
    const answers = rdata.map((data) => {
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
      rr.writeUInt16BE(q.type, 2);
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(60, 6);
      rr.writeUInt16BE(data.length, 10);
      return Buffer.concat([rr, data]);
    });
    this.socket.send(Buffer.concat([header, msg.subarray(12, q.end), ...answers]), from.port, from.address);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }
}
