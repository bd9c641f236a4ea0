// The round slider: each edge moves to the bin of its favorability in that round, node
// colours follow emotion, the heatmap shows that round's matrix, the transcript marks it.
const DATA = JSON.parse(document.getElementById("run-data").textContent);
const CONFIG = {responsive: true, displaylogo: false};
const BINS = DATA.bins.length;           // network traces: bins, sticky, nodes
const n = DATA.names.length;
const P = DATA.positions;

function segment(i, j) {
  // the line i -> j, shortened at both ends and offset to its right
  const [x0, y0] = P[i], [x1, y1] = P[j];
  const dx = x1 - x0, dy = y1 - y0, len = Math.hypot(dx, dy) || 1;
  const ox = dy / len * 0.012, oy = -dx / len * 0.012, cut = 0.04 / len;
  return [x0 + dx * cut + ox, y0 + dy * cut + oy, x1 - dx * cut + ox, y1 - dy * cut + oy];
}
const SEGMENTS = [];
for (let i = 0; i < n; i++) { SEGMENTS.push([]); for (let j = 0; j < n; j++) SEGMENTS[i].push(i === j ? null : segment(i, j)); }

let TIES = DATA.ties;                    // the strongest ties drawn (the ties control)
let FAV = [], STATUS = [];               // per round: n rows of n (fav null on the diagonal)

async function unpack(text) {
  // int8 matrices, one a round, from series.packed: base64, deflated, each round the
  // difference from the round before (Int8Array sums wrap as the differences did)
  const bytes = Uint8Array.from(atob(text), c => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
  const flat = new Int8Array(await new Response(stream).arrayBuffer());
  const size = n * n, out = [];
  for (let k = 0; k < DATA.rounds.length; k++) {
    const m = flat.slice(k * size, (k + 1) * size);
    if (k) for (let e = 0; e < size; e++) m[e] += out[k - 1][e];
    out.push(m);
  }
  return out;
}

function rows(m, cell) {
  const out = [];
  for (let i = 0; i < n; i++) out.push(Array.from(m.subarray(i * n, (i + 1) * n), cell));
  return out;
}

function strongest(fav) {
  // the TIES edges of largest |fav| (ties broken by position), as "i,j" keys
  const edges = [];
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) {
    if (i !== j && fav[i][j] !== null) edges.push([Math.abs(fav[i][j]), i, j]);
  }
  edges.sort((a, b) => b[0] - a[0] || a[1] - b[1] || a[2] - b[2]);
  return new Set(edges.slice(0, TIES).map(([, i, j]) => i + "," + j));
}

function edgeTraces(k) {
  const xs = DATA.bins.map(() => []), ys = DATA.bins.map(() => []);
  const fav = FAV[k];
  const shown = strongest(fav);
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) {
    const f = fav[i][j];
    if (f === null || i === j || !shown.has(i + "," + j)) continue;
    const b = DATA.bins.findIndex(([low, high]) => f >= low && f < high);
    const s = SEGMENTS[i][j];
    xs[b].push(s[0], s[2], null); ys[b].push(s[1], s[3], null);
  }
  const sx = [], sy = [];
  for (const [i, j] of DATA.sticky[k]) { const s = SEGMENTS[i][j]; sx.push(s[0], s[2], null); sy.push(s[1], s[3], null); }
  xs.push(sx); ys.push(sy);
  return {xs, ys};
}

function heatText(k) {
  return STATUS[k].map((row, i) => row.map((s, j) => i === j ? "" :
    DATA.statuses[s] + " " + DATA.glyphs[s]));
}

function showRound(k) {
  const round = DATA.rounds[k];
  const {xs, ys} = edgeTraces(k);
  const traces = [...Array(BINS + 1).keys()];
  Plotly.restyle("network-plot", {x: xs, y: ys}, traces);
  Plotly.restyle("network-plot", {"marker.color": [DATA.emotion[k]]}, [BINS + 1]);
  Plotly.relayout("network-plot", {"title.text": "Signed favorability network, round " + round});
  Plotly.restyle("heatmap-plot", {z: [FAV[k]], text: [heatText(k)],
    hovertemplate: "%{y} → %{x}: %{z:+.2f} (%{text})<extra></extra>"}, [0]);
  Plotly.relayout("heatmap-plot", {"title.text": "Favorability matrix, round " + round});
  document.getElementById("round-label").textContent = round;
  document.getElementById("round").value = k;
  const link = document.getElementById("round-link");
  link.href = "#round-" + round;
  document.querySelectorAll(".transcript section.current").forEach(s => s.classList.remove("current"));
  const section = document.getElementById("round-" + round);
  if (section) section.classList.add("current");
}

function toRound(round, scroll) {
  const k = DATA.rounds.indexOf(round);
  if (k < 0) return;
  showRound(k);
  if (scroll) document.getElementById("round-" + round).scrollIntoView();
}

Promise.all([unpack(DATA.fav), unpack(DATA.status), PLOTLY]).then(([fav, status]) => {
  FAV = fav.map(m => rows(m, f => f === DATA.no_fav ? null : f / 100));
  STATUS = status.map(m => rows(m, s => s));
  return Promise.all(Object.entries(FIGURES).map(([name, fig]) =>
    Plotly.newPlot(name + "-plot", fig.data, fig.layout, CONFIG)));
}).then(() => {
  showRound(DATA.rounds.length - 1);
  document.getElementById("round").addEventListener("input", e => showRound(+e.target.value));
  document.getElementById("ties").addEventListener("input", e => {
    TIES = +e.target.value;
    document.getElementById("ties-label").textContent = TIES;
    showRound(+document.getElementById("round").value);
  });
  for (const name of ["emotion", "metrics"]) {
    document.getElementById(name + "-plot").on("plotly_click", ev => toRound(ev.points[0].x, true));
  }
  document.body.dataset.ready = "yes";
});
