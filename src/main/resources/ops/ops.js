// The operator's page. Reads event=, purchase= and key= from the URL fragment (the key then moves to
// sessionStorage and out of the address bar) and shows: the event's seats, live (server-sent events
// read with fetch, which can send the Authorization header an EventSource cannot); the purchase's
// timeline as bars on a time axis; and what waits for someone. Data is only ever set as text.

const KEY = "lastseat.operatorKey";
const state = { event: null, purchase: null, stream: null, waiting: null };

function fragment() {
  const params = new URLSearchParams(location.hash.slice(1));
  if (params.has("key")) {
    sessionStorage.setItem(KEY, params.get("key"));
    params.delete("key");
    history.replaceState(null, "", location.pathname + location.search + (params.toString() ? "#" + params : ""));
  }
  return { event: params.get("event"), purchase: params.get("purchase") };
}

function headers() {
  const key = sessionStorage.getItem(KEY);
  return key ? { Authorization: "Bearer " + key } : {};
}

function status(text, kind = "ok") {
  const el = document.getElementById("status");
  el.textContent = text;
  el.dataset.status = kind;
}

async function problem(response) {
  if (response.status === 401) {
    return "the operator key is missing or not valid: open this page with #key=<operator key>";
  }
  try {
    return (await response.json()).detail ?? response.statusText;
  } catch {
    return response.status + " " + response.statusText;
  }
}

// --- the seat map ---

function renderSnapshot(snapshot) {
  const seats = document.getElementById("seats");
  seats.replaceChildren();
  seats.dataset.event = snapshot.event;
  for (const { seat, state: seatState } of snapshot.seats) {
    const cell = document.createElement("span");
    cell.className = "seat";
    cell.dataset.seat = seat;
    cell.dataset.state = seatState;
    cell.textContent = seat;
    cell.title = seat + ": " + seatState;
    seats.append(cell);
  }
  document.getElementById("map-title").textContent = "Seats of " + snapshot.event;
  counts();
}

function applyChange(change) {
  for (const { seat, state: seatState } of change.seats) {
    const cell = document.querySelector(`#seats [data-seat="${CSS.escape(seat)}"]`);
    if (cell) {
      cell.dataset.state = seatState;
      cell.title = seat + ": " + seatState;
    }
  }
  counts();
}

function counts() {
  const all = [...document.querySelectorAll("#seats .seat")];
  const of = (s) => all.filter((c) => c.dataset.state === s).length;
  document.getElementById("counts").textContent =
    `${of("AVAILABLE")} free · ${of("HELD")} held · ${of("SOLD")} sold of ${all.length}`;
}

// One stream at a time; a dropped stream is opened again (a new snapshot) after a second.
async function watch(event) {
  state.stream?.abort();
  const abort = new AbortController();
  state.stream = abort;
  while (!abort.signal.aborted) {
    try {
      const response = await fetch(`/ops/api/events/${encodeURIComponent(event)}/seats`,
                                   { headers: headers(), signal: abort.signal });
      if (!response.ok) {
        status(await problem(response), "error");
        if (response.status === 401 || response.status === 404) {
          return;
        }
      } else {
        status("watching " + event + " live");
        await readEvents(response.body, (name, data) => {
          if (name === "snapshot") renderSnapshot(JSON.parse(data));
          if (name === "change") applyChange(JSON.parse(data));
        });
      }
    } catch (e) {
      if (abort.signal.aborted) return;
      status("stream of " + event + " lost; reconnecting", "error");
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

// Server-sent events, parsed by hand: "event:" and "data:" lines, a blank line ends an event.
async function readEvents(body, onEvent) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
      let name = "message";
      const data = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) onEvent(name, data.join("\n"));
    }
  }
}

// --- the timeline ---

async function showPurchase(id) {
  const response = await fetch(`/ops/api/purchases/${encodeURIComponent(id)}`, { headers: headers() });
  if (!response.ok) {
    status(await problem(response), "error");
    return;
  }
  const purchase = await response.json();
  const steps = purchase.timeline ?? [];
  document.getElementById("timeline-title").textContent = "Purchase " + purchase.id;
  document.getElementById("purchase-summary").textContent =
    `${purchase.state} · event ${purchase.eventId} · seats ${purchase.seats.join(", ")}` +
    (purchase.reason ? ` · ${purchase.reason}` : "");
  const box = document.getElementById("steps");
  box.replaceChildren();
  box.dataset.purchase = purchase.id;
  box.dataset.state = purchase.state;
  const time = (t) => (t ? Date.parse(t) : NaN);
  const starts = steps.map((s) => time(s.startedAt));
  const ends = steps.map((s) => time(s.endedAt ?? s.startedAt));
  const t0 = Math.min(...starts);
  const span = Math.max(1, Math.max(...ends) - t0);
  steps.forEach((s, i) => {
    const row = document.createElement("div");
    row.className = "step";
    row.dataset.step = s.step;
    row.dataset.outcome = s.outcome ?? "";
    const label = document.createElement("span");
    label.className = "label";
    label.textContent = s.step;
    const track = document.createElement("div");
    track.className = "track";
    const bar = document.createElement("div");
    bar.className = "bar";
    bar.style.left = ((starts[i] - t0) / span) * 100 + "%";
    bar.style.width = ((ends[i] - starts[i]) / span) * 100 + "%";
    bar.title = `${s.step}: ${Math.round(ends[i] - starts[i])} ms${s.outcome ? " · " + s.outcome : ""}`;
    track.append(bar);
    const outcome = document.createElement("span");
    outcome.className = "outcome";
    outcome.textContent = `${Math.round(starts[i] - t0)}–${Math.round(ends[i] - t0)} ms ${s.outcome ?? ""}`;
    row.append(label, track, outcome);
    box.append(row);
  });
  const axis = document.getElementById("axis");
  axis.replaceChildren();
  for (let k = 0; k <= 4; k++) {
    const tick = document.createElement("span");
    tick.style.left = k * 25 + "%";
    tick.textContent = Math.round((span * k) / 4) + " ms";
    axis.append(tick);
  }
}

// --- what waits ---

function fillTable(id, rows, cells) {
  const body = document.querySelector(`#${id} tbody`);
  body.replaceChildren();
  if (rows.length === 0) {
    const tr = document.createElement("tr");
    const td = document.createElement("td");
    td.colSpan = 5;
    td.className = "none";
    td.textContent = "none";
    tr.append(td);
    body.append(tr);
  }
  for (const row of rows) {
    const tr = document.createElement("tr");
    for (const value of cells(row)) {
      const td = document.createElement("td");
      td.textContent = value;
      tr.append(td);
    }
    body.append(tr);
  }
}

const age = (seconds) => (seconds < 120 ? seconds + " s" : seconds < 7200 ? Math.round(seconds / 60) + " min" : Math.round(seconds / 3600) + " h");

async function refreshWaiting() {
  try {
    const response = await fetch("/ops/api/waiting", { headers: headers() });
    if (!response.ok) return;
    const waiting = await response.json();
    fillTable("payments", waiting.payments, (p) => [p.id, p.state, p.eventId, age(p.ageSeconds)]);
    fillTable("dead", waiting.deadOutbox, (r) => [r.id, r.kind, r.purchaseId, r.attempts, age(r.ageSeconds)]);
  } catch {
    // The next refresh tries again.
  }
}

// --- wiring ---

function show() {
  const { event, purchase } = fragment();
  const form = document.getElementById("pick");
  form.event.value = event ?? "";
  form.purchase.value = purchase ?? "";
  if (!sessionStorage.getItem(KEY)) {
    status("no operator key: open this page with #key=<operator key> (bin/run prints it)", "error");
  }
  if (event && event !== state.event) {
    state.event = event;
    watch(event);
  }
  if (purchase && purchase !== state.purchase) {
    state.purchase = purchase;
    showPurchase(purchase);
  }
}

document.getElementById("pick").addEventListener("submit", (e) => {
  e.preventDefault();
  const params = new URLSearchParams();
  const form = e.target;
  if (form.event.value.trim()) params.set("event", form.event.value.trim());
  if (form.purchase.value.trim()) params.set("purchase", form.purchase.value.trim());
  state.purchase = null;
  location.hash = params.toString();
});
window.addEventListener("hashchange", show);
// Leaving (or going into the back-forward cache) ends the stream, so the server gives its place back at
// once; coming back from that cache opens it again, with a new snapshot.
window.addEventListener("pagehide", () => {
  state.stream?.abort();
  state.event = null;
});
window.addEventListener("pageshow", (e) => {
  if (e.persisted) show();
});
show();
refreshWaiting();
state.waiting = setInterval(refreshWaiting, 2000);
