// The details panel for a row of the diff view: the matched call path's
// values on both sides for every metric either profile has, and the change.
import { LAUNCH_ATTRIBUTES } from './details';
import type { DiffModel } from './diff_model';
import { el, formatValue } from './format';
import type { ProfileModel } from './model';

interface SideValues {
  inclusive: number;
  exclusive: number;
}

// Sum over the side's nodes on the row's path (one, unless a profile wrote
// the same path twice); null where the side lacks the metric.
function sideValues(model: ProfileModel, nodes: number[], metricName: string): SideValues | null {
  const metric = model.metricIndex(metricName);
  if (metric < 0) return null;
  const inclusive = model.inclusive(metric);
  const exclusive = model.exclusive(metric);
  const values = { inclusive: 0, exclusive: 0 };
  for (const n of nodes) {
    values.inclusive += inclusive[n];
    values.exclusive += exclusive[n];
  }
  return values;
}

// A launch attribute's mean per launch (its sums over launches mean
// nothing); NaN until the samples' counts have arrived, null without any.
function launchMean(model: ProfileModel, nodes: number[], metricName: string): number | null {
  const metric = model.metricIndex(metricName);
  if (metric < 0) return null;
  let sum = 0;
  let count = 0;
  for (const n of nodes) {
    const stats = model.stats(n, metric);
    if (!stats) continue;
    sum += stats.sum;
    count += stats.count;
  }
  return count > 0 ? sum / count : Number.isNaN(count) ? NaN : null;
}

const pending2 = (a: number, b: number, text: () => string) =>
  (Number.isNaN(a) || Number.isNaN(b) ? '…' : text());

function signed(value: number, unit: string): string {
  return (value > 0 ? '+' : '') + formatValue(value, unit);
}

function changePercent(before: number, after: number): string {
  if (before === 0) return after === 0 ? '' : 'new';
  return `${((100 * (after - before)) / Math.abs(before)).toFixed(1)}%`;
}

export function renderDiffDetails(container: HTMLElement, diff: DiffModel, row: number,
                                  currentMetric: string): void {
  container.replaceChildren();
  if (row < 0 || row >= diff.size) {
    container.append(el('p', 'hint', 'Select a row to compare its values.'));
    return;
  }
  const beforeNodes = diff.nodesOf('before', row);
  const afterNodes = diff.nodesOf('after', row);
  container.append(el('h2', 'details-name', diff.label[row]));
  const status = diff.status(row);
  const facts: [string, string][] = [];
  if (status) {
    facts.push(['Status', status === 'added' ? 'only in the after profile' : 'only in the before profile']);
  }
  const [model, node] = beforeNodes.length > 0 ? [diff.beforeModel, beforeNodes[0]]
    : [diff.afterModel, afterNodes[0]];
  if (node !== undefined) {
    facts.push(['Kind', model.kindName(node)]);
    const file = model.file(node);
    if (file) facts.push(['Location', model.line(node) ? `${file}:${model.line(node)}` : file]);
  }
  facts.push(['Depth', String(diff.pathTo(row).length)]);
  const list = el('dl', 'facts');
  for (const [key, value] of facts) list.append(el('dt', '', key), el('dd', '', value));
  container.append(list);

  const table = el('table', 'metrics diff-metrics');
  const head = el('tr');
  for (const title of ['Metric', 'Before', 'After', 'Change', '%', 'Self Δ']) {
    head.append(el('th', '', title));
  }
  table.append(head);
  const names = [...diff.beforeModel.metrics, ...diff.afterModel.metrics];
  const seen = new Set<string>();
  for (const metric of names) {
    if (seen.has(metric.name)) continue;
    seen.add(metric.name);
    const unit = metric.unit;
    if (LAUNCH_ATTRIBUTES.has(metric.name)) {
      const before = launchMean(diff.beforeModel, beforeNodes, metric.name);
      const after = launchMean(diff.afterModel, afterNodes, metric.name);
      if (before === null && after === null) continue;
      const text = (v: number | null) => (v === null ? '–' : Number.isNaN(v) ? '…' : formatValue(v, unit));
      const both = before !== null && after !== null;
      const tr = el('tr', 'launch');
      tr.dataset.metric = metric.name;
      for (const cell of [`${metric.name} (mean)`, text(before), text(after),
        both ? pending2(before, after, () => signed(after - before, unit)) : '',
        both ? pending2(before, after, () => changePercent(before, after)) : '', '–']) {
        tr.append(el('td', '', cell));
      }
      tr.title = `${metric.description}: mean per launch`;
      table.append(tr);
      continue;
    }
    const before = sideValues(diff.beforeModel, beforeNodes, metric.name);
    const after = sideValues(diff.afterModel, afterNodes, metric.name);
    const b = before ?? { inclusive: 0, exclusive: 0 };
    const a = after ?? { inclusive: 0, exclusive: 0 };
    if (b.inclusive === 0 && a.inclusive === 0 && b.exclusive === 0 && a.exclusive === 0) continue;
    const tr = el('tr', metric.name === currentMetric ? 'current' : '');
    tr.dataset.metric = metric.name;
    const cells = [
      metric.name,
      before ? formatValue(b.inclusive, unit) : '–',
      after ? formatValue(a.inclusive, unit) : '–',
      signed(a.inclusive - b.inclusive, unit),
      changePercent(b.inclusive, a.inclusive),
      signed(a.exclusive - b.exclusive, unit),
    ];
    for (const cell of cells) tr.append(el('td', '', cell));
    tr.title = `${metric.description}${before ? '' : '\n(the before profile has no such metric)'}${after ? '' : '\n(the after profile has no such metric)'}`;
    table.append(tr);
  }
  container.append(table);
}
