/**
 * The `method` input of image_upscale and video_upscale: `learned` adds the network's luma
 * correction to a Lanczos resample (luma-net.ts); `lanczos` is the resample alone. Each tool
 * picks its own default (docs/decisions.md).
 */
export const UPSCALE_METHODS = ['learned', 'lanczos'] as const;
export type UpscaleMethod = (typeof UPSCALE_METHODS)[number];
