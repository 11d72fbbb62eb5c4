import type { Plan } from '../auth/repository.js';

export type SlotKind = 'image' | 'video' | 'audio' | 'text' | 'element' | 'enum' | 'number' | 'bool';
export const MEDIA_KINDS: SlotKind[] = ['image', 'video', 'audio'];

export interface ToolSlot {
  name: string;
  kind: SlotKind;
  required: boolean;
  min: number;
  max: number;
  constraints?: Record<string, unknown>;
  choices?: string[] | null;
  default?: unknown;
}

/** What a media file contributes to a price, from its probe. */
export interface MediaInfo {
  kind: 'image' | 'video' | 'audio' | 'other';
  width: number | null;
  height: number | null;
  durationSeconds: number | null;
}

/** Inputs as the pricing function sees them: plain values with defaults applied, media resolved. */
export interface PricingInput {
  values: Record<string, unknown>;
  media: Record<string, MediaInfo[]>;
  /** The body's duration_seconds hint, for metered video tools before a file is known. */
  durationHint: number | null;
}

export interface ToolManifest {
  id: string;
  name: string;
  description: string;
  family: string;
  outputKind: 'image' | 'video' | 'audio' | 'json';
  consent: 'none' | 'voice' | 'face';
  productId: string;
  inputs: ToolSlot[];
  /** Plans whose teams may run the tool. */
  plans: Plan[];
  /** Multi-step pipelines are not listed and cannot be started over the API. */
  pipeline: boolean;
  /** Sparks for these inputs; an integer >= 1. */
  price(input: PricingInput): number;
  /** Typical small and large runs; estimate_hint prices them with price(). */
  hintCases: { min: PricingInput; max: PricingInput };
}

export function image(width: number, height: number): MediaInfo {
  return { kind: 'image', width, height, durationSeconds: null };
}

export function video(width: number, height: number, durationSeconds: number): MediaInfo {
  return { kind: 'video', width, height, durationSeconds };
}

export function megapixels(m: MediaInfo | undefined): number {
  return m && m.width && m.height ? (m.width * m.height) / 1_000_000 : 0;
}

export function numberValue(input: PricingInput, slot: string, fallback: number): number {
  const v = input.values[slot];
  return typeof v === 'number' ? v : fallback;
}

export function stringValue(input: PricingInput, slot: string, fallback: string): string {
  const v = input.values[slot];
  return typeof v === 'string' ? v : fallback;
}
