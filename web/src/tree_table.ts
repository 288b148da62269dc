// One virtualized tree table for the top-down, bottom-up, flat and diff
// views: only the rows on screen exist in the DOM, children are asked for
// when a row is expanded, and any column sorts.
import { el } from './format';

export interface Column {
  title: string;
  // Sort key and text of a row.
  value(row: number): number;
  text(row: number): string;
  // Optional cell background, e.g. the diff's change color.
  background?(row: number): string;
}

export interface TableModel {
  roots(): number[];
  children(row: number): number[];
  hasChildren(row: number): boolean;
  label(row: number): string;
  color(row: number): string;
  columns: Column[];
}

interface VisibleRow {
  row: number;
  depth: number;
  expanded: boolean;
}

const ROW_HEIGHT = 22;

export class TreeTable {
  readonly element: HTMLElement;
  private readonly header: HTMLElement;
  private readonly body: HTMLElement;
  private readonly spacer: HTMLElement;
  private model: TableModel | null = null;
  private rows: VisibleRow[] = [];
  private sortColumn = 0;
  private sortDescending = true;
  selected = -1;
  onSelect: (row: number) => void = () => {};
  // Rows that carry a finding badge, with its tooltip; null where the rows
  // are not calling-context nodes (bottom-up, flat, diff).
  badges: ((row: number) => string | null) | null = null;

  constructor(readonly name: string) {
    this.element = el('div', 'table');
    this.element.dataset.view = name;
    this.header = el('div', 'table-header');
    this.body = el('div', 'table-body');
    this.spacer = el('div', 'table-spacer');
    this.body.append(this.spacer);
    this.element.append(this.header, this.body);
    this.body.tabIndex = 0;
    this.body.addEventListener('keydown', (e) => this.key(e));
    this.body.addEventListener('scroll', () => this.render());
    new ResizeObserver(() => this.render()).observe(this.body);
  }

  setModel(model: TableModel, sortColumn = 0): void {
    this.model = model;
    this.sortColumn = Math.min(sortColumn, model.columns.length - 1);
    this.sortDescending = true;
    this.rows = this.sorted(model.roots()).map((row) => ({ row, depth: 0, expanded: false }));
    this.body.scrollTop = 0;
    this.renderHeader();
    this.render();
  }

  private sorted(rows: number[]): number[] {
    const model = this.model!;
    if (this.sortColumn < 0) {
      return rows.slice().sort((a, b) => model.label(a).localeCompare(model.label(b)) * (this.sortDescending ? -1 : 1));
    }
    const column = model.columns[this.sortColumn];
    const sign = this.sortDescending ? -1 : 1;
    return rows.slice().sort((a, b) => sign * (column.value(a) - column.value(b)));
  }

  private renderHeader(): void {
    const model = this.model!;
    this.header.replaceChildren();
    const nameCell = el('button', 'cell name sortable', 'Name');
    nameCell.addEventListener('click', () => this.sortBy(-1));
    this.header.append(nameCell);
    model.columns.forEach((column, index) => {
      const arrow = index === this.sortColumn ? (this.sortDescending ? ' ▼' : ' ▲') : '';
      const cell = el('button', 'cell num sortable', column.title + arrow);
      cell.addEventListener('click', () => this.sortBy(index));
      this.header.append(cell);
    });
  }

  sortBy(column: number): void {
    if (column === this.sortColumn) {
      this.sortDescending = !this.sortDescending;
    } else {
      this.sortColumn = column;
      this.sortDescending = true;
    }
    // Re-sort while keeping which rows are open.
    const open = new Set(this.rows.filter((r) => r.expanded).map((r) => r.row));
    const rebuild = (rows: number[], depth: number, out: VisibleRow[]): void => {
      for (const row of this.sorted(rows)) {
        const expanded = open.has(row);
        out.push({ row, depth, expanded });
        if (expanded) rebuild(this.model!.children(row), depth + 1, out);
      }
    };
    const out: VisibleRow[] = [];
    rebuild(this.model!.roots(), 0, out);
    this.rows = out;
    this.renderHeader();
    this.render();
  }

  toggle(index: number): void {
    const entry = this.rows[index];
    if (!entry || !this.model!.hasChildren(entry.row)) return;
    if (entry.expanded) {
      let end = index + 1;
      while (end < this.rows.length && this.rows[end].depth > entry.depth) end++;
      this.rows.splice(index + 1, end - index - 1);
      entry.expanded = false;
    } else {
      const children = this.sorted(this.model!.children(entry.row));
      this.rows.splice(index + 1, 0, ...children.map((row) => ({ row, depth: entry.depth + 1, expanded: false })));
      entry.expanded = true;
    }
    this.render();
  }

  // Opens the rows of path (root first, as model rows) and selects the last.
  reveal(path: number[]): void {
    let index = -1;
    for (let depth = 0; depth < path.length; depth++) {
      const from = index + 1;
      let found = -1;
      for (let i = from; i < this.rows.length && (depth === 0 || this.rows[i].depth >= depth); i++) {
        if (this.rows[i].depth === depth && this.rows[i].row === path[depth]) { found = i; break; }
      }
      if (found < 0) break;
      index = found;
      if (depth < path.length - 1 && !this.rows[index].expanded) this.toggle(index);
    }
    if (index < 0) return;
    this.select(this.rows[index].row);
    const top = index * ROW_HEIGHT;
    if (top < this.body.scrollTop || top > this.body.scrollTop + this.body.clientHeight - ROW_HEIGHT) {
      this.body.scrollTop = Math.max(0, top - this.body.clientHeight / 3);
    }
    this.render();
  }

  select(row: number): void {
    this.selected = row;
    this.onSelect(row);
    this.render();
  }

  visibleRowCount(): number { return this.rows.length; }

  // Arrows move and open or close rows, as in a file tree; Enter toggles.
  private key(e: KeyboardEvent): void {
    const index = this.rows.findIndex((r) => r.row === this.selected);
    const entry = this.rows[index];
    let next = index;
    if (e.key === 'ArrowDown') next = Math.min(index + 1, this.rows.length - 1);
    else if (e.key === 'ArrowUp') next = Math.max(index - 1, 0);
    else if (e.key === 'ArrowRight' && entry && !entry.expanded) this.toggle(index);
    else if (e.key === 'ArrowLeft' && entry?.expanded) this.toggle(index);
    else if (e.key === 'ArrowLeft' && entry && entry.depth > 0) {
      while (next > 0 && this.rows[next].depth >= entry.depth) next--;
    } else if (e.key === 'Enter' && entry) this.toggle(index);
    else return;
    e.preventDefault();
    if (next !== index && this.rows[next]) {
      this.select(this.rows[next].row);
      const top = next * ROW_HEIGHT;
      if (top < this.body.scrollTop) this.body.scrollTop = top;
      if (top + ROW_HEIGHT > this.body.scrollTop + this.body.clientHeight) {
        this.body.scrollTop = top + ROW_HEIGHT - this.body.clientHeight;
      }
    }
  }

  render(): void {
    const model = this.model;
    if (!model) return;
    this.spacer.style.height = `${this.rows.length * ROW_HEIGHT}px`;
    const first = Math.max(0, Math.floor(this.body.scrollTop / ROW_HEIGHT) - 5);
    const last = Math.min(this.rows.length, first + Math.ceil(this.body.clientHeight / ROW_HEIGHT) + 10);
    for (const old of Array.from(this.body.querySelectorAll('.row'))) old.remove();
    for (let i = first; i < last; i++) {
      const entry = this.rows[i];
      const rowElement = el('div', entry.row === this.selected ? 'row selected' : 'row');
      rowElement.style.top = `${i * ROW_HEIGHT}px`;
      rowElement.dataset.index = String(i);
      const name = el('div', 'cell name');
      name.style.paddingLeft = `${4 + entry.depth * 14}px`;
      const twisty = el('span', 'twisty', model.hasChildren(entry.row) ? (entry.expanded ? '▾' : '▸') : '');
      twisty.addEventListener('click', (e) => { e.stopPropagation(); this.toggle(i); });
      const swatch = el('span', 'swatch');
      swatch.style.background = model.color(entry.row);
      const label = model.label(entry.row);
      name.title = label;
      name.append(twisty, swatch);
      const badge = this.badges?.(entry.row);
      if (badge) {
        const mark = el('span', 'finding-badge', '!');
        mark.title = badge;
        name.append(mark);
      }
      name.append(el('span', 'label', label));
      rowElement.append(name);
      for (const column of model.columns) {
        const cell = el('div', 'cell num', column.text(entry.row));
        if (column.background) cell.style.background = column.background(entry.row);
        rowElement.append(cell);
      }
      rowElement.addEventListener('click', () => { this.body.focus(); this.select(entry.row); });
      rowElement.addEventListener('dblclick', () => this.toggle(i));
      this.body.append(rowElement);
    }
  }
}
