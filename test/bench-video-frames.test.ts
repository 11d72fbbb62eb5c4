// bench/lib/video-frames.ts: the PSNR and flicker measures bench:video-learned reports (issue 38
// item 3), on frames built here so the right answer is known by construction.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { lumaPsnr, meanPsnr, panFlicker, staticFlicker } from '../bench/lib/video-frames.js';

const W = 12;
const H = 10;
const BORDER = 2;

/** A frame whose pixel (x, y) is f(x, y). */
function frame(f: (x: number, y: number) => number): Buffer {
  const b = Buffer.alloc(W * H);
  for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) b[y * W + x] = f(x, y);
  return b;
}

/** A horizontal ramp shifted `dx` pixels: what a pan makes of it. */
const ramp = (dx: number) => frame((x) => 10 * (x + dx));

describe('video frame measures', () => {
  test('PSNR: a uniform error of 5 levels inside the border gives 10 log10(255^2 / 25); outside it, nothing counts', () => {
    const a = frame(() => 100);
    const b = frame((x, y) => (x < BORDER || y < BORDER || x >= W - BORDER || y >= H - BORDER ? 0 : 105));
    assert.ok(Math.abs(lumaPsnr(a, b, W, H, BORDER) - 10 * Math.log10((255 * 255) / 25)) < 1e-9);
    assert.ok(Math.abs(meanPsnr([a, a], [b, b], W, H, BORDER) - 10 * Math.log10((255 * 255) / 25)) < 1e-9);
    assert.throws(() => meanPsnr([a], [a, a], W, H, BORDER), /1 frames, the original has 2/);
  });

  test('static flicker: frames that alternate by 3 levels flicker 3; identical frames, 0', () => {
    const a = frame(() => 50);
    const b = frame(() => 53);
    assert.equal(staticFlicker([a, b, a, b], W, H, BORDER), 3);
    assert.equal(staticFlicker([a, a, a], W, H, BORDER), 0);
    // one pixel of the inner 8 x 6 changes by 48 between two frames: 48 / 48 pixels = 1
    const c = frame((x, y) => (x === 5 && y === 5 ? 98 : 50));
    assert.equal(staticFlicker([a, c], W, H, BORDER), 1);
    assert.throws(() => staticFlicker([a], W, H, BORDER), /two frames/);
  });

  test('pan flicker: motion the original has is not flicker; what departs from it is', () => {
    const truth = [ramp(0), ramp(1), ramp(2)];
    // the same pan as the original, even with a constant offset: no flicker
    assert.equal(panFlicker(truth, truth, W, H, BORDER), 0);
    const offset = truth.map((f) => Buffer.from(f.map((v) => v + 4)));
    assert.equal(panFlicker(offset, truth, W, H, BORDER), 0);
    // a frame that stands still while the original moves: each pair departs by the ramp's step (10)
    // once, the other pair by the step too (it catches up two steps): mean 10
    assert.equal(panFlicker([ramp(0), ramp(0), ramp(2)], truth, W, H, BORDER), 10);
    // static flicker of the same pan is the motion itself, which pan flicker leaves out
    assert.equal(staticFlicker(truth, W, H, BORDER), 10);
    assert.throws(() => panFlicker([ramp(0)], truth, W, H, BORDER), /1 frames, the original has 3/);
  });
});
