// Viewer benchmark: `deepcontext view` of a generated 1M-node profile (time
// from starting the command to the first flame graph drawn in headless
// Chromium, budget 1 s) and `export --format html` of a 100k-node profile
// (file size, budget 10 MB; time to the first flame graph from file://,
// budget 2 s). Prints each measurement and its ratio to the budget.
//   node bench/view_bench.mjs BUILD_DIR
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const build = path.resolve(process.argv[2] || 'build');
const bin = `${build}/bin/deepcontext`;
const work = `${build}/bench-view`;
mkdirSync(work, { recursive: true });
const { chromium } = createRequire(`${build}/web/node/node_modules/`)('playwright-core');

const big = `${work}/nodes_1m.dctx`;
const medium = `${work}/nodes_100k.dctx`;
execFileSync(`${build}/bin/make_large_profile`, ['1000000', big]);
execFileSync(`${build}/bin/make_large_profile`, ['100000', medium]);

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
const firstFlame = () => page.waitForFunction(() => window.__dc && window.__dc.flameBoxes().length > 0,
  null, { timeout: 60000, polling: 'raf' });

function startView(file) {
  const child = spawn(bin, ['view', '--no-browser', file], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = out.match(/(http:\/\/\S+token=[0-9a-f]+)/);
      if (match) resolve({ child, url: match[1] });
    });
    child.on('exit', (code) => reject(new Error(`view exited ${code}`)));
  });
}

const rows = [];
const report = (name, value, unit, budget) => {
  rows.push({ name, value, unit, budget });
  const ratio = budget ? `  (${(value / budget).toFixed(2)} of the ${budget} ${unit} budget)` : '';
  console.log(`${name}: ${value.toFixed(unit === 'MB' ? 2 : 0)} ${unit}${ratio}`);
};

// CPU time (user + system) a process has used so far, in ms: steadier than
// wall time on a shared machine.
function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 1000 / 100;  // USER_HZ
}

// 1M nodes through the server; three runs, median reported, each split
// into its steps (from the page's performance marks, on the same clock).
const firstScreen = [];
const splits = [];
let nodes = 0;
for (let run = 0; run < 3; run++) {
  const started = performance.now();
  const { child, url } = await startView(big);
  const urlAt = performance.now() - started;
  await page.goto(url);
  await firstFlame();
  firstScreen.push(performance.now() - started);
  const serverCpu = cpuMs(child.pid);
  const marks = await page.evaluate(() => {
    const at = (name) => performance.getEntriesByName(name)[0]?.startTime ?? NaN;
    const tree = performance.getEntriesByType('resource').find((e) => e.name.includes('/tree.bin'));
    const nav = performance.getEntriesByType('navigation')[0];
    return {
      page: nav.domContentLoadedEventEnd, request: tree.startTime, answer: tree.responseStart,
      received: at('dc:tree-received'), decoded: at('dc:tree-decoded'), view: at('dc:first-view'),
      now: performance.now(),
    };
  });
  // Page clock -> bench clock: the page's "now" is the bench's first-flame time.
  const offset = firstScreen[run] - marks.now;
  splits.push({ total: firstScreen[run], urlAt, serverCpu, ...Object.fromEntries(
    Object.entries(marks).map(([k, v]) => [k, v + offset])) });
  if (run === 2) {
    nodes = await page.evaluate(() => window.__dc.app.model?.size ?? 0);
    // Redraw cost of the full view and after zooming two levels in.
    const draws = await page.evaluate(() => {
      const times = [];
      for (let i = 0; i < 5; i++) times.push(window.__dc.drawFlame());
      return times.sort((a, b) => a - b)[2];
    });
    report('1M: flame graph redraw (median of 5)', draws, 'ms', 16);
  }
  child.kill('SIGINT');
  await new Promise((resolve) => child.on('exit', resolve));
}
firstScreen.sort((a, b) => a - b);
console.log(`1M profile: ${nodes} tree nodes`);
report('1M: view start to first flame graph (median of 3)', firstScreen[1], 'ms', 1000);
{
  const median = splits.sort((a, b) => a.total - b.total)[1];
  const f = (v) => `${v.toFixed(0)} ms`;
  console.log(`1M: that run's steps, from the start: URL printed ${f(median.urlAt)}, page loaded ${f(median.page)}, `
    + `tree.bin asked ${f(median.request)}, answered ${f(median.answer)}, received ${f(median.received)}, `
    + `decoded ${f(median.decoded)}, view built ${f(median.view)}, first flame graph drawn ${f(median.total)}; `
    + `server CPU time by then ${f(median.serverCpu)}`);
}
{
  // Where the time goes: the server's part (read, tree, view data) alone.
  const started = performance.now();
  const { child, url } = await startView(big);
  const token = new URL(url).searchParams.get('token');
  const api = new URL('/api/profiles', url);
  for (;;) {
    const list = await (await fetch(api, { headers: { 'X-DeepContext-Token': token } })).json();
    if (list.profiles[0].state !== 'loading') break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  report('1M: of which the server reading the profile and preparing its data', performance.now() - started, 'ms');
  child.kill('SIGINT');
  await new Promise((resolve) => child.on('exit', resolve));
}
process.stdout.write(`1M: server steps (view_load_cost): ${execFileSync(`${build}/bin/view_load_cost`, [big])}`);

// 100k nodes as one HTML file.
const html = `${work}/nodes_100k.html`;
execFileSync(bin, ['export', '--format', 'html', '-o', html, medium]);
report('100k: HTML export size', statSync(html).size / 1e6, 'MB', 10);
const opens = [];
for (let run = 0; run < 3; run++) {
  const started = performance.now();
  await page.goto(pathToFileURL(html).href);
  await firstFlame();
  opens.push(performance.now() - started);
}
opens.sort((a, b) => a - b);
report('100k: HTML open from file:// to first flame graph (median of 3)', opens[1], 'ms', 2000);
await browser.close();
const over = rows.filter((r) => r.budget && r.value > r.budget);
if (over.length > 0) {
  console.log(`over budget: ${over.map((r) => r.name).join('; ')}`);
  process.exitCode = 1;
}
