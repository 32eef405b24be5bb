/* The reservations calendar: a Gantt view of the ARs by node (vis-timeline),
 * an AR's detail, booking in a free span (RESQUERY, then SETRES), changing
 * or cancelling one's own ARs, and reserved against used node-hours.
 *
 * Every call is the HTTP API's, with the bearer token that the one-time link
 * of plus_web was exchanged for, or the site's identity provider gave; the
 * daemon decides what the caller may do.
 * The timeline holds one page of node rows at a time: vis-timeline draws
 * every row it holds, and a thousand rows would take seconds. */
"use strict";

const STATES = {w: "waiting", r: "running", x: "exited", d: "deleted", W: "warning",
                E: "error", p: "pending"};
const STATE_WORDS = {w: "waiting", r: "running", x: "ended", d: "cancelled",
                     W: "warning", E: "error", p: "pending (-T)"};
const POLL_MS = 5000;
const ROW_PX = 28;
const HOUR = 3600;
const WEEK = 7 * 86400;
const WIDEN_AFTER_MS = 250;

const view = {
  token: null, user: null, manager: false,
  nodes: [], page: 0, pageSize: 30,
  loaded: null, asked: null, widening: null, revision: null, tickets: 0, loading: 0,
  ars: [], jobs: [], starts: [], booking: null, pendingStart: null,
  timeline: null, items: null, groups: null, usageChart: null,
};

class ApiError extends Error {
  constructor(status, text) { super(text); this.status = status; }
}

async function api(method, path, body) {
  const headers = {"Authorization": "Bearer " + view.token};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {method, headers,
                                      body: body === undefined ? undefined : JSON.stringify(body)});
  let data = null;
  try { data = await response.json(); } catch (error) { data = null; }
  if (!response.ok) {
    const text = data && typeof data.error === "string" ? data.error : response.statusText;
    if (response.status === 401) sessionStorage.removeItem("plus.token");
    throw new ApiError(response.status, text);
  }
  return data;
}

function $(id) { return document.getElementById(id); }

function say(text, info) {
  const box = $("message");
  box.textContent = text;
  box.className = info ? "info" : "";
  box.hidden = !text;
}

/* vis-timeline renders an item's content and title as HTML: names from
 * the daemon go in as text, whatever characters they hold. */
function html(text) {
  return String(text).replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`);
}

function when(seconds) {
  return new Date(seconds * 1000).toLocaleString([], {dateStyle: "medium", timeStyle: "short"});
}

function length(seconds) {
  const h = Math.floor(seconds / 3600), m = Math.floor(seconds % 3600 / 60);
  return `${h}:${String(m).padStart(2, "0")}`;
}

/* -- login: plus_web's one-time code, exchanged once for a session token, or
 *    the site's identity provider (authorization code with PKCE, a public
 *    client: its access token is the API's bearer token) ------------------------ */

async function login() {
  const code = new URLSearchParams(location.hash.slice(1)).get("code");
  const returned = new URLSearchParams(location.search);
  if (code) {
    history.replaceState(null, "", location.pathname + location.search);
    const response = await fetch("/web/session", {
      method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({code})});
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new ApiError(response.status, data.error || response.statusText);
    sessionStorage.setItem("plus.token", data.token);
  } else if (returned.has("state")) {
    await providerReturned(returned);
  }
  view.token = sessionStorage.getItem("plus.token");
  if (!view.token) {
    const config = await fetch("/web/config").then(r => r.json()).catch(() => ({}));
    if (config.oidc) offerProviderSignIn(config.oidc);
    throw new ApiError(401, (config.oidc ? "Sign in with your site's account, or open "
                                         : "Open ") + "the link that plus_web prints on the "
                       + "cluster's host: it signs you in for this browser tab."
                       + (config.why ? ` (${config.why})` : ""));
  }
  const me = await api("GET", "/whoami");
  view.user = me.user;
  view.manager = me.manager;
  $("who").textContent = `${me.user}${me.manager ? " (manager)" : ""}`;
}

function base64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function randomText(bytes) {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

function returnAddress() { return location.origin + "/web/"; }

function offerProviderSignIn(oidc) {
  const button = $("provider-sign-in");
  button.hidden = false;
  button.onclick = async () => {
    const verifier = randomText(48), state = randomText(16);
    const challenge = base64url(await crypto.subtle.digest(
      "SHA-256", new TextEncoder().encode(verifier)));
    sessionStorage.setItem("plus.oidc", JSON.stringify({
      verifier, state, token_endpoint: oidc.token_endpoint, client_id: oidc.client_id,
      resource: oidc.resource}));
    const target = new URL(oidc.authorization_endpoint);
    target.search = new URLSearchParams({
      response_type: "code", client_id: oidc.client_id, redirect_uri: returnAddress(),
      scope: oidc.scope, state, resource: oidc.resource, code_challenge: challenge,
      code_challenge_method: "S256"});
    location.assign(target.toString());
  };
}

async function providerReturned(returned) {
  const saved = JSON.parse(sessionStorage.getItem("plus.oidc") || "null");
  sessionStorage.removeItem("plus.oidc");
  history.replaceState(null, "", location.pathname);
  if (returned.has("error")) {
    throw new ApiError(401, "The identity provider did not sign you in: "
                       + (returned.get("error_description") || returned.get("error")));
  }
  if (!saved || saved.state !== returned.get("state") || !returned.get("code")) {
    throw new ApiError(401, "This sign-in was not started from this page: sign in again.");
  }
  const response = await fetch(saved.token_endpoint, {
    method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"},
    body: new URLSearchParams({
      grant_type: "authorization_code", code: returned.get("code"),
      redirect_uri: returnAddress(), client_id: saved.client_id,
      code_verifier: saved.verifier, resource: saved.resource})});
  const data = await response.json().catch(() => ({}));
  if (!response.ok || typeof data.access_token !== "string") {
    throw new ApiError(401, "The identity provider refused the sign-in: "
                       + (data.error_description || data.error || response.statusText));
  }
  sessionStorage.setItem("plus.token", data.access_token);
}

/* -- the calendar's data: ARs and jobs over a window, whole cluster -------------- */

async function load(start, end, force) {
  const since = !force && view.loaded && view.loaded.start === start && view.loaded.end === end
    ? `&since=${view.revision}` : "";
  const ticket = ++view.tickets;
  view.loading += 1;
  let data;
  try {
    data = await api("GET", `/calendar?start=${start}&end=${end}${since}`);
  } finally {
    view.loading -= 1;
  }
  if (ticket !== view.tickets) return;          // a later request's answer is the one to show
  view.jobs = data.jobs;
  if (!data.unchanged) {
    view.ars = data.ars;
    view.revision = data.revision;
    if (data.nodes.join("\n") !== view.nodes.join("\n")) {
      view.nodes = data.nodes;
      chooseNodes();
    }
  }
  view.loaded = {start, end};
  draw();
}

function arNodes(row) { return row[6] ? row[6].split(",") : []; }

function chooseNodes() {
  const filter = $("filter").value.trim().toLowerCase();
  let nodes = view.nodes;
  if (filter) nodes = nodes.filter(n => n.toLowerCase().includes(filter));
  if ($("mine-only").checked) {
    const mine = new Set();
    for (const row of view.ars) if (row[2] === view.user) arNodes(row).forEach(n => mine.add(n));
    nodes = nodes.filter(n => mine.has(n));
  }
  const pages = Math.max(1, Math.ceil(nodes.length / view.pageSize));
  view.page = Math.min(view.page, pages - 1);
  const first = view.page * view.pageSize;
  const shown = nodes.slice(first, first + view.pageSize);
  $("node-page").textContent = nodes.length
    ? `${first + 1}–${first + shown.length} of ${nodes.length}` : "no nodes";
  $("previous-nodes").disabled = view.page === 0;
  $("next-nodes").disabled = view.page >= pages - 1;
  view.groups.clear();
  view.groups.add(shown.map((name, order) => ({id: name, content: html(name), order})));
}

function draw() {
  const rows = new Set(view.groups.getIds());
  const items = [];
  for (const row of view.ars) {
    const [id, name, owner, letter, start, end] = row;
    const mine = owner === view.user;
    const editable = (mine || view.manager) && (letter === "w" || letter === "r" || letter === "W")
      ? {updateTime: true, updateGroup: false, remove: false} : false;
    for (const node of arNodes(row)) {
      if (!rows.has(node)) continue;
      items.push({
        id: `ar${id}@${node}`, group: node, ar: id, start: start * 1000, end: end * 1000,
        content: html(`#${id}${name ? " " + name : ""}`), editable,
        className: `ar state-${STATES[letter] || "waiting"}${mine ? " mine" : ""}`,
        title: html(`AR ${id} of ${owner}: ${STATE_WORDS[letter] || letter}, ${when(start)} to ${when(end)}`),
      });
    }
  }
  for (const [id, owner, kind, start, end, hosts] of view.jobs) {
    for (const host of hosts.split(",")) {
      if (!rows.has(host)) continue;
      items.push({
        id: `job${id}@${host}`, group: host, start: start * 1000, end: end * 1000, content: "",
        className: `job job-${kind}`, selectable: false, editable: false,
        title: html(`job ${id} of ${owner}: ${kind === "running" ? "running" : "reserved (-R y)"}`),
      });
    }
  }
  /* a booking's free span: from its first start to the end of its last */
  view.starts.forEach(([low, high], i) => items.push({
    id: `free${i}`, start: low * 1000, end: (high + view.booking.seconds) * 1000,
    type: "background", className: "free", content: "",
  }));
  /* Only what changed goes to vis-timeline: each item it is handed is laid
   * out again, and a scroll keeps most of them. */
  const held = view.items.get({returnType: "Object"});
  const wanted = new Set(items.map(item => item.id));
  view.items.remove(Object.keys(held).filter(id => !wanted.has(id)));
  view.items.update(items.filter(item => !same(held[item.id], item)));
}

function same(old, item) {
  return old !== undefined && old.start === item.start && old.end === item.end
    && old.className === item.className && old.content === item.content
    && old.title === item.title && JSON.stringify(old.editable) === JSON.stringify(item.editable);
}

function visibleWindow() {
  const range = view.timeline.getWindow();
  return [Math.floor(range.start.valueOf() / 1000), Math.ceil(range.end.valueOf() / 1000)];
}

/* The loaded window: first the visible one with as much again on each
 * side, asked for as soon as the view leaves what is loaded or asked for
 * (on vis-timeline's "rangechange": its "rangechanged" comes 200 ms late);
 * then, once the view has rested a moment, a week more on each side, so
 * that the next scroll of up to a week finds its ARs drawn already. */
function follow() {
  const [start, end] = visibleWindow();
  const span = end - start;
  const covers = window => window && window.start <= start && window.end >= end;
  if (!covers(view.loaded) && !covers(view.asked)) {
    const asked = {start: start - span, end: end + span};
    view.asked = asked;
    load(asked.start, asked.end, true)
      .catch(error => say(error.message))
      .finally(() => { if (view.asked === asked) view.asked = null; });
  }
  clearTimeout(view.widening);
  view.widening = setTimeout(widen, WIDEN_AFTER_MS);
}

function widen() {
  const [start, end] = visibleWindow();
  const low = start - WEEK, high = end + WEEK;
  if (view.loaded && view.loaded.start <= low && view.loaded.end >= high) return;
  load(low, high, true).catch(error => say(error.message));
}

/* -- detail, cancel, modify by dragging ---------------------------------------- */

async function showDetail(arId) {
  const ar = await api("GET", `/reservations/${arId}`);
  $("detail-title").textContent = `AR ${ar.id}${ar.name ? " (" + ar.name + ")" : ""}`;
  const fields = [
    ["owner", ar.owner], ["group", ar.group], ["state", STATE_WORDS[ar.state] || ar.state],
    ["start", when(ar.start)], ["end", when(ar.end)], ["duration", length(ar.duration)],
    ["nodes", ar.allocations.map(a => a.node + (a.queue ? ` (${a.queue}, ${a.slots} slots)`
                                                 : ` (${a.slots} slots)`)).join(", ")],
    ["users", ar.acl.join(", ")], ["submit jobs with", ar.submit_hint],
  ];
  if (ar.message) fields.push(["message", ar.message]);
  if (ar.pending) fields.push(["pending", `${ar.pending.operation}, until ${when(ar.pending.expires)}`]);
  const list = $("detail-fields");
  list.replaceChildren();
  for (const [term, value] of fields) {
    const dt = document.createElement("dt");
    dt.textContent = term;
    const dd = document.createElement("dd");
    dd.textContent = value;
    list.append(dt, dd);
  }
  const ownerActions = (ar.owner === view.user || view.manager) && "wrWE".includes(ar.state);
  $("detail-owner-actions").hidden = !ownerActions;
  $("cancel-ar").dataset.ar = ar.id;
  $("detail").hidden = false;
  $("detail").dataset.ar = ar.id;
}

async function cancelShown() {
  const arId = $("cancel-ar").dataset.ar;
  try {
    await api("POST", `/reservations/${arId}/cancel`);
    say(`AR ${arId} cancelled.`, true);
    $("detail").hidden = true;
    await refresh(true);
  } catch (error) { say(error.message); }
}

/* A dragged end snaps to the minute; the end not dragged keeps its second. */
function dragged(now, before) {
  return now.valueOf() === before ? before / 1000 : Math.round(now.valueOf() / 60000) * 60;
}

async function moved(item, callback) {
  const before = view.items.get(item.id);
  const start = dragged(item.start, before.start), end = dragged(item.end, before.end);
  try {
    await api("PATCH", `/reservations/${item.ar}`, {start, end});
    callback(item);
    if (!$("detail").hidden && $("detail").dataset.ar === String(item.ar)) await showDetail(item.ar);
    say(`AR ${item.ar} now runs from ${when(start)} to ${when(end)}.`, true);
  } catch (error) {
    callback(null);
    say(`AR ${item.ar} was not changed: ${error.message}`);
  }
  await refresh(true);
}

/* -- booking: RESQUERY's ranges shaded, a click books there (SETRES) ------------ */

function bookingShape() {
  const nodes = parseInt($("book-nodes").value, 10);
  const seconds = Math.round(parseFloat($("book-hours").value) * HOUR);
  if (!(nodes >= 1) || !(seconds >= 60)) {
    throw new ApiError(400, "Give a number of nodes (1 or more) and a duration of at least "
                       + "a minute (0.1 hours = 6 minutes).");
  }
  return {nodes, seconds};
}

/* ``refusal``: the SETRES refusal that made the spans stale, said again
 * above the fresh ones. */
async function findFree(refusal) {
  try {
    const shape = bookingShape();
    const [start, end] = visibleWindow();
    const now = Math.ceil(Date.now() / 60000) * 60;
    const answer = await api("POST", "/ggf/resquery", {
      UserID: view.user, TimeNeeded: `${shape.seconds}s`,
      TimeSpec: `${Math.max(start, now)},${Math.max(end, now + 60)}`,
      ResourceList: `nodes=${shape.nodes}`});
    view.booking = shape;
    view.starts = answer.ranges.map(r => [r.STime, r.EndSTime]);
    $("booking-hint").textContent = view.starts.length
      ? `Click in a shaded span to book ${shape.nodes} node(s) for ${length(shape.seconds)} from there.`
      : "No start in this window: scroll on or ask for less.";
    say(refusal || "");
    draw();
  } catch (error) { say(error.message); }
}

/* The start for a click at ``seconds``: there, or the latest start of the
 * range the click falls in when the booking would run past its end. */
function startAt(seconds) {
  for (const [low, high] of view.starts) {
    const start = Math.min(Math.max(low, Math.round(seconds / 60) * 60), high);
    if (seconds >= low && seconds <= high + view.booking.seconds) return start;
  }
  return null;
}

function offerBooking(seconds) {
  const start = startAt(seconds);
  if (start === null || !view.booking) return;
  view.pendingStart = start;
  $("confirm-text").textContent = `Book ${view.booking.nodes} node(s) from ${when(start)} to `
    + `${when(start + view.booking.seconds)}?`;
  $("confirm").hidden = false;
}

async function book() {
  const shape = view.booking, start = view.pendingStart;
  $("confirm").hidden = true;
  try {
    const answer = await api("POST", "/ggf/setres", {
      UserID: view.user, TimeNeeded: `${shape.seconds}s`, StartTime: String(start),
      ResourceList: `nodes=${shape.nodes}`});
    view.starts = [];
    $("booking-hint").textContent = "";
    say(`Booked: AR ${answer.reservation.id} from ${when(start)}. Its ResKey, shown this once: `
        + answer.ResKey, true);
    await refresh(true);
  } catch (error) {
    await findFree(`Not booked: ${error.message}`);
  }
}

/* -- usage: reserved against used node-hours per day ----------------------------- */

function dayKey(date) {
  return `${date.getFullYear()}-${String(date.getMonth() + 1).padStart(2, "0")}-`
    + String(date.getDate()).padStart(2, "0");
}

/* Node-hours of spans [owner, from, to, nodes] per local day, for ``owner``. */
function perDay(spans, owner, first, last) {
  const days = new Map();
  for (const {owner: who, start: from, end: to, nodes} of spans) {
    if (owner && who !== owner) continue;
    let t = Math.max(from, first);
    const stop = Math.min(to, last);
    while (t < stop) {
      const day = new Date(t * 1000);
      const next = new Date(day.getFullYear(), day.getMonth(), day.getDate() + 1).valueOf() / 1000;
      const piece = Math.min(next, stop) - t;
      const key = dayKey(day);
      days.set(key, (days.get(key) || 0) + piece * nodes / HOUR);
      t = Math.min(next, stop);
    }
  }
  return days;
}

async function showUsage() {
  try {
    const first = new Date($("usage-from").value + "T00:00").valueOf() / 1000;
    const last = new Date($("usage-to").value + "T00:00").valueOf() / 1000 + 86400;
    if (!(last > first)) throw new ApiError(400, "Choose a period whose end is on or after its start.");
    const data = await api("GET", `/usage?start=${first}&end=${Math.min(last, Date.now() / 1000 | 0)}`);
    const owners = [...new Set([...data.reserved, ...data.used].map(s => s.owner))].sort();
    const select = $("usage-owner");
    const chosen = select.value || view.user;
    select.replaceChildren(new Option("everyone", ""), ...owners.map(o => new Option(o, o)));
    select.value = owners.includes(chosen) || chosen === "" ? chosen : "";
    const owner = select.value;
    const reserved = perDay(data.reserved, owner, first, last);
    const used = perDay(data.used, owner, first, last);
    const points = [];                     /* each day's bars at its noon, inside the day */
    for (const [key, value] of reserved) points.push({x: `${key}T12:00`, y: +value.toFixed(4), group: "reserved"});
    for (const [key, value] of used) points.push({x: `${key}T12:00`, y: +value.toFixed(4), group: "used"});
    const groups = new vis.DataSet([{id: "reserved", content: "reserved node-hours"},
                                    {id: "used", content: "used node-hours (jobs in ARs)"}]);
    const options = {style: "bar", barChart: {width: 40, align: "center", sideBySide: true},
                     drawPoints: false, legend: true, orientation: "top",
                     start: new Date(first * 1000), end: new Date(last * 1000),
                     dataAxis: {left: {title: {text: "node-hours"}}}};
    if (view.usageChart) view.usageChart.destroy();
    view.usageChart = new vis.Graph2d($("usage-chart"), new vis.DataSet(points), groups, options);
    view.usageChart.dom.root.dataset.points = JSON.stringify(points);
  } catch (error) { say(error.message); }
}

/* -- the page ------------------------------------------------------------------- */

async function refresh(force) {
  const [start, end] = visibleWindow();
  const span = end - start;
  if (force || !view.loaded) await load(start - span, end + span, true);
  else await load(view.loaded.start, view.loaded.end, false);
}

function zoom(seconds) {
  const [start, end] = visibleWindow();
  const middle = (start + end) / 2;
  view.timeline.setWindow((middle - seconds / 2) * 1000, (middle + seconds / 2) * 1000,
                          {animation: false});
}

function wire() {
  document.querySelectorAll("[data-zoom]").forEach(button =>
    button.addEventListener("click", () => zoom(Number(button.dataset.zoom))));
  $("now").addEventListener("click", () => view.timeline.moveTo(new Date(), {animation: false}));
  $("filter").addEventListener("input", () => { view.page = 0; chooseNodes(); draw(); });
  $("mine-only").addEventListener("change", () => { view.page = 0; chooseNodes(); draw(); });
  $("previous-nodes").addEventListener("click", () => { view.page -= 1; chooseNodes(); draw(); });
  $("next-nodes").addEventListener("click", () => { view.page += 1; chooseNodes(); draw(); });
  $("find").addEventListener("click", () => findFree());
  $("book").addEventListener("click", book);
  $("book-cancel").addEventListener("click", () => { $("confirm").hidden = true; });
  $("cancel-ar").addEventListener("click", cancelShown);
  $("detail-close").addEventListener("click", () => { $("detail").hidden = true; });
  $("usage-show").addEventListener("click", showUsage);
  view.timeline.on("rangechange", follow);
  view.timeline.on("click", props => {
    if (props.item && props.item.startsWith("ar")) {
      showDetail(view.items.get(props.item).ar).catch(error => say(error.message));
    } else if (props.time && view.booking) {
      offerBooking(props.time.valueOf() / 1000);
    }
  });
}

async function start() {
  try {
    await login();
  } catch (error) {
    say(error.message);
    return;
  }
  const now = Date.now();
  const rows = Math.max(10, Math.floor((window.innerHeight - 260) / ROW_PX));
  view.pageSize = rows;
  view.items = new vis.DataSet();
  view.groups = new vis.DataSet();
  view.timeline = new vis.Timeline($("timeline"), view.items, view.groups, {
    zoomMin: HOUR * 1000, zoomMax: 62 * 86400 * 1000, stack: false,
    showCurrentTime: true, orientation: "top", groupHeightMode: "fixed",
    editable: {updateTime: true, updateGroup: false, add: false, remove: false},
    onMove: moved, snap: date => new Date(Math.round(date.valueOf() / 60000) * 60000),
    tooltip: {followMouse: true}, margin: {item: {vertical: 4}},
  });
  /* Set after creation: vis-timeline shows itself once a range change is done. */
  view.timeline.setWindow(now - 6 * HOUR * 1000, now + 18 * HOUR * 1000, {animation: false});
  const today = new Date();
  $("usage-to").value = dayKey(today);
  $("usage-from").value = dayKey(new Date(today.valueOf() - 13 * 86400000));
  wire();
  try {
    await refresh(true);
    document.body.dataset.ready = "yes";
    view.widening = setTimeout(widen, WIDEN_AFTER_MS);
  } catch (error) { say(error.message); }
  setInterval(() => refresh(false).catch(error => say(error.message)), POLL_MS);
}

document.addEventListener("DOMContentLoaded", start);
