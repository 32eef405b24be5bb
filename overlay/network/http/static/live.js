/* The calendar's live updates: the API's event stream (GET /v1/events,
 * server-sent events) read with fetch and a stream reader, because an
 * EventSource cannot send the Authorization header the page signs in with.
 * A stream that ends (each lasts a minute or so) is opened again after the
 * server's retry:, one that drops (the daemon restarts, the network goes)
 * after a wait that doubles up to LIVE_MOST_WAIT_MS; each goes on with
 * Last-Event-ID, so no event is lost or told twice. */
"use strict";

const LIVE_FIRST_WAIT_MS = 1000;
const LIVE_MOST_WAIT_MS = 30000;

/* Server-sent events' frames from the text as it comes: each frame's fields
 * (id, event, data, retry), or {comment} for a comment line (a heartbeat). */
class FrameParser {
  constructor() { this.rest = ""; this.fields = {}; }

  *push(text) {
    const lines = (this.rest + text).split("\n");
    this.rest = lines.pop();
    for (const raw of lines) {
      const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
      if (line === "") {
        if (Object.keys(this.fields).length) yield this.fields;
        this.fields = {};
      } else if (line.startsWith(":")) {
        yield {comment: line.slice(1).trim()};
      } else {
        const colon = line.indexOf(":");
        const name = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        this.fields[name] = name === "data" && this.fields.data !== undefined
          ? this.fields.data + "\n" + value : value;
      }
    }
  }
}

function pause(ms) { return new Promise(resolve => setTimeout(resolve, ms)); }

/* Read ``path`` (with ``headers()``) until stop(); ``onEvent(type, data, id)``
 * for each event; ``onState(state, detail)`` as the stream goes "live"
 * (detail: whether it went on from a last id), is "lost" (detail: the
 * seconds until the next try), is "refused" by a daemon without a stream
 * (detail: the status) or finds the user "signed-out". The answer: the
 * stream's state (its last id, heartbeats and tries), and stop(). */
function liveEvents(path, headers, onEvent, onState) {
  const live = {last: null, beats: 0, tries: 0, retry: LIVE_FIRST_WAIT_MS, stopped: false,
                abort: null, stop() { this.stopped = true; if (this.abort) this.abort.abort(); }};

  async function read(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    const parser = new FrameParser();
    for (;;) {
      const {value, done} = await reader.read();
      if (done) return;
      for (const frame of parser.push(value)) {
        if (frame.comment !== undefined) { live.beats += 1; continue; }
        if (/^\d+$/.test(frame.retry || "")) live.retry = Math.min(Number(frame.retry), LIVE_MOST_WAIT_MS);
        if (frame.id !== undefined && /^\d+$/.test(frame.id)) live.last = frame.id;
        if (frame.data === undefined) continue;
        let data = null;
        try { data = JSON.parse(frame.data); } catch (error) { continue; }
        onEvent(frame.event || "message", data, frame.id);
      }
    }
  }

  async function run() {
    let wait = LIVE_FIRST_WAIT_MS;
    while (!live.stopped) {
      let next = wait, lost = true;
      try {
        const sent = headers();
        if (live.last !== null) sent["Last-Event-ID"] = live.last;
        live.abort = new AbortController();
        live.tries += 1;
        const response = await fetch(path, {headers: sent, cache: "no-store", signal: live.abort.signal});
        if (response.status === 404 || response.status === 501) {
          onState("refused", response.status);
          return;
        }
        if (response.status === 401) {
          onState("signed-out", response.status);
          return;
        }
        if (response.ok) {
          onState("live", live.last !== null);
          wait = LIVE_FIRST_WAIT_MS;
          await read(response.body);
          next = live.retry;                /* the stream's time was up: back at once */
          lost = false;
        } else {
          const after = Number(response.headers.get("Retry-After"));
          next = Math.max(wait, after > 0 ? Math.min(after * 1000, LIVE_MOST_WAIT_MS) : 0);
        }
      } catch (error) {                     /* dropped: the daemon went, the network */
        if (live.stopped) return;
        next = wait;
      }
      if (lost) {
        onState("lost", Math.round(next / 1000));
        wait = Math.min(wait * 2, LIVE_MOST_WAIT_MS);
      }
      await pause(next * (1 + Math.random() / 10));
    }
  }

  run();
  return live;
}
