import type { Queryable } from '../db/pool.js';
import type { ProbeResult } from '../media/probe.js';

export type FileStatus = 'uploading' | 'ready' | 'rejected' | 'expired';

export interface FileRow {
  id: string;
  team_id: string;
  file_name: string;
  declared_mime: string;
  size_bytes: number;
  part_size_bytes: number;
  part_count: number;
  storage_key: string;
  upload_id: string;
  status: FileStatus;
  detected_mime: string | null;
  media_kind: 'image' | 'video' | 'audio' | 'other' | null;
  width: number | null;
  height: number | null;
  duration_seconds: number | null;
  /** The rate a run's ffmpeg works a video at; null when unknown (pricing then takes the fastest accepted). */
  frame_rate: number | null;
  /** A video's frames as counted at upload; null on rows probed before migration 0021. */
  video_frames: number | null;
  /** An image's bands and bits per sample as decoded; null on rows probed before migration 0021. */
  channels: number | null;
  bits_per_sample: number | null;
  /** Why a rejected file was rejected (the probe's words, fit to show the client). */
  problem: string | null;
  upload_expires_at: Date;
  expires_at: Date | null;
}

const COLUMNS = `id, team_id, file_name, declared_mime, size_bytes, part_size_bytes, part_count, storage_key, upload_id,
  status, detected_mime, media_kind, width, height, duration_seconds, frame_rate, video_frames, channels, bits_per_sample, problem,
  upload_expires_at, expires_at`;

export async function insertFile(
  db: Queryable,
  f: {
    id: string;
    teamId: string;
    /** Null for a file uploaded in the console's playground. */
    apiKeyId: string | null;
    fileName: string;
    declaredMime: string;
    sizeBytes: number;
    partSizeBytes: number;
    partCount: number;
    storageKey: string;
    uploadId: string;
    uploadExpirySeconds: number;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO files (id, team_id, api_key_id, file_name, declared_mime, size_bytes, part_size_bytes, part_count,
                        storage_key, upload_id, status, upload_expires_at)
     VALUES ($1::uuid, $2::uuid, $3::uuid, $4::text, $5::text, $6::bigint, $7::bigint, $8::integer, $9::text, $10::text,
             'uploading', now() + make_interval(secs => $11::integer))`,
    [f.id, f.teamId, f.apiKeyId, f.fileName, f.declaredMime, f.sizeBytes, f.partSizeBytes, f.partCount, f.storageKey, f.uploadId, f.uploadExpirySeconds],
  );
}

/** The team's file, locked for the caller's transaction; another team's file is not found. */
export async function lockTeamFile(db: Queryable, teamId: string, fileId: string): Promise<FileRow | null> {
  const { rows } = await db.query<FileRow>(
    `SELECT ${COLUMNS} FROM files WHERE id = $1::uuid AND team_id = $2::uuid FOR UPDATE`,
    [fileId, teamId],
  );
  return rows[0] ?? null;
}

export async function getTeamFiles(db: Queryable, teamId: string, ids: string[]): Promise<FileRow[]> {
  const { rows } = await db.query<FileRow>(`SELECT ${COLUMNS} FROM files WHERE team_id = $1::uuid AND id = ANY ($2::uuid[])`, [
    teamId,
    ids,
  ]);
  return rows;
}

export async function recordProbe(db: Queryable, fileId: string, probe: ProbeResult, retentionSeconds: number): Promise<FileStatus> {
  const status: FileStatus = probe.decodable && probe.kind !== 'other' ? 'ready' : 'rejected';
  await db.query(
    `UPDATE files SET status = $2::text, detected_mime = $3::text, media_kind = $4::text, width = $5::integer,
            height = $6::integer, duration_seconds = $7::float8, video_codec = $8::text, audio_codec = $9::text,
            frame_rate = $10::float8, has_audio = $11::boolean, problem = $12::text, completed_at = now(),
            expires_at = now() + make_interval(secs => $13::integer), video_frames = $14::integer, channels = $15::smallint,
            bits_per_sample = $16::smallint
      WHERE id = $1::uuid`,
    [
      fileId,
      status,
      probe.mime,
      probe.kind,
      probe.width,
      probe.height,
      probe.durationSeconds,
      probe.videoCodec,
      probe.audioCodec,
      probe.frameRate,
      probe.hasAudio,
      probe.problem,
      retentionSeconds,
      probe.frames,
      probe.channels,
      probe.bitsPerSample,
    ],
  );
  return status;
}

/** Claims up to `limit` files whose upload was abandoned or whose retention ran out. */
export async function claimExpiredFiles(db: Queryable, limit: number): Promise<Pick<FileRow, 'id' | 'status' | 'storage_key' | 'upload_id'>[]> {
  const { rows } = await db.query<Pick<FileRow, 'id' | 'status' | 'storage_key' | 'upload_id'>>(
    `SELECT id, status, storage_key, upload_id FROM files
      WHERE (status = 'uploading' AND upload_expires_at <= now())
         OR (status IN ('ready', 'rejected') AND expires_at <= now())
      ORDER BY coalesce(expires_at, upload_expires_at)
      LIMIT $1::integer
      FOR UPDATE SKIP LOCKED`,
    [limit],
  );
  return rows;
}

export async function markExpired(db: Queryable, fileId: string): Promise<void> {
  await db.query(`UPDATE files SET status = 'expired' WHERE id = $1::uuid`, [fileId]);
}

/**
 * Deletes file rows that expired (bytes deleted, status expired) more than `olderThanSeconds` ago: one
 * statement, at most `limit` rows taken FOR UPDATE SKIP LOCKED (issue 37). An expired file already
 * answers as an unknown one everywhere (complete, run inputs: "unknown, of another team, or
 * expired"), so the row going changes no answer. An abandoned upload never got expires_at; its
 * expiry is upload_expires_at.
 */
export async function deleteExpiredFileRows(db: Queryable, olderThanSeconds: number, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM files WHERE id = ANY (ARRAY(
       SELECT id FROM files
        WHERE status = 'expired' AND coalesce(expires_at, upload_expires_at) < now() - make_interval(secs => $1::integer)
        ORDER BY coalesce(expires_at, upload_expires_at)
        LIMIT $2::integer
          FOR UPDATE SKIP LOCKED))`,
    [olderThanSeconds, limit],
  );
  return rowCount ?? 0;
}
