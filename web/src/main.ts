// Entry point: reads where the data comes from and starts the app. Exposes
// a small hook for the browser tests (tests/browser), which read the drawn
// flame-graph boxes instead of comparing pixels.
import './style.css';
import { App } from './app';
import { openDataSource } from './data';

const root = document.createElement('div');
root.id = 'app';
document.body.append(root);
const app = new App(openDataSource(), root);
(window as unknown as { __dc: unknown }).__dc = {
  app,
  flameBoxes: () => app.flame.drawnBoxes().map(({ node, label, x, y, w, h, matched, badged }) => ({ node, label, x, y, w, h, matched, badged })),
  drawFlame: () => app.flame.draw(),
};
void app.start();
