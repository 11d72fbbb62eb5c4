import type { Plan } from '../auth/repository.js';
import { brandKitExtract } from './catalog/brand-kit-extract.js';
import { imageColorGrade } from './catalog/image-color-grade.js';
import { imageUpscale } from './catalog/image-upscale.js';
import { videoTransition } from './catalog/video-transition.js';
import { videoUpscale } from './catalog/video-upscale.js';
import type { ToolManifest } from './manifest.js';

export interface ToolRegistry {
  get(id: string): ToolManifest | undefined;
  /** Tools offered over the API (pipelines excluded), in catalog order. */
  listed(): ToolManifest[];
  allowed(tool: ToolManifest, plan: Plan): boolean;
}

export function builtinTools(): ToolManifest[] {
  return [imageUpscale, videoTransition, imageColorGrade, videoUpscale, brandKitExtract];
}

export function createToolRegistry(tools: ToolManifest[] = builtinTools()): ToolRegistry {
  const byId = new Map<string, ToolManifest>();
  for (const t of tools) {
    if (byId.has(t.id)) throw new Error(`tool ${t.id} registered twice`);
    byId.set(t.id, t);
  }
  return {
    get: (id) => byId.get(id),
    listed: () => [...byId.values()].filter((t) => !t.pipeline),
    allowed: (tool, plan) => tool.plans.includes(plan),
  };
}

/** What runs of the tool cost, from the cheapest to the dearest inputs it accepts. */
export function estimateHint(tool: ToolManifest): { sparks_min: number; sparks_max: number } {
  return { sparks_min: tool.price(tool.priceRange.cheapest), sparks_max: tool.price(tool.priceRange.dearest) };
}
