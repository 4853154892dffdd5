// Usage charts (CPU, memory, pids and network bytes in and out over the last hour) as SVG built with DOM calls: no
// markup strings, no inline styles (the Content-Security-Policy refuses them); the look is style.css's .usage-chart.
import { h, append, clear, bytes } from './dom';

const SVG = 'http://www.w3.org/2000/svg';
// The drawing's own units: an hour is 360 wide (10 s a unit), the limit 100 high.
export const CHART_WIDTH = 360;
export const CHART_HEIGHT = 100;
const HOUR_MS = 3600 * 1000;

export interface UsageSample {
  at: string;  // RFC 3339
  cpu_cores: number;
  memory_bytes: number;
  pids: number;
  net_rx_bytes: number;  // bytes the egress proxy relayed to the sandbox so far (cumulative)
  net_tx_bytes: number;  // and from it
}

// One series' polyline points: the hour ending at the last sample runs left to right, and 0 to `top` bottom to
// top (`top` is the limit, or the highest value when a value passes it). Rounded to 0.1 unit.
// A sample whose time or value is not a finite number (a missing field, an unparsable time) is skipped, so no NaN
// reaches the points.
export function chartPoints(times: number[], values: number[], limit: number): string {
  const kept: Array<[number, number]> = [];
  times.forEach((t, i) => {
    if (Number.isFinite(t) && Number.isFinite(values[i])) kept.push([t, values[i]]);
  });
  if (kept.length === 0) return '';
  const end = kept[kept.length - 1][0];
  const top = Math.max(Number.isFinite(limit) ? limit : 0, ...kept.map(([, v]) => v)) || 1;
  const round = (v: number) => String(Math.round(v * 10) / 10);
  return kept.map(([t, v]) => {
    const x = Math.max(0, CHART_WIDTH - ((end - t) / HOUR_MS) * CHART_WIDTH);
    const y = CHART_HEIGHT - (v / top) * CHART_HEIGHT;
    return round(x) + ',' + round(y);
  }).join(' ');
}

// A field of a sample as a number: NaN when missing or not a number (chartPoints then skips it).
function num(v: unknown): number {
  return typeof v === 'number' ? v : NaN;
}

// Bytes a second between each sample and the one before, from cumulative counts: 0 for the first sample (as the
// CPU's first point), NaN (skipped) where a time or count is missing or the count went down (it began again).
export function rates(times: number[], counts: number[]): number[] {
  return counts.map((c, i) => {
    if (i === 0) return Number.isFinite(c) ? 0 : NaN;
    const dt = (times[i] - times[i - 1]) / 1000;
    const dc = c - counts[i - 1];
    return dt > 0 && dc >= 0 ? dc / dt : NaN;
  });
}

// The latest finite value for a caption, or '' when no sample has one.
function latestCaption(values: number[], show: (v: number) => string): string {
  for (let i = values.length - 1; i >= 0; i--) if (Number.isFinite(values[i])) return show(values[i]);
  return '';
}

function svg(tag: string, attrs: Record<string, string>): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, value);
  return el;
}

function chart(id: string, label: string, points: string, latest: string): HTMLElement {
  const drawing = svg('svg', { viewBox: `0 0 ${CHART_WIDTH} ${CHART_HEIGHT}`, preserveAspectRatio: 'none',
                               class: 'usage-chart', role: 'img', 'aria-label': label + ' over the last hour' });
  drawing.appendChild(svg('polyline', { id, class: 'usage-line', points }));
  return h('figure', { class: 'usage' }, h('figcaption', {}, label + (latest ? ': ' + latest : '')), drawing);
}

export interface UsageLimits {
  cpus: number;
  mem_limit: number;
  pids: number;
}

// A network chart's caption: the latest rate and the count so far.
function netCaption(perSecond: number[], counts: number[]): string {
  const total = latestCaption(counts, (v) => bytes(v) + ' in all');
  const rate = latestCaption(perSecond, (v) => bytes(Math.round(v)) + '/s');
  return rate && total ? rate + ' (' + total + ')' : rate || total;
}

// Draws the charts into `into` from sandbox_usage's samples: CPU, memory and pids each against the sandbox's limit,
// network bytes a second in and out against the hour's highest.
export function drawUsage(into: HTMLElement, samples: UsageSample[], limits: UsageLimits): void {
  clear(into);
  if (samples.length === 0) {
    append(into, h('p', { class: 'muted' }, 'No usage sampled yet (it is read every 2 s while the sandbox runs).'));
    return;
  }
  const times = samples.map((s) => Date.parse(s.at));
  const cpu = samples.map((s) => num(s.cpu_cores));
  const memory = samples.map((s) => num(s.memory_bytes));
  const pids = samples.map((s) => num(s.pids));
  const rx = samples.map((s) => num(s.net_rx_bytes));
  const tx = samples.map((s) => num(s.net_tx_bytes));
  const rxRate = rates(times, rx);
  const txRate = rates(times, tx);
  append(into,
         chart('usage-cpu', 'CPU', chartPoints(times, cpu, limits.cpus),
               latestCaption(cpu, (v) => v.toFixed(2) + ' of ' + limits.cpus + ' cores')),
         chart('usage-memory', 'Memory', chartPoints(times, memory, limits.mem_limit),
               latestCaption(memory, (v) => bytes(v) + ' of ' + bytes(limits.mem_limit))),
         chart('usage-pids', 'Processes', chartPoints(times, pids, limits.pids),
               latestCaption(pids, (v) => v + ' of ' + limits.pids)),
         chart('usage-net-rx', 'Network in', chartPoints(times, rxRate, 0), netCaption(rxRate, rx)),
         chart('usage-net-tx', 'Network out', chartPoints(times, txRate, 0), netCaption(txRate, tx)));
}
