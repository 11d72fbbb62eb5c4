// A real S3 for deploy/compose.s3.yaml: Ceph's RADOS Gateway (scripts/ceph-gateway.ts, the same
// one CI's S3 stage runs), a bucket in it, and a forwarder from the containers' network to the
// gateway, which listens on 127.0.0.1 only. The keys go to files, as an operator would keep them.
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startGateway, type Gateway } from '../../scripts/ceph-gateway.js';

export interface S3ForCompose {
  /** What TOOLRUN_STORAGE says. */
  storage: string;
  /** The gateway as the containers and the host both reach it. */
  endpoint: string;
  accessKeyIdFile: string;
  secretAccessKeyFile: string;
  /** Starts relaying; called once the network's bridge (and so its address) exists. */
  relay(): Promise<void>;
  stop(): Promise<void>;
}

/** A port free on 127.0.0.1 now, to listen on elsewhere later. */
async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** Relays every connection to `host`:`port` on to `target` (host:port). */
async function forward(host: string, port: number, target: URL): Promise<{ close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return {
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Starts the gateway, and the forwarder on `host` (the containers' network gateway) when asked. */
export async function startS3(host: string): Promise<S3ForCompose> {
  const gateway: Gateway = await startGateway();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-deploy-s3-'));
  let relay: Awaited<ReturnType<typeof forward>> | null = null;
  const stop = async () => {
    await relay?.close();
    await gateway.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    const bucket = 'toolrun-deploy';
    const client = new S3Client({
      region: gateway.region,
      endpoint: gateway.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: gateway.accessKeyId, secretAccessKey: gateway.secretAccessKey },
    });
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    client.destroy();
    const port = await freePort();
    fs.chmodSync(dir, 0o755);
    // Read by the containers' user (uid 10001) through bind mounts.
    const accessKeyIdFile = path.join(dir, 's3-access-key-id');
    const secretAccessKeyFile = path.join(dir, 's3-secret-access-key');
    fs.writeFileSync(accessKeyIdFile, `${gateway.accessKeyId}\n`, { mode: 0o644 });
    fs.writeFileSync(secretAccessKeyFile, `${gateway.secretAccessKey}\n`, { mode: 0o644 });
    return {
      storage: `s3://${bucket}/deploy`,
      endpoint: `http://${host}:${port}`,
      accessKeyIdFile,
      secretAccessKeyFile,
      relay: async () => {
        relay ??= await forward(host, port, new URL(gateway.endpoint));
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
