import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireAuth } from '../auth/plugin.js';
import { AUTH_ERRORS, errorResponses } from '../core/schemas.js';
import { CompleteBodySchema, FileIdParamsSchema, FileSchema, FileUploadSchema, UploadUrlBodySchema } from './schemas.js';
import { completeUpload, startUpload, type FilesDeps } from './service.js';

export function fileSchemas(app: { addSchema(s: unknown): unknown }): void {
  app.addSchema(FileUploadSchema);
  app.addSchema(FileSchema);
}

export function fileRoutes(deps: FilesDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/v1/files/upload-url',
      {
        config: { scope: 'run' },
        schema: {
          operationId: 'createFileUpload',
          summary: 'Start a file upload: part URLs to PUT the bytes to',
          description:
            'PUT each byte range (part_size_bytes each, the last may be smaller) to its part URL, keep each response ETag header, then call complete.',
          tags: ['files'],
          body: UploadUrlBodySchema,
          response: { 201: Type.Ref('FileUpload', { description: 'The file id and one presigned URL per part' }), ...errorResponses(...AUTH_ERRORS, 'payload_too_large', 'unsupported_media_type') },
        },
      },
      async (request, reply) => {
        const auth = requireAuth(request);
        const upload = await startUpload(deps, { teamId: auth.teamId, keyId: auth.keyId }, request.body);
        return reply.status(201).send(upload);
      },
    );

    app.post(
      '/v1/files/:file_id/complete',
      {
        config: { scope: 'run' },
        schema: {
          operationId: 'completeFileUpload',
          summary: 'Complete an upload; the bytes are checked and probed',
          tags: ['files'],
          params: FileIdParamsSchema,
          body: CompleteBodySchema,
          response: {
            200: Type.Ref('File', { description: 'The file, ready or rejected (with the problem); completing again returns the same' }),
            ...errorResponses(
              ...AUTH_ERRORS,
              'file_not_found',
              'upload_not_found',
              'part_in_progress',
              'part_too_small',
              'payload_too_large',
              'unsupported_media_type',
            ),
          },
        },
      },
      async (request) => {
        const auth = requireAuth(request);
        return completeUpload(deps, auth.teamId, request.params.file_id, request.body);
      },
    );
  };
}
