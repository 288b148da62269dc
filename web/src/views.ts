// The table models and flame trees of each view, all computed from one
// ProfileModel with iterative passes.
import { formatPercent, formatValue, kindColor } from './format';
import type { FlameTree } from './flame';
import type { Column, TableModel } from './tree_table';
import { ProfileModel } from './model';

export type Mode = 'inclusive' | 'exclusive';

function valueColumns(model: ProfileModel, metric: number, inclusive: Float64Array,
                      exclusive: Float64Array, total: number): Column[] {
  const unit = model.metrics[metric]?.unit || '';
  return [
    { title: 'Inclusive', value: (n) => inclusive[n], text: (n) => formatValue(inclusive[n], unit) },
    { title: 'Incl %', value: (n) => inclusive[n], text: (n) => formatPercent(inclusive[n], total) },
    { title: 'Exclusive', value: (n) => exclusive[n], text: (n) => formatValue(exclusive[n], unit) },
    { title: 'Excl %', value: (n) => exclusive[n], text: (n) => formatPercent(exclusive[n], total) },
  ];
}

export function topDownModel(model: ProfileModel, metric: number): TableModel {
  const inclusive = model.inclusive(metric);
  const exclusive = model.exclusive(metric);
  const total = inclusive[0];
  return {
    roots: () => Array.from(model.children(0, metric)),
    children: (n) => Array.from(model.children(n, metric)),
    hasChildren: (n) => model.children(n, metric).length > 0,
    label: (n) => model.name(n),
    color: (n) => kindColor(model.kind(n)),
    columns: valueColumns(model, metric, inclusive, exclusive, total),
  };
}

function location(model: ProfileModel, node: number): string {
  const file = model.file(node);
  if (!file) return '';
  const base = file.slice(file.lastIndexOf('/') + 1);
  return model.line(node) ? `  ${base}:${model.line(node)}` : `  ${base}`;
}

export function flameTree(model: ProfileModel, metric: number): FlameTree {
  const inclusive = model.inclusive(metric);
  const exclusive = model.exclusive(metric);
  const unit = model.metrics[metric]?.unit || '';
  const total = inclusive[0];
  return {
    root: 0,
    parent: (n) => model.parent[n],
    children: (n) => model.children(n, metric),
    value: (n) => inclusive[n],
    label: (n) => model.name(n),
    color: (n) => kindColor(model.kind(n)),
    tooltip: (n) => `${model.name(n)}${location(model, n)}\n${model.kindName(n)}  inclusive ${formatValue(inclusive[n], unit)} (${formatPercent(inclusive[n], total)})  exclusive ${formatValue(exclusive[n], unit)}`,
  };
}

// The node a hotspot search ends at: keep descending into the heaviest
// child while it holds at least half of its parent (hpcviewer's hot path).
export function hotPath(model: ProfileModel, metric: number, from: number): number[] {
  const inclusive = model.inclusive(metric);
  const path = model.path(from);
  let node = from;
  for (;;) {
    const children = model.children(node, metric);
    if (children.length === 0) break;
    const heaviest = children[0];
    if (Math.abs(inclusive[heaviest]) < 0.5 * Math.abs(inclusive[node])) break;
    node = heaviest;
    path.push(node);
  }
  return path;
}

// Bottom-up: rows are distinct frames with exclusive cost; children are
// their callers, built when a row is opened.
export class BottomUpModel implements TableModel {
  private readonly frames: number[] = [];
  private readonly entries: Int32Array[] = [];
  private readonly weights: Float64Array[] = [];
  private readonly values: number[] = [];
  private readonly childRows = new Map<number, number[]>();
  private readonly topRows: number[];
  columns: Column[];

  constructor(private readonly model: ProfileModel, metric: number) {
    const exclusive = model.exclusive(metric);
    const byFrame = new Map<number, number[]>();
    for (let n = 1; n < model.size; n++) {
      if (exclusive[n] === 0) continue;
      const frame = model.frame[n];
      let list = byFrame.get(frame);
      if (!list) byFrame.set(frame, (list = []));
      list.push(n);
    }
    this.topRows = [];
    for (const [frame, nodes] of byFrame) {
      const weights = Float64Array.from(nodes, (n) => exclusive[n]);
      this.topRows.push(this.add(frame, Int32Array.from(nodes), weights));
    }
    const total = model.inclusive(metric)[0];
    const unit = model.metrics[metric]?.unit || '';
    this.columns = [
      { title: 'Exclusive', value: (r) => this.values[r], text: (r) => formatValue(this.values[r], unit) },
      { title: 'Excl %', value: (r) => this.values[r], text: (r) => formatPercent(this.values[r], total) },
    ];
  }

  private add(frame: number, entries: Int32Array, weights: Float64Array): number {
    let value = 0;
    for (const w of weights) value += w;
    this.frames.push(frame);
    this.entries.push(entries);
    this.weights.push(weights);
    this.values.push(value);
    return this.frames.length - 1;
  }

  roots(): number[] { return this.topRows; }
  label(row: number): string { return this.model.frameLabel(this.frames[row]); }
  color(row: number): string { return kindColor(this.model.data.frames.kind[this.frames[row]]); }
  frameOf(row: number): number { return this.frames[row]; }
  // The costliest tree node of row, for the details panel, and how many
  // calling contexts the row stands for.
  nodeOf(row: number): number {
    const entries = this.entries[row];
    const weights = this.weights[row];
    let best = 0;
    for (let i = 1; i < entries.length; i++) if (Math.abs(weights[i]) > Math.abs(weights[best])) best = i;
    return entries[best];
  }
  contextsOf(row: number): number { return this.entries[row].length; }
  // The tree nodes row stands for.
  entriesOf(row: number): Int32Array { return this.entries[row]; }

  hasChildren(row: number): boolean {
    const entries = this.entries[row];
    for (let i = 0; i < entries.length; i++) if (this.model.parent[entries[i]] !== 0) return true;
    return false;
  }

  children(row: number): number[] {
    let rows = this.childRows.get(row);
    if (rows) return rows;
    const groups = new Map<number, { nodes: number[]; weights: number[] }>();
    const entries = this.entries[row];
    const weights = this.weights[row];
    for (let i = 0; i < entries.length; i++) {
      const caller = this.model.parent[entries[i]];
      if (caller === 0) continue;
      const frame = this.model.frame[caller];
      let group = groups.get(frame);
      if (!group) groups.set(frame, (group = { nodes: [], weights: [] }));
      group.nodes.push(caller);
      group.weights.push(weights[i]);
    }
    rows = [];
    for (const [frame, group] of groups) {
      rows.push(this.add(frame, Int32Array.from(group.nodes), Float64Array.from(group.weights)));
    }
    this.childRows.set(row, rows);
    return rows;
  }
}

// Flat: one row per distinct frame; inclusive counts a recursive frame's
// outermost occurrences only, as the C++ flat view does.
export interface FlatView {
  table: TableModel;
  nodeOf(frame: number): number;      // the frame's costliest node
  contextsOf(frame: number): number;  // how many nodes carry the frame
  hasRow(frame: number): boolean;     // false for frames without a value
}

export function flatModel(model: ProfileModel, metric: number): FlatView {
  const inclusive = model.inclusive(metric);
  const exclusive = model.exclusive(metric);
  const frameExclusive = new Float64Array(model.frameCount);
  const frameInclusive = new Float64Array(model.frameCount);
  const firstNode = new Int32Array(model.frameCount).fill(-1);
  const nodeCount = new Uint32Array(model.frameCount);
  const onPath = new Uint32Array(model.frameCount);
  const { start, list } = model.childRanges();
  // Depth-first with explicit enter/exit markers (negative = exit).
  const stack: number[] = [0];
  while (stack.length > 0) {
    const item = stack.pop()!;
    if (item < 0) {
      onPath[model.frame[-item - 1]]--;
      continue;
    }
    const frame = model.frame[item];
    if (firstNode[frame] < 0 || Math.abs(inclusive[item]) > Math.abs(inclusive[firstNode[frame]])) {
      firstNode[frame] = item;
    }
    nodeCount[frame]++;
    frameExclusive[frame] += exclusive[item];
    if (onPath[frame] === 0) frameInclusive[frame] += inclusive[item];
    onPath[frame]++;
    stack.push(-item - 1);
    for (let i = start[item + 1]; i-- > start[item];) stack.push(list[i]);
  }
  const rows: number[] = [];
  for (let f = 1; f < model.frameCount; f++) {
    if (firstNode[f] >= 0 && (frameExclusive[f] !== 0 || frameInclusive[f] !== 0)) rows.push(f);
  }
  const total = inclusive[0];
  const unit = model.metrics[metric]?.unit || '';
  const table: TableModel = {
    roots: () => rows,
    children: () => [],
    hasChildren: () => false,
    label: (f) => model.frameLabel(f),
    color: (f) => kindColor(model.data.frames.kind[f]),
    columns: [
      { title: 'Exclusive', value: (f) => frameExclusive[f], text: (f) => formatValue(frameExclusive[f], unit) },
      { title: 'Excl %', value: (f) => frameExclusive[f], text: (f) => formatPercent(frameExclusive[f], total) },
      { title: 'Inclusive', value: (f) => frameInclusive[f], text: (f) => formatValue(frameInclusive[f], unit) },
      { title: 'Incl %', value: (f) => frameInclusive[f], text: (f) => formatPercent(frameInclusive[f], total) },
    ],
  };
  const shown = new Set(rows);
  return { table, nodeOf: (f) => firstNode[f], contextsOf: (f) => nodeCount[f], hasRow: (f) => shown.has(f) };
}
