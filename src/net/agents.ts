import http from 'node:http';
import https from 'node:https';
import type { LookupFunction, Socket } from 'node:net';
import type { ResolvedAddress } from './resolve.js';

export interface AgentPoolOptions {
  /** An idle socket is closed after this long; an agent left with no socket is dropped after it too. */
  idleMs: number;
  /** Agents kept at most; past it the least recently used one is retired. */
  maxAgents: number;
  /** Idle sockets kept across all agents at most; a socket freed past it is closed. */
  maxIdleSockets: number;
  /** TLS sessions each agent keeps for resuming a new connection to its own endpoint. */
  maxCachedSessions?: number;
}

type Pinned = http.Agent & { lastUsed: number; retired: boolean };

/** A lookup that answers the one vetted address, whatever name is asked. */
export function pinnedLookup(address: ResolvedAddress): LookupFunction {
  return (_host, options, cb) => {
    if ((options as { all?: boolean }).all) (cb as unknown as (e: null, a: ResolvedAddress[]) => void)(null, [address]);
    else cb(null, address.address, address.family);
  };
}

function socketsIn(dict: NodeJS.ReadOnlyDict<Socket[]>): number {
  let n = 0;
  for (const list of Object.values(dict)) n += list?.length ?? 0;
  return n;
}

/**
 * Keep-alive agents for outbound requests, one per (scheme, host, port, vetted address). The
 * vetted address is part of the key and the agent's own lookup answers only it, so a socket is
 * only ever reused for the same host and port on the address that was vetted for this request:
 * when DNS moves the host, the new address gets a new agent, and no socket crosses endpoints.
 * The agents carry no TLS options of their own (the system's trust store, the host name as SNI
 * and for the certificate check), so the key is also the TLS setting.
 *
 * Bounded: idle sockets close after `idleMs` (and do not keep the process alive), at most
 * `maxIdleSockets` are kept in all, and at most `maxAgents` agents are cached (least recently
 * used retired first: its idle sockets closed, its busy ones closed when their response ends).
 * Sockets in use are bounded by the caller's concurrency, as without the pool.
 */
export class AgentPool {
  private readonly agents = new Map<string, Pinned>();
  private closed = false;

  constructor(private readonly opts: AgentPoolOptions) {}

  /** The agent for this request, or false (a one-off connection) once the pool is closed. */
  agentFor(url: URL, address: ResolvedAddress): http.Agent | false {
    if (this.closed) return false;
    const tls = url.protocol === 'https:';
    const port = url.port || (tls ? '443' : '80');
    // Host names cannot hold a space; the address and family are the vetted ones.
    const key = `${url.protocol} ${url.hostname.toLowerCase()} ${port} ${address.address} ${address.family}`;
    const now = Date.now();
    let agent = this.agents.get(key);
    if (agent) this.agents.delete(key);
    else agent = this.create(tls, address);
    agent.lastUsed = now;
    // Map order is use order: the least recently used come first.
    this.agents.set(key, agent);
    this.prune(now);
    return agent;
  }

  /** Agents cached now. */
  get size(): number {
    return this.agents.size;
  }

  /** Idle sockets kept now, across all agents. */
  get idleSockets(): number {
    let n = 0;
    for (const a of this.agents.values()) n += socketsIn(a.freeSockets);
    return n;
  }

  /** Closes every socket, busy ones too, and makes later requests one-off connections. */
  close(): void {
    this.closed = true;
    for (const a of this.agents.values()) {
      a.retired = true;
      a.destroy();
    }
    this.agents.clear();
  }

  private create(tls: boolean, address: ResolvedAddress): Pinned {
    const options: https.AgentOptions = {
      keepAlive: true,
      // Idle sockets time out and are destroyed; a busy one's timeout only emits an event the
      // request ignores (its deadline is the request's own).
      timeout: this.opts.idleMs,
      scheduling: 'lifo',
      // Agent options override the request's: every connection of this agent goes to the vetted address.
      lookup: pinnedLookup(address),
    };
    const base = tls ? new https.Agent({ ...options, maxCachedSessions: this.opts.maxCachedSessions ?? 4 }) : new http.Agent(options);
    const agent = Object.assign(base, { lastUsed: 0, retired: false });
    // After the agent's own handler: a socket it kept idle is closed again when the agent is
    // retired or when the pool already holds its share of idle sockets.
    agent.on('free', (socket: Socket) => {
      if (!Object.values(agent.freeSockets).some((list) => list?.includes(socket))) return;
      if (agent.retired || this.idleSockets > this.opts.maxIdleSockets) socket.destroy();
    });
    return agent;
  }

  private prune(now: number): void {
    for (const [key, agent] of this.agents) {
      const over = this.agents.size > this.opts.maxAgents;
      const empty = socketsIn(agent.sockets) === 0 && socketsIn(agent.freeSockets) === 0 && now - agent.lastUsed >= this.opts.idleMs;
      if (!over && !empty) break;
      this.agents.delete(key);
      agent.retired = true;
      for (const list of Object.values(agent.freeSockets)) for (const s of list ?? []) s.destroy();
    }
  }
}
