// The application: a toolbar (profile, metric, view, search), the current
// view, the details panel and the source view, with the state in the URL
// hash so a link reopens the same view.
import { ApiError, type DataSource, type FindingsDocument, type ProfileEntry } from './data';
import { renderDetails } from './details';
import { renderDiffDetails } from './diff_details';
import { DiffModel } from './diff_model';
import { bottomUpBadges, bottomUpPath, diffBadges, flatBadges, flatRow, findingsText, type Badges } from './finding_targets';
import { FindingsPanel } from './findings_panel';
import { FlameGraph } from './flame';
import { el, kindColor, LEGEND_KINDS } from './format';
import { ProfileModel } from './model';
import { SourcePanel } from './source_panel';
import { TreeTable } from './tree_table';
import { BottomUpModel, flameTree, flatModel, hotPath, topDownModel, type FlatView } from './views';

export const VIEWS = ['flame', 'top-down', 'bottom-up', 'flat', 'diff'] as const;
export type ViewName = (typeof VIEWS)[number];

interface State {
  profile: number;
  compare: number;
  metric: string;
  view: ViewName;
  search: string;
}

function readHash(): Partial<State> {
  const params = new URLSearchParams(window.location.hash.slice(1));
  const state: Partial<State> = {};
  if (params.has('profile')) state.profile = Number(params.get('profile'));
  if (params.has('compare')) state.compare = Number(params.get('compare'));
  if (params.has('metric')) state.metric = params.get('metric')!;
  const view = params.get('view');
  if (view && (VIEWS as readonly string[]).includes(view)) state.view = view as ViewName;
  if (params.has('search')) state.search = params.get('search')!;
  return state;
}

// Runs work once the next frame has been painted.
function afterNextPaint(work: () => void): void {
  requestAnimationFrame(() => setTimeout(work, 0));
}

export class App {
  private profiles: ProfileEntry[] = [];
  private readonly models = new Map<number, Promise<ProfileModel>>();
  private readonly findingsOf = new Map<number, Promise<FindingsDocument | null>>();
  private model: ProfileModel | null = null;
  private state: State = { profile: 0, compare: -1, metric: '', view: 'flame', search: '' };
  private selected = -1;
  private bottomUp: BottomUpModel | null = null;
  private flat: FlatView | null = null;
  // The diff view's model, table and flame graph, and its selected row.
  private diff: { model: DiffModel; table: TreeTable; flame: FlameGraph; badges: Badges } | null = null;
  private diffSelected = -1;
  // Set when the selection is a frame of the bottom-up or flat view that
  // stands for several calling contexts.
  private selectionNote = '';

  private readonly profileSelect = el('select', 'profile-select');
  private readonly compareSelect = el('select', 'compare-select');
  private readonly metricSelect = el('select', 'metric-select');
  private readonly searchInput = el('input', 'search');
  private readonly tabs = el('div', 'tabs');
  private readonly main = el('div', 'main');
  private readonly viewArea = el('div', 'view-area');
  private readonly details = el('div', 'details');
  readonly findings = new FindingsPanel();
  private readonly status = el('div', 'status');
  readonly flame = new FlameGraph();
  readonly table = new TreeTable('table');
  private readonly source = new SourcePanel();
  private readonly legend = el('div', 'legend');

  constructor(private readonly data: DataSource, root: HTMLElement) {
    const toolbar = el('div', 'toolbar');
    toolbar.append(el('span', 'brand', 'DeepContext'));
    const label = (text: string, control: HTMLElement) => {
      const wrapper = el('label', 'control');
      wrapper.append(el('span', '', text), control);
      return wrapper;
    };
    this.searchInput.type = 'search';
    this.searchInput.placeholder = 'Search frames';
    toolbar.append(label('Profile', this.profileSelect), label('Metric', this.metricSelect),
      this.tabs, label('Compare with', this.compareSelect), this.searchInput);
    for (const view of VIEWS) {
      const tab = el('button', 'tab', view);
      tab.dataset.view = view;
      tab.addEventListener('click', () => this.update({ view }));
      this.tabs.append(tab);
    }
    for (const [name, kind] of LEGEND_KINDS) {
      const swatch = el('span', 'swatch');
      swatch.style.background = kindColor(kind);
      const item = el('span', 'legend-item');
      item.append(swatch, document.createTextNode(name));
      this.legend.append(item);
    }
    const sidebar = el('div', 'sidebar');
    sidebar.append(this.findings.element, this.details);
    this.main.append(this.viewArea, sidebar);
    this.findings.onJump = (node) => this.jumpTo(node);
    root.append(toolbar, this.status, this.main, this.source.element);

    this.profileSelect.addEventListener('change', () => this.update({ profile: Number(this.profileSelect.value) }));
    this.compareSelect.addEventListener('change', () => this.update({ compare: Number(this.compareSelect.value) }));
    this.metricSelect.addEventListener('change', () => this.update({ metric: this.metricSelect.value }));
    this.searchInput.addEventListener('input', () => this.update({ search: this.searchInput.value }, false));
    this.flame.onSelect = (node) => this.select(node, '');
    this.table.onSelect = (row) => this.select(this.nodeOfRow(row));
    window.addEventListener('keydown', (e) => {
      if ((e.ctrlKey || e.metaKey) && e.key === 'f') {
        e.preventDefault();
        this.searchInput.focus();
      } else if (e.key === 'Escape' && this.state.view === 'flame') {
        this.flame.zoomTo(0);
      }
    });
  }

  async start(): Promise<void> {
    try {
      this.profiles = await this.data.profiles();
    } catch (e) {
      this.showError(`Cannot list profiles: ${(e as Error).message}`);
      return;
    }
    for (const profile of this.profiles) {
      // File names fit the toolbar; the whole path is the tooltip.
      const short = profile.label.slice(profile.label.lastIndexOf('/') + 1);
      for (const select of [this.profileSelect, this.compareSelect]) {
        const option = el('option', '', short);
        option.value = String(profile.id);
        option.title = profile.label;
        select.append(option);
      }
    }
    const none = el('option', '', '(none)');
    none.value = '-1';
    this.compareSelect.prepend(none);
    const fromHash = readHash();
    if (this.profiles.length > 1 && fromHash.compare === undefined && fromHash.profile === undefined) {
      fromHash.compare = 1;
    }
    await this.update(fromHash);
    window.addEventListener('hashchange', () => this.update(readHash(), false));
  }

  private loadModel(id: number): Promise<ProfileModel> {
    let model = this.models.get(id);
    if (!model) {
      model = this.data.tree(id).then((data) => new ProfileModel(data));
      this.models.set(id, model);
      model.catch(() => this.models.delete(id));  // a later visit retries
      model.then((loaded) => this.loadSampleStats(id, loaded), () => {});
    }
    return model;
  }

  // The samples' count, min and max follow the first screen: asked for on
  // the frame after it is drawn, shown in the details panel when they land.
  private loadSampleStats(id: number, model: ProfileModel): void {
    afterNextPaint(() => {
      this.data.sampleStats(id).then((stats) => {
        if (!stats) return;
        model.attachSampleStats(stats);
        if (model === this.model) this.renderDetails();
      }).catch((e) => {
        if (model === this.model) this.showError(`Cannot load the samples' counts: ${(e as Error).message}`);
      });
    });
  }

  // Findings come after the tree: the views never wait for the analyzer.
  private async loadFindings(id: number): Promise<void> {
    if (id !== this.state.profile) return;
    let doc = this.findingsOf.get(id);
    if (!doc) {
      doc = this.data.findings(id);
      this.findingsOf.set(id, doc);
      doc.catch(() => this.findingsOf.delete(id));
    }
    try {
      const result = await doc;
      if (id !== this.state.profile) return;
      this.findings.show(result);
    } catch (e) {
      if (id !== this.state.profile) return;
      this.findings.showError((e as Error).message);
    }
    // Badges appear on what is already drawn.
    this.setBadges();
    this.table.render();
    this.flame.requestDraw();
    this.diff?.table.render();
    this.diff?.flame.requestDraw();
  }

  private badgeText(node: number): string | null {
    return findingsText(this.findings.byNode.get(node));
  }

  // Each table view marks its own rows: nodes, frames or call paths.
  private setBadges(): void {
    const byNode = this.findings.byNode;
    this.table.badges = null;
    if (this.state.view === 'top-down') this.table.badges = (row) => this.badgeText(row);
    else if (this.state.view === 'bottom-up' && this.bottomUp) this.table.badges = bottomUpBadges(this.bottomUp, byNode);
    else if (this.state.view === 'flat' && this.flat) this.table.badges = flatBadges(this.model!, byNode);
    if (this.diff) {
      this.diff.badges = diffBadges(this.diff.model, byNode);
      this.diff.table.badges = this.diff.badges;
    }
  }

  // A finding's node, shown where the current view shows it: zoomed to in
  // the flame graphs, its row opened in the tables (the frame's row in the
  // flat view, the path from a costly frame up through its callers in the
  // bottom-up view). A view that leaves the node out (no value in this
  // metric) hands over to the top-down tree.
  private jumpTo(node: number): void {
    const model = this.model;
    if (!model || node < 0 || node >= model.size) return;
    const view = this.state.view;
    if (view === 'flame') {
      this.flame.zoomTo(node);
      this.select(node, '');
      return;
    }
    if (view === 'diff' && this.diff) {
      const row = this.diff.model.rowOfBefore[node];
      this.diff.flame.zoomTo(row);
      this.diff.table.reveal(this.diff.model.pathTo(row));
      return;
    }
    let rows: number[] | null = null;
    if (view === 'bottom-up' && this.bottomUp) rows = bottomUpPath(model, this.metric, this.bottomUp, node);
    if (view === 'flat' && this.flat) {
      const row = flatRow(model, this.flat, node);
      rows = row === null ? null : [row];
    }
    if (rows) {
      this.table.reveal(rows);
      this.select(node, '');
      return;
    }
    const path: number[] = [];
    for (let n = node; n > 0; n = model.parent[n]) path.unshift(n);
    if (view === 'top-down') {
      this.table.reveal(path);
    } else {
      void this.update({ view: 'top-down' }).then(() => this.table.reveal(path));
    }
    this.select(node, '');
  }

  private showError(message: string): void {
    this.status.textContent = message;
    this.status.className = 'status error';
  }

  private writeHash(): void {
    const params = new URLSearchParams();
    params.set('view', this.state.view);
    params.set('profile', String(this.state.profile));
    if (this.state.compare >= 0) params.set('compare', String(this.state.compare));
    if (this.state.metric) params.set('metric', this.state.metric);
    if (this.state.search) params.set('search', this.state.search);
    const hash = `#${params.toString()}`;
    if (window.location.hash !== hash) history.replaceState(null, '', hash);
  }

  async update(change: Partial<State>, rebuild = true): Promise<void> {
    const profileChanged = change.profile !== undefined && change.profile !== this.state.profile;
    this.state = { ...this.state, ...change };
    if (profileChanged || !this.model) {
      this.status.textContent = 'Loading profile…';
      this.status.className = 'status';
      try {
        this.model = await this.loadModel(this.state.profile);
      } catch (e) {
        this.model = null;
        this.viewArea.replaceChildren();
        this.details.replaceChildren();
        const message = e instanceof ApiError ? e.message : String(e);
        // The server's message names the file already.
        this.showError(`Cannot open this profile: ${message}`);
        this.profileSelect.value = String(this.state.profile);
        return;
      }
      this.selected = -1;
      this.status.textContent = '';
      this.renderMetricOptions();
      // After the first screen: the rules would take the server's CPU
      // while the page draws.
      const id = this.state.profile;
      this.findings.showLoading();
      afterNextPaint(() => void this.loadFindings(id));
    }
    const model = this.model!;
    if (model.metricIndex(this.state.metric) < 0) {
      const fallback = model.defaultMetric >= 0 ? model.metrics[model.defaultMetric].name : '';
      this.state.metric = fallback;
    }
    this.profileSelect.value = String(this.state.profile);
    this.compareSelect.value = String(this.state.compare);
    this.metricSelect.value = this.state.metric;
    this.searchInput.value = this.state.search;
    for (const tab of Array.from(this.tabs.children) as HTMLElement[]) {
      tab.classList.toggle('active', tab.dataset.view === this.state.view);
    }
    this.writeHash();
    this.flame.setSearch(this.state.search);
    if (rebuild) await this.renderView();
    if (!document.body.dataset.ready) performance.mark('dc:first-view');
    document.body.dataset.ready = 'true';
  }

  private renderMetricOptions(): void {
    this.metricSelect.replaceChildren();
    for (const metric of this.model!.metrics) {
      const option = el('option', '', metric.name);
      option.value = metric.name;
      option.title = metric.description;
      this.metricSelect.append(option);
    }
  }

  private get metric(): number { return this.model!.metricIndex(this.state.metric); }

  private async renderView(): Promise<void> {
    const model = this.model!;
    this.bottomUp = null;
    this.flat = null;
    this.diff = null;
    this.diffSelected = -1;
    this.selectionNote = '';
    // The last view's badges name its own rows, not the next view's.
    this.table.badges = null;
    if (this.metric < 0) {
      this.viewArea.replaceChildren(el('p', 'hint', 'This profile has no metrics.'));
      return;
    }
    switch (this.state.view) {
      case 'flame': {
        this.viewArea.replaceChildren(this.legend, this.flame.element);
        const tree = flameTree(model, this.metric);
        this.flame.setTree({
          ...tree,
          badged: (n) => this.findings.byNode.has(n),
          tooltip: (n) => {
            const badge = this.badgeText(n);
            return badge ? `${tree.tooltip(n)}\n${badge}` : tree.tooltip(n);
          },
        });
        break;
      }
      case 'top-down':
        this.viewArea.replaceChildren(this.table.element);
        this.table.setModel(topDownModel(model, this.metric));
        break;
      case 'bottom-up':
        this.bottomUp = new BottomUpModel(model, this.metric);
        this.viewArea.replaceChildren(this.table.element);
        this.table.setModel(this.bottomUp);
        break;
      case 'flat': {
        this.flat = flatModel(model, this.metric);
        this.viewArea.replaceChildren(this.table.element);
        this.table.setModel(this.flat.table);
        break;
      }
      case 'diff':
        await this.renderDiff();
        break;
    }
    this.table.element.dataset.view = this.state.view;
    this.setBadges();
    this.table.render();
    this.renderDetails();
  }

  private async renderDiff(): Promise<void> {
    const compare = this.state.compare;
    if (compare < 0 || compare === this.state.profile) {
      this.viewArea.replaceChildren(el('p', 'hint', 'Choose a second profile under "Compare with" to see what changed from this profile to that one.'));
      return;
    }
    let after: ProfileModel;
    try {
      after = await this.loadModel(compare);
    } catch (e) {
      this.viewArea.replaceChildren(el('p', 'error', `Cannot open ${this.profiles[compare]?.label}: ${(e as Error).message}`));
      return;
    }
    const diff = new DiffModel(this.model!, after, this.state.metric);
    const wrapper = el('div', 'diff');
    const summary = el('div', 'diff-summary');
    const missing = after.metricIndex(this.state.metric) < 0 ? ` (the second profile has no ${this.state.metric})` : '';
    summary.textContent = `Before: ${this.profiles[this.state.profile].label}  →  after: ${this.profiles[compare].label}${missing}. Red grew, blue shrank.`;
    const flame = new FlameGraph();
    flame.element.classList.add('diff-flame');
    const table = new TreeTable('diff');
    wrapper.append(summary, flame.element, table.element);
    this.viewArea.replaceChildren(wrapper);
    this.diff = { model: diff, table, flame, badges: () => null };
    const tree = diff.flame();
    flame.setTree({
      ...tree,
      badged: (row) => this.diff?.badges(row) != null,
      tooltip: (row) => [tree.tooltip(row), this.diff?.badges(row)].filter(Boolean).join('\n'),
    });
    flame.setSearch(this.state.search);
    table.setModel(diff.table(), 2);
    const selectRow = (row: number) => {
      this.diffSelected = row;
      flame.selected = row;
      flame.requestDraw();
      table.selected = row;
      table.render();
      this.renderDetails();
    };
    table.onSelect = selectRow;
    flame.onSelect = selectRow;
    (window as unknown as { __dcDiff: unknown }).__dcDiff = { flame, table, diff };
  }

  private nodeOfRow(row: number): number {
    let contexts = 1;
    let node = row;
    if (this.state.view === 'bottom-up' && this.bottomUp) {
      contexts = this.bottomUp.contextsOf(row);
      node = this.bottomUp.nodeOf(row);
    } else if (this.state.view === 'flat' && this.flat) {
      contexts = this.flat.contextsOf(row);
      node = this.flat.nodeOf(row);
    }
    this.selectionNote = contexts > 1
      ? `This frame occurs in ${contexts} calling contexts; the numbers below are those of the costliest one.`
      : '';
    return node;
  }

  private select(node: number, note = this.selectionNote): void {
    this.selectionNote = note;
    this.selected = node;
    this.flame.selected = node;
    this.renderDetails();
  }

  private renderDetails(): void {
    if (!this.model) return;
    if (this.diff) {
      renderDiffDetails(this.details, this.diff.model, this.diffSelected, this.state.metric);
      return;
    }
    renderDetails(this.details, this.model, this.selected, this.selectionNote, {
      showSource: (node) => void this.showSource(node),
      hotPath: (node) => this.expandHotPath(node),
      focus: (node) => {
        void this.update({ view: 'flame' }).then(() => this.flame.zoomTo(node));
      },
    });
  }

  expandHotPath(node: number): void {
    const path = hotPath(this.model!, this.metric, node);
    const target = path[path.length - 1];
    if (this.state.view !== 'top-down') {
      void this.update({ view: 'top-down' }).then(() => this.table.reveal(path.slice(1)));
    } else {
      this.table.reveal(path.slice(1));
    }
    this.select(target, '');
  }

  async showSource(node: number): Promise<void> {
    const model = this.model!;
    const file = model.file(node);
    this.source.showLoading(file);
    try {
      const doc = await this.data.source(this.state.profile, file);
      const unit = model.metrics[this.metric]?.unit || '';
      this.source.show(doc, this.state.metric, unit, model.line(node));
    } catch (e) {
      this.source.showError(file, (e as Error).message);
    }
  }
}
