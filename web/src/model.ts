// One profile as typed arrays: a million nodes cost a few arrays, not a
// million objects. Parents precede children (the C++ tree guarantees it),
// so subtree sums are one backward pass and no traversal recurses.
import type { MetricInfo, SampleColumns, ViewData } from './data';

export const enum Kind {
  Root = 0, Thread = 1, Python = 2, Operator = 3, Phase = 4, Scope = 5,
  Native = 6, GpuApi = 7, GpuKernel = 8, GpuMemcpy = 9, GpuMemset = 10,
  GpuSync = 11, Process = 12,
}

export interface SampleStats {
  sum: number;
  count: number;
  min: number;
  max: number;
}

export class ProfileModel {
  readonly size: number;
  readonly parent: Int32Array;
  readonly frame: Uint32Array;
  readonly metrics: MetricInfo[];
  readonly defaultMetric: number;
  private readonly exclusiveCache = new Map<number, Float64Array>();
  private readonly inclusiveCache = new Map<number, Float64Array>();
  private readonly sortedCache = new Map<number, { done: Uint8Array; list: Uint32Array }>();
  private childStart: Uint32Array | null = null;
  private childList: Uint32Array | null = null;

  constructor(readonly data: ViewData) {
    this.size = data.nodes.parent.length;
    // Typed arrays from the binary form are used in place (parents are
    // below 2^31, so the same bytes read as Int32).
    const parent = data.nodes.parent;
    this.parent = parent instanceof Uint32Array
      ? new Int32Array(parent.buffer, parent.byteOffset, parent.length) : Int32Array.from(parent);
    const frame = data.nodes.frame;
    this.frame = frame instanceof Uint32Array ? frame : Uint32Array.from(frame);
    this.metrics = data.metrics;
    this.defaultMetric = data.defaultMetric;
  }

  kind(node: number): Kind { return this.data.frames.kind[this.frame[node]]; }
  kindName(node: number): string { return this.data.kinds[this.kind(node)] || 'unknown'; }
  name(node: number): string { return this.frameLabel(this.frame[node]); }
  file(node: number): string { return this.data.strings[this.data.frames.file[this.frame[node]]]; }
  line(node: number): number { return this.data.frames.line[this.frame[node]]; }

  // The label of a frame, as analysis::DisplayName writes it.
  frameLabel(frame: number): string {
    const name = this.data.strings[this.data.frames.name[frame]];
    if (name) return name;
    const kind = this.data.frames.kind[frame];
    if (kind === Kind.Root) return 'all';
    return `<${this.data.kinds[kind] || 'unknown'}>`;
  }

  frameKey(frame: number): string {
    const f = this.data.frames;
    return `${f.kind[frame]}\u0000${this.data.strings[f.name[frame]]}\u0000${this.data.strings[f.file[frame]]}\u0000${f.line[frame]}`;
  }

  get frameCount(): number { return this.data.frames.kind.length; }

  metricIndex(name: string): number { return this.metrics.findIndex((m) => m.name === name); }

  exclusive(metric: number): Float64Array {
    let values = this.exclusiveCache.get(metric);
    if (!values) {
      values = new Float64Array(this.size);
      const column = this.data.values[metric];
      if (column) {
        for (let i = 0; i < column.node.length; i++) values[column.node[i]] = column.sum[i];
      }
      this.exclusiveCache.set(metric, values);
    }
    return values;
  }

  inclusive(metric: number): Float64Array {
    let values = this.inclusiveCache.get(metric);
    if (!values) {
      values = Float64Array.from(this.exclusive(metric));
      for (let i = this.size - 1; i > 0; i--) values[this.parent[i]] += values[i];
      this.inclusiveCache.set(metric, values);
    }
    return values;
  }

  // False until the samples' count, min and max have arrived.
  get hasSampleStats(): boolean {
    return this.data.values.every((column) => column.count !== undefined);
  }

  attachSampleStats(stats: SampleColumns[]): void {
    stats.forEach((columns, metric) => {
      const column = this.data.values[metric];
      if (!column || columns.count.length !== column.node.length) throw new Error('sample stats do not match the tree');
      Object.assign(column, columns);
    });
  }

  // Samples of metric at node, or null when none; count, min and max are
  // NaN until they have arrived.
  stats(node: number, metric: number): SampleStats | null {
    const column = this.data.values[metric];
    if (!column) return null;
    let lo = 0;
    let hi = column.node.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const at = column.node[mid];
      if (at === node) {
        return {
          sum: column.sum[mid],
          count: column.count ? column.count[mid] : NaN,
          min: column.min ? column.min[mid] : NaN,
          max: column.max ? column.max[mid] : NaN,
        };
      }
      if (at < node) lo = mid + 1; else hi = mid - 1;
    }
    return null;
  }

  private buildChildren(): void {
    const counts = new Uint32Array(this.size + 1);
    for (let i = 1; i < this.size; i++) counts[this.parent[i] + 1]++;
    for (let i = 0; i < this.size; i++) counts[i + 1] += counts[i];
    const list = new Uint32Array(Math.max(this.size - 1, 0));
    const fill = counts.slice(0, this.size);
    for (let i = 1; i < this.size; i++) list[fill[this.parent[i]]++] = i;
    this.childStart = counts;
    this.childList = list;
  }

  // Children of every node in index order, as one list sliced by start
  // offsets (CSR).
  childRanges(): { start: Uint32Array; list: Uint32Array } {
    if (!this.childStart) this.buildChildren();
    return { start: this.childStart!, list: this.childList! };
  }

  // Children of node, heaviest first by inclusive metric. Sorted when first
  // asked for: a view touches only the nodes it shows, so a million-node
  // profile never pays for sorting all of them.
  children(node: number, metric: number): Uint32Array {
    let sorted = this.sortedCache.get(metric);
    if (!sorted) {
      const { list } = this.childRanges();
      sorted = { done: new Uint8Array(this.size), list: list.slice() };
      this.sortedCache.set(metric, sorted);
    }
    const start = this.childStart!;
    const children = sorted.list.subarray(start[node], start[node + 1]);
    if (!sorted.done[node]) {
      if (children.length > 1) {
        const inclusive = this.inclusive(metric);
        children.sort((x, y) => Math.abs(inclusive[y]) - Math.abs(inclusive[x]));
      }
      sorted.done[node] = 1;
    }
    return children;
  }

  // Root-first path of node.
  path(node: number): number[] {
    const path: number[] = [node];
    while (node !== 0) {
      node = this.parent[node];
      path.push(node);
    }
    return path.reverse();
  }
}
