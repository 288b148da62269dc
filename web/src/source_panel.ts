// The source view: a file named by the profile, each line with its
// exclusive and inclusive value of the selected metric.
import type { SourceDocument } from './data';
import { el, formatValue } from './format';

export class SourcePanel {
  readonly element: HTMLElement;
  private readonly title: HTMLElement;
  private readonly body: HTMLElement;

  constructor() {
    this.element = el('div', 'source-panel');
    this.element.hidden = true;
    const header = el('div', 'source-header');
    this.title = el('span', 'source-title');
    const close = el('button', 'source-close', 'Close');
    close.addEventListener('click', () => { this.element.hidden = true; });
    header.append(this.title, close);
    this.body = el('div', 'source-body');
    this.element.append(header, this.body);
  }

  showLoading(file: string): void {
    this.element.hidden = false;
    this.title.textContent = file;
    this.body.replaceChildren(el('p', 'hint', 'Loading…'));
  }

  showError(file: string, message: string): void {
    this.element.hidden = false;
    this.title.textContent = file;
    this.body.replaceChildren(el('p', 'error source-error', message));
  }

  show(doc: SourceDocument, metric: string, unit: string, focusLine: number): void {
    this.element.hidden = false;
    this.title.textContent = doc.file;
    this.body.replaceChildren();
    const byLine = new Map(doc.lines.map((l) => [l.line, l]));
    let maxInclusive = 0;
    for (const l of doc.lines) maxInclusive = Math.max(maxInclusive, Math.abs(l.inclusive[metric] || 0));
    if (doc.text === null) {
      this.body.append(el('p', 'error source-error', doc.error || 'source not available'));
    }
    const text = doc.text === null ? [] : doc.text.split('\n');
    // Without text, still list the lines that carry cost.
    const count = doc.text === null ? 0 : text.length;
    const table = el('table', 'source-lines');
    const head = el('tr');
    for (const title of [`${metric} incl`, 'self', 'line', '']) head.append(el('th', '', title));
    table.append(head);
    const lineNumbers = doc.text === null ? doc.lines.map((l) => l.line) : Array.from({ length: count }, (_, i) => i + 1);
    let focusRow: HTMLElement | null = null;
    for (const number of lineNumbers) {
      const info = byLine.get(number);
      const inclusive = info?.inclusive[metric] || 0;
      const exclusive = info?.exclusive[metric] || 0;
      const row = el('tr', number === focusLine ? 'source-line focus' : 'source-line');
      row.dataset.line = String(number);
      const heat = el('td', 'num', inclusive ? formatValue(inclusive, unit) : '');
      if (inclusive && maxInclusive) {
        heat.style.background = `rgba(255,120,0,${(0.15 + 0.6 * Math.abs(inclusive) / maxInclusive).toFixed(2)})`;
      }
      row.append(heat, el('td', 'num', exclusive ? formatValue(exclusive, unit) : ''),
        el('td', 'num lineno', String(number)), el('td', 'code', text[number - 1] ?? ''));
      table.append(row);
      if (number === focusLine) focusRow = row;
    }
    this.body.append(table);
    if (focusRow) focusRow.scrollIntoView({ block: 'center' });
  }
}
