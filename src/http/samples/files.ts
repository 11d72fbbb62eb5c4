import { EXAMPLE_FILE_ID, EXAMPLE_UPLOAD_ID, envelope, type OperationSamples } from './types.js';

/**
 * Uploads: upload-url, the part PUTs, complete. The clients make the three steps in one call
 * (files.upload), so their samples of both operations show that call; curl shows each step.
 */
export const FILES_SAMPLES: Record<string, OperationSamples> = {
  createFileUpload: {
    vars: [],
    files: ['photo.jpg'],
    curl: `curl -fsS "$TOOLRUN_BASE_URL/v1/files/upload-url" \\
  -H "Authorization: Bearer $TOOLRUN_API_KEY" -H "Content-Type: application/json" \\
  -d "{\\"file_name\\": \\"photo.jpg\\", \\"mime_type\\": \\"image/jpeg\\", \\"size_bytes\\": $(wc -c < photo.jpg)}"
# Then PUT each part's bytes to its url, keep each ETag, and complete (next operation).`,
    typescript: `import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun();
// files.upload makes all three steps: this call, the part PUTs (4 at a time, retried) and complete.
const file = await client.files.upload('photo.jpg', {
  onProgress: (p) => console.log(\`part \${p.partsDone}/\${p.partsTotal}: \${p.uploadedBytes} of \${p.totalBytes} bytes\`),
});
console.log(file.id, file.status);`,
    python: `import toolrun

client = toolrun.Toolrun()
# files.upload makes all three steps: this call, the part PUTs (4 at a time, retried) and complete.
file = client.files.upload(
    "photo.jpg",
    on_progress=lambda p: print(f"part {p.parts_done}/{p.parts_total}: {p.uploaded_bytes} of {p.total_bytes} bytes"),
)
print(file.id, file.status)`,
    request: {
      photo: { summary: 'A 12 MiB JPEG (two parts)', value: { file_name: 'photo.jpg', mime_type: 'image/jpeg', size_bytes: 12582912 } },
      video: { summary: 'A short MP4 clip', value: { file_name: 'clip.mp4', mime_type: 'video/mp4', size_bytes: 48234567 } },
    },
    responses: {
      '422': {
        too_large: {
          summary: 'Larger than the service takes',
          value: envelope('invalid_request', 'Invalid request: body.size_bytes: must be at most 5368709120 bytes', {
            errors: [{ loc: ['body', 'size_bytes'], message: 'must be at most 5368709120 bytes', code: 'too_large' }],
          }),
        },
        missing: {
          summary: 'A field left out',
          value: envelope('invalid_request', 'Invalid request: body.mime_type: is required', {
            errors: [{ loc: ['body', 'mime_type'], message: 'is required', code: 'missing' }],
          }),
        },
      },
    },
  },

  completeFileUpload: {
    vars: ['FILE_ID', 'UPLOAD_ID', 'PART_URL'],
    files: ['photo.jpg'],
    parameters: { file_id: EXAMPLE_FILE_ID },
    curl: `# FILE_ID, UPLOAD_ID and PART_URL (parts[0].url) from the upload-url answer; photo.jpg fits in one part.
ETAG=$(curl -fsS -X PUT --data-binary @photo.jpg -H "Content-Type: application/octet-stream" \\
  -o /dev/null -w '%header{etag}' "$PART_URL" | tr -d '"')
curl -fsS "$TOOLRUN_BASE_URL/v1/files/$FILE_ID/complete" \\
  -H "Authorization: Bearer $TOOLRUN_API_KEY" -H "Content-Type: application/json" \\
  -d "{\\"upload_id\\": \\"$UPLOAD_ID\\", \\"parts\\": [{\\"part_number\\": 1, \\"etag\\": \\"$ETAG\\"}]}"`,
    typescript: `import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun();
// files.upload asks for the part URLs, PUTs the parts, then completes the upload with their ETags.
const file = await client.files.upload('photo.jpg');
if (file.status !== 'ready') throw new Error(\`photo.jpg was rejected: \${file.problem}\`);
console.log(file.id, file.status);`,
    python: `import toolrun

client = toolrun.Toolrun()
# files.upload asks for the part URLs, PUTs the parts, then completes the upload with their ETags.
file = client.files.upload("photo.jpg")
if file.status != "ready":
    raise SystemExit(f"photo.jpg was rejected: {file.problem}")
print(file.id, file.status)`,
    request: {
      two_parts: {
        summary: 'Two parts, with the ETags their PUTs answered',
        value: {
          upload_id: EXAMPLE_UPLOAD_ID,
          parts: [
            { part_number: 1, etag: '"5d41402abc4b2a76b9719d911017c592"' },
            { part_number: 2, etag: '"7d793037a0760186574b0282f2f435e7"' },
          ],
        },
      },
    },
    responses: {
      '200': {
        ready: { summary: 'The bytes decode: usable in media inputs', value: { object: 'file', id: EXAMPLE_FILE_ID, status: 'ready' } },
        rejected: {
          summary: 'The bytes are not an image, video or audio file',
          value: { object: 'file', id: EXAMPLE_FILE_ID, status: 'rejected', problem: 'unrecognised file type' },
        },
      },
      '422': {
        etag_mismatch: {
          summary: 'An ETag that is not what the part PUT answered',
          value: envelope('invalid_request', 'Invalid request: body.parts: a part or its ETag does not match what was uploaded', {
            errors: [{ loc: ['body', 'parts'], message: 'a part or its ETag does not match what was uploaded', code: 'etag_mismatch' }],
          }),
        },
        upload_id_mismatch: {
          summary: 'Another upload_id',
          value: envelope('invalid_request', 'Invalid request: body.upload_id: is not the upload_id of this file', {
            errors: [{ loc: ['body', 'upload_id'], message: 'is not the upload_id of this file', code: 'upload_id_mismatch' }],
          }),
        },
      },
    },
  },
};
