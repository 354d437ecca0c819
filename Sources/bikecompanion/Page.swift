/// The phone page: one HTML document; its only other asset is Chart.js, which the companion
/// itself serves from Debian's libjs-chart.js (`/static/chart.js`: the phone has no internet on
/// a ride). It shows only what the device's stream says: a snapshot on connect, then state,
/// metrics and zone lines; the live chart is drawn from the stream's metrics, the ride chart
/// from `/api/history` (the companion's record of the ride so far).
enum CompanionPage {
    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Bike computer</title>
<style>
  :root { color-scheme: dark; }
  body { font-family: system-ui, sans-serif; margin: 0; background: #111; color: #eee; }
  main { max-width: 28rem; margin: 0 auto; padding: 1rem; }
  .row { display: flex; gap: .5rem; flex-wrap: wrap; }
  #state { font-size: 1.1rem; text-transform: uppercase; letter-spacing: .1em; color: #9cf; }
  #timer { font-size: 4rem; font-variant-numeric: tabular-nums; margin: .2rem 0; }
  .grid { display: grid; grid-template-columns: 1fr 1fr; gap: .5rem; margin: .5rem 0; }
  .cell { background: #222; border-radius: .5rem; padding: .5rem; }
  .cell b { display: block; font-size: 1.8rem; font-variant-numeric: tabular-nums; }
  .cell small { color: #aaa; }
  button { font-size: 1.1rem; padding: .8rem 1rem; border-radius: .5rem; border: 0; background: #345; color: #fff; flex: 1; }
  button.warn { background: #733; }
  button:disabled { opacity: .35; }
  input, select { font-size: 1.1rem; padding: .6rem; border-radius: .4rem; border: 1px solid #555; background: #222; color: #eee; }
  #msg { min-height: 1.4rem; color: #fc6; margin: .5rem 0; }
  #link { font-size: .8rem; color: #888; }
  #log { font-size: .8rem; color: #aaa; max-height: 8rem; overflow: auto; }
  .hidden { display: none; }
  h2 { font-size: .9rem; font-weight: normal; color: #aaa; margin: .8rem 0 .2rem; }
  .chart { position: relative; height: 11rem; background: #1a1a1a; border-radius: .5rem; padding: .3rem; }
  #chartmsg { font-size: .8rem; color: #fc6; }
</style>
<script src="/static/chart.js"></script>
</head>
<body>
<main>
  <section id="pair" class="hidden">
    <h1>Pair with the bike computer</h1>
    <p>Tap <em>Show code</em>: the unit shows a code. Enter it here.</p>
    <div class="row"><button id="showcode">Show code</button></div>
    <p class="row"><input id="code" inputmode="numeric" autocomplete="one-time-code" placeholder="code" size="8">
      <button id="sendcode">Pair</button></p>
    <div id="pairmsg"></div>
  </section>
  <section id="ride" class="hidden">
    <div id="state">-</div>
    <div id="timer">0:00:00</div>
    <div id="lap"></div>
    <div class="grid">
      <div class="cell"><small>Speed km/h</small><b id="m-speed">--</b></div>
      <div class="cell"><small>Power W</small><b id="m-power">--</b></div>
      <div class="cell"><small>Heart rate</small><b id="m-heart_rate">--</b></div>
      <div class="cell"><small>Cadence</small><b id="m-cadence">--</b></div>
      <div class="cell"><small>Distance km</small><b id="m-distance">--</b></div>
      <div class="cell"><small>Zones</small><b id="zones">--</b></div>
    </div>
    <div id="sensors"></div>
    <div id="battery"></div>
    <section id="charts">
      <h2>Last 10 minutes</h2>
      <div class="chart"><canvas id="c-live"></canvas></div>
      <h2>Ride so far</h2>
      <div class="chart"><canvas id="c-ride"></canvas></div>
      <div id="chartmsg"></div>
    </section>
    <div class="row">
      <button data-cmd="start" id="b-start">Start</button>
      <button data-cmd="pause" id="b-pause">Pause</button>
      <button data-cmd="resume" id="b-resume">Resume</button>
      <button data-cmd="lap" id="b-lap">Lap</button>
      <button data-cmd="end" id="b-end" class="warn">End</button>
    </div>
    <div id="msg"></div>
    <div class="row"><button id="water">Log water 250 ml</button></div>
    <p class="row">
      <select id="mkind"><option>note</option><option>water</option><option>food</option><option>generic</option><option>segment</option></select>
      <input id="mvalue" inputmode="numeric" placeholder="value" size="6">
      <button id="marker">Add marker</button>
    </p>
    <details id="courses"><summary>Courses</summary>
      <div id="courselist"></div>
      <p class="row"><input type="file" id="coursefile" accept=".gpx,.tcx,.fit"><button id="courseup">Upload</button>
        <button id="courseclear">No course</button></p>
      <div id="coursemsg"></div>
    </details>
    <div id="log"></div>
    <div id="link">connecting…</div>
  </section>
</main>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
let ws = null, nextId = 1, retry = 500;

function show(which) {
  $("pair").classList.toggle("hidden", which !== "pair");
  $("ride").classList.toggle("hidden", which !== "ride");
}
function hms(ms) {
  const s = Math.floor((ms || 0) / 1000), h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, x = s % 60;
  return h + ":" + String(m).padStart(2, "0") + ":" + String(x).padStart(2, "0");
}
function num(v, scale, d) { return v === null || v === undefined ? "--" : (v * scale).toFixed(d); }
function logLine(t) { const p = document.createElement("div"); p.textContent = t; $("log").prepend(p); }

// The view is only ever what the device said.
function render(v) {
  if (v.state !== undefined) $("state").textContent = v.state + (v.countdown ? " " + v.countdown : "") + (v.overlay ? " · " + v.overlay : "");
  if (v.timer_ms !== undefined) $("timer").textContent = hms(v.timer_ms);
  if (v.lap !== undefined) $("lap").textContent = v.lap ? "Lap " + v.lap : "";
  const m = v.metrics;
  if (m) {
    $("m-speed").textContent = num(m.speed, 3.6, 1);
    $("m-power").textContent = num(m.power, 1, 0);
    $("m-heart_rate").textContent = num(m.heart_rate, 1, 0);
    $("m-cadence").textContent = num(m.cadence, 1, 0);
    $("m-distance").textContent = num(m.distance, 0.001, 2);
  }
  const z = v.zones;
  if (z) {
    const f = (q, n) => q && q.zone ? n + " Z" + q.zone + (q.name && q.name !== "Z" + q.zone ? " " + q.name : "") : "";
    $("zones").textContent = [f(z.heart_rate, "HR"), f(z.power, "P")].filter(Boolean).join(" ") || "--";
  }
  if (v.battery !== undefined) {
    const b = v.battery, h = (m) => m >= 60 ? Math.floor(m / 60) + " h " + (m % 60) + " min" : m + " min";
    $("battery").textContent = b ? "Unit battery " + (b.percent === null ? "--" : b.percent + " %") + (b.charging ? " · charging" : b.time_left_min !== null ? " · " + h(b.time_left_min) + " left" : "") + (v.powering_off ? " · powering off (" + v.powering_off + ")" : "") : "";
  }
  if (v.sensors) $("sensors").textContent = Object.entries(v.sensors).filter(([k, s]) => s !== "not_configured").map(([k, s]) => k + ": " + s).join(" · ");
  if (v.state !== undefined) {
    const st = v.state;
    $("b-start").disabled = st !== "idle" && st !== "ended";
    $("b-pause").disabled = st !== "running";
    $("b-resume").disabled = st !== "paused";
    $("b-lap").disabled = st !== "running";
    $("b-end").disabled = st !== "running" && st !== "paused";
  }
}

// Charts (Chart.js): power, heart rate and speed over timer time. x is timer seconds.
const LIVE_S = 600;
const charts = {};
window.charts = charts;
const SERIES = [["power", "Power W", "#b48cf0", "yP", 1], ["heart_rate", "Heart rate bpm", "#f06060", "yH", 1], ["speed", "Speed km/h", "#60b0f0", "yS", 3.6]];
function makeChart(id) {
  return new Chart(document.getElementById(id), {
    type: "line",
    data: { datasets: SERIES.map(([k, label, color, axis]) => ({ label: label, key: k, data: [], borderColor: color, backgroundColor: color,
      yAxisID: axis, pointRadius: 0, borderWidth: 1.5, spanGaps: false })) },
    options: { animation: false, responsive: true, maintainAspectRatio: false, parsing: false, normalized: true,
      scales: {
        x: { type: "linear", ticks: { color: "#aaa", maxTicksLimit: 6, callback: (v) => hms(v * 1000) }, grid: { color: "#333" } },
        yP: { position: "left", ticks: { color: "#b48cf0" }, grid: { color: "#333" } },
        yH: { position: "right", ticks: { color: "#f06060" }, grid: { display: false } },
        yS: { position: "right", ticks: { color: "#60b0f0" }, grid: { display: false } } },
      plugins: { legend: { labels: { color: "#ddd", boxWidth: 10 } } } } });
}
function setupCharts() {
  if (typeof Chart === "undefined") {
    $("chartmsg").textContent = "Charts need Chart.js on the unit: sudo apt-get install libjs-chart.js";
    return;
  }
  charts.live = makeChart("c-live");
  charts.ride = makeChart("c-ride");
}
// Live: every metrics line while running; the last ten minutes of timer time are kept.
function chartMetrics(m) {
  if (!charts.live || m.state !== "running" || !m.metrics || m.timer_ms === undefined) return;
  const x = m.timer_ms / 1000;
  charts.live.data.datasets.forEach((d, i) => {
    const [k, , , , scale] = SERIES[i];
    const v = m.metrics[k];
    if (d.data.length && x < d.data[d.data.length - 1].x) d.data.length = 0; // a new ride
    d.data.push({ x: x, y: v === null || v === undefined ? null : v * scale });
    while (d.data.length && d.data[0].x < x - LIVE_S) d.data.shift();
  });
  charts.live.update("none");
}
// The ride so far, from the companion's history.
async function loadHistory() {
  if (!charts.ride) return;
  const r = await fetch("/api/history", { credentials: "same-origin" }).catch(() => null);
  if (!r || r.status !== 200) return;
  const h = await r.json();
  charts.ride.data.datasets.forEach((d, i) => {
    const [k, , , , scale] = SERIES[i];
    d.data = h.timer_ms.map((t, j) => ({ x: t / 1000, y: h[k][j] === null ? null : h[k][j] * scale }));
  });
  charts.ride.update("none");
  window.lastHistory = h;
}

function onMessage(ev) {
  let m; try { m = JSON.parse(ev.data); } catch (e) { return; }
  window.lastMessage = m;
  switch (m.type) {
    case "snapshot": render(m); $("link").textContent = m.device_connected ? "live · seq " + m.seq : "device not connected"; break;
    case "metrics": render(m); chartMetrics(m); $("link").textContent = "live · seq " + m.seq; break;
    case "state": if (!m.replay) render(m); break;
    case "zone": if (!m.replay) logLine((m.quantity === "power" ? "Power" : "HR") + " zone " + (m.zone || "-")); break;
    case "marker": logLine((m.replay ? "(while away) " : "") + "marker " + m.kind + " " + m.value + (m.unit ? " " + m.unit : "")); break;
    case "lap": logLine("lap " + m.lap); break;
    case "alert": logLine(m.alert); break;
    case "ride_finished": logLine(m.saved ? "ride saved" : "ride discarded"); break;
    case "device": $("link").textContent = "device not connected: " + m.reason; break;
    case "command_result": $("msg").textContent = (m.ok ? "✓ " : "✗ ") + (m.message || ""); break;
    case "error": $("msg").textContent = m.message; break;
  }
}

function connect() {
  ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
  ws.onopen = () => { retry = 500; };
  ws.onmessage = onMessage;
  ws.onclose = (ev) => {
    $("link").textContent = "disconnected" + (ev.reason ? ": " + ev.reason : "") + "; reconnecting…";
    if (ev.reason && ev.reason.indexOf("revoked") >= 0) { start(); return; }
    setTimeout(start, retry); retry = Math.min(retry * 2, 8000);
  };
}
function send(obj) {
  if (!ws || ws.readyState !== 1) { $("msg").textContent = "not connected"; return; }
  obj.id = String(nextId++); ws.send(JSON.stringify(obj)); $("msg").textContent = "…";
}

async function start() {
  const r = await fetch("/api/session", { credentials: "same-origin" }).catch(() => null);
  if (r && r.status === 200) {
    show("ride");
    // The phone's time dates the ride while the unit's clock is not set (docs/power.md); the
    // unit ignores it when its clock is trusted.
    fetch("/api/clock", { method: "POST", credentials: "same-origin", headers: { "content-type": "application/json" },
      body: JSON.stringify({ unix_ms: Date.now() }) }).then((c) => c.json()).then((j) => { if (j.ok) logLine("clock set from this phone"); }).catch(() => null);
    if (!charts.live && !$("chartmsg").textContent) setupCharts();
    connect();
    loadHistory();
    if (!window.historyTimer) window.historyTimer = setInterval(loadHistory, 10000);
  }
  else if (r && r.status === 401) { show("pair"); }
  else { setTimeout(start, 2000); }
}

$("showcode").onclick = async () => {
  const r = await fetch("/api/pair/request", { method: "POST" });
  const j = await r.json();
  $("pairmsg").textContent = j.shown_on_device ? "The code is on the unit's screen." : "Read the code from the companion's log.";
};
$("sendcode").onclick = async () => {
  const r = await fetch("/api/pair", { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ code: $("code").value, name: navigator.userAgent.slice(0, 40) }) });
  const j = await r.json();
  if (r.status === 200) { start(); } else { $("pairmsg").textContent = j.error + (j.attempts_left !== undefined ? " (" + j.attempts_left + " left)" : ""); }
};
document.querySelectorAll("button[data-cmd]").forEach((b) => { b.onclick = () => send({ type: "command", command: b.dataset.cmd }); });
$("water").onclick = () => send({ type: "marker", kind: "water", value: 250 });
$("marker").onclick = () => send({ type: "marker", kind: $("mkind").value, value: parseInt($("mvalue").value || "0", 10) });
// Courses (docs/companion.md, "Courses"): names are shown as text, never as markup.
async function loadCourses() {
  const r = await fetch("/api/courses", { credentials: "same-origin" }).catch(() => null);
  if (!r || r.status !== 200) return;
  const list = $("courselist"); list.textContent = "";
  for (const c of (await r.json()).courses) {
    const b = document.createElement("button");
    b.textContent = c.name + " (" + (c.length_m / 1000).toFixed(1) + " km)";
    b.onclick = () => courseReply(fetch("/api/courses/select", { method: "POST", credentials: "same-origin",
      headers: { "content-type": "application/json" }, body: JSON.stringify({ key: c.key }) }));
    const row = document.createElement("div"); row.className = "row"; row.append(b); list.append(row);
  }
}
async function courseReply(p) {
  const r = await p.catch(() => null);
  const j = r ? await r.json().catch(() => ({})) : {};
  $("coursemsg").textContent = !r ? "not connected" : (j.error || j.message || (j.key ? "imported " + j.name : r.statusText));
  loadCourses();
}
$("courses").ontoggle = () => { if ($("courses").open) loadCourses(); };
$("courseup").onclick = () => {
  const f = $("coursefile").files[0];
  if (!f) { $("coursemsg").textContent = "choose a GPX, TCX or FIT file"; return; }
  courseReply(fetch("/api/courses?name=" + encodeURIComponent(f.name), { method: "POST", credentials: "same-origin",
    headers: { "content-type": "application/octet-stream" }, body: f }));
};
$("courseclear").onclick = () => courseReply(fetch("/api/courses/clear", { method: "POST", credentials: "same-origin" }));
start();
</script>
</body>
</html>
"""#
}
