// Usage charts (CPU, memory, pids over the last hour) as SVG built with DOM calls: no markup strings, no inline
// styles (the Content-Security-Policy refuses them); the look is style.css's .usage-chart.
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
}

// One series' polyline points: the hour ending at the last sample runs left to right, and 0 to `top` bottom to
// top (`top` is the limit, or the highest value when a value passes it). Rounded to 0.1 unit.
export function chartPoints(times: number[], values: number[], limit: number): string {
  if (times.length === 0) return '';
  const end = times[times.length - 1];
  const top = Math.max(limit, ...values) || 1;
  const round = (v: number) => String(Math.round(v * 10) / 10);
  return times.map((t, i) => {
    const x = Math.max(0, CHART_WIDTH - ((end - t) / HOUR_MS) * CHART_WIDTH);
    const y = CHART_HEIGHT - (values[i] / top) * CHART_HEIGHT;
    return round(x) + ',' + round(y);
  }).join(' ');
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

// Draws the three charts into `into` from sandbox_usage's samples, each against the sandbox's limit.
export function drawUsage(into: HTMLElement, samples: UsageSample[], limits: UsageLimits): void {
  clear(into);
  if (samples.length === 0) {
    append(into, h('p', { class: 'muted' }, 'No usage sampled yet (it is read every 2 s while the sandbox runs).'));
    return;
  }
  const times = samples.map((s) => Date.parse(s.at));
  const last = samples[samples.length - 1];
  append(into,
         chart('usage-cpu', 'CPU', chartPoints(times, samples.map((s) => s.cpu_cores), limits.cpus),
               last.cpu_cores.toFixed(2) + ' of ' + limits.cpus + ' cores'),
         chart('usage-memory', 'Memory', chartPoints(times, samples.map((s) => s.memory_bytes), limits.mem_limit),
               bytes(last.memory_bytes) + ' of ' + bytes(limits.mem_limit)),
         chart('usage-pids', 'Processes', chartPoints(times, samples.map((s) => s.pids), limits.pids),
               last.pids + ' of ' + limits.pids));
}
