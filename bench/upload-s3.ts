/**
 * `npm run bench` runs this one for the upload S3 row: the service's upload against a plain AWS
 * SDK multipart upload to the same S3 (bench/lib/upload-s3.ts; also `BENCH_UPLOAD_STORAGE=s3 npm
 * run bench:upload`). The S3 is TEST_S3_ENDPOINT's, or a Ceph RADOS Gateway started for the run.
 */
import { runBench } from './lib/report.js';
import { withBenchService } from './lib/service.js';
import { s3UploadMain } from './lib/upload-s3.js';

runBench('upload-s3', () => withBenchService('upload-s3', { watchdogMinutes: null }, s3UploadMain));
