// Numbers and colors as every view shows them.
import { Kind } from './model';

export function formatValue(value: number, unit: string): string {
  const abs = Math.abs(value);
  if (unit === 'ns') {
    if (abs >= 1e9) return `${(value / 1e9).toPrecision(3)} s`;
    if (abs >= 1e6) return `${(value / 1e6).toPrecision(3)} ms`;
    if (abs >= 1e3) return `${(value / 1e3).toPrecision(3)} µs`;
    return `${Math.round(value)} ns`;
  }
  if (unit === 'B' || unit === 'bytes') {
    if (abs >= 2 ** 30) return `${(value / 2 ** 30).toPrecision(3)} GiB`;
    if (abs >= 2 ** 20) return `${(value / 2 ** 20).toPrecision(3)} MiB`;
    if (abs >= 2 ** 10) return `${(value / 2 ** 10).toPrecision(3)} KiB`;
    return `${Math.round(value)} B`;
  }
  if (Number.isInteger(value)) return value.toLocaleString('en-US');
  return value.toPrecision(4);
}

export function formatPercent(part: number, whole: number): string {
  if (whole === 0) return '–';
  return `${((100 * part) / whole).toFixed(1)}%`;
}

// One hue per layer of the calling context, so Python, operators, native
// code and GPU work are told apart at a glance.
const KIND_COLORS: Record<number, string> = {
  [Kind.Root]: '#b0b0b0',
  [Kind.Thread]: '#c8c8c8',
  [Kind.Process]: '#c8c8c8',
  [Kind.Phase]: '#d6d6d6',
  [Kind.Python]: '#6fa8dc',
  [Kind.Operator]: '#f6b26b',
  [Kind.Scope]: '#ffd966',
  [Kind.Native]: '#a4a4c8',
  [Kind.GpuApi]: '#b48ede',
  [Kind.GpuKernel]: '#76c893',
  [Kind.GpuMemcpy]: '#4fb6b0',
  [Kind.GpuMemset]: '#86d0c8',
  [Kind.GpuSync]: '#e06666',
};

// The kinds a legend names, in calling-context order.
export const LEGEND_KINDS: [string, number][] = [
  ['Python', Kind.Python], ['operator', Kind.Operator], ['scope', Kind.Scope],
  ['native', Kind.Native], ['GPU API', Kind.GpuApi], ['kernel', Kind.GpuKernel],
  ['copy', Kind.GpuMemcpy], ['memset', Kind.GpuMemset], ['sync', Kind.GpuSync],
  ['thread / process / phase', Kind.Thread],
];

export function kindColor(kind: number): string {
  return KIND_COLORS[kind] || '#cccccc';
}

// Red for more, blue for less; white within the noise band.
export function changeColor(before: number, after: number, total: number): string {
  const delta = after - before;
  const scale = total === 0 ? 0 : Math.min(1, Math.abs(delta) / (0.05 * total));
  if (scale < 0.02) return '#eeeeee';
  const fade = Math.round(238 - 150 * scale);
  return delta > 0 ? `rgb(238,${fade},${fade})` : `rgb(${fade},${fade},238)`;
}

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K, className = '', text = ''): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  if (className) element.className = className;
  if (text) element.textContent = text;
  return element;
}
