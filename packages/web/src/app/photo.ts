/**
 * Photos are re-encoded on the device before they leave it: decoded with the orientation its
 * metadata states applied, drawn to a canvas no longer than MAX_SIDE on its long side, and
 * exported again. What leaves is the pixels alone: EXIF (with GPS position, camera, time) and all
 * other metadata stay behind. A thumbnail small enough to travel inside the message goes with it.
 */
import type { PhotoFields } from '@svc/sdk';

export const MAX_SIDE = 2048;
const THUMB_SIDE = 96;
const THUMB_BYTES = 4096;
const KEPT_TYPES = new Set(['image/jpeg', 'image/png', 'image/webp']);

export interface PreparedPhoto {
  file: Blob;
  mime: string;
  photo: PhotoFields;
}

function draw(bitmap: ImageBitmap, w: number, h: number): HTMLCanvasElement {
  const canvas = document.createElement('canvas');
  canvas.width = w;
  canvas.height = h;
  const ctx = canvas.getContext('2d');
  if (!ctx) throw new Error('This browser cannot draw images.');
  ctx.drawImage(bitmap, 0, 0, w, h);
  return canvas;
}

function fit(w: number, h: number, side: number): [number, number] {
  const k = Math.min(1, side / Math.max(w, h));
  return [Math.max(1, Math.round(w * k)), Math.max(1, Math.round(h * k))];
}

function toBlob(canvas: HTMLCanvasElement, type: string, quality?: number): Promise<Blob> {
  return new Promise((resolve, reject) =>
    canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('The photo could not be encoded.'))), type, quality),
  );
}

/** A JPEG data URL of at most THUMB_BYTES bytes: smaller and rougher until it fits. */
function thumbnail(bitmap: ImageBitmap): string {
  for (const [side, q] of [
    [THUMB_SIDE, 0.6],
    [THUMB_SIDE, 0.4],
    [64, 0.4],
    [40, 0.3],
  ] as const) {
    const [w, h] = fit(bitmap.width, bitmap.height, side);
    const url = draw(bitmap, w, h).toDataURL('image/jpeg', q);
    if ((url.length - url.indexOf(',') - 1) * 0.75 <= THUMB_BYTES) return url;
  }
  return draw(bitmap, 16, 16).toDataURL('image/jpeg', 0.2);
}

/** The photo as it may leave the device, or null when the browser cannot decode it (it then goes as a file). */
export async function preparePhoto(f: Blob): Promise<PreparedPhoto | null> {
  // Other images (an animated GIF, an SVG) go as files, as they are.
  if (!KEPT_TYPES.has(f.type)) return null;
  let bitmap: ImageBitmap;
  try {
    bitmap = await createImageBitmap(f, { imageOrientation: 'from-image' });
  } catch {
    return null;
  }
  try {
    const [w, h] = fit(bitmap.width, bitmap.height, MAX_SIDE);
    const mime = f.type;
    const file = await toBlob(draw(bitmap, w, h), mime, 0.9);
    return { file, mime: file.type || mime, photo: { width: w, height: h, thumb: thumbnail(bitmap) } };
  } finally {
    bitmap.close();
  }
}
