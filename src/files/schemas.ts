import { Type, type Static } from 'typebox';
import { EXAMPLE_FILE_ID, EXAMPLE_UPLOAD_ID } from '../core/examples.js';
import { PathUuid } from '../core/schemas.js';

export const UploadUrlBodySchema = Type.Object(
  {
    file_name: Type.String({ minLength: 1, maxLength: 255 }),
    // Printable ASCII: the declared type becomes the stored object's Content-Type header (S3),
    // where anything else is refused by the HTTP client or breaks the request signature.
    mime_type: Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: '^[\\x20-\\x7E]*$',
      description: 'The declared media type, printable ASCII (e.g. image/png); the bytes decide what the file is',
    }),
    size_bytes: Type.Integer({ exclusiveMinimum: 0, description: 'The exact file size in bytes' }),
  },
  { additionalProperties: false, examples: [{ file_name: 'photo.jpg', mime_type: 'image/jpeg', size_bytes: 12582912 }] },
);
export type UploadUrlBody = Static<typeof UploadUrlBodySchema>;

export const FileUploadSchema = Type.Object(
  {
    object: Type.Literal('file_upload'),
    file_id: Type.String({ format: 'uuid', description: 'Usable in media inputs once the upload is complete' }),
    upload_id: Type.String({ description: 'To be sent back when completing' }),
    part_size_bytes: Type.Integer({ description: 'Bytes per part; the last part may be smaller' }),
    parts: Type.Array(
      Type.Object(
        {
          part_number: Type.Integer({ minimum: 1 }),
          url: Type.String({ description: 'Presigned URL: PUT the part bytes here and keep the ETag response header' }),
        },
        { additionalProperties: false },
      ),
    ),
    expires_in_seconds: Type.Integer({ description: 'How long the part URLs work' }),
  },
  {
    additionalProperties: false,
    $id: 'FileUpload',
    title: 'file_upload',
    examples: [
      {
        object: 'file_upload',
        file_id: EXAMPLE_FILE_ID,
        upload_id: EXAMPLE_UPLOAD_ID,
        part_size_bytes: 8388608,
        parts: [1, 2].map((n) => ({
          part_number: n,
          url: `https://toolrun.example.com/storage/uploads/${EXAMPLE_UPLOAD_ID}/parts/${n}?expires=1746093600&signature=8d41e2`,
        })),
        expires_in_seconds: 3600,
      },
    ],
  },
);
export type FileUpload = Static<typeof FileUploadSchema>;

export const CompleteBodySchema = Type.Object(
  {
    upload_id: Type.String({ minLength: 1 }),
    parts: Type.Array(
      Type.Object(
        {
          part_number: Type.Integer({ minimum: 1, maximum: 10000 }),
          etag: Type.String({ minLength: 1, description: "The ETag header returned by that part's PUT" }),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 10000 },
    ),
  },
  {
    additionalProperties: false,
    examples: [
      {
        upload_id: EXAMPLE_UPLOAD_ID,
        parts: [
          { part_number: 1, etag: '"5d41402abc4b2a76b9719d911017c592"' },
          { part_number: 2, etag: '"7d793037a0760186574b0282f2f435e7"' },
        ],
      },
    ],
  },
);
export type CompleteBody = Static<typeof CompleteBodySchema>;

export const FILE_STATUS_DESCRIPTION =
  "The file's state after completion: `ready` (a decodable image, video or audio file; usable in media slots of its kind) or " +
  '`rejected` (the bytes are not a decodable image, video or audio file, whatever the declared type). Completed files are ' +
  'kept for the retention period (default 7 days) and then deleted, after which their ids are no longer accepted.';

export const FileSchema = Type.Object(
  {
    object: Type.Literal('file'),
    id: Type.String({ format: 'uuid', description: 'File id to use in media inputs' }),
    status: Type.String({ enum: ['ready', 'rejected'], description: FILE_STATUS_DESCRIPTION }),
    problem: Type.Optional(
      Type.String({
        description:
          'Why the bytes were refused, in plain English (not to be parsed); only on a rejected file. ' +
          'E.g. "unrecognised file type" or "the image does not decode: ..."',
      }),
    ),
  },
  {
    additionalProperties: false,
    $id: 'File',
    title: 'file',
    examples: [{ object: 'file', id: EXAMPLE_FILE_ID, status: 'ready' }],
  },
);
export type FileResource = Static<typeof FileSchema>;

export const FileIdParamsSchema = Type.Object({ file_id: PathUuid('The file_id the upload-url answer gave') });
