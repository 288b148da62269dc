// Where the analyzer's findings show in each view: which rows carry a badge
// and which rows to open to reach a finding's node. Findings name nodes of
// the calling context tree; bottom-up and flat rows are frames and diff
// rows are call paths, so each view maps nodes to its own rows.
import type { Finding } from './data';
import type { DiffModel } from './diff_model';
import type { ProfileModel } from './model';
import type { BottomUpModel, FlatView } from './views';

export type Badges = (row: number) => string | null;

export function findingsText(list: Finding[] | undefined): string | null {
  return list && list.length > 0 ? list.map((f) => `${f.severity}: ${f.title}`).join('\n') : null;
}

function groupBy(byNode: Map<number, Finding[]>, rowOf: (node: number) => number): Map<number, Finding[]> {
  const rows = new Map<number, Finding[]>();
  for (const [node, list] of byNode) {
    const row = rowOf(node);
    if (row < 0) continue;
    rows.set(row, [...(rows.get(row) ?? []), ...list]);
  }
  return rows;
}

// A bottom-up row stands for its frame in several contexts: it carries the
// findings of any of them.
// A row's nodes never change, so each row is looked at once (a frame
// called from everywhere stands for many nodes; scrolling must not pay).
export function bottomUpBadges(bottomUp: BottomUpModel, byNode: Map<number, Finding[]>): Badges {
  const known = new Map<number, string | null>();
  return (row) => {
    if (byNode.size === 0) return null;
    let text = known.get(row);
    if (text === undefined) {
      const list: Finding[] = [];
      for (const node of bottomUp.entriesOf(row)) list.push(...(byNode.get(node) ?? []));
      text = findingsText(list);
      known.set(row, text);
    }
    return text;
  };
}

export function flatBadges(model: ProfileModel, byNode: Map<number, Finding[]>): Badges {
  const rows = groupBy(byNode, (node) => (node < model.size ? model.frame[node] : -1));
  return (frame) => findingsText(rows.get(frame));
}

// Findings are of the current (before) profile; a path only in the after
// profile carries none.
export function diffBadges(diff: DiffModel, byNode: Map<number, Finding[]>): Badges {
  const rows = groupBy(byNode, (node) => (node < diff.rowOfBefore.length ? diff.rowOfBefore[node] : -1));
  return (row) => findingsText(rows.get(row));
}

// Bottom-up rows from a frame with exclusive cost up through its callers to
// node: node's own frame when it has exclusive cost, else the costliest
// node below it, climbing back to node. null when nothing under node has
// a cost in this metric (the view does not show it).
export function bottomUpPath(model: ProfileModel, metric: number, bottomUp: BottomUpModel,
                             node: number): number[] | null {
  if (node <= 0 || node >= model.size) return null;
  const exclusive = model.exclusive(metric);
  let leaf = node;
  if (exclusive[node] === 0) {
    const { start, list } = model.childRanges();
    let best = -1;
    const stack = [node];
    while (stack.length > 0) {
      const n = stack.pop()!;
      if (exclusive[n] !== 0 && (best < 0 || Math.abs(exclusive[n]) > Math.abs(exclusive[best]))) best = n;
      for (let i = start[n]; i < start[n + 1]; i++) stack.push(list[i]);
    }
    if (best < 0) return null;
    leaf = best;
  }
  const chain: number[] = [];
  for (let n = leaf; ; n = model.parent[n]) {
    chain.push(n);
    if (n === node) break;
  }
  const frameOf = (row: number) => bottomUp.frameOf(row);
  let row = bottomUp.roots().find((r) => frameOf(r) === model.frame[chain[0]]);
  if (row === undefined) return null;
  const path = [row];
  for (const next of chain.slice(1)) {
    row = bottomUp.children(row).find((r) => frameOf(r) === model.frame[next]);
    if (row === undefined) return null;
    path.push(row);
  }
  return path;
}

// The flat row of node's frame, or null when the view leaves it out.
export function flatRow(model: ProfileModel, flat: FlatView, node: number): number | null {
  const frame = model.frame[node];
  return flat.hasRow(frame) ? frame : null;
}
