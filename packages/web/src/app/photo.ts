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

function draw(bitmap: ImageBitmap, width: number, height: number): HTMLCanvasElement {
  const canvas = document.createElement('canvas');
  canvas.width = width;
  canvas.height = height;
  const ctx = canvas.getContext('2d');
  if (!ctx) throw new Error('This browser cannot draw images.');
  ctx.drawImage(bitmap, 0, 0, width, height);
  return canvas;
}

function fit(width: number, height: number, side: number): [number, number] {
  const scale = Math.min(1, side / Math.max(width, height));
  return [Math.max(1, Math.round(width * scale)), Math.max(1, Math.round(height * scale))];
}

function toBlob(canvas: HTMLCanvasElement, type: string, quality?: number): Promise<Blob> {
  return new Promise((resolve, reject) =>
    canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('The photo could not be encoded.'))), type, quality),
  );
}

/** A JPEG data URL of at most THUMB_BYTES bytes: smaller and rougher until it fits. */
function thumbnail(bitmap: ImageBitmap): string {
  for (const [side, quality] of [
    [THUMB_SIDE, 0.6],
    [THUMB_SIDE, 0.4],
    [64, 0.4],
    [40, 0.3],
  ] as const) {
    const [width, height] = fit(bitmap.width, bitmap.height, side);
    const url = draw(bitmap, width, height).toDataURL('image/jpeg', quality);
    if ((url.length - url.indexOf(',') - 1) * 0.75 <= THUMB_BYTES) return url;
  }
  return draw(bitmap, 16, 16).toDataURL('image/jpeg', 0.2);
}

/** The photo as it may leave the device, or null when the browser cannot decode it (it then goes as a file). */
export async function preparePhoto(image: Blob): Promise<PreparedPhoto | null> {
  // Other images (an animated GIF, an SVG) go as files, as they are.
  if (!KEPT_TYPES.has(image.type)) return null;
  let bitmap: ImageBitmap;
  try {
    bitmap = await createImageBitmap(image, { imageOrientation: 'from-image' });
  } catch {
    return null;
  }
  try {
    const [width, height] = fit(bitmap.width, bitmap.height, MAX_SIDE);
    const mime = image.type;
    const file = await toBlob(draw(bitmap, width, height), mime, 0.9);
    return { file, mime: file.type || mime, photo: { width, height, thumb: thumbnail(bitmap) } };
  } finally {
    bitmap.close();
  }
}
