-- Up Migration
-- What a file's work is made of, so that a run's price covers it (issue 34 items 6 and 7):
-- video_frames, a video stream's frames as the upload's packet scan counted them (one packet a
-- frame: what video_upscale's lanczos path encodes); channels and bits_per_sample, an image's
-- bands and sample size as sharp decodes it (image_upscale works on channels x bits per pixel).
-- frame_rate (0002) now holds the rate a run's ffmpeg works at (the average rate when at most 240
-- a second, else the stream's base rate, else null). Rows probed before this migration keep nulls
-- here, and pricing takes the dearest the upload limits allow for a null.
ALTER TABLE files
  ADD COLUMN video_frames integer,
  ADD COLUMN channels smallint,
  ADD COLUMN bits_per_sample smallint;

-- Down Migration
ALTER TABLE files
  DROP COLUMN video_frames,
  DROP COLUMN channels,
  DROP COLUMN bits_per_sample;
