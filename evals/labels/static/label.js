// The labelling page: one answer at a time, labelled with the keyboard, each label posted
// as it is made. Answers are untrusted model output: shown with textContent only.
"use strict";

const state = { items: [], index: 0, labels: {}, skipped: new Set(), queue: Promise.resolve(),
  pending: 0, saved: 0, showAgreement: true, score: "", run: "", labeller: "" };
window.__labels = { ready: false };
const $ = (id) => document.getElementById(id);

function show(id, text) { $(id).textContent = text; }

function status(text, error) {
  show("status", text);
  $("status").className = error ? "error" : "";
}

function format(value) {
  return value === null || value === undefined ? "n/a" : Number(value).toFixed(2);
}

function keysText(item) {
  return Object.entries(item.keys).map(([key, value]) => `${key} = ${value}`).join(" · ");
}

function openAnswer() {
  const open = state.items.findIndex((i) => !(i.id in state.labels) && !state.skipped.has(i.id));
  return open >= 0 ? open : state.items.findIndex((i) => !(i.id in state.labels));
}

function render() {
  const item = state.items[state.index];
  const count = state.items.length;
  const labelled = state.items.filter((i) => i.id in state.labels).length;
  show("progress", `${labelled} of ${count} labelled · ${state.skipped.size} skipped`);
  $("done").hidden = labelled < count;
  if (!item) return;
  show("position", `Answer ${state.index + 1} of ${count} · ${state.score}, ` +
    `${item.low} to ${item.high}`);
  show("question", item.question);
  show("prompt", item.prompt);
  show("answer", item.answer);
  const current = $("current");
  if (item.id in state.labels) {
    current.textContent = `Your label: ${state.labels[item.id]}`;
    current.className = "labelled";
  } else if (state.skipped.has(item.id)) {
    current.textContent = "Skipped";
    current.className = "skipped";
  } else {
    current.textContent = "Not labelled";
    current.className = "";
  }
  show("keys", `Keys: ${keysText(item)} · n: an exact number · ←/→ move · s skip · ` +
    "u clear · ? all keys");
  show("help-digits", keysText(item));
  $("number").min = item.low;
  $("number").max = item.high;
  window.__labels.index = state.index;
  window.__labels.id = item.id;
}

function send(event, undo) {
  state.pending += 1;
  window.__labels.pending = state.pending;
  state.queue = state.queue
    .then(() => fetch("/api/label", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(event),
    }))
    .then((response) => response.json().then((body) => {
      if (!response.ok) throw new Error(body.error || response.statusText);
      state.saved += 1;
      status(`Saved (${body.labelled} labelled)`, false);
      refreshAgreement();
    }))
    .catch((error) => {
      undo();
      render();
      status(`Not saved: ${error.message}. Label it again once the server runs.`, true);
    })
    .finally(() => {
      state.pending -= 1;
      window.__labels.pending = state.pending;
      window.__labels.saved = state.saved;
    });
}

function moveOn() {
  if (state.index < state.items.length - 1) {
    state.index += 1;
  } else {
    const open = openAnswer();
    if (open >= 0) state.index = open;
  }
}

function label(value) {
  const item = state.items[state.index];
  const before = state.labels[item.id];
  const wasSkipped = state.skipped.has(item.id);
  state.labels[item.id] = value;
  state.skipped.delete(item.id);
  send({ id: item.id, event: "label", value }, () => {
    if (before === undefined) delete state.labels[item.id]; else state.labels[item.id] = before;
    if (wasSkipped) state.skipped.add(item.id);
  });
  moveOn();
  render();
}

function skip() {
  const item = state.items[state.index];
  if (!(item.id in state.labels) && !state.skipped.has(item.id)) {
    state.skipped.add(item.id);
    send({ id: item.id, event: "skip" }, () => state.skipped.delete(item.id));
  }
  moveOn();
  render();
}

function clear() {
  const item = state.items[state.index];
  const before = state.labels[item.id];
  const wasSkipped = state.skipped.has(item.id);
  if (before === undefined && !wasSkipped) return;
  delete state.labels[item.id];
  state.skipped.delete(item.id);
  send({ id: item.id, event: "clear" }, () => {
    if (before !== undefined) state.labels[item.id] = before;
    if (wasSkipped) state.skipped.add(item.id);
  });
  render();
}

function move(step) {
  state.index = Math.min(Math.max(state.index + step, 0), state.items.length - 1);
  render();
}

let asked = 0;

function refreshAgreement() {
  const aside = $("agreement");
  aside.hidden = !state.showAgreement;
  if (!state.showAgreement) return;
  const ask = ++asked;
  fetch("/api/agreement").then((r) => r.json()).then((body) => {
    if (ask !== asked) return; // a later answer is on its way
    aside.replaceChildren();
    const rows = body.agreement || [];
    const title = document.createElement("strong");
    title.textContent = `The judge against your labels of ${state.score}`;
    aside.append(title);
    if (!rows.length) {
      const line = document.createElement("div");
      line.textContent = "appears once you label (Spearman's ρ needs 4 labels).";
      aside.append(line);
    }
    for (const row of rows) {
      const line = document.createElement("div");
      const where = row.question === "(all)" ? "all questions" : row.question;
      line.textContent = `${where}: n ${row.n}, Spearman ρ ${format(row.spearman)} ` +
        `[${format(row.spearman_low)}, ${format(row.spearman_high)}], κ ${format(row.kappa)} ` +
        `[${format(row.kappa_low)}, ${format(row.kappa_high)}]`;
      line.className = "agreement-row";
      aside.append(line);
    }
    window.__labels.agreement = rows.length;
  }).catch(() => {});
}

function onKey(event) {
  if (event.target === $("number")) {
    if (event.key === "Escape") $("number").blur();
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey || !state.items.length) return;
  const item = state.items[state.index];
  const key = event.key;
  if (key in item.keys) label(item.keys[key]);
  else if (key === "ArrowRight") move(1);
  else if (key === "ArrowLeft") move(-1);
  else if (key === "s") skip();
  else if (key === "u") clear();
  else if (key === "n") $("number").focus();
  else if (key === "a") { state.showAgreement = !state.showAgreement; refreshAgreement(); }
  else if (key === "?") $("help").hidden = !$("help").hidden;
  else if (key === "Escape") $("help").hidden = true;
  else if (/^[0-9]$/.test(key)) {
    status(`Key ${key} is not a label here: ${keysText(item)}`, true);
    return;
  } else return;
  event.preventDefault();
}

function onExact(event) {
  event.preventDefault();
  const item = state.items[state.index];
  const field = $("number");
  const value = Number(field.value);
  if (field.value === "" || !Number.isFinite(value) || value < item.low || value > item.high) {
    status(`A label is a number from ${item.low} to ${item.high}`, true);
    return;
  }
  field.value = "";
  field.blur();
  label(value);
}

function start() {
  fetch("/api/session").then((r) => r.json()).then((data) => {
    Object.assign(state, {
      items: data.items, labels: data.labels, skipped: new Set(data.skipped),
      index: data.start, score: data.score, run: data.run, labeller: data.labeller,
    });
    show("title", `Labelling ${data.run} as ${data.labeller}`);
    show("import", `labmgr labels import RUN RUN/labels/${data.labeller}.jsonl`);
    document.title = `Labelling ${data.run}`;
    document.addEventListener("keydown", onKey);
    $("exact").addEventListener("submit", onExact);
    render();
    refreshAgreement();
    window.__labels.ready = true;
  }).catch((error) => status(`Cannot load the answers: ${error.message}`, true));
}

start();
