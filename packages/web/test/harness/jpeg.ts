/** Small JPEG tools for the photo scenarios: a JPEG drawn by the browser, Exif with GPS spliced in, and a look at the segments. */
import type { Page } from 'playwright-core';

/** A JPEG of `w`×`h` with a gradient, encoded by the page's own canvas (so it carries no Exif). */
export async function drawnJpeg(page: Page, w: number, h: number): Promise<Buffer> {
  const bytes = await page.evaluate(
    async ([w, h]) => {
      const c = document.createElement('canvas');
      c.width = w;
      c.height = h;
      const ctx = c.getContext('2d')!;
      const g = ctx.createLinearGradient(0, 0, w, h);
      g.addColorStop(0, '#c33');
      g.addColorStop(1, '#33c');
      ctx.fillStyle = g;
      ctx.fillRect(0, 0, w, h);
      const blob = await new Promise<Blob>((r) => c.toBlob((b) => r(b!), 'image/jpeg', 0.8));
      return [...new Uint8Array(await blob.arrayBuffer())];
    },
    [w, h] as const,
  );
  return Buffer.from(bytes);
}

export const GPS_SECRET = 'SECRETGPSPLACE42';

/** `jpeg` with an APP1 Exif segment right after SOI whose GPS IFD holds a latitude and GPS_SECRET. */
export function withGpsExif(jpeg: Buffer): Buffer {
  const method = Buffer.from(`ASCII\0\0\0${GPS_SECRET}`, 'latin1');
  const tiff = Buffer.alloc(56 + method.length);
  tiff.write('MM', 0, 'latin1');
  tiff.writeUInt16BE(42, 2);
  tiff.writeUInt32BE(8, 4);
  // IFD0: one entry, GPSInfo (0x8825) pointing at the GPS IFD at 26.
  tiff.writeUInt16BE(1, 8);
  tiff.writeUInt16BE(0x8825, 10);
  tiff.writeUInt16BE(4, 12);
  tiff.writeUInt32BE(1, 14);
  tiff.writeUInt32BE(26, 18);
  tiff.writeUInt32BE(0, 22);
  // GPS IFD: GPSLatitudeRef "N", and GPSProcessingMethod (0x1b) with the secret at 56.
  tiff.writeUInt16BE(2, 26);
  tiff.writeUInt16BE(0x0001, 28);
  tiff.writeUInt16BE(2, 30);
  tiff.writeUInt32BE(2, 32);
  tiff.write('N\0', 36, 'latin1');
  tiff.writeUInt16BE(0x001b, 40);
  tiff.writeUInt16BE(7, 42);
  tiff.writeUInt32BE(method.length, 44);
  tiff.writeUInt32BE(56, 48);
  tiff.writeUInt32BE(0, 52);
  method.copy(tiff, 56);
  const body = Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), tiff]);
  const head = Buffer.from([0xff, 0xe1, 0, 0]);
  head.writeUInt16BE(body.length + 2, 2);
  return Buffer.concat([jpeg.subarray(0, 2), head, body, jpeg.subarray(2)]);
}

/** The markers of the segments before the image data, and the size from the frame header. */
export function jpegSegments(jpeg: Buffer): { markers: number[]; width: number; height: number } {
  if (jpeg[0] !== 0xff || jpeg[1] !== 0xd8) throw new Error('not a JPEG');
  const markers: number[] = [];
  let width = 0;
  let height = 0;
  let at = 2;
  while (at + 4 <= jpeg.length && jpeg[at] === 0xff) {
    const marker = jpeg[at + 1]!;
    markers.push(marker);
    const len = jpeg.readUInt16BE(at + 2);
    if (marker >= 0xc0 && marker <= 0xc3) {
      height = jpeg.readUInt16BE(at + 5);
      width = jpeg.readUInt16BE(at + 7);
    }
    if (marker === 0xda) break;
    at += 2 + len;
  }
  return { markers, width, height };
}
