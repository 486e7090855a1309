/** axe-core scans of the page as it stands. */
import { AxeBuilder } from '@axe-core/playwright';
import type { Page } from 'playwright-core';

type Impact = 'minor' | 'moderate' | 'serious' | 'critical';

async function scan(page: Page, impacts: readonly Impact[]): Promise<string[]> {
  const result = await new AxeBuilder({ page }).analyze();
  return result.violations
    .filter((v) => impacts.includes(v.impact as Impact))
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join('; ')})`);
}

/** What blocks people: serious and critical violations. */
export function seriousViolations(page: Page): Promise<string[]> {
  return scan(page, ['serious', 'critical']);
}

/** Every violation, of any impact (minor and moderate too: a missing landmark, content outside regions). */
export function allViolations(page: Page): Promise<string[]> {
  return scan(page, ['minor', 'moderate', 'serious', 'critical']);
}
