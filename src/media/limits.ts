/**
 * Bounds on uploaded media that pricing and the tool catalog need too. Kept apart from probe.ts
 * so the API's tool metadata loads without sharp, file-type or the ffprobe wrappers.
 */

/** 8192 x 4320 (DCI 8K): every real camera format fits, and a frame decodes in about 50 MB. */
export const MAX_VIDEO_PIXELS = 8192 * 4320;
/** Four hours: longer than any clip the video tools can work through within their time limits. */
export const MAX_MEDIA_SECONDS = 4 * 3600;
/** 240 frames a second: phones' slow-motion capture, the fastest real footage. */
export const MAX_FRAME_RATE = 240;
