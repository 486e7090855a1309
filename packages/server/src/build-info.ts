/** The running build's revision and commit time, written next to the compiled code by `npm run build`. */
import { readFileSync } from 'node:fs';

export interface BuildInfo {
  revision: string;
  commitTime: number | null;
}

export function readBuildInfo(file: string): BuildInfo {
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as Partial<BuildInfo>;
    return {
      revision: typeof v.revision === 'string' && v.revision ? v.revision : 'dev',
      commitTime: typeof v.commitTime === 'number' ? v.commitTime : null,
    };
  } catch {
    return { revision: 'dev', commitTime: null };
  }
}
