import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import type { HttpTimeoutsConfig } from '../config/config.js';
import { ApiError, envelope } from '../core/errors.js';
import { boundedChunks } from '../http/limits.js';
import { count } from '../core/wording.js';
import { LocalStorage, UploadNotFoundError } from './local.js';
import { PartTooLargeError } from './local-parts.js';
import { LockTimeoutError, partInProgress } from './storage.js';

function refuse(request: FastifyRequest, reply: FastifyReply, err: ApiError): FastifyReply {
  return reply.status(err.status).header('X-Request-Id', request.id).send(envelope(err, request.id));
}

function checkSignature(request: FastifyRequest, reply: FastifyReply, storage: LocalStorage, method: string, extra: string[]): boolean {
  const url = new URL(request.url, 'http://local');
  const verdict = storage.signer.verify(method, decodeURIComponent(url.pathname), url.searchParams, extra);
  if (verdict === 'ok') return true;
  refuse(
    request,
    reply,
    verdict === 'expired'
      ? new ApiError('url_expired', 'This signed URL has expired; request a new one from the API.')
      : new ApiError('signature_invalid', 'This URL is not validly signed for this request; use the URL exactly as the API gave it.'),
  );
  return false;
}

function partTooLarge(partNumber: number, limit: number): ApiError {
  return new ApiError(
    'payload_too_large',
    `Part ${partNumber} may hold at most ${count(limit, 'byte')} (part_size_bytes, or what size_bytes leaves for the last part).`,
    { details: { max_bytes: limit } },
  );
}

/**
 * The local backend's storage endpoints: part PUTs and downloads, authorised by the URL's HMAC
 * signature instead of an API key. Refusals use the API's JSON error envelope (403).
 *
 * A part may take `partMs` to arrive (several MiB over a slow link), with no pause longer than
 * `requestMs`; a part over its size is refused before a byte is read when its Content-Length says
 * so, and cut off at the limit otherwise; either way nothing of it is kept.
 */
export function localStorageRoutes(storage: LocalStorage, timeouts: HttpTimeoutsConfig): FastifyPluginAsync {
  return async (app) => {
    // Part bodies are raw bytes of any type: hand the stream to the handler untouched.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', (_request, _payload, done) => done(null));

    app.put<{ Params: { uploadId: string; partNumber: string } }>(
      '/storage/uploads/:uploadId/parts/:partNumber',
      { schema: { hide: true }, bodyLimit: Number.MAX_SAFE_INTEGER, config: { rawBody: true } },
      async (request, reply) => {
        if (!checkSignature(request, reply, storage, 'PUT', [])) return reply;
        const partNumber = Number(request.params.partNumber);
        if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > 10_000) {
          return refuse(request, reply, new ApiError('signature_invalid', 'Unknown part number.'));
        }
        try {
          const limit = await storage.partLimit(request.params.uploadId, partNumber);
          const declared = Number(request.headers['content-length']);
          if (Number.isFinite(declared) && declared > limit) return refuse(request, reply, partTooLarge(partNumber, limit));
          const body = boundedChunks(request.raw, { totalMs: timeouts.partMs - reply.elapsedTime, idleMs: timeouts.requestMs });
          const etag = await storage.writePart(request.params.uploadId, partNumber, body);
          return reply.status(200).header('ETag', etag).header('X-Request-Id', request.id).send();
        } catch (err) {
          if (err instanceof UploadNotFoundError) {
            return refuse(request, reply, new ApiError('upload_not_found', 'This upload is completed, expired or unknown.'));
          }
          if (err instanceof PartTooLargeError) return refuse(request, reply, partTooLarge(partNumber, err.limit));
          if (err instanceof LockTimeoutError) return refuse(request, reply, partInProgress(err, 'put'));
          if (err instanceof ApiError) return refuse(request, reply, err);
          throw err;
        }
      },
    );

    app.get<{ Params: { '*': string } }>('/storage/objects/*', { schema: { hide: true } }, async (request, reply) => {
      if (!checkSignature(request, reply, storage, 'GET', ['filename', 'type'])) return reply;
      const q = new URL(request.url, 'http://local').searchParams;
      const key = request.params['*'];
      let filePath: string;
      let size: number;
      try {
        filePath = storage.objectPath(key);
        size = (await fs.stat(filePath)).size;
      } catch {
        return refuse(request, reply, new ApiError('output_not_found', 'This file is no longer available.'));
      }
      const fileName = (q.get('filename') ?? 'download').replace(/["\\\r\n]/g, '_');
      return reply
        .header('Content-Type', q.get('type') || 'application/octet-stream')
        .header('Content-Length', String(size))
        .header('Content-Disposition', `attachment; filename="${fileName.replace(/[^\x20-\x7e]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(fileName)}`)
        .header('Cache-Control', 'private, no-store')
        .header('X-Request-Id', request.id)
        .send(createReadStream(filePath));
    });
  };
}
