/**
 * "Scan code": reads the other person's safety-number QR code with the camera and says whether
 * it holds the digits shown here (the SDK's compareScannedSafetyNumber decides). The camera
 * shows in a dialog; frames are read a few times a second with the browser's BarcodeDetector
 * where it has one for QR codes (Chromium on Android, macOS and ChromeOS), else with jsQR, loaded
 * only when a scan starts. A code that is no safety number (a link, say) is passed over and the
 * scan goes on. Nothing leaves the device: the frames are read here and dropped.
 *
 * The video shows the camera's own stream (srcObject), which no URL or CSP source names.
 */
import { compareScannedSafetyNumber, type ScanVerdict } from '@svc/sdk';
import { h } from './dom.js';

/** How often a frame is read: fast enough to feel instant, slow enough to leave a phone cool. */
const FRAME_EVERY_MS = 150;
/** Frames are read at most this wide: a QR code held up to a camera needs no more. */
const MAX_WIDTH = 640;

type Decode = (frame: HTMLVideoElement, canvas: HTMLCanvasElement) => Promise<string | null>;

interface Detector {
  detect(source: CanvasImageSource): Promise<{ rawValue: string }[]>;
}
interface DetectorClass {
  new (o: { formats: string[] }): Detector;
  getSupportedFormats(): Promise<string[]>;
}

/** The browser's own QR reader when it has one, else jsQR over the frame's pixels. */
async function decoder(): Promise<Decode> {
  const Native = (globalThis as { BarcodeDetector?: DetectorClass }).BarcodeDetector;
  const formats: string[] = Native ? await Native.getSupportedFormats().catch(() => []) : [];
  if (Native && formats.includes('qr_code')) {
    const d = new Native({ formats: ['qr_code'] });
    return async (video) => (await d.detect(video))[0]?.rawValue ?? null;
  }
  const { default: jsQR } = await import('jsqr');
  return async (video, canvas) => {
    const scale = Math.min(1, MAX_WIDTH / video.videoWidth);
    canvas.width = Math.round(video.videoWidth * scale);
    canvas.height = Math.round(video.videoHeight * scale);
    const ctx = canvas.getContext('2d', { willReadFrequently: true });
    if (!ctx || canvas.width === 0) return null;
    ctx.drawImage(video, 0, 0, canvas.width, canvas.height);
    const { data, width, height } = ctx.getImageData(0, 0, canvas.width, canvas.height);
    return jsQR(data, width, height, { inversionAttempts: 'attemptBoth' })?.data ?? null;
  };
}

/** Why the camera could not start, in words a person can act on. */
function cameraProblem(e: unknown): string {
  const name = e instanceof DOMException ? e.name : '';
  if (name === 'NotAllowedError' || name === 'SecurityError')
    return 'Camera access was refused. Allow the camera for this site, or compare the digits by eye.';
  if (name === 'NotFoundError' || name === 'OverconstrainedError') return 'No camera was found. Compare the digits by eye.';
  if (name === 'NotReadableError') return 'The camera is in use by another program. Close it and try again, or compare the digits by eye.';
  return 'The camera could not be started. Compare the digits by eye.';
}

/**
 * Opens the scanner for the safety number `shown`. Resolves with the verdict of the first
 * safety-number code read, or null when the person closes the dialog or the camera cannot start
 * (then `problem` has said why).
 */
export function scanSafetyCode(
  shown: string,
  problem: (text: string) => void,
  returnFocus: HTMLElement,
): Promise<Exclude<ScanVerdict, 'not-a-safety-number'> | null> {
  const video = h('video', { class: 'scan-video', muted: true, playsinline: true, autoplay: true, 'aria-label': 'Camera' });
  video.muted = true;
  const canvas = h('canvas', { hidden: true });
  const hint = h('p', { class: 'hint', role: 'status' }, 'Starting the camera…');
  const cancel = h('button', { type: 'button' }, 'Cancel');
  const dialog = h(
    'dialog',
    { class: 'scan-dialog', 'aria-label': 'Scan safety number code' },
    h('p', {}, 'Hold the other person’s safety-number code in front of the camera.'),
    video,
    canvas,
    hint,
    h('div', { class: 'actions-row' }, cancel),
  );
  document.body.append(dialog);

  return new Promise((resolve) => {
    let stream: MediaStream | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let result: Exclude<ScanVerdict, 'not-a-safety-number'> | null = null;
    const stop = () => {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      for (const t of stream?.getTracks() ?? []) t.stop();
      stream = undefined;
      video.srcObject = null;
    };
    dialog.addEventListener('close', () => {
      stop();
      dialog.remove();
      returnFocus.focus();
      resolve(result);
    });
    cancel.addEventListener('click', () => dialog.close());
    dialog.showModal();

    const start = async (): Promise<void> => {
      if (!navigator.mediaDevices?.getUserMedia) throw new DOMException('no camera API', 'NotFoundError');
      const [media, decode] = await Promise.all([
        navigator.mediaDevices.getUserMedia({ video: { facingMode: 'environment' }, audio: false }),
        decoder(),
      ]);
      if (!dialog.open) {
        for (const t of media.getTracks()) t.stop();
        return;
      }
      stream = media;
      video.srcObject = media;
      await video.play().catch(() => undefined);
      hint.textContent = 'Looking for a code…';
      const tick = async (): Promise<void> => {
        if (!dialog.open) return;
        const text = video.readyState >= HTMLMediaElement.HAVE_CURRENT_DATA ? await decode(video, canvas).catch(() => null) : null;
        if (text !== null) {
          const verdict = compareScannedSafetyNumber(text, shown);
          if (verdict !== 'not-a-safety-number') {
            result = verdict;
            dialog.close();
            return;
          }
          hint.textContent = 'That code is not a safety number. Looking for a code…';
        }
        timer = setTimeout(() => void tick(), FRAME_EVERY_MS);
      };
      void tick();
    };
    start().catch((e: unknown) => {
      problem(cameraProblem(e));
      dialog.close();
    });
  });
}
