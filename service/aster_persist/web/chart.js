// Charts drawn as SVG with no library: events per day (a bar per day, empty days too;
// or stacked by project),
// and a session's timeline of tool calls (a bar from each call to its result, errors in
// the error colour). Every mark has a <title>, so hovering (or a screen reader) says it.

import { el } from "./dom.js";

const svg = (tag, attrs, ...children) => el(tag, { ...attrs, svg: true }, ...children);
const DAY = 86400000;

// The `span` days up to the last day with events (today when there is none).
export function activityChart(days, { span = 90, label = "Events per day", width = 600 } = {}) {
  const counts = new Map(days.map((d) => [d.day, d.events]));
  const end = new Date((days.at(-1)?.day) || new Date().toISOString().slice(0, 10)).getTime();
  const series = [];
  for (let t = end - (span - 1) * DAY; t <= end; t += DAY) {
    const day = new Date(t).toISOString().slice(0, 10);
    series.push([day, counts.get(day) || 0]);
  }
  const top = Math.max(1, ...series.map(([, n]) => n));
  const height = width / 6;
  const bar = width / series.length;
  const total = series.reduce((sum, [, n]) => sum + n, 0);
  const chart = svg("svg", { class: "activity-chart", viewBox: `0 0 ${width} ${height + 14}`, role: "img",
    "aria-label": `${label}: ${total} events in the ${span} days to ${series.at(-1)[0]}, at most ${top} in a day` });
  series.forEach(([day, n], i) => {
    const h = n ? Math.max(2, (n / top) * height) : 0;
    chart.append(svg("rect", { x: (i * bar + 0.5).toFixed(1), y: (height - h).toFixed(1), width: Math.max(1, bar - 1).toFixed(1),
      height: h.toFixed(1), class: "bar", "data-day": day, "data-events": n }, svg("title", { text: `${day}: ${n} events` })));
  });
  chart.append(svg("line", { x1: 0, x2: width, y1: height, y2: height, class: "axis" }),
    svg("text", { x: 0, y: height + 12, class: "tick", text: series[0][0] }),
    svg("text", { x: width, y: height + 12, class: "tick", "text-anchor": "end", text: series.at(-1)[0] }),
    svg("text", { x: 2, y: 10, class: "tick", text: `${top}/day` }));
  return el("figure", { class: "chart" }, el("figcaption", { text: `${label}: ${total} events in the ${span} days to ${series.at(-1)[0]}` }), chart);
}

const COLOURS = 6;  // series drawn in their own colour (CSS .s0 to .s5); the rest as "other"

// Events per day of several series (projects), stacked: a bar per day with a part per
// series, each part titled; a legend names the series with their totals. `series` is
// [{ name, title, days: [{day, events}] }]; the last `span` days to `end` (YYYY-MM-DD).
export function stackedChart(series, { span = 30, end, label = "Events per day" } = {}) {
  const width = 900;
  const height = 150;
  const last = new Date(end).getTime();
  const days = Array.from({ length: span }, (_, i) => new Date(last - (span - 1 - i) * DAY).toISOString().slice(0, 10));
  const counts = series.map((s) => new Map(s.days.map((d) => [d.day, d.events])));
  const totals = days.map((day) => counts.reduce((sum, c) => sum + (c.get(day) || 0), 0));
  const top = Math.max(1, ...totals);
  const bar = width / span;
  const chart = svg("svg", { class: "stacked-chart", viewBox: `0 0 ${width} ${height + 18}`, role: "img",
    "aria-label": `${label}: ${totals.reduce((a, b) => a + b, 0)} events in the ${span} days to ${days.at(-1)}, at most ${top} in a day` });
  days.forEach((day, i) => {
    let y = height;
    series.forEach((s, k) => {
      const n = counts[k].get(day) || 0;
      if (!n) return;
      const h = Math.max(1.5, (n / top) * height);
      y -= h;
      chart.append(svg("rect", { x: (i * bar + 1).toFixed(1), y: y.toFixed(1), width: Math.max(1, bar - 2).toFixed(1), height: h.toFixed(1),
        class: `part s${Math.min(k, COLOURS - 1)}`, "data-day": day, "data-series": s.name, "data-events": n }, svg("title", { text: `${day} · ${s.title}: ${n} events` })));
    });
  });
  chart.append(svg("line", { x1: 0, x2: width, y1: height, y2: height, class: "axis" }),
    svg("text", { x: 0, y: height + 14, class: "tick", text: days[0] }),
    svg("text", { x: width / 2, y: height + 14, class: "tick", "text-anchor": "middle", text: days[Math.floor(span / 2)] }),
    svg("text", { x: width, y: height + 14, class: "tick", "text-anchor": "end", text: days.at(-1) }),
    svg("text", { x: 2, y: 11, class: "tick", text: `${top} events a day at most` }));
  const legend = el("ul", { class: "legend" }, series.map((s, k) => el("li", { "data-series": s.name },
    el("span", { class: `swatch s${Math.min(k, COLOURS - 1)}`, "aria-hidden": "true" }),
    el("span", { title: s.name, text: `${s.title} (${s.days.filter((d) => days.includes(d.day)).reduce((sum, d) => sum + d.events, 0)})` }))));
  return el("figure", { class: "chart stacked" }, el("figcaption", { text: `${label}, the last ${span} days` }), chart, legend);
}

const LANES = 24;  // calls at once drawn apart; more share the lane free soonest

// calls: [{name, start, end (ms or null), error, seq}], from the first event to the last.
// Its marks are not tab stops: the turns they lead to are (j/k, e/E).
export function timeline(calls, first, last, hrefOf) {
  const width = 600;
  const lanes = [];
  const span = Math.max(1, last - first);
  const x = (t) => ((t - first) / span) * width;
  const rows = calls.map((call) => {  // the first lane free, or the one free soonest
    const end = call.end ?? call.start;
    let row = lanes.findIndex((free) => free <= call.start);
    if (row < 0 && lanes.length < LANES) { row = lanes.length; lanes.push(0); }
    if (row < 0) row = lanes.indexOf(Math.min(...lanes));
    lanes[row] = Math.max(lanes[row], end + span / 300);
    return row;
  });
  const lane = lanes.length > 8 ? 80 / lanes.length : 10;  // a bounded height, however many
  const marks = calls.map((call, i) => {
    const row = rows[i];
    const end = call.end ?? call.start;
    const took = call.end !== null ? `${((call.end - call.start) / 1000).toFixed(1)} s` : "no result";
    return svg("a", { href: hrefOf(call.seq), "data-seq": call.seq, class: "call-link", tabindex: "-1" },
      svg("rect", { x: x(call.start).toFixed(1), y: (row * lane + 2).toFixed(1), width: Math.max(2, x(end) - x(call.start)).toFixed(1), height: Math.max(1, lane - 3).toFixed(1),
        class: call.error ? "bar error" : "bar" }, svg("title", { text: `#${call.seq} ${call.name}: ${took}${call.error ? ", failed" : ""}` })));
  });
  const height = Math.max(1, lanes.length) * lane + 16;
  const errors = calls.filter((c) => c.error).length;
  const chart = svg("svg", { class: "timeline", viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": `Timeline: ${calls.length} tool calls, ${errors} failed` }, ...marks,
    svg("text", { x: 0, y: height - 2, class: "tick", text: "start" }),
    svg("text", { x: width, y: height - 2, class: "tick", "text-anchor": "end", text: `${((last - first) / 60000).toFixed(1)} min` }));
  return el("figure", { class: "chart" }, el("figcaption", { text: `Tool calls over time (${calls.length}, ${errors} failed)` }), chart);
}
