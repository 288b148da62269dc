// The diff view's model: two profiles matched by call path, with each
// side's nodes mapped to the matched path so the details panel and the
// findings can go from one to the other.
import { changeColor, formatValue, kindColor } from './format';
import type { FlameTree } from './flame';
import type { TableModel } from './tree_table';
import { ProfileModel } from './model';

// Two profiles matched by call path (the chain of frames from the root).
export class DiffModel {
  readonly parent: number[] = [0];
  readonly label: string[] = ['all'];
  readonly kind: number[] = [0];
  readonly before: number[] = [0];
  readonly after: number[] = [0];
  readonly beforeSelf: number[] = [0];
  readonly afterSelf: number[] = [0];
  readonly kids: number[][] = [[]];
  readonly totalBefore: number;
  readonly totalAfter: number;
  readonly unit: string;
  // Node of the before (after) profile -> its path's row here.
  readonly rowOfBefore: Int32Array;
  readonly rowOfAfter: Int32Array;

  constructor(readonly beforeModel: ProfileModel, readonly afterModel: ProfileModel, metricName: string) {
    const a = beforeModel;
    const b = afterModel;
    const index = new Map<string, number>();
    const place = (model: ProfileModel, incl: number[], self: number[]): Int32Array => {
      const metric = model.metricIndex(metricName);
      const inclusive = metric >= 0 ? model.inclusive(metric) : new Float64Array(model.size);
      const exclusive = metric >= 0 ? model.exclusive(metric) : new Float64Array(model.size);
      const mapped = new Int32Array(model.size);
      incl[0] = inclusive[0];
      self[0] = exclusive[0];
      for (let n = 1; n < model.size; n++) {
        const parent = mapped[model.parent[n]];
        const key = `${parent}\u0001${model.frameKey(model.frame[n])}`;
        let id = index.get(key);
        if (id === undefined) {
          id = this.parent.length;
          index.set(key, id);
          this.parent.push(parent);
          this.label.push(model.name(n));
          this.kind.push(model.kind(n));
          this.before.push(0);
          this.after.push(0);
          this.beforeSelf.push(0);
          this.afterSelf.push(0);
          this.kids.push([]);
          this.kids[parent].push(id);
        }
        mapped[n] = id;
        incl[id] += inclusive[n];
        self[id] += exclusive[n];
      }
      return mapped;
    };
    this.rowOfBefore = place(a, this.before, this.beforeSelf);
    this.rowOfAfter = place(b, this.after, this.afterSelf);
    const weight = (n: number) => Math.max(Math.abs(this.before[n]), Math.abs(this.after[n]));
    for (const list of this.kids) list.sort((x, y) => weight(y) - weight(x));
    this.totalBefore = this.before[0];
    this.totalAfter = this.after[0];
    const metric = a.metricIndex(metricName);
    this.unit = metric >= 0 ? a.metrics[metric].unit : '';
  }

  get size(): number { return this.parent.length; }

  // The nodes of one side on row's path (usually one; none where the path
  // is on the other side only).
  nodesOf(side: 'before' | 'after', row: number): number[] {
    const rows = side === 'before' ? this.rowOfBefore : this.rowOfAfter;
    const nodes: number[] = [];
    for (let n = 0; n < rows.length; n++) if (rows[n] === row) nodes.push(n);
    return nodes;
  }

  // Root-first rows from the root's child down to row.
  pathTo(row: number): number[] {
    const path: number[] = [];
    for (let r = row; r > 0; r = this.parent[r]) path.unshift(r);
    return path;
  }

  changeColor(n: number): string {
    return changeColor(this.before[n], this.after[n], Math.max(this.totalBefore, this.totalAfter));
  }

  status(n: number): string {
    if (this.before[n] === 0 && this.after[n] !== 0) return 'added';
    if (this.after[n] === 0 && this.before[n] !== 0) return 'removed';
    return '';
  }

  table(): TableModel {
    const unit = this.unit;
    const delta = (n: number) => this.after[n] - this.before[n];
    const deltaSelf = (n: number) => this.afterSelf[n] - this.beforeSelf[n];
    const signed = (v: number) => (v > 0 ? '+' : '') + formatValue(v, unit);
    return {
      roots: () => this.kids[0].slice(),
      children: (n) => this.kids[n].slice(),
      hasChildren: (n) => this.kids[n].length > 0,
      label: (n) => (this.status(n) ? `${this.label[n]} [${this.status(n)}]` : this.label[n]),
      color: (n) => kindColor(this.kind[n]),
      columns: [
        { title: 'Before', value: (n) => this.before[n], text: (n) => formatValue(this.before[n], unit) },
        { title: 'After', value: (n) => this.after[n], text: (n) => formatValue(this.after[n], unit) },
        { title: 'Change', value: (n) => Math.abs(delta(n)), text: (n) => signed(delta(n)),
          background: (n) => this.changeColor(n) },
        { title: 'Change %', value: (n) => (this.before[n] ? delta(n) / Math.abs(this.before[n]) : Infinity),
          text: (n) => (this.before[n] ? `${((100 * delta(n)) / Math.abs(this.before[n])).toFixed(1)}%` : this.after[n] ? 'new' : '') },
        { title: 'Self change', value: (n) => Math.abs(deltaSelf(n)), text: (n) => signed(deltaSelf(n)) },
      ],
    };
  }

  flame(): FlameTree {
    const unit = this.unit;
    return {
      root: 0,
      parent: (n) => this.parent[n],
      children: (n) => this.kids[n],
      value: (n) => Math.max(Math.abs(this.before[n]), Math.abs(this.after[n])),
      label: (n) => this.label[n],
      color: (n) => this.changeColor(n),
      tooltip: (n) => `${this.label[n]}\nbefore ${formatValue(this.before[n], unit)}  after ${formatValue(this.after[n], unit)}  change ${formatValue(this.after[n] - this.before[n], unit)}`,
    };
  }
}
