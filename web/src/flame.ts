// The flame graph (an icicle: callers on top) on a 2D canvas. Only what is
// on screen is visited: a subtree narrower than a pixel is never entered,
// and the narrow tail of a node's children (they are sorted, heaviest
// first) is drawn as one aggregate box. A million-node profile therefore
// costs what the screen shows, not what the profile holds.
import { el } from './format';

// What the flame graph draws: any tree with sorted children and values.
export interface FlameTree {
  root: number;
  parent(node: number): number;
  children(node: number): ArrayLike<number>;
  value(node: number): number;
  label(node: number): string;
  color(node: number): string;
  tooltip(node: number): string;
  // True for a node the analyzer has findings on: its box gets a marker.
  badged?(node: number): boolean;
}

export interface DrawnBox {
  node: number; // -1 for an aggregate of narrow children
  label: string;
  x: number;
  y: number;
  w: number;
  h: number;
  matched: boolean;
  badged: boolean;
}

const ROW = 18;
const MIN_WIDTH = 0.5; // px: narrower children fold into one aggregate box
const LABEL_MIN = 24;  // px: narrower boxes carry no text

export class FlameGraph {
  readonly element: HTMLElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly breadcrumbs: HTMLElement;
  private readonly tooltip: HTMLElement;
  private readonly scroller: HTMLElement;
  private readonly spacer: HTMLElement;
  private tree: FlameTree | null = null;
  private zoom = 0;
  private search = '';
  private boxes: DrawnBox[] = [];
  private charWidth = 7;
  private pending = false;
  selected = -1;
  onSelect: (node: number) => void = () => {};
  onZoom: (node: number) => void = () => {};

  constructor() {
    this.element = el('div', 'flame');
    this.breadcrumbs = el('div', 'breadcrumbs');
    this.scroller = el('div', 'flame-scroller');
    this.spacer = el('div', 'flame-spacer');
    this.canvas = el('canvas', 'flame-canvas');
    this.tooltip = el('div', 'tooltip');
    this.scroller.append(this.spacer);
    this.element.append(this.breadcrumbs, this.canvas, this.scroller, this.tooltip);
    this.scroller.addEventListener('scroll', () => this.requestDraw());
    this.scroller.addEventListener('mousemove', (e) => this.hover(e));
    this.scroller.addEventListener('mouseleave', () => { this.tooltip.style.display = 'none'; });
    this.scroller.addEventListener('click', (e) => this.click(e));
    new ResizeObserver(() => this.requestDraw()).observe(this.element);
  }

  setTree(tree: FlameTree, zoom = tree.root): void {
    this.tree = tree;
    this.zoom = zoom;
    this.scroller.scrollTop = 0;
    this.requestDraw();
  }

  setSearch(search: string): void {
    this.search = search.toLowerCase();
    this.requestDraw();
  }

  zoomTo(node: number): void {
    this.zoom = node;
    this.onZoom(node);
    this.requestDraw();
  }

  get zoomedNode(): number { return this.zoom; }

  // The boxes of the last frame, for hit tests and the browser tests.
  drawnBoxes(): DrawnBox[] { return this.boxes; }

  requestDraw(): void {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => { this.pending = false; this.draw(); });
  }

  // Draws now; returns the time it took, in ms.
  draw(): number {
    const started = performance.now();
    const tree = this.tree;
    const width = this.scroller.clientWidth;
    const height = this.scroller.clientHeight;
    const dpr = window.devicePixelRatio || 1;
    this.canvas.width = Math.max(1, Math.floor(width * dpr));
    this.canvas.height = Math.max(1, Math.floor(height * dpr));
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${height}px`;
    this.canvas.style.top = `${this.scroller.offsetTop}px`;
    const ctx = this.canvas.getContext('2d')!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.font = '11px ui-monospace, "DejaVu Sans Mono", monospace';
    ctx.textBaseline = 'middle';
    this.charWidth = ctx.measureText('M').width || 7;
    this.boxes = [];
    if (!tree) return 0;
    this.renderBreadcrumbs(tree);
    const total = tree.value(this.zoom);
    const top = this.scroller.scrollTop;
    const firstRow = Math.floor(top / ROW);
    const lastRow = Math.ceil((top + height) / ROW);
    let deepest = 0;
    // Explicit stack: profiles can be thousands of frames deep.
    const stack: { node: number; depth: number; x: number; w: number }[] = [];
    if (total !== 0) stack.push({ node: this.zoom, depth: 0, x: 0, w: width });
    const scale = total === 0 ? 0 : width / Math.abs(total);
    while (stack.length > 0) {
      const { node, depth, x, w } = stack.pop()!;
      deepest = Math.max(deepest, depth);
      if (depth >= firstRow && depth <= lastRow) {
        this.drawBox(ctx, node, tree.label(node), tree.color(node), x, depth * ROW - top, w);
      }
      if (depth + 1 > lastRow) continue;
      const children = tree.children(node);
      let cx = x;
      for (let i = 0; i < children.length; i++) {
        const child = children[i];
        const cw = Math.abs(tree.value(child)) * scale;
        if (cw < MIN_WIDTH) {
          // Sorted heaviest first: the rest are narrow too.
          let rest = 0;
          for (let j = i; j < children.length; j++) rest += Math.abs(tree.value(children[j]));
          const rw = rest * scale;
          if (rw >= MIN_WIDTH && depth + 1 >= firstRow) {
            this.drawBox(ctx, -1, `${children.length - i} more`, '#dddddd', cx, (depth + 1) * ROW - top, rw);
          }
          break;
        }
        stack.push({ node: child, depth: depth + 1, x: cx, w: cw });
        cx += cw;
      }
    }
    // Rows below the screen were not visited: keep room to scroll to them.
    const more = deepest >= lastRow ? top + height + 10 * ROW : 0;
    this.spacer.style.height = `${Math.max((deepest + 2) * ROW, more)}px`;
    return performance.now() - started;
  }

  private drawBox(ctx: CanvasRenderingContext2D, node: number, label: string, color: string,
                  x: number, y: number, w: number): void {
    const matched = this.search !== '' && node >= 0 && label.toLowerCase().includes(this.search);
    const faded = this.search !== '' && !matched;
    ctx.globalAlpha = faded ? 0.35 : 1;
    ctx.fillStyle = matched ? '#ff4fd8' : color;
    ctx.fillRect(x, y, Math.max(w - 1, 0.5), ROW - 1);
    if (node === this.selected && node >= 0) {
      ctx.strokeStyle = '#000';
      ctx.lineWidth = 2;
      ctx.strokeRect(x + 1, y + 1, Math.max(w - 3, 0.5), ROW - 3);
    }
    if (w >= LABEL_MIN) {
      const chars = Math.floor((w - 6) / this.charWidth);
      const text = label.length > chars ? `${label.slice(0, Math.max(chars - 1, 1))}…` : label;
      ctx.fillStyle = '#111';
      ctx.fillText(text, x + 3, y + ROW / 2);
    }
    const badged = node >= 0 && (this.tree?.badged?.(node) ?? false);
    if (badged && w >= 8) {
      // A red corner, like a spreadsheet comment: visible at any width
      // that shows a box, never over the label.
      ctx.fillStyle = '#d0021b';
      ctx.beginPath();
      ctx.moveTo(x + w - 8, y);
      ctx.lineTo(x + w - 1, y);
      ctx.lineTo(x + w - 1, y + 7);
      ctx.closePath();
      ctx.fill();
    }
    ctx.globalAlpha = 1;
    this.boxes.push({ node, label, x, y, w, h: ROW - 1, matched, badged });
  }

  private renderBreadcrumbs(tree: FlameTree): void {
    this.breadcrumbs.replaceChildren();
    const path = this.pathTo(tree, this.zoom);
    path.forEach((node, i) => {
      const crumb = el('button', 'crumb', tree.label(node));
      crumb.addEventListener('click', () => this.zoomTo(node));
      if (i > 0) this.breadcrumbs.append(el('span', 'crumb-sep', '›'));
      this.breadcrumbs.append(crumb);
    });
  }

  private pathTo(tree: FlameTree, node: number): number[] {
    const path = [node];
    while (node !== tree.root && path.length < 100000) {
      node = tree.parent(node);
      path.push(node);
    }
    return path.reverse();
  }

  hitTest(x: number, y: number): DrawnBox | null {
    for (const box of this.boxes) {
      if (x >= box.x && x < box.x + box.w && y >= box.y && y < box.y + box.h) return box;
    }
    return null;
  }

  private position(e: MouseEvent): { x: number; y: number } {
    const rect = this.scroller.getBoundingClientRect();
    return { x: e.clientX - rect.left, y: e.clientY - rect.top };
  }

  private hover(e: MouseEvent): void {
    const { x, y } = this.position(e);
    const box = this.hitTest(x, y);
    if (!box || !this.tree) {
      this.tooltip.style.display = 'none';
      return;
    }
    this.tooltip.textContent = box.node >= 0 ? this.tree.tooltip(box.node) : box.label;
    this.tooltip.style.display = 'block';
    this.tooltip.style.left = `${Math.min(x + 12, this.scroller.clientWidth - 300)}px`;
    this.tooltip.style.top = `${y + 40}px`;
  }

  private click(e: MouseEvent): void {
    const { x, y } = this.position(e);
    const box = this.hitTest(x, y);
    if (!box || box.node < 0) return;
    this.selected = box.node;
    this.onSelect(box.node);
    this.zoomTo(box.node);
  }

}
