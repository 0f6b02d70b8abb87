// radar view: the page's only script (radar_local/report/viewer.py). Model text is written with textContent
// alone: nothing a response or an explanation holds is parsed as markup, and the page's policy allows no request.
"use strict";
(function () {
  const started = performance.now();
  const raw = document.getElementById("data").textContent;
  const D = JSON.parse(raw);
  const app = document.getElementById("app");
  if (D.format !== 1) {
    app.textContent = "This viewer.html was written by another release of radar: run `radar view RUN` again.";
    return;
  }
  const ROW = 330; // px: every row of the list is this tall, so only the rows in view are drawn
  const P = D.probes, NP = P.key.length, C = D.criteria;
  const crit = new Map(C.map((c, i) => [c, i]));
  const judges = D.judges;

  // ---- small helpers: elements from text, never from markup ----
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") e.textContent = v;
      else if (k === "on") for (const [ev, f] of Object.entries(v)) e.addEventListener(ev, f);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const kid of kids) if (kid !== null && kid !== undefined) e.append(kid instanceof Node ? kid : String(kid));
    return e;
  }
  const signed = (x) => (x === null || x === undefined ? "n/a" : (x >= 0 ? "+" : "") + x.toFixed(2));
  const interval = (ci) => (ci ? `[${signed(ci[0])}, ${signed(ci[1])}]` : "");
  const score = (s) => (s === null || s === undefined ? "" : Number.isInteger(s) ? String(s) : s.toFixed(2));
  const size = (n) => (n < 1e6 ? `${Math.ceil(n / 1e3)} kB` : `${(n / 1e6).toFixed(1)} MB`);
  const pct = (x) => Math.round(x * 100) + "%";
  function colour(v) { // RdBu reversed on -1..1, as report/svg.py draws the leakage
    if (v === null || v === undefined) return "#ffffff";
    const t = Math.max(-1, Math.min(1, v));
    const end = t >= 0 ? [178, 24, 43] : [33, 102, 172], mid = [247, 247, 247], a = Math.abs(t);
    const c = mid.map((m, i) => Math.round(m + (end[i] - m) * a));
    return `rgb(${c[0]},${c[1]},${c[2]})`;
  }
  const dark = (v) => v !== null && v !== undefined && Math.abs(v) > 0.55;
  const MARKS = {confirmed: "\u25cf confirmed", coupled: "\u25d1 coupled", screened: "\u25d0 screened",
    possible: "\u25cb possible", gated: "gated", "": ""};
  const nameOf = (i) => (i < 0 ? "(unsteered)" : C[i]);

  // ---- state, read from and written to the URL fragment (deep links) ----
  const S = {judge: 0, source: null, target: null, task: "", direction: "", verdict: "", q: "", sort: "plan",
    probe: null, current: 0};
  function readHash() {
    const h = new URLSearchParams(location.hash.slice(1));
    const j = judges.findIndex((x) => x.label === h.get("judge"));
    S.judge = j >= 0 ? j : 0;
    S.task = h.get("task") || ""; S.direction = h.get("direction") || ""; S.verdict = h.get("verdict") || "";
    S.q = h.get("q") || ""; S.sort = h.get("sort") || "plan"; S.probe = h.get("probe");
    const from = crit.has(h.get("from")) ? crit.get(h.get("from")) : null;
    const to = crit.has(h.get("to")) ? crit.get(h.get("to")) : from;
    S.source = from; S.target = to;
    if (S.probe !== null) {
      const p = P.key.indexOf(S.probe);
      if (p >= 0 && from === null) { S.source = P.target[p]; S.target = P.target[p]; }
    }
    if (S.source === null) {
      const first = (judges[S.judge].audit || {}).findings || [];
      const linked = first.find((f) => f.cell);
      const start = linked ? linked.cell : C.length ? [C[0], C[0]] : null;
      if (start) { S.source = crit.get(start[0]); S.target = crit.get(start[1]); }
    }
  }
  function writeHash() {
    const h = new URLSearchParams();
    if (S.judge) h.set("judge", judges[S.judge].label);
    if (S.source !== null) { h.set("from", C[S.source]); h.set("to", C[S.target]); }
    for (const k of ["task", "direction", "verdict", "q"]) if (S[k]) h.set(k, S[k]);
    if (S.sort !== "plan") h.set("sort", S.sort);
    if (S.probe) h.set("probe", S.probe);
    history.replaceState(null, "", "#" + h.toString());
  }
  const cellLink = (a, b) => "#" + new URLSearchParams({from: a, to: b}).toString();

  // ---- the probes grouped into rows: one (task, steered criterion, variant), its up and down probes ----
  const rowsBySource = new Map();
  for (let p = 0; p < NP; p++) {
    const src = P.target[p];
    if (!rowsBySource.has(src)) rowsBySource.set(src, new Map());
    const group = rowsBySource.get(src), id = P.task[p] + "\u0000" + P.variant[p];
    if (!group.has(id)) group.set(id, {up: -1, down: -1, other: []});
    const row = group.get(id);
    if (P.direction[p] === "+") row.up = p; else if (P.direction[p] === "-") row.down = p; else row.other.push(p);
  }
  const pairsOf = new Map(); // a pairwise judge's verdicts by their pair's up probe
  for (const v of (D.pairs || {pairs: []}).pairs) {
    if (!pairsOf.has(v[0])) pairsOf.set(v[0], []);
    pairsOf.get(v[0]).push(v);
  }
  const reward = (p) => (D.rewards && p >= 0 ? D.rewards.values[p] : null);
  const verdictOf = (j, p, c) => {
    for (const v of D.verdicts[j][p]) if (v[0] === c) return v;
    return null;
  };
  const lanes = D.verdicts.length;
  function disagreement(p) {
    if (p < 0 || lanes < 2) return 0;
    let d = 0;
    for (const v of D.verdicts[0][p]) for (let j = 1; j < lanes; j++) {
      const w = verdictOf(j, p, v[0]);
      if (w && w[1] !== null && v[1] !== null) d += Math.abs(w[1] - v[1]);
      else if (w && (w[1] === null) !== (v[1] === null)) d += 1;
    }
    return d;
  }
  function unscored(p) { return p >= 0 && D.verdicts.some((lane) => lane[p].some((v) => v[1] === null)); }
  function matches(p, q) {
    if (p < 0) return false;
    if (P.text[p].toLowerCase().includes(q)) return true;
    return D.verdicts.some((lane) => lane[p].some((v) => v[2].toLowerCase().includes(q)));
  }
  function visibleRows() {
    if (S.source === null) return [];
    const group = rowsBySource.get(S.source);
    if (!group) return [];
    const taskIndex = S.task ? D.tasks.findIndex((t) => t.id === S.task) : -1, q = S.q.toLowerCase();
    let rows = [];
    for (const r of group.values()) {
      const shown = [S.direction === "-" ? -1 : r.up, S.direction === "+" ? -1 : r.down];
      const any = shown.find((p) => p >= 0);
      if (any === undefined) continue;
      if (taskIndex >= 0 && P.task[any] !== taskIndex) continue;
      if (S.verdict === "unscored" && !shown.some(unscored)) continue;
      if (S.verdict === "scored" && shown.some(unscored)) continue;
      if (q && !shown.some((p) => matches(p, q))) continue;
      rows.push({up: shown[0], down: shown[1]});
    }
    if (S.sort === "disagreement") {
      rows = rows.map((r) => [disagreement(r.up) + disagreement(r.down), r]).sort((a, b) => b[0] - a[0])
        .map((x) => x[1]);
    } else if (S.sort === "reward") {
      const gap = (r) => (reward(r.up) ?? 0) - (reward(r.down) ?? 0);
      rows = rows.map((r) => [gap(r), r]).sort((a, b) => b[0] - a[0]).map((x) => x[1]);
    } else if (S.sort === "gap") {
      const on = (p) => { const v = p >= 0 && verdictOf(S.judge, p, S.target); return v && v[1] !== null ? v[1] : 0; };
      rows = rows.map((r) => [on(r.up) - on(r.down), r]).sort((a, b) => a[0] - b[0]).map((x) => x[1]);
    }
    return rows;
  }

  // ---- the page ----
  const header = el("header", {}, el("h1", {text: D.title}), el("p", {text: D.subtitle}),
    el("p", {id: "size", text: `${NP} probes, ${C.length} criteria, ${lanes} judge${lanes === 1 ? "" : "s"}; ` +
      `${size(raw.length)} of data in this file (responses cut at 20,000 characters and ` +
      `explanations at 2,000: the whole texts are in probes.jsonl and scores.jsonl). Keys: ` +
      "arrows move in the matrix, Enter opens a cell, j / k the next and previous row, / searches."}));
  const aside = el("aside", {id: "matrix-side"});
  const evidence = el("section", {id: "evidence"});
  app.replaceChildren(header, el("main", {}, aside, evidence));

  function drawAside() {
    const audit = judges[S.judge].audit;
    const picker = el("select", {id: "judge", "aria-label": "judge", on: {change: (e) => {
      S.judge = Number(e.target.value); S.current = 0; drawAll();
    }}}, ...judges.map((j, i) => el("option", {value: i, selected: i === S.judge, text: j.label +
      (j.audit ? "" : " (no audit of its own: its verdicts are a lane)")})));
    const parts = [el("h2", {text: "Judge"}), picker];
    if (audit && audit.criteria.length) parts.push(...matrix(audit));
    else parts.push(el("p", {text: "No leakage matrix for this judge: browse the probes by what they steer."}));
    const browse = el("select", {id: "source", "aria-label": "steered criterion", on: {change: (e) => {
      const i = Number(e.target.value); S.source = i; S.target = i; S.current = 0; S.probe = null; drawAll();
    }}}, ...[...rowsBySource.keys()].sort((a, b) => a - b).map((i) => el("option", {value: i,
      selected: i === S.source, text: D.items[i] ? `${C[i]}: ${D.texts[i].slice(0, 70)}` : nameOf(i)})));
    parts.push(el("h2", {text: "Probes steered on"}), browse);
    if (audit && audit.findings.length) {
      parts.push(el("h2", {text: "Findings"}), el("ul", {class: "findings"}, ...audit.findings.map((f) => el("li", {},
        f.text, f.cell ? " " : null, f.cell ? el("a", {href: cellLink(f.cell[0], f.cell[1]), class: "finding",
          text: "(probes)"}) : null))));
    }
    aside.replaceChildren(...parts);
  }

  function matrix(audit) {
    const K = audit.criteria, idx = K.map((c) => crit.get(c));
    const head = el("tr", {}, el("th", {text: "steered \u2193 / scored \u2192"}),
      ...K.map((c) => el("th", {scope: "col", title: c, text: c})));
    const body = K.map((a, i) => el("tr", {}, el("th", {scope: "row", title: a, text: a}), ...K.map((b, j) => {
      const x = audit.cells[i][j];
      const label = `${a} \u2192 ${b}: ${i === j ? "self-effect" : "leakage"} ${signed(x.value)} ${interval(x.ci)}` +
        (x.mark ? `, ${x.mark}` : "");
      const btn = el("button", {class: "cell" + (x.mark === "gated" ? " gated" : "") +
        (idx[i] === S.source && idx[j] === S.target ? " selected" : ""), "data-row": i, "data-col": j,
      "aria-label": label, title: label, on: {click: () => select(idx[i], idx[j]), keydown: (e) => move(e, i, j, K.length)}},
      el("span", {text: signed(x.value)}), el("span", {class: "mark", text: MARKS[x.mark] || ""}));
      btn.style.backgroundColor = colour(x.value); // the hatch of a gated cell stays its background image
      btn.style.color = dark(x.value) ? "#fff" : "#000";
      return el("td", {}, btn);
    })));
    return [el("h2", {text: "Leakage (row steered, column scored; the diagonal: self-effects)"}),
      el("table", {class: "matrix", id: "matrix"}, el("thead", {}, head), el("tbody", {}, ...body)),
      el("p", {class: "legend", text: "Colour: the estimate (red up, blue down). Marks: the pair's strongest flag " +
        "and its evidence (\u25cf confirmed by the family bounds, \u25d1 coupled, \u25d0 screened at a false " +
        "discovery rate, \u25cb possible: its point estimate only); hatched: gated (a criterion the judge does " +
        "not read reliably)."})];
  }
  function move(e, i, j, n) {
    const step = {ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1]}[e.key];
    if (!step) return;
    e.preventDefault();
    const next = document.querySelector(`#matrix button[data-row="${(i + step[0] + n) % n}"][data-col="${(j + step[1] + n) % n}"]`);
    if (next) next.focus();
  }
  function select(source, target) {
    S.source = source; S.target = target; S.current = 0; S.probe = null; drawAll();
  }

  function claim() {
    const audit = judges[S.judge].audit, box = el("div", {class: "claim", id: "claim"});
    if (!audit || !audit.criteria.includes(C[S.source]) || !audit.criteria.includes(C[S.target])) {
      box.append(el("p", {text: `Probes steered on ${nameOf(S.source)}, each with every verdict of every judge.`}));
      return box;
    }
    const i = audit.criteria.indexOf(C[S.source]), j = audit.criteria.indexOf(C[S.target]);
    const x = audit.cells[i][j], self = audit.cells[i][i];
    const level = audit.level ? pct(audit.level) + " CI " : "";
    const fam = (c) => (c.family ? `, family-wise ${interval(c.family)} at ${pct(audit.family_level)}` : "");
    box.append(el("p", {text: i === j
      ? `${C[S.source]}: self-effect ${signed(x.value)} ${level}${interval(x.ci)}${fam(x)}` +
        (x.mark ? `; its gate: ${x.mark}` : "")
      : `${C[S.source]} \u2192 ${C[S.target]}: leakage ${signed(x.value)} ${level}${interval(x.ci)}${fam(x)}` +
        (x.flags.length ? `; flags: ${x.flags.join(", ")} (${x.mark})` : "; no flag")}));
    if (i !== j) {
      box.append(el("p", {text: `The steer (its manipulation check): ${C[S.source]}'s self-effect ` +
        `${signed(self.value)} ${interval(self.ci)}${self.mark ? ", gate " + self.mark : ""}. Reverse: ` +
        `${C[S.target]} \u2192 ${C[S.source]} ${signed(audit.cells[j][i].value)} ${interval(audit.cells[j][i].ci)}.`}),
      el("p", {}, el("a", {href: cellLink(C[S.target], C[S.source]), text: "open the reverse leakage"})));
    }
    return box;
  }
  function checks() {
    const audit = judges[S.judge].audit;
    if (!audit || !audit.checks.length) return el("div", {class: "checks"});
    return el("div", {class: "checks", id: "checks"}, el("h2", {text: "Checks beside the finding"}),
      ...audit.checks.map((c) => el("details", {}, el("summary", {text: c.title}),
        ...c.lines.map((l) => el("p", {text: l})),
        ...c.tables.map((t) => el("table", {}, el("tr", {}, ...t.head.map((h) => el("th", {text: h}))),
          ...t.rows.map((r) => el("tr", {}, ...r.map((v) => el("td", {text: v})))))))));
  }

  function filters() {
    const bar = el("div", {class: "filters"});
    const set = (k) => (e) => { S[k] = e.target.value; S.current = 0; S.probe = null; drawList(); writeHash(); };
    bar.append(
      el("label", {}, "task ", el("select", {id: "f-task", on: {change: set("task")}}, el("option", {value: "",
        text: "all"}), ...D.tasks.map((t) => el("option", {value: t.id, selected: t.id === S.task, text: t.id})))),
      el("label", {}, "direction ", el("select", {id: "f-direction", on: {change: set("direction")}},
        ...[["", "both"], ["+", "up"], ["-", "down"]].map(([v, t]) => el("option", {value: v,
          selected: v === S.direction, text: t})))),
      el("label", {}, "verdicts ", el("select", {id: "f-verdict", on: {change: set("verdict")}},
        ...[["", "all"], ["scored", "all scored"], ["unscored", "with an unscored verdict"]].map(([v, t]) =>
          el("option", {value: v, selected: v === S.verdict, text: t})))),
      el("label", {}, "sort ", el("select", {id: "f-sort", on: {change: set("sort")}},
        ...[["plan", "plan order"], ["gap", "target: up minus down, smallest first"],
          ...(lanes > 1 ? [["disagreement", "judges' disagreement, largest first"]] : []),
          ...(D.rewards ? [["reward", `reward (${D.rewards.label}): up minus down, largest first`]] : [])]
          .map(([v, t]) => el("option", {value: v, selected: v === S.sort, text: t})))),
      el("input", {type: "search", id: "f-search", placeholder: "search responses and explanations ( / )",
        value: S.q, "aria-label": "search", on: {input: set("q")}}),
      el("span", {id: "count"}));
    return bar;
  }

  const list = el("div", {id: "list", tabindex: 0});
  const spacer = el("div", {});
  list.append(spacer);
  let rows = [];
  list.addEventListener("scroll", () => requestAnimationFrame(drawWindow));

  function probeCard(p, side) {
    if (p < 0) return el("div", {class: "probe empty", text: `no ${side} probe shown`});
    const meta = el("div", {class: "meta"}, `${side} \u00b7 task ${D.tasks[P.task[p]].id} \u00b7 steered ` +
      `${P.direction[p]} on ${nameOf(P.target[p])} \u00b7 variant ${P.variant[p]} \u00b7 seed ${P.seed[p]} \u00b7 `,
    el("a", {href: "#" + new URLSearchParams({probe: P.key[p]}).toString(), class: "probe-link",
      text: P.key[p]}));
    const heads = el("tr", {}, el("th", {text: "criterion"}), ...judges.map((j) => el("th", {text: j.label})),
      ...(lanes > 1 ? judges.slice(1).map((j) => el("th", {text: `\u0394 ${j.label}`})) : []));
    const graded = D.verdicts.find((lane) => lane[p].length); // the criteria this probe was graded on
    const trs = (graded ? graded[p] : []).map(([c]) => {
      const item = D.items[c];
      const name = el("th", {scope: "row"}, C[c], item ? el("span", {class: "item", text:
        `${item.points < 0 ? "pitfall, " : ""}${item.points} points: ${D.texts[c]}`}) : null);
      const said = D.verdicts.map((_, j) => verdictOf(j, p, c)), own = said[0];
      const cells = said.map((v) => (v ? el("td", {}, v[1] === null ? el("span", {class: "unscored", text: "unscored" +
        (v[3] ? `: ${v[3]}` : "")}) : el("b", {class: "score", text: score(v[1])}),
      v[2] ? el("span", {class: "why", text: v[2]}) : null) : el("td", {text: "\u2014"})));
      const deltas = said.slice(1).map((v) => el("td", {class: "delta",  // against the run's own judge
        text: v && own && v[1] !== null && own[1] !== null ? signed(v[1] - own[1]) : ""}));
      return el("tr", {class: (c === S.target ? "target " : "") + (c === P.target[p] ? "source" : ""),
        "data-criterion": C[c]}, name, ...cells, ...deltas);
    });
    const scalar = reward(p);
    return el("div", {class: "probe", "data-key": P.key[p], "data-direction": P.direction[p],
      "data-task": D.tasks[P.task[p]].id, "data-variant": P.variant[p]}, meta,
      D.rewards ? el("div", {class: "meta reward", text: `reward (${D.rewards.label}): ` +
        (scalar === null ? "none stored" : score(scalar))}) : null,
      el("div", {class: "response", text: P.text[p]}),
      el("div", {class: "vbox"}, el("table", {class: "verdicts"}, el("thead", {}, heads), el("tbody", {}, ...trs))));
  }
  function pairCard(up) { // the pairwise judge asked which of the two is better, in both orders
    const asked = up >= 0 ? pairsOf.get(up) : null;
    if (!asked) return null;
    const said = (v) => (v[3] === null ? `unscored${v[5] ? ": " + v[5] : ""}` : v[3] === "tie" ? "tie" :
      (v[3] === "A") === (v[2] === 0) ? "up" : "down");
    const byCriterion = new Map();
    for (const v of asked) {
      if (!byCriterion.has(v[1])) byCriterion.set(v[1], [null, null]);
      byCriterion.get(v[1])[v[2]] = v;
    }
    const cell = (v) => (v ? el("td", {class: v[3] === null ? "unscored" : "choice"}, said(v),
      v[4] ? el("span", {class: "why", text: v[4]}) : null) : el("td", {text: "\u2014"}));
    return el("div", {class: "probe pairs"}, el("div", {class: "meta", text: `pairwise judge ${D.pairs.judge}: ` +
      "which is better (each order)"}), el("div", {class: "vbox"}, el("table", {class: "verdicts"},
      el("thead", {}, el("tr", {}, el("th", {text: "asked"}), el("th", {text: "up shown as A"}),
        el("th", {text: "down shown as A"}))),
      el("tbody", {}, ...[...byCriterion].map(([c, both]) => el("tr", {class: c === C[S.target] ? "target" : "",
        "data-criterion": c}, el("th", {scope: "row", text: c}), cell(both[0]), cell(both[1])))))));
  }
  function drawWindow() {
    const top = list.scrollTop, height = list.clientHeight || 600;
    const first = Math.max(0, Math.floor(top / ROW) - 2), last = Math.min(rows.length, Math.ceil((top + height) / ROW) + 2);
    const drawn = [];
    for (let i = first; i < last; i++) {
      const r = rows[i];
      const row = el("div", {class: "row" + (i === S.current ? " current" : ""), "data-index": i},
        probeCard(r.up, "up"), probeCard(r.down, "down"), pairCard(r.up));
      row.style.top = i * ROW + "px";
      row.style.height = ROW + "px";
      drawn.push(row);
    }
    spacer.style.height = rows.length * ROW + "px";
    list.replaceChildren(spacer, ...drawn);
  }
  function drawList() {
    rows = visibleRows();
    if (S.probe) {
      const p = P.key.indexOf(S.probe), at = rows.findIndex((r) => r.up === p || r.down === p);
      if (at >= 0) S.current = at;
    }
    S.current = Math.min(S.current, Math.max(rows.length - 1, 0));
    const count = document.getElementById("count");
    if (count) count.textContent = `${rows.length} row${rows.length === 1 ? "" : "s"} (up and down probes of one ` +
      "task and variant)";
    list.scrollTop = S.current * ROW;
    drawWindow();
  }
  function go(step) {
    if (!rows.length) return;
    S.current = Math.max(0, Math.min(rows.length - 1, S.current + step));
    const r = rows[S.current];
    S.probe = P.key[r.up >= 0 ? r.up : r.down];
    const top = S.current * ROW;
    if (top < list.scrollTop || top + ROW > list.scrollTop + list.clientHeight) list.scrollTop = top;
    drawWindow();
    writeHash();
  }

  function drawAll() {
    drawAside();
    const what = S.source === null ? "Nothing to show: this audit holds no probes." :
      S.source === S.target ? `Probes steered on ${nameOf(S.source)} (its own verdicts highlighted)` :
        `Probes steered on ${nameOf(S.source)}, scored on ${nameOf(S.target)} (highlighted)`;
    evidence.replaceChildren(el("h2", {id: "selection", text: what}), claim(), checks(), filters(), list);
    drawList();
    writeHash();
  }

  document.addEventListener("keydown", (e) => {
    const typing = e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement;
    if (e.key === "/" && !typing) { e.preventDefault(); document.getElementById("f-search").focus(); return; }
    if (e.key === "Escape" && typing) { e.target.blur(); return; }
    if (typing || e.target.classList.contains("cell")) return;
    if (e.key === "j") go(1); else if (e.key === "k") go(-1);
  });
  window.addEventListener("hashchange", () => { readHash(); drawAll(); });
  readHash();
  drawAll();
  // ms from the navigation's start (the file's read and parse included) to the page drawn; then the script's own
  document.body.setAttribute("data-ready", performance.now().toFixed(0));
  document.body.setAttribute("data-script", (performance.now() - started).toFixed(0));
})();
