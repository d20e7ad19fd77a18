"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("report-data").textContent);
  const rows = DATA.rows;
  const N = rows.q.length;
  const PAGE = 50;
  const state = { matches: null, page: 0, selected: -1, lastFilterMs: 0, filters: 0 };
  const $ = (id) => document.getElementById(id);
  window.__report = state;

  function el(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }
  function option(value, label) {
    const node = document.createElement("option");
    node.value = String(value);
    node.textContent = label;
    return node;
  }
  function fill(select, values, allLabel) {
    select.replaceChildren();
    if (allLabel) select.appendChild(option("", allLabel));
    values.forEach((v, i) => select.appendChild(option(i, v)));
  }
  function fmt(x) { return x === null || x === undefined ? "" : (Math.round(x * 100) / 100).toString(); }
  function cut(text, n) { return text.length > n ? text.slice(0, n - 1) + "\u2026" : text; }
  function prompt(i) { return DATA.questions[rows.q[i]].prompts[rows.p[i]] || ""; }

  // ---- filters -----------------------------------------------------------------------------
  let haystack = null;
  function searchText(i) {
    let text = rows.answer[i] || "";
    if (rows.error[i]) text += "\n" + rows.error[i];
    for (const name of DATA.texts) { const v = rows.texts[name][i]; if (v) text += "\n" + v; }
    return text.toLowerCase();
  }
  function buildHaystack() {
    if (haystack) return haystack;
    haystack = new Array(N);
    for (let i = 0; i < N; i++) haystack[i] = searchText(i);
    return haystack;
  }
  function applyFilters() {
    const t0 = performance.now();
    const q = $("f-question").value, g = $("f-group").value, m = $("f-model").value;
    const score = $("f-score").value;
    const lo = $("f-min").value === "" ? -Infinity : Number($("f-min").value);
    const hi = $("f-max").value === "" ? Infinity : Number($("f-max").value);
    const terms = $("f-search").value.toLowerCase().split(/\s+/).filter(Boolean);
    const onlyErrors = $("f-errors").checked;
    const qi = q === "" ? -1 : Number(q), gi = g === "" ? -1 : Number(g), mi = m === "" ? -1 : Number(m);
    const values = score === "" ? null : rows.scores[DATA.scores[Number(score)]];
    const hay = terms.length ? buildHaystack() : null;
    const out = new Int32Array(N);
    let count = 0;
    for (let i = 0; i < N; i++) {
      if (qi >= 0 && rows.q[i] !== qi) continue;
      if (gi >= 0 && rows.g[i] !== gi) continue;
      if (mi >= 0 && rows.m[i] !== mi) continue;
      if (onlyErrors && !rows.error[i]) continue;
      if (values) { const v = values[i]; if (v === null || v < lo || v > hi) continue; }
      if (hay) {
        const h = hay[i];
        let ok = true;
        for (const term of terms) {
          if (term[0] === "-" && term.length > 1) { if (h.includes(term.slice(1))) { ok = false; break; } }
          else if (!h.includes(term)) { ok = false; break; }
        }
        if (!ok) continue;
      }
      out[count++] = i;
    }
    state.matches = out.subarray(0, count);
    state.page = 0;
    state.lastFilterMs = performance.now() - t0;
    state.filters += 1;
    render();
  }
  let timer = 0;
  function debounced() { clearTimeout(timer); timer = setTimeout(applyFilters, 180); }

  // ---- table ---------------------------------------------------------------------------------
  function render() {
    const matches = state.matches;
    const pages = Math.max(1, Math.ceil(matches.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    $("match-count").textContent = matches.length.toLocaleString("en-US") + " of " + N.toLocaleString("en-US") + " samples";
    $("page-label").textContent = "page " + (state.page + 1) + " of " + pages;
    $("prev-page").disabled = state.page === 0;
    $("next-page").disabled = state.page >= pages - 1;
    const head = $("sample-head");
    head.replaceChildren();
    const columns = ["question", "group", "model", "#", "answer", ...DATA.scores, "error"];
    for (const c of columns) head.appendChild(el("th", c, DATA.scores.includes(c) || c === "#" ? "num" : ""));
    const body = document.createElement("tbody");
    const start = state.page * PAGE;
    for (let k = start; k < Math.min(matches.length, start + PAGE); k++) {
      const i = matches[k];
      const tr = document.createElement("tr");
      tr.dataset.row = String(i);
      if (i === state.selected) tr.className = "selected";
      tr.appendChild(el("td", cut(DATA.questions[rows.q[i]].name, 40)));
      tr.appendChild(el("td", cut(DATA.groups[rows.g[i]], 40)));
      tr.appendChild(el("td", cut(DATA.models[rows.m[i]], 48)));
      tr.appendChild(el("td", rows.p[i] + "." + rows.s[i], "num"));
      tr.appendChild(el("td", cut(rows.answer[i] || "", 400), "answer"));
      for (const name of DATA.scores) tr.appendChild(el("td", fmt(rows.scores[name][i]), "num"));
      tr.appendChild(el("td", rows.error[i] ? cut(rows.error[i], 120) : "", "error"));
      body.appendChild(tr);
    }
    $("sample-table").replaceChild(body, $("sample-table").tBodies[0]);
  }
  function showDetail(i) {
    state.selected = i;
    const box = $("sample-detail");
    box.replaceChildren();
    box.hidden = false;
    box.appendChild(el("h3", DATA.questions[rows.q[i]].name + " \u2014 " + DATA.groups[rows.g[i]]));
    box.appendChild(el("div", DATA.models[rows.m[i]] + "  (paraphrase " + rows.p[i] + ", sample " + rows.s[i] + ")", "muted"));
    box.appendChild(el("div", "prompt", "muted"));
    box.appendChild(el("pre", prompt(i), "prompt"));
    box.appendChild(el("div", "answer", "muted"));
    box.appendChild(el("pre", rows.answer[i] || ""));
    const dl = el("dl", null, "facts");
    for (const name of DATA.scores) { if (rows.scores[name][i] !== null) { dl.appendChild(el("dt", name)); dl.appendChild(el("dd", fmt(rows.scores[name][i]))); } }
    for (const name of DATA.texts) { if (rows.texts[name][i]) { dl.appendChild(el("dt", name)); dl.appendChild(el("dd", rows.texts[name][i])); } }
    if (rows.error[i]) { dl.appendChild(el("dt", "error")); dl.appendChild(el("dd", rows.error[i], "error")); }
    box.appendChild(dl);
    if (rows.k[i] !== null && rows.k[i] !== undefined) {
      box.appendChild(el("div", "sent (api_kwargs)", "muted"));
      box.appendChild(el("pre", JSON.stringify(JSON.parse(DATA.sent[rows.k[i]]), null, 1), "sent"));
    }
    render();
  }

  // ---- side by side ----------------------------------------------------------------------------
  function sideOptions(select) {
    select.replaceChildren();
    DATA.groups.forEach((g, i) => select.appendChild(option("g" + i, "group: " + g)));
    DATA.models.forEach((m, i) => select.appendChild(option("m" + i, "model: " + m)));
  }
  function fillPrompts() {
    const q = DATA.questions[Number($("c-question").value)];
    const select = $("c-prompt");
    select.replaceChildren();
    q.prompts.forEach((p, i) => select.appendChild(option(i, i + ": " + cut(String(p), 90))));
  }
  function renderSide(target, choice, qi, pi) {
    const box = $(target);
    box.replaceChildren();
    const kind = choice[0], index = Number(choice.slice(1));
    const picked = [];
    for (let i = 0; i < N && picked.length < 200; i++) {
      if (rows.q[i] !== qi || rows.p[i] !== pi) continue;
      if (kind === "g" ? rows.g[i] !== index : rows.m[i] !== index) continue;
      picked.push(i);
    }
    box.appendChild(el("h3", (kind === "g" ? DATA.groups[index] : DATA.models[index]) + " (" + picked.length + (picked.length === 200 ? "+" : "") + " answers)"));
    for (const i of picked) {
      const item = el("div", null, "item");
      const scores = DATA.scores.filter((n) => rows.scores[n][i] !== null).map((n) => n + " " + fmt(rows.scores[n][i])).join(", ");
      item.appendChild(el("div", cut(DATA.models[rows.m[i]], 60) + " #" + rows.s[i] + (scores ? " \u2014 " + scores : ""), "muted"));
      item.appendChild(el("pre", rows.answer[i] || ""));
      if (rows.error[i]) item.appendChild(el("div", rows.error[i], "error"));
      box.appendChild(item);
    }
  }
  function renderCompare() {
    const qi = Number($("c-question").value), pi = Number($("c-prompt").value);
    $("c-prompt-text").textContent = String(DATA.questions[qi].prompts[pi] || "");
    renderSide("side-a", $("c-a").value, qi, pi);
    renderSide("side-b", $("c-b").value, qi, pi);
  }

  // ---- wiring ------------------------------------------------------------------------------------
  fill($("f-question"), DATA.questions.map((q) => q.name), "all questions");
  fill($("f-group"), DATA.groups, "all groups");
  fill($("f-model"), DATA.models, "all models");
  fill($("f-score"), DATA.scores, "(no score filter)");
  for (const id of ["f-question", "f-group", "f-model", "f-score", "f-errors"]) $(id).addEventListener("change", applyFilters);
  for (const id of ["f-search", "f-min", "f-max"]) $(id).addEventListener("input", debounced);
  $("prev-page").addEventListener("click", () => { state.page -= 1; render(); });
  $("next-page").addEventListener("click", () => { state.page += 1; render(); });
  $("sample-table").addEventListener("click", (event) => {
    const tr = event.target.closest("tr[data-row]");
    if (tr) showDetail(Number(tr.dataset.row));
  });
  fill($("c-question"), DATA.questions.map((q) => q.name));
  sideOptions($("c-a"));
  sideOptions($("c-b"));
  if (DATA.groups.length > 1) $("c-b").value = "g1";
  $("c-question").addEventListener("change", () => { fillPrompts(); renderCompare(); });
  for (const id of ["c-prompt", "c-a", "c-b"]) $(id).addEventListener("change", renderCompare);
  if (DATA.questions.length) { fillPrompts(); renderCompare(); }
  applyFilters();
  state.readyMs = performance.now();
  state.ready = true;
})();
