-- Up Migration
-- Secrets every process must share (URL signing); made once, kept in the coordinator.
CREATE TABLE service_secrets (
  name text PRIMARY KEY,
  value bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE files (
  id uuid PRIMARY KEY,
  team_id uuid NOT NULL REFERENCES teams(id),
  api_key_id uuid REFERENCES api_keys(id),
  file_name text NOT NULL,
  declared_mime text NOT NULL,
  size_bytes bigint NOT NULL CHECK (size_bytes > 0),
  part_size_bytes bigint NOT NULL CHECK (part_size_bytes > 0),
  part_count integer NOT NULL CHECK (part_count BETWEEN 1 AND 10000),
  storage_key text NOT NULL,
  upload_id text NOT NULL,
  -- uploading -> ready | rejected (on complete) -> expired (retention); uploading -> expired (abandoned)
  status text NOT NULL CHECK (status IN ('uploading', 'ready', 'rejected', 'expired')),
  detected_mime text,
  media_kind text CHECK (media_kind IN ('image', 'video', 'audio', 'other')),
  width integer,
  height integer,
  duration_seconds double precision,
  video_codec text,
  audio_codec text,
  frame_rate double precision,
  has_audio boolean,
  problem text,
  created_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz,
  upload_expires_at timestamptz NOT NULL,
  expires_at timestamptz
);
CREATE INDEX files_team ON files (team_id, id);
CREATE INDEX files_uploading_expiry ON files (upload_expires_at) WHERE status = 'uploading';
CREATE INDEX files_retention ON files (expires_at) WHERE status IN ('ready', 'rejected');

-- Down Migration
DROP TABLE files;
DROP TABLE service_secrets;
