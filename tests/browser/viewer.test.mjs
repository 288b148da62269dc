// The viewer in real Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core): every view of a served fixture profile, search, metric
// switch, source view, diff, a bad profile, and the HTML export from
// file://. Screenshots go to DC_ARTIFACTS. Canvas contents are checked
// through the page's test hook (window.__dc.flameBoxes), not pixels.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdirSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const bin = env('DC_BIN');
const fixtures = env('DC_FIXTURES');
const artifacts = env('DC_ARTIFACTS');
const { chromium } = createRequire(`${env('DC_NODE_MODULES')}/`)('playwright-core');
mkdirSync(artifacts, { recursive: true });

let server;
let url;
let browser;
let page;
const pageErrors = [];

async function startServer(files) {
  const child = spawn(bin, ['view', '--no-browser', ...files], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.output = '';
  child.errors = '';
  child.stderr.on('data', (chunk) => { child.errors += chunk; });
  const found = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      child.output += chunk;
      out += chunk;
      const match = out.match(/(http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]+)/);
      if (match) resolve(match[1]);
    });
    child.on('exit', (code) => reject(new Error(`view exited with ${code}: ${out}`)));
  });
  return { child, url: found };
}

const shot = (name) => page.screenshot({ path: `${artifacts}/${name}.png` });
const ready = () => page.waitForSelector('body[data-ready="true"]');
const boxes = () => page.evaluate(() => window.__dc.flameBoxes());
const labels = async () => (await boxes()).map((b) => b.label);
const rowLabels = () => page.$$eval('.table-body .row .label', (cells) => cells.map((c) => c.textContent));
const clickRow = (label) => page.locator('.table-body .row .cell.name', { hasText: label }).first().click();
const detailsText = () => page.textContent('.details');

async function clickBox(label) {
  const box = (await boxes()).find((b) => b.label === label);
  assert.ok(box, `no flame box ${label}`);
  const area = await page.locator('.flame-scroller').first().boundingBox();
  await page.mouse.click(area.x + box.x + Math.min(box.w / 2, 20), area.y + box.y + box.h / 2);
}

before(async () => {
  ({ child: server, url } = await startServer(
    [`${fixtures}/before.dctx`, `${fixtures}/after.dctx`, `${fixtures}/foreign.dctx`]));
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 }, deviceScaleFactor: 1 });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(`${m.text()} ${m.location().url}`); });
});

after(async () => {
  await browser?.close();
  if (server && server.exitCode === null) server.kill('SIGKILL');
});

test('flame graph draws the profile and zooms on click', async () => {
  await page.goto(url);
  await ready();
  await page.waitForFunction(() => window.__dc.flameBoxes().length > 5);
  const drawn = await labels();
  assert.ok(drawn.includes('sm80_xmma_gemm_f32f32_tn'), drawn.join(','));
  assert.ok(drawn.includes('Memcpy HtoD (Pageable -> Device)'));
  assert.match(await page.textContent('.legend'), /Python.*operator.*kernel.*copy/);
  // The first screen waits for the tree only; the samples' count, min and
  // max come after it.
  await page.waitForFunction(() => window.__dc.app.model?.hasSampleStats);
  const fetched = await page.evaluate(() => performance.getEntriesByType('resource')
    .map((e) => new URL(e.name).pathname).filter((p) => p.includes('/tree')));
  assert.deepEqual(fetched, ['/api/profiles/0/tree.bin', '/api/profiles/0/tree-stats.bin']);
  await shot('flame');
  await clickBox('aten::mm');
  await page.waitForFunction(() => window.__dc.flameBoxes()[0]?.label === 'aten::mm');
  const zoomed = await boxes();
  const width = await page.$eval('.flame-scroller', (e) => e.clientWidth);
  assert.ok(zoomed[0].w >= width - 1, 'the zoomed node spans the width');
  assert.ok(!zoomed.some((b) => b.label === 'aten::linear'), 'siblings are gone');
  assert.match(await page.textContent('.breadcrumbs'), /all.*main thread.*train_step.*aten::mm/s);
  assert.match(await detailsText(), /aten::mm/);
  await shot('flame-zoomed');
  await page.locator('.crumb', { hasText: 'all' }).click();
  await page.waitForFunction(() => window.__dc.flameBoxes()[0]?.label === 'all');
});

test('search highlights matching frames', async () => {
  await page.fill('.search', 'gemm');
  await page.waitForFunction(() => window.__dc.flameBoxes().some((b) => b.matched));
  const matched = (await boxes()).filter((b) => b.matched).map((b) => b.label);
  assert.deepEqual(matched.sort(), ['sm80_xmma_gemm_f32f32_nn', 'sm80_xmma_gemm_f32f32_tn']);
  assert.match(page.url(), /search=gemm/);
  await shot('search');
  await page.fill('.search', '');
});

test('switching the metric redraws by that metric', async () => {
  await page.selectOption('.metric-select', 'cpu_time');
  await page.waitForFunction(() => !window.__dc.flameBoxes().some((b) => b.label.startsWith('sm80')));
  assert.ok((await labels()).includes('cudaLaunchKernel'));
  assert.match(page.url(), /metric=cpu_time/);
  await shot('metric-cpu');
  await page.selectOption('.metric-select', 'gpu_time');
});

test('top-down table sorts and expands to the hot path', async () => {
  await page.click('.tab[data-view="top-down"]');
  await page.waitForSelector('.table-body .row');
  assert.deepEqual(await rowLabels(), ['main thread']);
  await clickRow('main thread');
  await page.click('.hot-path');
  await page.waitForFunction(() => document.querySelector('.details-name')?.textContent === 'train_step');
  const rows = await rowLabels();
  assert.deepEqual(rows.slice(0, 4), ['main thread', '<module>', 'main', 'train_step']);
  // train_step's children, heaviest first: the backward GEMM's line.
  await page.locator('.table-body .row.selected .twisty').click();
  assert.deepEqual((await rowLabels()).slice(4, 6), ['train_step', 'forward']);
  await page.click('.table-header .cell:has-text("Exclusive")');
  await shot('top-down');
  // Keyboard: Left closes an open row, then climbs to its parent; Down
  // goes to the next row.
  await clickRow('<module>');
  await page.keyboard.press('ArrowLeft');
  assert.deepEqual(await rowLabels(), ['main thread', '<module>']);
  await page.keyboard.press('ArrowLeft');
  await page.waitForFunction(() => document.querySelector('.details-name')?.textContent === 'main thread');
  await page.keyboard.press('ArrowDown');
  await page.waitForFunction(() => document.querySelector('.details-name')?.textContent === '<module>');
});

test('bottom-up lists the costliest frames with their callers', async () => {
  await page.click('.tab[data-view="bottom-up"]');
  await page.waitForFunction(() => document.querySelector('.table')?.dataset.view === 'bottom-up');
  const rows = await rowLabels();
  assert.equal(rows[0], 'sm80_xmma_gemm_f32f32_nn');
  await page.locator('.table-body .row').first().locator('.twisty').click();
  assert.equal((await rowLabels())[1], 'cudaLaunchKernel');
  await shot('bottom-up');
});

test('flat view and the details of a kernel and a copy', async () => {
  await page.click('.tab[data-view="flat"]');
  await page.waitForFunction(() => document.querySelector('.table')?.dataset.view === 'flat');
  await clickRow('sm80_xmma_gemm_f32f32_tn');
  const kernel = await detailsText();
  assert.match(kernel, /128 blocks × 256 threads/);
  assert.match(kernel, /Registers \/ thread96/);
  assert.match(kernel, /Occupancy50\.0%/);
  assert.match(kernel, /Calls10/);
  // Launch attributes are averaged, never summed over a subtree.
  const registers = await page.textContent('table.metrics tr:has-text("registers_per_thread")');
  assert.match(registers, /^registers_per_thread–mean 9610/);
  await shot('details-kernel');
  // Launches measured with --gpu-metrics count as calls, not in the time.
  await clickRow('sm80_xmma_gemm_f32f32_nn');
  const measured = await detailsText();
  assert.match(measured, /Calls12/);
  assert.match(measured, /GPU time mean \/ min \/ max3\.00 ms/);
  assert.match(measured, /Untimed launches2, not in the GPU time/);
  await clickRow('Memcpy HtoD');
  const copy = await detailsText();
  assert.match(copy, /Bandwidth0\.52 GB\/s/);
  await clickRow('aten::linear');
  assert.match(await detailsText(), /Live at peak \(gpu_peak_live_bytes\)64\.0 MiB/);
  // A frame in several contexts: the panel says so and shows the costliest.
  await clickRow('cudaLaunchKernel');
  assert.match(await page.textContent('.details-note'), /occurs in 3 calling contexts/);
  assert.match(await page.textContent('table.metrics tr:has-text("gpu_time")'), /^gpu_time30\.0 ms/);
});

test('source view shows the named file with line metrics', async () => {
  await clickRow('forward');
  await page.click('.show-source');
  await page.waitForSelector('.source-line.focus');
  const focused = await page.textContent('.source-line.focus');
  assert.match(focused, /20\.0 ms.*6.*x = self\.fc\(x\)/s);
  assert.match(await page.textContent('.source-title'), /src\/model\.py$/);
  await shot('source');
  await page.click('.source-close');
  // prefetch has CPU time only.
  await page.selectOption('.metric-select', 'cpu_time');
  await clickRow('prefetch');
  await page.click('.show-source');
  await page.waitForSelector('.source-error');
  assert.match(await page.textContent('.source-error'), /missing\.py: No such file/);
  await page.click('.source-close');
  await page.selectOption('.metric-select', 'gpu_time');
});

test('diff of two profiles is colored by change', async () => {
  await page.selectOption('.compare-select', '1');
  await page.click('.tab[data-view="diff"]');
  await page.waitForSelector('.diff .table-body .row');
  const summary = await page.textContent('.diff-summary');
  assert.match(summary, /before\.dctx.*after\.dctx/s);
  // The flame graph draws on the next animation frame.
  await page.waitForFunction(() => window.__dcDiff.flame.drawnBoxes().length > 0);
  const flame = await page.evaluate(() => window.__dcDiff.flame.drawnBoxes().map((b) => b.label));
  assert.ok(flame.includes('fused_relu_kernel') && flame.includes('vectorized_elementwise_kernel'));
  const status = await page.evaluate(() => {
    const d = window.__dcDiff.diff;
    const find = (name) => d.label.indexOf(name);
    return {
      added: d.status(find('fused_relu_kernel')),
      removed: d.status(find('vectorized_elementwise_kernel')),
      gemm: d.changeColor(find('sm80_xmma_gemm_f32f32_tn')),
      change: d.after[find('sm80_xmma_gemm_f32f32_tn')] - d.before[find('sm80_xmma_gemm_f32f32_tn')],
    };
  });
  assert.deepEqual([status.added, status.removed], ['added', 'removed']);
  assert.equal(status.change, 2e7);
  assert.match(status.gemm, /^rgb\(238,/, 'growth is red');
  await shot('diff');
});

test('details of a diff row show both sides and the change for every metric', async () => {
  const diffRow = (label) => page.locator('.diff .table-body .row .cell.name', { hasText: label }).first();
  await page.locator('.diff .table-body').click({ position: { x: 5, y: 5 } });
  // Open the tree down to the GEMM kernel that doubled.
  await page.evaluate(() => {
    const { table, diff } = window.__dcDiff;
    table.reveal(diff.pathTo(diff.label.indexOf('sm80_xmma_gemm_f32f32_tn')));
  });
  await diffRow('sm80_xmma_gemm_f32f32_tn').click();
  await page.waitForFunction(() => document.querySelector('.details-name')?.textContent === 'sm80_xmma_gemm_f32f32_tn');
  const cells = (metric) => page.$$eval(`table.diff-metrics tr[data-metric="${metric}"] td`, (tds) => tds.map((td) => td.textContent));
  assert.deepEqual(await cells('gpu_time'), ['gpu_time', '20.0 ms', '40.0 ms', '+20.0 ms', '100.0%', '+20.0 ms']);
  assert.equal(await page.getAttribute('table.diff-metrics tr[data-metric="gpu_time"]', 'class'), 'current');
  assert.match(await detailsText(), /Kindgpu_kernel/);
  assert.match(await detailsText(), /Depth8/);
  // Every metric either side has; launch attributes as means per launch.
  assert.deepEqual(await cells('registers_per_thread'), ['registers_per_thread (mean)', '96', '96', '0', '0.0%', '–']);
  await shot('diff-details');
  // A path on one side only says so; its other side is zero.
  await page.evaluate(() => {
    const { table, diff } = window.__dcDiff;
    table.reveal(diff.pathTo(diff.label.indexOf('fused_relu_kernel')));
  });
  await page.waitForFunction(() => document.querySelector('.details-name')?.textContent === 'fused_relu_kernel');
  assert.match(await detailsText(), /Statusonly in the after profile/);
  assert.deepEqual((await cells('gpu_time')).slice(1, 5), ['0 ns', '3.00 ms', '+3.00 ms', 'new']);
  // The diff flame graph selects the same way.
  await page.evaluate(() => window.__dcDiff.flame.zoomTo(0));
  await page.waitForFunction(() => window.__dcDiff.flame.drawnBoxes().some((b) => b.label === 'aten::mm'));
  const box = await page.evaluate(() => window.__dcDiff.flame.drawnBoxes().find((b) => b.label === 'aten::mm'));
  const area = await page.locator('.diff-flame .flame-scroller').boundingBox();
  await page.mouse.click(area.x + box.x + Math.min(box.w / 2, 20), area.y + box.y + box.h / 2);
  await page.waitForFunction(() => document.querySelector('.details-name')?.textContent === 'aten::mm');
  assert.deepEqual((await cells('gpu_time')).slice(1, 4), ['30.0 ms', '30.0 ms', '0 ns']);
});

test('a profile that cannot be read shows its error; the others still open', async () => {
  await page.click('.tab[data-view="flame"]');
  await page.selectOption('.profile-select', '2');
  await page.waitForSelector('.status.error');
  assert.match(await page.textContent('.status'), /^Cannot open this profile: \S*foreign\.dctx: /);
  await shot('bad-profile');
  await page.selectOption('.profile-select', '0');
  await page.waitForFunction(() => window.__dc.flameBoxes().length > 5);
  assert.equal(await page.textContent('.status'), '');
});

test('findings list jumps to the node it blames; badges mark it', async () => {
  // The fixture holds its whole device-memory peak in aten::linear.
  await page.waitForSelector('.finding');
  assert.equal(await page.textContent('.findings-title'), 'Findings (1)');
  const entry = page.locator('.finding').first();
  assert.equal(await entry.getAttribute('data-rule'), 'memory_peak');
  const text = await entry.textContent();
  // Medium: the fixture does not record the device's size.
  assert.match(text, /medium/);
  assert.match(text, /model\.py:6/);
  assert.match(text, /aten::linear/);
  assert.match(text, /Could save up to 64(\.0)? MiB of device memory \(100%/);
  assert.match(text, /Free them earlier/);
  await page.waitForFunction(() => window.__dc.flameBoxes().some((b) => b.label === 'aten::linear' && b.badged));
  const badged = (await boxes()).filter((b) => b.badged).map((b) => b.label);
  assert.deepEqual(badged, ['aten::linear']);
  await shot('findings');
  // In the flame graph, the entry zooms to its node and selects it.
  await entry.click();
  await page.waitForFunction(() => window.__dc.flameBoxes()[0]?.label === 'aten::linear');
  assert.equal(await page.textContent('.details-name'), 'aten::linear');
  // In each table view the entry opens and selects that view's row for the
  // node, which carries the badge.
  const marked = () => page.$$eval('.table-body .row', (rows) => rows
    .filter((r) => r.querySelector('.finding-badge'))
    .map((r) => r.querySelector('.label').textContent));
  const selectedLabel = () => page.$eval('.table-body .row.selected .label', (e) => e.textContent);
  for (const view of ['top-down', 'flat', 'bottom-up', 'diff']) {
    await page.click(`.tab[data-view="${view}"]`);
    await page.waitForSelector('.table-body .row');
    await entry.click();
    await page.waitForFunction(() => document.querySelector('.table-body .row.selected .label')?.textContent === 'aten::linear');
    assert.equal(await page.$eval('.tab.active', (e) => e.dataset.view), view);
    assert.equal(await page.textContent('.details-name'), 'aten::linear');
    assert.equal(await selectedLabel(), 'aten::linear');
    assert.deepEqual(await marked(), ['aten::linear'], view);
    assert.match(await page.getAttribute('.row.selected .finding-badge', 'title'), /medium: .*device memory peak/);
    await shot(`findings-${view}`);
  }
  // Bottom-up reaches it as a caller of the kernel whose time it holds.
  await page.click('.tab[data-view="bottom-up"]');
  await page.waitForSelector('.table-body .row');
  await entry.click();
  await page.waitForFunction(() => document.querySelector('.table-body .row.selected .label')?.textContent === 'aten::linear');
  const chain = await rowLabels();
  const at = chain.indexOf('aten::linear');
  assert.deepEqual(chain.slice(at - 2, at + 1), ['sm80_xmma_gemm_f32f32_tn', 'cudaLaunchKernel', 'aten::linear']);
  // The diff's flame graph marks the path too.
  await page.click('.tab[data-view="diff"]');
  await page.waitForFunction(() => window.__dcDiff.flame.drawnBoxes().some((b) => b.badged));
  const badgedDiff = await page.evaluate(() => window.__dcDiff.flame.drawnBoxes().filter((b) => b.badged).map((b) => b.label));
  assert.deepEqual(badgedDiff, ['aten::linear']);
  await page.click('.tab[data-view="flame"]');
  await page.keyboard.press('Escape');
});

test('the page raised no errors (CSP included)', () => {
  assert.deepEqual(pageErrors.filter((e) => !e.includes('422')), []);
});

test('HTML export opens from file:// with no server', async () => {
  const file = `${artifacts}/export.html`;
  execFileSync(bin, ['export', '--format', 'html', '-o', file, `${fixtures}/before.dctx`]);
  const offline = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const errors = [];
  offline.on('pageerror', (e) => errors.push(String(e)));
  offline.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await offline.goto(pathToFileURL(file).href);
  await offline.waitForSelector('body[data-ready="true"]');
  await offline.waitForFunction(() => window.__dc.flameBoxes().length > 5);
  const drawn = await offline.evaluate(() => window.__dc.flameBoxes().map((b) => b.label));
  assert.ok(drawn.includes('sm80_xmma_gemm_f32f32_tn'));
  await offline.click('.tab[data-view="flat"]');
  await offline.locator('.table-body .row .cell.name', { hasText: 'forward' }).first().click();
  await offline.click('.show-source');
  await offline.waitForSelector('.source-error');
  assert.match(await offline.textContent('.source-error'), /not included in exported HTML/);
  // The file carries the analyzer's findings: the same list and badges.
  assert.equal(await offline.textContent('.findings-title'), 'Findings (1)');
  const entry = offline.locator('.finding').first();
  assert.equal(await entry.getAttribute('data-rule'), 'memory_peak');
  assert.match(await entry.textContent(), /Could save up to 64(\.0)? MiB of device memory/);
  const marked = await offline.$$eval('.table-body .row', (rows) => rows
    .filter((r) => r.querySelector('.finding-badge')).map((r) => r.querySelector('.label').textContent));
  assert.deepEqual(marked, ['aten::linear']);
  await offline.click('.source-close');
  await offline.click('.tab[data-view="flame"]');
  await offline.waitForFunction(() => window.__dc.flameBoxes().some((b) => b.badged));
  assert.deepEqual(await offline.evaluate(() => window.__dc.flameBoxes().filter((b) => b.badged).map((b) => b.label)),
    ['aten::linear']);
  await entry.click();
  await offline.waitForFunction(() => window.__dc.flameBoxes()[0]?.label === 'aten::linear');
  await offline.screenshot({ path: `${artifacts}/export.png` });
  assert.deepEqual(errors, []);
  await offline.close();
});

test('Ctrl-C stops the server cleanly', async () => {
  assert.match(server.errors, /deepcontext view: .*foreign\.dctx: /);
  const exited = new Promise((resolve) => server.on('exit', (code, signal) => resolve({ code, signal })));
  server.kill('SIGINT');
  assert.deepEqual(await exited, { code: 0, signal: null });
  assert.match(server.output, /Stopped\.\n$/);
  await assert.rejects(fetch(url), 'nothing listens any more');
});
