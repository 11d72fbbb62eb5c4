// The part of s3rver's programmatic API the S3 tests use (the package ships no types).
declare module 's3rver' {
  import type { AddressInfo } from 'node:net';
  import type { Server } from 'node:http';

  namespace S3rver {
    interface Options {
      port?: number;
      address?: string;
      silent?: boolean;
      /** Where buckets and objects are kept on disk. */
      directory?: string;
      resetOnClose?: boolean;
      allowMismatchedSignatures?: boolean;
      vhostBuckets?: boolean;
      configureBuckets?: { name: string; configs?: (string | Buffer)[] }[];
    }
  }

  class S3rver {
    constructor(options?: S3rver.Options);
    /** Set once run() has resolved. */
    httpServer?: Server;
    run(): Promise<AddressInfo>;
    close(): Promise<void>;
    reset(): void;
  }
  export = S3rver;
}
