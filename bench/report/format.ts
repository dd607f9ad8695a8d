/** Number formatting shared by the Markdown and the SVG reports. */
import type { TargetStatus } from '../targets';

export const ms = (x: number | null | undefined): string =>
  x === null || x === undefined || !Number.isFinite(x) ? '—' : x >= 100 ? `${x.toFixed(0)} ms` : `${x.toFixed(1)} ms`;
export const times = (x: number | null | undefined): string =>
  x === null || x === undefined || !Number.isFinite(x) ? '—' : `${x.toFixed(2)}×`;
export const mb = (x: number | null | undefined): string =>
  x === null || x === undefined || !Number.isFinite(x) ? '—' : `${x.toFixed(0)} MB`;

export function statusWord(s: TargetStatus): string {
  return s === 'pass' ? 'pass' : s === 'miss' ? 'MISS' : s === 'not_available' ? 'not available' : 'error';
}

export const STATUS_COLOR: Record<TargetStatus, string> = {
  pass: '#1a7f37',
  miss: '#cf222e',
  not_available: '#6e7781',
  error: '#9a6700',
};
