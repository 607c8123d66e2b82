// unseen view: the runs list, a run's table, an instance's trajectories. Everything from a
// run is put in the page as text (el() makes text nodes, never HTML): replies are untrusted.
"use strict";

const POLL_MS = 1500;      // how often a running run is asked for news
const IDLE_MS = 6000;      // how often the runs list is asked while nothing runs
const FETCH_MS = 15000;    // one request waits at most this long
const PAGE_ROWS = 300;     // table rows drawn at once ("more" draws the next ones)
const state = { route: null, table: null, order: [], timer: null, gen: 0 };

function el(tag, attrs, ...kids) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "text") node.textContent = String(v);
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, String(v));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === "") continue;
    node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return node;
}

function breakable(text) {
  // a strategy label may break after its name and between parameters, never inside one
  const out = [];
  for (const piece of String(text).split(/(?<=[:,])/)) out.push(piece, el("wbr"));
  return out;
}

async function getJSON(path) {
  const ctl = new AbortController();
  const t = setTimeout(() => ctl.abort(), FETCH_MS);
  try {
    const r = await fetch(path, { signal: ctl.signal, cache: "no-store" });
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || r.statusText);
    return body;
  } finally { clearTimeout(t); }
}

function enc(s) { return encodeURIComponent(s); }
function runLink(n) { return "#/run/" + n; }
function instLink(n, iid, key) {
  return "#/run/" + n + "/i/" + enc(iid) + (key ? "/t/" + enc(key) : "");
}

function parseRoute() {
  const parts = location.hash.slice(1).split("/").filter(Boolean);
  if (parts[0] === "run" && parts.length >= 2) {
    const n = parseInt(parts[1], 10);
    if (parts[2] === "i" && parts[3]) {
      return { page: "instance", n, iid: decodeURIComponent(parts[3]),
               key: parts[4] === "t" && parts[5] ? decodeURIComponent(parts[5]) : null };
    }
    return { page: "run", n };
  }
  return { page: "runs" };
}

function setMain(...kids) {
  const main = document.getElementById("main");
  main.replaceChildren(...kids.filter(k => k !== null && k !== undefined));
  return main;
}

function where(...kids) { document.getElementById("where").replaceChildren(...kids); }

function markRun(summary) {
  // every page of a simulated run says so; a running one shows its marker
  const sim = document.getElementById("sim");
  const anySim = Array.isArray(summary) ? summary.some(s => s.simulated) : summary.simulated;
  sim.classList.toggle("hidden", !anySim);
  document.getElementById("simtext").textContent = Array.isArray(summary)
    ? "runs marked SIMULATED hold replies of a simulated respondent, not of a model."
    : "the replies of " + summary.models.join(", ") + " come from a simulated respondent, " +
      "not a model; its numbers test the pipeline, not a model.";
  const live = Array.isArray(summary) ? summary.some(s => s.running) : summary.running;
  document.getElementById("live").classList.toggle("hidden", !live);
  return live;
}

function poll(fn, ms) {
  // one timer at a time, dropped when the route changes (gen); a failed ask is tried again
  clearTimeout(state.timer);
  const gen = state.gen;
  state.timer = setTimeout(async () => {
    if (gen !== state.gen) return;
    try { await fn(); } catch (e) { poll(fn, IDLE_MS); }
  }, ms || POLL_MS);
}

function progress(s) {
  return s.done + (s.planned ? " of " + s.planned : "") + " trajectories";
}

// --- the runs list -----------------------------------------------------------------------

async function showRuns() {
  const gen = state.gen;
  const data = await getJSON("api/runs");
  if (gen !== state.gen) return;
  where("runs");
  const rows = data.runs.map(s => el("tr", { class: "row", "data-run": s.number,
                                             onclick: () => { location.hash = runLink(s.number); } },
    el("td", { "data-label": "run" }, el("a", { href: runLink(s.number) }, s.name),
       s.simulated ? el("span", { class: "simtag" }, "SIMULATED") : null,
       s.running ? el("span", { class: "runtag" }, "running") : null),
    el("td", { "data-label": "benchmark" }, s.benchmark),
    el("td", { class: "text", "data-label": "models" }, s.models.join(", ")),
    el("td", { class: "strat", "data-label": "strategies" },
       s.strategies.map((x, i) => [i ? ", " : "", breakable(x)])),
    el("td", { class: "num progress", "data-label": "progress" }, progress(s),
       s.error ? el("div", { class: "err" }, s.error) : null),
    el("td", { "data-label": "started" }, s.started.replace("T", " "))));
  setMain(el("h2", {}, "Runs"), el("div", { class: "wrap" }, el("table", { id: "runs" },
    el("thead", {}, el("tr", {}, ["run", "benchmark", "models", "strategies", "progress",
                                  "started"].map(h => el("th", {}, h)))),
    el("tbody", {}, rows))));
  // a folder of runs may gain one: the list is asked again, slowly while nothing runs
  poll(showRuns, markRun(data.runs) ? POLL_MS : IDLE_MS);
}

// --- a run's table -----------------------------------------------------------------------

const BASE_COLS = ["instance", "label", "model", "strategy", "sample", "outcome", "note"];

function columns(t) { return BASE_COLS.concat(t.metrics); }

function filtered(t) {
  const f = t.filters;
  const q = f.text.toLowerCase();
  let rows = t.rows.filter(r => (!f.model || r[3] === f.model) &&
    (!f.strategy || r[4] === f.strategy) && (!f.outcome || r[6] === f.outcome) &&
    (!q || (r[1] + " " + r[2]).toLowerCase().includes(q)));
  if (t.sort !== null) {
    const i = t.sort + 1, dir = t.desc ? -1 : 1;
    rows = rows.slice().sort((a, b) => {
      const x = a[i], y = b[i];
      if (x === y) return 0;
      if (x === null) return 1;
      if (y === null) return -1;
      return (typeof x === "number" && typeof y === "number" ? x - y
              : String(x).localeCompare(String(y))) * dir;
    });
  }
  return rows;
}

function options(name, values, current, onchange) {
  return el("label", {}, name + " ",
    el("select", { id: "f-" + name, onchange },
      el("option", { value: "" }, "all"),
      values.map(v => el("option", { value: v, selected: v === current ? "" : null }, v))));
}

function drawTable() {
  const t = state.table;
  const s = t.summary;
  const uniq = i => [...new Set(t.rows.map(r => r[i]))].sort();
  const rows = filtered(t);
  state.order = [...new Set(rows.map(r => r[1]))];
  const cols = columns(t);
  const shown = rows.slice(0, t.limit);
  const counts = {};
  for (const r of t.rows) counts[r[6]] = (counts[r[6]] || 0) + 1;
  const set = key => ev => { t.filters[key] = ev.target.value; t.limit = PAGE_ROWS; drawTable(); };
  const head = el("tr", {}, cols.map((c, i) => el("th", {
    class: "c-" + c + (t.sort === i ? " sorted" + (t.desc ? " desc" : "") : ""), "data-col": c,
    onclick: () => { if (t.sort === i) t.desc = !t.desc; else { t.sort = i; t.desc = false; }
                     drawTable(); } }, c)));
  const body = shown.map(r => el("tr", { class: "row", "data-key": r[0],
                                         onclick: () => { location.hash = instLink(s.number, r[1], r[0]); } },
    el("td", { class: "id" }, el("a", { href: instLink(s.number, r[1], r[0]) }, r[1])),
    el("td", { class: "text" }, r[2]), el("td", { class: "who" }, r[3]),
    el("td", { class: "strat" }, breakable(r[4])), el("td", { class: "num c-sample" }, r[5]),
    el("td", { class: "o-" + r[6] }, r[6]), el("td", { class: "c-note" }, r[7]),
    r.slice(8).map(v => el("td", { class: "num" }, v === null ? "—" : fmt(v)))));
  const focus = document.activeElement && document.activeElement.id;
  setMain(
    el("h2", {}, s.benchmark + " run " + s.name,
       s.simulated ? el("span", { class: "simtag" }, "SIMULATED") : null),
    el("p", { class: "note" }, s.path + " · started " + s.started + " · ",
       el("span", { id: "progress" }, progress(s)), " · ",
       el("a", { href: "report/" + s.number + "/", target: "_blank", rel: "noopener" },
          "report (tables, curves, plots)"), " · ",
       el("button", { id: "show-figures", onclick: showFigures }, "show curves and plots")),
    ...(s.serving || []).map(line => el("p", { class: "note serving" }, line)),
    el("div", { id: "figures" }),
    el("p", { class: "err", id: "run-error" }, s.error),
    el("p", { class: "pills", id: "outcomes" },
       Object.entries(counts).map(([k, v]) => el("span", { class: "o-" + k }, k + " " + v))),
    el("div", { class: "filters" },
       options("model", uniq(3), t.filters.model, set("model")),
       options("strategy", uniq(4), t.filters.strategy, set("strategy")),
       options("outcome", uniq(6), t.filters.outcome, set("outcome")),
       el("label", {}, "search ", el("input", { id: "f-text", type: "search", value: t.filters.text,
                                               oninput: set("text") }))),
    el("p", { class: "note", id: "count" }, rows.length + " of " + t.rows.length +
       " trajectories" + (t.sort === null ? ", worst first" : "") +
       (rows.length > shown.length ? " (" + shown.length + " shown)" : "")),
    el("div", { class: "wrap" }, el("table", { id: "table" }, el("thead", {}, head),
                                    el("tbody", {}, body))),
    rows.length > shown.length
      ? el("button", { id: "more", onclick: () => { t.limit += PAGE_ROWS; drawTable(); } },
           "show " + Math.min(PAGE_ROWS, rows.length - shown.length) + " more")
      : null);
  drawFigures();
  if (focus === "f-text") {
    const box = document.getElementById("f-text");
    box.focus(); box.setSelectionRange(box.value.length, box.value.length);
  }
}

async function showFigures() {
  // the run's report is made on first ask (every record read): only when asked
  const box = document.getElementById("figures");
  const n = state.table.summary.number;
  box.replaceChildren(el("p", { class: "note" }, "drawing…"));
  try {
    const data = await getJSON("api/run/" + n + "/figures");
    state.table.figures = data.figures;
    drawFigures();
  } catch (e) {
    box.replaceChildren(el("p", { class: "err" }, "cannot draw them: " + e.message));
  }
}

function drawFigures() {
  const box = document.getElementById("figures");
  const figures = state.table.figures;
  if (!box || !figures) return;
  box.replaceChildren(...(figures.length
    ? figures.map(src => el("img", { class: "figure", src, alt: src.split("/").pop() }))
    : [el("p", { class: "note" }, "no curves or plots for this run")]));
}

function fmt(v) {
  if (typeof v !== "number") return String(v);
  if (Number.isInteger(v)) return String(v);
  return Math.abs(v) >= 100 ? v.toFixed(0) : v.toPrecision(3);
}

async function showRun(n) {
  const gen = state.gen;
  const old = state.table && state.table.summary.number === n ? state.table : null;
  const data = await getJSON("api/run/" + n + (old ? "?v=" + old.summary.version : ""));
  if (gen !== state.gen) return;
  where(el("a", { href: "#/" }, "runs"), " › run " + data.summary.name);
  if (data.same) { old.summary = data.summary; }
  else {
    state.table = Object.assign(old || { filters: { model: "", strategy: "", outcome: "", text: "" },
                                         sort: null, desc: false, limit: PAGE_ROWS },
                                { rows: data.rows, metrics: data.metrics, summary: data.summary });
  }
  if (!data.same || !old || !document.getElementById("table")) drawTable();
  else document.getElementById("progress").textContent = progress(data.summary);
  const bad = document.getElementById("run-error");
  if (bad) bad.textContent = data.summary.error;
  if (markRun(data.summary)) poll(() => showRun(n));
}

// --- an instance -------------------------------------------------------------------------

function kv(pairs) {
  return el("div", { class: "kv" }, pairs.filter(p => p[1] !== "" && p[1] !== null)
    .map(([k, v]) => [el("b", {}, k), v instanceof Node ? v : el("span", {}, v)]));
}

function stepCard(n, t, s) {
  const imgs = [];
  for (let i = 0; i < s.images; i++) {
    imgs.push(el("img", { src: "api/run/" + n + "/image/" + t.key + "/" + s.number + "/" + i,
                          alt: "step " + s.number + " image " + (i + 1), loading: "lazy" }));
  }
  const bad = s.error || s.parse_error;
  const info = Object.entries(s.info).map(([k, v]) => k + "=" + v).join(", ");
  return el("div", { class: "step" + (bad ? " bad" : ""), id: "s-" + t.key + "-" + s.number,
                     "data-step": s.number },
    el("h4", {}, s.caption.startsWith("step ") ? s.caption
                 : "step " + s.number + " · " + s.name + " · " + s.caption),
    el("div", {}, imgs.length ? imgs : el("span", { class: "note" }, "no image")),
    kv([["prompt", el("pre", { class: "prompt" }, s.prompt)],
        ["messages", s.messages > 1 ? s.messages + " (the conversation so far, then this prompt)" : ""],
        ["error", s.error ? el("span", { class: "err" }, s.error) : ""],
        ["reply", s.error ? "" : el("pre", { class: "reply" }, s.reply)],
        ["reasoning", s.reasoning ? el("pre", { class: "reasoning" }, s.reasoning) : ""],
        ["parse", s.parse_error ? el("span", { class: "err" }, s.parse_error) : ""],
        ["parsed", s.parsed ? el("span", { class: "parsed" }, s.parsed) : ""],
        ["region", s.region],
        ["measures", s.benchmark.length ? el("span", { class: "measures" }, s.benchmark.join("\n")) : ""],
        ["info", info], ["tokens", s.tokens],
        ["stopped", s.finish && s.finish !== "stop" ? s.finish : ""],
        ["time", "latency " + s.latency_s.toFixed(3) + " s · step " + s.seconds.toFixed(3) + " s" +
                 (s.cached ? " · cached" : "")]]));
}

function trajCard(n, t) {
  const metrics = Object.entries(t.metrics).map(([k, v]) => k + " " + v).join(" · ") || "—";
  const strip = el("img", { class: "strip", loading: "lazy", alt: "the trajectory's picture",
                            src: "api/run/" + n + "/strip/" + t.key });
  strip.addEventListener("error", () => strip.remove());  // no step sent an image
  return el("section", { class: "traj", id: "t-" + t.key, "data-key": t.key },
    el("h3", {}, el("a", { href: instLink(n, t.instance, t.key) }, t.model + " · ",
       breakable(t.strategy), " · sample " + t.sample), t.simulated ? el("span", { class: "simtag" }, "SIMULATED") : null),
    kv([["outcome", el("span", { class: "outcome o-" + t.outcome }, t.outcome)],
        ["status", t.status], ["error", t.error], ["prediction", t.prediction],
        ["metrics", metrics], ["time", t.seconds.toFixed(3) + " s, " + t.steps.length + " steps"]]),
    strip, t.steps.map(s => stepCard(n, t, s)));
}

async function showInstance(r) {
  const gen = state.gen;
  const data = await getJSON("api/run/" + r.n + "/instance/" + enc(r.iid));
  if (gen !== state.gen) return;
  const s = data.summary;
  if (!state.table || state.table.summary.number !== r.n) {
    const t = await getJSON("api/run/" + r.n);
    state.table = { rows: t.rows, metrics: t.metrics, summary: t.summary, sort: null,
                    desc: false, limit: PAGE_ROWS,
                    filters: { model: "", strategy: "", outcome: "", text: "" } };
    state.order = [...new Set(t.rows.map(x => x[1]))];
  }
  const at = state.order.indexOf(r.iid);
  const prev = at > 0 ? state.order[at - 1] : null;
  const next = at >= 0 && at + 1 < state.order.length ? state.order[at + 1] : null;
  where(el("a", { href: "#/" }, "runs"), " › ", el("a", { href: runLink(r.n) }, "run " + s.name),
        " › " + r.iid);
  const first = data.trajectories[0];
  const count = data.trajectories.length;
  const old = document.getElementById("instance");
  if (old && old.dataset.iid === r.iid && old.dataset.count === String(count)) {
    if (markRun(s)) poll(() => showInstance(r));
    return;  // nothing new: keep the place and the focus
  }
  setMain(el("div", { id: "instance", "data-iid": r.iid, "data-count": count },
    el("h2", {}, r.iid, s.simulated ? el("span", { class: "simtag" }, "SIMULATED") : null),
    first && first.label !== r.iid ? el("p", { class: "label" }, first.label) : null,
    el("div", { class: "nav" },
       prev ? el("a", { id: "prev", href: instLink(r.n, prev) }, "← previous instance") : null,
       el("a", { href: runLink(r.n) }, "↑ the table (u)"),
       next ? el("a", { id: "next", href: instLink(r.n, next) }, "next instance →") : null,
       el("span", { class: "note" }, count + " trajectories")),
    data.trajectories.map(t => trajCard(r.n, t))));
  const target = r.key && document.getElementById("t-" + r.key);
  focusStep(target ? target.querySelector(".step") || target : document.querySelector(".step"),
            !!target);
  if (markRun(s)) poll(() => showInstance(r));
}

function focusStep(node, scroll) {
  if (!node) return;
  document.querySelectorAll(".current").forEach(x => x.classList.remove("current"));
  node.classList.add("current");
  const traj = node.closest(".traj");
  if (traj) traj.classList.add("current");
  if (scroll) node.scrollIntoView({ block: node.tagName === "TR" ? "nearest" : "start" });
}

function move(selector, by) {
  const all = [...document.querySelectorAll(selector)];
  if (!all.length) return;
  const cur = document.querySelector(selector + ".current");
  let i = cur ? all.indexOf(cur) + by : 0;
  i = Math.max(0, Math.min(all.length - 1, i));
  const node = selector === ".traj" ? all[i].querySelector(".step") || all[i] : all[i];
  focusStep(node, true);
}

document.addEventListener("keydown", ev => {
  if (ev.target.closest && ev.target.closest("input, select, textarea")) return;
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const r = state.route;
  if (r && r.page === "run") {
    const rows = { j: 1, ArrowDown: 1, k: -1, ArrowUp: -1 };
    if (rows[ev.key]) { ev.preventDefault(); move("#table tbody tr", rows[ev.key]); }
    const cur = document.querySelector("#table tbody tr.current a");
    if (ev.key === "Enter" && cur) { ev.preventDefault(); location.hash = cur.getAttribute("href"); }
    return;
  }
  if (!r || r.page !== "instance") return;
  const go = id => { const a = document.getElementById(id); if (a) location.hash = a.getAttribute("href"); };
  const keys = { j: () => move(".step", 1), ArrowDown: () => move(".step", 1),
                 k: () => move(".step", -1), ArrowUp: () => move(".step", -1),
                 n: () => move(".traj", 1), p: () => move(".traj", -1),
                 ArrowRight: () => go("next"), ArrowLeft: () => go("prev"),
                 u: () => { location.hash = runLink(r.n); } };
  if (keys[ev.key]) { ev.preventDefault(); keys[ev.key](); }
});

async function route() {
  state.gen += 1;
  clearTimeout(state.timer);
  const r = state.route = parseRoute();
  if (!(r.page === "instance" && r.key)) window.scrollTo(0, 0);
  try {
    if (r.page === "run") await showRun(r.n);
    else if (r.page === "instance") await showInstance(r);
    else await showRuns();
  } catch (e) {
    setMain(el("p", { class: "err", id: "error" }, "cannot show this: " + e.message));
  }
}

window.addEventListener("hashchange", route);
route();
