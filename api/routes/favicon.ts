/**
 * `GET /favicon.ico`: every browser asks for it on every page of ours (the reference,
 * the error codes, the test checkout page), and a 404 there is a failed request in
 * the console. A 16×16 square in the pages' blue, built here as a 32-bit BMP icon:
 * no file to ship, and nothing fetched from elsewhere.
 */
import Router from '@koa/router';
import type { State } from '../context.js';

export const FAVICON_PATH = '/favicon.ico';

const SIZE = 16;
/** #1d4ed8, the checkout page's Pay button, as BMP's blue, green, red, alpha. */
const PIXEL = [0xd8, 0x4e, 0x1d, 0xff];

/** ICONDIR, one ICONDIRENTRY, then the image: BITMAPINFOHEADER, the pixels bottom-up, and the AND mask. */
export function buildFavicon(): Buffer {
  const pixels = SIZE * SIZE * 4;
  const mask = SIZE * 4; // one bit per pixel, rows padded to 4 bytes: all 0, every pixel shown
  const image = 40 + pixels + mask;
  const out = Buffer.alloc(6 + 16 + image);
  out.writeUInt16LE(0, 0); // reserved
  out.writeUInt16LE(1, 2); // type: icon
  out.writeUInt16LE(1, 4); // one image
  out.writeUInt8(SIZE, 6);
  out.writeUInt8(SIZE, 7);
  out.writeUInt8(0, 8); // no palette
  out.writeUInt8(0, 9);
  out.writeUInt16LE(1, 10); // colour planes
  out.writeUInt16LE(32, 12); // bits per pixel
  out.writeUInt32LE(image, 14);
  out.writeUInt32LE(22, 18); // offset of the image
  out.writeUInt32LE(40, 22); // BITMAPINFOHEADER
  out.writeInt32LE(SIZE, 26);
  out.writeInt32LE(SIZE * 2, 30); // height covers the XOR and AND bitmaps
  out.writeUInt16LE(1, 34);
  out.writeUInt16LE(32, 36);
  out.writeUInt32LE(0, 38); // BI_RGB
  out.writeUInt32LE(pixels + mask, 42);
  for (let i = 0; i < SIZE * SIZE; i++) out.set(PIXEL, 62 + i * 4);
  return out;
}

export function faviconRouter(): Router<State> {
  const router = new Router<State>();
  const icon = buildFavicon();
  router.get(FAVICON_PATH, (ctx) => {
    ctx.set('Content-Type', 'image/x-icon');
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = icon;
  });
  return router;
}
