// The analyzer's findings next to the views: one entry per finding (rule,
// severity, where, what fixing it could save, what to change), ranked as
// the analyzer ranks them. Choosing an entry jumps to the node it blames.
import type { Finding, FindingsDocument } from './data';
import { el, formatValue } from './format';

function percent(share: number): string {
  return `${(100 * share).toFixed(share >= 0.1 ? 0 : 1)}%`;
}

export function benefitText(finding: Finding): string {
  const b = finding.benefit;
  if (b.bytes > 0) {
    const share = b.peak_bytes > 0 ? ` (${percent(b.bytes / b.peak_bytes)} of the peak)` : '';
    return `up to ${formatValue(b.bytes, 'B')} of device memory${share}`;
  }
  const low = formatValue(b.low_seconds * 1e9, 'ns');
  const high = formatValue(b.high_seconds * 1e9, 'ns');
  const range = low === high ? high : `${low}–${high}`;
  const shares = b.share_low === b.share_high ? percent(b.share_high)
    : `${percent(b.share_low)}–${percent(b.share_high)}`;
  return `${range} (${shares} of ${b.basis || 'the profile'})`;
}

function locationText(finding: Finding): string {
  const c = finding.context;
  const parts: string[] = [];
  if (c.file) {
    const base = c.file.slice(c.file.lastIndexOf('/') + 1);
    parts.push(c.line ? `${base}:${c.line}` : base);
  }
  if (c.function) parts.push(c.function);
  if (c.operator) parts.push(c.operator);
  if (c.kernel) parts.push(c.kernel);
  if (parts.length === 0) parts.push(finding.node.path.slice(-2).join(' → '));
  return parts.join('  ·  ');
}

export class FindingsPanel {
  readonly element = el('div', 'findings');
  onJump: (node: number) => void = () => {};
  // Node -> the findings that blame it, for badges in the views.
  byNode = new Map<number, Finding[]>();

  showLoading(): void {
    this.byNode = new Map();
    this.element.replaceChildren(el('h3', 'findings-title', 'Findings'), el('p', 'hint', 'Analyzing…'));
  }

  // null: this page has no findings to show (an exported HTML file from
  // before exports carried them).
  show(doc: FindingsDocument | null): void {
    this.byNode = new Map();
    const title = el('h3', 'findings-title', 'Findings');
    if (!doc) {
      this.element.replaceChildren(title, el('p', 'hint',
        'This file carries no findings; run `deepcontext analyze` on the profile or open it with `deepcontext view`.'));
      return;
    }
    title.textContent = `Findings (${doc.findings.length})`;
    const list = el('ol', 'findings-list');
    for (const finding of doc.findings) {
      const node = finding.node.id;
      if (!this.byNode.has(node)) this.byNode.set(node, []);
      this.byNode.get(node)!.push(finding);
      const item = el('li', `finding severity-${finding.severity}`);
      item.dataset.node = String(node);
      item.dataset.rule = finding.rule;
      item.tabIndex = 0;
      const head = el('div', 'finding-head');
      head.append(el('span', `severity ${finding.severity}`, finding.severity),
        el('span', 'finding-rule', finding.rule));
      item.append(head,
        el('div', 'finding-title', finding.title),
        el('div', 'finding-location', locationText(finding)),
        el('div', 'finding-benefit', `Could save ${benefitText(finding)}`),
        el('div', 'finding-suggestion', finding.suggestion));
      if (finding.example) item.append(el('code', 'finding-example', finding.example));
      item.title = finding.node.path.join(' → ');
      item.addEventListener('click', () => this.onJump(node));
      item.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') this.onJump(node);
      });
      list.append(item);
    }
    const parts: HTMLElement[] = [title];
    if (doc.findings.length === 0) parts.push(el('p', 'hint', 'The analyzer found nothing to fix.'));
    else parts.push(list);
    if (doc.not_checked.length > 0) {
      const skipped = el('p', 'hint findings-skipped',
        `${doc.not_checked.length} rule${doc.not_checked.length > 1 ? 's' : ''} could not check this profile (hover for why).`);
      skipped.title = doc.not_checked.map((s) => `${s.rule}: ${s.reason}`).join('\n');
      parts.push(skipped);
    }
    this.element.replaceChildren(...parts);
  }

  showError(message: string): void {
    this.byNode = new Map();
    this.element.replaceChildren(el('h3', 'findings-title', 'Findings'),
      el('p', 'error', `Cannot analyze this profile: ${message}`));
  }
}
