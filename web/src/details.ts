// The details panel: everything the profile knows about one node, with the
// numbers that matter for its kind (kernel launch shape and occupancy, copy
// bandwidth, memory still live at the peak).
import { el, formatPercent, formatValue } from './format';
import { Kind, ProfileModel } from './model';

export interface DetailsActions {
  showSource(node: number): void;
  hotPath(node: number): void;
  focus(node: number): void;
}

// Per-launch attributes the GPU backend records once per kernel: their sums
// over a subtree mean nothing, so the table shows their mean instead.
export const LAUNCH_ATTRIBUTES = new Set([
  'blocks', 'threads_per_block', 'threads_launched', 'registers_per_thread',
  'shared_memory_bytes', 'occupancy',
]);

// Count, min and max are NaN until they have arrived (model.hasSampleStats).
const pending = (value: number, text: () => string) => (Number.isNaN(value) ? '…' : text());

function mean(stats: { sum: number; count: number } | null): number | null {
  return stats && stats.count > 0 ? stats.sum / stats.count : null;
}

function kindSummary(model: ProfileModel, node: number): [string, string][] {
  const lines: [string, string][] = [];
  const stat = (name: string) => {
    const metric = model.metricIndex(name);
    return metric >= 0 ? model.stats(node, metric) : null;
  };
  const kind = model.kind(node);
  const time = stat('gpu_time');
  if (kind === Kind.GpuKernel) {
    const blocks = mean(stat('blocks'));
    const threads = mean(stat('threads_per_block'));
    if (blocks !== null || threads !== null) {
      lines.push(['Launch', `${blocks ?? '?'} blocks × ${threads ?? '?'} threads`]);
    }
    const registers = mean(stat('registers_per_thread'));
    if (registers !== null) lines.push(['Registers / thread', registers.toFixed(0)]);
    const shared = mean(stat('shared_memory_bytes'));
    if (shared !== null) lines.push(['Shared memory / block', formatValue(shared, 'B')]);
    const occupancy = stat('occupancy');
    if (occupancy && occupancy.count > 0) {
      lines.push(['Occupancy', `${(100 * occupancy.sum / occupancy.count).toFixed(1)}% (min ${(100 * occupancy.min).toFixed(1)}%, max ${(100 * occupancy.max).toFixed(1)}%)`]);
    }
  }
  // Launches the tracer gave no duration (those --gpu-metrics measured,
  // which ran replayed) have no gpu_time sample: they count as calls, not
  // in the time.
  const untimed = stat('gpu_untimed_launches');
  const timedCount = time && time.count > 0 ? time.count : 0;
  const untimedCount = untimed && untimed.count > 0 ? untimed.count : 0;
  if (timedCount + untimedCount > 0 &&
      (kind === Kind.GpuKernel || kind === Kind.GpuMemcpy || kind === Kind.GpuMemset)) {
    lines.push(['Calls', String(timedCount + untimedCount)]);
    if (time && timedCount > 0) {
      lines.push(['GPU time mean / min / max',
        `${formatValue(time.sum / time.count, 'ns')} / ${formatValue(time.min, 'ns')} / ${formatValue(time.max, 'ns')}`]);
    }
    if (untimedCount > 0) {
      lines.push(['Untimed launches',
        `${untimedCount}, not in the GPU time (no duration from the tracer; --gpu-metrics measures launches replayed)`]);
    }
  }
  const bytes = stat('bytes');
  if (bytes && bytes.count > 0 && (kind === Kind.GpuMemcpy || kind === Kind.GpuMemset)) {
    lines.push(['Bytes', formatValue(bytes.sum, 'B')]);
    if (time && time.sum > 0) lines.push(['Bandwidth', `${(bytes.sum / time.sum).toFixed(2)} GB/s`]);
  }
  model.metrics.forEach((metric, index) => {
    if (!metric.name.endsWith('peak_live_bytes')) return;
    const inclusive = model.inclusive(index)[node];
    if (inclusive > 0) lines.push([`Live at peak (${metric.name})`, formatValue(inclusive, 'B')]);
  });
  return lines;
}

export function renderDetails(container: HTMLElement, model: ProfileModel, node: number,
                              note: string, actions: DetailsActions): void {
  container.replaceChildren();
  if (node < 0 || node >= model.size) {
    container.append(el('p', 'hint', 'Select a frame to see its details.'));
    return;
  }
  container.append(el('h2', 'details-name', model.name(node)));
  if (note) container.append(el('p', 'details-note', note));
  const file = model.file(node);
  const facts: [string, string][] = [['Kind', model.kindName(node)]];
  if (file) facts.push(['Location', model.line(node) ? `${file}:${model.line(node)}` : file]);
  facts.push(['Depth', String(model.path(node).length - 1)]);
  facts.push(...kindSummary(model, node));
  const list = el('dl', 'facts');
  for (const [key, value] of facts) list.append(el('dt', '', key), el('dd', '', value));
  container.append(list);

  const buttons = el('div', 'details-buttons');
  if (file && model.line(node) > 0) {
    const source = el('button', 'show-source', 'Show source');
    source.addEventListener('click', () => actions.showSource(node));
    buttons.append(source);
  }
  const hot = el('button', 'hot-path', 'Expand hot path');
  hot.addEventListener('click', () => actions.hotPath(node));
  const focus = el('button', 'focus', 'Zoom flame graph here');
  focus.addEventListener('click', () => actions.focus(node));
  buttons.append(hot, focus);
  container.append(buttons);

  const table = el('table', 'metrics');
  const head = el('tr');
  for (const title of ['Metric', 'Inclusive', '%', 'Self', 'Count', 'Min', 'Max']) head.append(el('th', '', title));
  table.append(head);
  model.metrics.forEach((metric, index) => {
    const inclusive = model.inclusive(index);
    const stats = model.stats(node, index);
    if (inclusive[node] === 0 && !stats) return;
    const row = el('tr');
    if (LAUNCH_ATTRIBUTES.has(metric.name)) {
      if (!stats) return;
      const average = stats.count > 0 ? stats.sum / stats.count : 0;
      for (const cell of [metric.name, '–', '',
        pending(stats.count, () => `mean ${formatValue(average, metric.unit)}`),
        pending(stats.count, () => String(stats.count)),
        pending(stats.min, () => formatValue(stats.min, metric.unit)),
        pending(stats.max, () => formatValue(stats.max, metric.unit))]) {
        row.append(el('td', '', cell));
      }
      row.title = metric.description;
      table.append(row);
      return;
    }
    const cells = [
      metric.name,
      formatValue(inclusive[node], metric.unit),
      formatPercent(inclusive[node], inclusive[0]),
      stats ? formatValue(stats.sum, metric.unit) : '',
      stats ? pending(stats.count, () => String(stats.count)) : '',
      stats ? pending(stats.min, () => formatValue(stats.min, metric.unit)) : '',
      stats ? pending(stats.max, () => formatValue(stats.max, metric.unit)) : '',
    ];
    for (const cell of cells) row.append(el('td', '', cell));
    row.title = metric.description;
    table.append(row);
  });
  container.append(table);
}
