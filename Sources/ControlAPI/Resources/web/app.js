// Chorus web client: join a room with camera and microphone over one WebRTC connection, see the
// others in the server's video slots, hear the room's mix. Plain JavaScript, no build step.
//
// The flow mirrors what an SDK does against the REST API:
//   token   POST /demo/token (only on a `chorus serve --demo` server; stands in for the app backend)
//   join    POST /v1/rooms/{roomId}/participants {"sdp": offer} -> answer (non-trickle ICE)
//   events  GET  /v1/rooms/{roomId}/events (SSE read with fetch: EventSource cannot send a token)
//   control PATCH / DELETE /v1/rooms/{roomId}/participants/{callId}
//   end     POST /v1/calls/{callId}/statistics with pc.getStats()
//
// In a cluster the page's own server may not run the room: it answers 307 to the node that
// does, the browser follows (another origin, so without the Authorization header), and the page
// repeats the request there with its token and talks to that node for the rest of the call. When
// that node goes away (killed, drained), the page rejoins the room by itself with backoff, and
// lands wherever the cluster places the room now.
//
// `window.chorus` exposes the state for people debugging and for the browser test.
'use strict';

/** Receive-only video m-lines offered: the server fills them with other participants' cameras. */
const SLOT_COUNT = 4;
/** The server accepts statistics bodies up to 256 KiB; stay under with room for the envelope. */
const MAX_STATISTICS_BYTES = 250 * 1024;
/** Bound on waiting for ICE gathering: host candidates only, so it normally takes milliseconds. */
const GATHERING_TIMEOUT_MS = 3000;

const chorus = (window.chorus = {
  state: 'idle', // idle | joining | connecting | established | leaving | ended | failed | rejoining
  roomId: null,
  userId: null,
  callId: null,
  audioMuted: false,
  videoPaused: false,
  slots: [], // [{mid, publisherCallId, publisherUserId, playing, videoWidth}]
  talking: [], // callIds currently talking
  uploaded: false,
  statisticsId: null,
  endCause: null,
  error: null,
  iceRestarts: 0, // ICE restarts this call asked for (network changes, outages)
  connectionStates: [], // [ms since join, RTCPeerConnection.connectionState], for diagnostics
  transportStates: [], // [ms since join, RTCDtlsTransport.state], for diagnostics
  endedBy: null, // what told the page that the call ended: 'event' | 'transport' | 'leave' | 'ice'
  node: '', // origin of the node that runs the room ('' = this page's server)
  rejoins: 0, // calls this page started by itself after losing the previous one's node
  rejoinAttempt: 0, // failed attempts in the current series of rejoins
});

/** End causes after which the room goes on elsewhere: the page rejoins it by itself. */
const REJOIN_CAUSES = new Set(['serverShutdown', 'nodeLost']);
/** Waits before each rejoin attempt (the last repeats), and how many attempts in a row. */
const REJOIN_DELAYS_MS = [1000, 2000, 4000, 8000];
const REJOIN_ATTEMPTS = 12;

/** How long the connection may stay `disconnected` before the client restarts ICE. */
const DISCONNECTED_RESTART_MS = 2000;

/** Everything that lives only for one call. */
let call = null;

const $ = (id) => document.getElementById(id);

// -- REST ---------------------------------------------------------------------------------------

/** A JSON request; resolves to the parsed body (or null), throws with the server's error message.
 *  `base` is the origin to ask: by default the node that runs the room (see `followRedirect`). */
async function api(path, { method = 'GET', body, token, headers = {}, keepalive = false, base = chorus.node } = {}) {
  const init = { method, headers: { ...headers }, keepalive };
  if (token) init.headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
  }
  const response = await followRedirect(await fetch(base + path, init), init);
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : null;
  if (!response.ok) {
    const error = new Error(parsed?.error?.message || `${method} ${path}: HTTP ${response.status}`);
    error.status = response.status;
    error.code = parsed?.error?.code;
    throw error;
  }
  return parsed;
}

/** A 307 to another node arrives as that node's 401 (the browser dropped the token on the way to
 *  another origin): the request is repeated there with it, and that node is asked from now on. */
async function followRedirect(response, init) {
  if (response.status !== 401 || !response.redirected || !init.headers.Authorization) return response;
  chorus.node = new URL(response.url).origin;
  return fetch(response.url, init);
}

/** An access token for `userId` from the demo endpoint; explains what to do when it is absent. */
async function fetchToken(userId) {
  try {
    return (await api('/demo/token', { method: 'POST', body: { userId } })).accessToken;
  } catch (error) {
    if (error.status === 404) {
      throw new Error('this server does not hand out demo tokens: start it with `chorus serve --demo`');
    }
    throw error;
  }
}

// -- joining ------------------------------------------------------------------------------------

/** Joins `roomId` as `userId`: token, camera and microphone, offer, answer, events. A `rejoin`
 *  that fails tries again later instead of giving up. */
async function join(roomId, userId, { rejoin = false } = {}) {
  if (call) throw new Error('already in a call');
  clearTimeout(chorus.rejoinTimer);
  if (!rejoin) chorus.rejoinAttempt = 0;
  call = { token: null, pc: null, stream: null, events: null, slotTiles: new Map(), roster: new Map(),
           startedAt: performance.now() };
  Object.assign(chorus, { roomId, userId, callId: null, slots: [], talking: [], uploaded: false,
                          statisticsId: null, endCause: null, error: null, audioMuted: false, videoPaused: false,
                          connectionStates: [], transportStates: [], endedBy: null, iceRestarts: 0, node: '' });
  setState('joining', `${rejoin ? 'Rejoining' : 'Joining'} ${roomId} as ${userId}…`);
  try {
    call.token = await fetchToken(userId);
    call.rejoin = rejoin;
    call.stream = await openCamera();
    call.pc = makePeerConnection(call.stream);
    const offer = await localOffer(call.pc);
    const answer = await api(`/v1/rooms/${encodeURIComponent(roomId)}/participants`,
                             { method: 'POST', body: { sdp: offer }, token: call.token });
    chorus.callId = answer.callId;
    await call.pc.setRemoteDescription({ type: 'answer', sdp: answer.sdp });
    watchTransport(call.pc);
    setState('connecting', 'Connecting media…');
    showCall(true);
    followEvents();
  } catch (error) {
    await fail(error, rejoin ? { roomId, userId } : null);
  }
}

/** Joins the room again after a wait that doubles with each failed attempt (1, 2, 4, 8 s). */
function scheduleRejoin(roomId, userId) {
  if (chorus.rejoinAttempt >= REJOIN_ATTEMPTS) {
    setState('failed', 'The connection was lost and the room could not be rejoined.', true);
    return;
  }
  const delay = REJOIN_DELAYS_MS[Math.min(chorus.rejoinAttempt, REJOIN_DELAYS_MS.length - 1)];
  chorus.rejoinAttempt += 1;
  setState('rejoining', `Connection lost; rejoining in ${delay / 1000} s…`);
  chorus.rejoinTimer = setTimeout(() => { if (!call) join(roomId, userId, { rejoin: true }); }, delay);
}

/** Camera and microphone; the page needs a secure context (https, or http on localhost). */
async function openCamera() {
  if (!navigator.mediaDevices?.getUserMedia) {
    throw new Error('camera access needs https or http://localhost');
  }
  const stream = await navigator.mediaDevices.getUserMedia({
    audio: { echoCancellation: true, noiseSuppression: true },
    video: { width: { ideal: 640 }, height: { ideal: 360 }, frameRate: { ideal: 24 } },
  });
  $('preview').srcObject = stream;
  return stream;
}

/** The camera's simulcast encodings, lowest first (the server orders layers by keyframe height,
 *  not by this order): 640×360 in quarter, half and full size. */
const SIMULCAST = [
  { rid: 'q', scaleResolutionDownBy: 4, maxBitrate: 100_000 },
  { rid: 'h', scaleResolutionDownBy: 2, maxBitrate: 300_000 },
  { rid: 'f', maxBitrate: 900_000 },
];

/** The heights a tile's cap is rounded up to, so that resizing a window sends a few PATCHes, not
 *  one per pixel. */
const TILE_HEIGHTS = [90, 180, 270, 360, 540, 720, 1080, 1440, 2160, 4320];

/** One connection: audio both ways, the camera up, SLOT_COUNT video slots down. */
function makePeerConnection(stream) {
  // No ICE servers: Chorus is ICE-lite with a public address, so host candidates are enough.
  const pc = new RTCPeerConnection({ bundlePolicy: 'max-bundle', rtcpMuxPolicy: 'require' });
  const [audio] = stream.getAudioTracks();
  const [video] = stream.getVideoTracks();
  pc.addTransceiver(audio, { direction: 'sendrecv', streams: [stream] });
  // Simulcast (RFC 8853): three encodings of the camera, so that the server can send each
  // viewer the one its link and its tile fit, without lowering the picture for the others.
  pc.addTransceiver(video, { direction: 'sendonly', streams: [stream], sendEncodings: SIMULCAST });
  for (let i = 0; i < SLOT_COUNT; i++) pc.addTransceiver('video', { direction: 'recvonly' });
  pc.ontrack = (event) => attachTrack(event);
  pc.onconnectionstatechange = () => onConnectionState(pc.connectionState);
  return pc;
}

/** The complete offer (every candidate in it): Chorus takes no trickled candidates. */
async function localOffer(pc) {
  await pc.setLocalDescription(await pc.createOffer());
  buildSlotTiles(pc);
  await gatheringComplete(pc);
  return pc.localDescription.sdp;
}

/** Resolves when ICE gathering completes, or after GATHERING_TIMEOUT_MS with what there is. */
function gatheringComplete(pc) {
  if (pc.iceGatheringState === 'complete') return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      if (pc.iceGatheringState !== 'complete') return;
      pc.removeEventListener('icegatheringstatechange', done);
      resolve();
    };
    pc.addEventListener('icegatheringstatechange', done);
    setTimeout(resolve, GATHERING_TIMEOUT_MS);
  });
}

function onConnectionState(state) {
  if (!call) return;
  chorus.connectionStates.push([Math.round(performance.now() - call.startedAt), state]);
  clearTimeout(call.disconnectTimer);
  if (state === 'connected' && chorus.state === 'connecting') established();
  // A network change or outage: ask for a new ICE generation if the path does not come back by
  // itself within 2 s, or at once when ICE failed. The call, its DTLS and SRTP stay.
  if (state === 'disconnected') call.disconnectTimer = setTimeout(restartIce, DISCONNECTED_RESTART_MS);
  if (state === 'failed') restartIce();
}

/** Follows the DTLS transport that every stream shares (max-bundle), once the answer made it. */
function watchTransport(pc) {
  const transport = pc.getSenders()[0]?.transport;
  if (!transport) return;
  const ownCall = call;
  transport.addEventListener('statechange', () => {
    if (call !== ownCall) return; // a call that already ended (its pc closed by finish)
    chorus.transportStates.push([Math.round(performance.now() - call.startedAt), transport.state]);
    // `closed`: the server's close_notify, sent whenever it ends a call (kick, room close,
    // shutdown, the user's DELETE from elsewhere); `failed`: DTLS broke. Either way no ICE
    // restart brings the call back, and the connection itself may still say `connected` (Chromium
    // and Firefox leave it so), so the page ends the call now rather than when ICE times out ~30 s
    // later. The room's event stream usually told first, with the cause.
    if (transport.state === 'closed' || transport.state === 'failed') endCall(null, 'transport');
  });
}

/** ICE restart (RFC 8445 §9): a re-offer with new credentials by PATCH, the answer applied.
 *  A call the server no longer has ends here. */
async function restartIce() {
  if (!call || call.ending || call.restarting) return;
  const pc = call.pc;
  if (!pc || pc.connectionState === 'connected' || pc.connectionState === 'closed') return;
  call.restarting = true;
  chorus.iceRestarts += 1;
  try {
    pc.restartIce();
    await pc.setLocalDescription(await pc.createOffer());
    await gatheringComplete(pc);
    const updated = await api(participantPath(), { method: 'PATCH', body: { sdp: pc.localDescription.sdp }, token: call.token });
    await pc.setRemoteDescription({ type: 'answer', sdp: updated.sdp });
  } catch (error) {
    if (error.status === 404 && call) endCall('failed', 'ice');
    // The node that ran the room does not answer at all (or fails): the room goes on elsewhere.
    else if ((!error.status || error.status >= 500) && call) endCall('nodeLost', 'ice');
  } finally {
    if (call) call.restarting = false;
  }
}

// -- video slots --------------------------------------------------------------------------------

/** One tile per receive-only transceiver, keyed by its mid (what `video.slots` names). */
function buildSlotTiles(pc) {
  const template = $('slot-template');
  for (const transceiver of pc.getTransceivers()) {
    if (transceiver.direction !== 'recvonly' || transceiver.receiver.track.kind !== 'video') continue;
    const tile = template.content.firstElementChild.cloneNode(true);
    tile.dataset.mid = transceiver.mid;
    tile.querySelector('video').srcObject = new MediaStream([transceiver.receiver.track]);
    $('tiles').appendChild(tile);
    call.slotTiles.set(transceiver.mid, tile);
    chorus.slots.push({ mid: transceiver.mid, publisherCallId: null, publisherUserId: null,
                        playing: false, videoWidth: 0, videoHeight: 0, maxHeight: null });
  }
  call.slotTimer = setInterval(refreshSlotState, 500);
}

/** Remote tracks: the mix goes to the audio element; slot tracks are already on their tiles. */
function attachTrack(event) {
  if (event.track.kind !== 'audio') return;
  $('mix').srcObject = new MediaStream([event.track]);
  $('mix').play().catch(() => {}); // the Join click allows it; a refused autoplay is not fatal
}

/** Applies a `video.slots` event for this participant: who is in which tile. */
function applySlots(slots) {
  for (const entry of slots) {
    const slot = chorus.slots.find((s) => s.mid === entry.mid);
    const tile = call.slotTiles.get(entry.mid);
    if (!slot || !tile) continue;
    slot.publisherCallId = entry.publisherCallId;
    slot.publisherUserId = entry.publisherUserId ?? null;
    tile.dataset.callId = entry.publisherCallId ?? '';
    tile.classList.toggle('empty', !entry.publisherCallId);
    tile.querySelector('.name').textContent = entry.publisherCallId ? (slot.publisherUserId ?? '…') : 'empty';
  }
  refreshTalking();
}

/** Samples each slot's video element: is a picture being shown, and how wide. */
function refreshSlotState() {
  if (!call) return;
  for (const slot of chorus.slots) {
    const video = call.slotTiles.get(slot.mid)?.querySelector('video');
    if (!video) continue;
    slot.videoWidth = video.videoWidth;
    slot.videoHeight = video.videoHeight;
    slot.playing = Boolean(slot.publisherCallId) && !video.paused && video.readyState >= 2 && video.videoWidth > 0;
  }
  capSlotsToTiles();
}

/** Tells the server how tall each tile is on screen (device pixels, rounded up to a step), so
 *  that a small tile is not sent a 720p layer it would scale down: `PATCH {slots: [...]}` with
 *  the tiles whose step changed. */
function capSlotsToTiles() {
  if (!call?.token || !chorus.callId || call.capping) return;
  const changed = [];
  for (const slot of chorus.slots) {
    const video = call.slotTiles.get(slot.mid)?.querySelector('video');
    if (!video || video.clientHeight === 0) continue;
    const pixels = Math.ceil(video.clientHeight * (window.devicePixelRatio || 1));
    const step = TILE_HEIGHTS.find((height) => height >= pixels) ?? TILE_HEIGHTS[TILE_HEIGHTS.length - 1];
    if (step !== slot.maxHeight) changed.push({ mid: slot.mid, maxHeight: step });
  }
  if (changed.length === 0) return;
  call.capping = true;
  const current = call;
  api(participantPath(), { method: 'PATCH', body: { slots: changed }, token: current.token })
    .then(() => {
      for (const entry of changed) {
        const slot = chorus.slots.find((s) => s.mid === entry.mid);
        if (slot) slot.maxHeight = entry.maxHeight;
      }
    })
    .catch(() => {}) // the next sample tries again; a call that ended has no slots to cap
    .finally(() => { current.capping = false; });
}

// -- events -------------------------------------------------------------------------------------

/** Reads the room's Server-Sent Events with fetch (to send the token), resuming after a drop. */
async function followEvents() {
  const controller = new AbortController();
  call.events = controller;
  let lastId = null;
  while (call && call.events === controller && !controller.signal.aborted) {
    try {
      const headers = { Authorization: `Bearer ${call.token}` };
      if (lastId !== null) headers['Last-Event-ID'] = lastId;
      const init = { headers, signal: controller.signal };
      const response = await followRedirect(
        await fetch(`${chorus.node}/v1/rooms/${encodeURIComponent(chorus.roomId)}/events`, init), init);
      if (!response.ok) throw new Error(`events: HTTP ${response.status}`);
      for await (const event of sseEvents(response.body)) {
        if (event.id) lastId = event.id;
        handleEvent(JSON.parse(event.data));
      }
      return; // the server ended the stream: the room closed
    } catch (error) {
      if (controller.signal.aborted) return;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

/** Parses an SSE byte stream into {id, event, data} frames (comments and retry: ignored). */
async function* sseEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n?/g, '\n');
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const frame = parseFrame(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (frame.data !== undefined) yield frame;
    }
  }
}

function parseFrame(text) {
  const frame = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    frame[name] = name === 'data' && frame.data !== undefined ? `${frame.data}\n${value}` : value;
  }
  return frame;
}

/** One room event: roster, slots, talking, and the end of our own call. */
function handleEvent(event) {
  if (!call) return; // a frame that was already buffered when the call ended
  const own = event.callId && event.callId === chorus.callId;
  switch (event.type) {
    case 'participant.joined':
      call.roster.set(event.callId, { userId: event.userId, muted: false, paused: false });
      break;
    case 'participant.established':
      if (own && chorus.state === 'connecting') established();
      break;
    case 'participant.ended':
      call.roster.delete(event.callId);
      setTalking(event.callId, false);
      if (own) endCall(event.endCause, 'event');
      break;
    case 'audio.muted': case 'audio.unmuted':
      updateRoster(event.callId, { muted: event.type === 'audio.muted' });
      break;
    case 'video.paused': case 'video.resumed':
      updateRoster(event.callId, { paused: event.type === 'video.paused' });
      break;
    case 'video.slots':
      if (own) applySlots(event.slots);
      break;
    case 'talking.started': case 'talking.stopped':
      setTalking(event.callId, event.type === 'talking.started');
      break;
    case 'room.closed':
      endCall('roomClosed', 'event');
      break;
  }
  renderRoster();
}

function updateRoster(callId, changes) {
  const person = call?.roster.get(callId);
  if (person) Object.assign(person, changes);
}

function setTalking(callId, talking) {
  chorus.talking = chorus.talking.filter((id) => id !== callId);
  if (talking) chorus.talking.push(callId);
  refreshTalking();
}

/** Marks the tiles (own preview included) of whoever is talking. */
function refreshTalking() {
  if (!call) return;
  $('self-tile').classList.toggle('talking', chorus.talking.includes(chorus.callId));
  for (const tile of call.slotTiles.values()) {
    tile.classList.toggle('talking', Boolean(tile.dataset.callId) && chorus.talking.includes(tile.dataset.callId));
  }
}

function renderRoster() {
  if (!call) return;
  const items = [...call.roster].map(([callId, person]) => {
    const li = document.createElement('li');
    li.textContent = person.userId + (callId === chorus.callId ? ' (you)' : '');
    li.classList.toggle('talking', chorus.talking.includes(callId));
    const flags = [person.muted && 'muted', person.paused && 'video paused'].filter(Boolean).join(', ');
    if (flags) li.insertAdjacentHTML('beforeend', '<span class="flags"></span>');
    if (flags) li.lastChild.textContent = `(${flags})`;
    return li;
  });
  $('roster').replaceChildren(...items);
}

// -- controls -----------------------------------------------------------------------------------

/** PATCHes this participant; the server's answer is the truth for the buttons it changed. Only
 *  the fields this PATCH set are taken from the answer: two clicks in a row send two PATCHes
 *  whose answers may arrive in either order, and the older answer must not undo the newer. */
async function patchSelf(changes) {
  const updated = await api(participantPath(), { method: 'PATCH', body: changes, token: call.token });
  for (const key of Object.keys(changes)) chorus[key] = updated[key];
  // Stop sending locally too: the server drops it anyway, and the camera light should tell.
  call.stream.getAudioTracks().forEach((t) => { t.enabled = !chorus.audioMuted; });
  call.stream.getVideoTracks().forEach((t) => { t.enabled = !chorus.videoPaused; });
  renderControls();
}

function participantPath() {
  return `/v1/rooms/${encodeURIComponent(chorus.roomId)}/participants/${chorus.callId}`;
}

function renderControls() {
  $('mute').textContent = chorus.audioMuted ? 'Unmute' : 'Mute';
  $('mute').setAttribute('aria-pressed', String(chorus.audioMuted));
  $('pause').textContent = chorus.videoPaused ? 'Resume video' : 'Pause video';
  $('pause').setAttribute('aria-pressed', String(chorus.videoPaused));
  $('self-tile').classList.toggle('paused', chorus.videoPaused);
}

/** Hangs up: the server ends the call (hungUp), then the statistics are uploaded. */
async function leave() {
  if (!call || call.ending) return;
  call.ending = true; // our own participant.ended event must not end the call a second time
  setState('leaving', 'Leaving…');
  const stats = await collectStatistics();
  try {
    await api(participantPath(), { method: 'DELETE', token: call.token });
  } catch (error) {
    if (error.status !== 404) console.warn('leave', error); // 404: the call had already ended
  }
  await finish('hungUp', stats, 'leave');
}

// -- call end -----------------------------------------------------------------------------------

/** The call ended on the server's side (kicked, room closed, failed): clean up and upload. A null
 *  `cause` (the DTLS transport closed before the event stream said why) is asked of the server. */
async function endCall(cause, endedBy) {
  if (!call || call.ending) return;
  call.ending = true;
  await finish(cause, await collectStatistics(), endedBy);
}

/** Why the server ended the call, from its call record (open to the call's own user); it may take
 *  a moment to be written, so a few tries within ~1.5 s, then null. */
async function serverEndCause(callId, token) {
  for (let attempt = 0; attempt < 6; attempt++) {
    try {
      const record = await api(`/v1/calls/${callId}`, { token, base: '' });
      if (record?.state === 'ended') return record.endCause;
    } catch (error) {
      if (error.status && error.status < 500 && error.status !== 429) return null;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return null;
}

/** Everything `pc.getStats()` reports, by id, trimmed to what the server accepts. */
async function collectStatistics() {
  if (!call?.pc) return {};
  const report = {};
  (await call.pc.getStats()).forEach((entry) => { report[entry.id] = entry; });
  // Least useful first: certificates (long base64) and codec lists go before media counters.
  for (const type of ['certificate', 'codec', 'local-candidate', 'remote-candidate', 'media-source']) {
    if (JSON.stringify(report).length <= MAX_STATISTICS_BYTES) break;
    for (const [id, entry] of Object.entries(report)) if (entry.type === type) delete report[id];
  }
  return report;
}

/** Uploads the statistics as the SDK does at call end; an Idempotency-Key makes a retry safe.
 *  Resolves to the server's receipt, or null. */
async function uploadStatistics({ token, callId, roomId, userId }, cause, stats) {
  const body = {
    client: 'chorus-web', userAgent: navigator.userAgent, callId, roomId, userId,
    endCause: cause, endedAt: new Date().toISOString(), rtcStats: stats,
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      // Any node stores it: the page's own server, which outlives a lost room node.
      return await api(`/v1/calls/${callId}/statistics`, {
        method: 'POST', body, token, headers: { 'Idempotency-Key': `end-${callId}` }, base: '',
      });
    } catch (error) {
      if (error.status && error.status < 500 && error.status !== 429) {
        console.warn('statistics', error);
        return null;
      }
      await new Promise((resolve) => setTimeout(resolve, 500 * (attempt + 1)));
    }
  }
  return null;
}

/** Closes the connection and puts the page back to the join form at once; then learns the cause
 *  if it is not known yet, and uploads the statistics. */
async function finish(cause, stats, endedBy) {
  const ended = call;
  ended.ending = true;
  ended.events?.abort();
  clearInterval(ended.slotTimer);
  ended.pc?.close();
  ended.stream?.getTracks().forEach((t) => t.stop());
  for (const tile of ended.slotTiles.values()) tile.remove();
  call = null;
  chorus.talking = [];
  chorus.endedBy = endedBy;
  chorus.endCause = cause;
  showCall(false);
  const said = () => `Call ended${chorus.endCause ? ` (${chorus.endCause})` : ''}.`;
  setState('ended', said());
  const { callId, roomId, userId } = chorus;
  if (!callId) return;
  const still = () => !call && chorus.callId === callId && chorus.state !== 'rejoining'; // nothing new since
  if (!cause) {
    cause = (await serverEndCause(callId, ended.token)) ?? 'failed';
    if (still()) {
      chorus.endCause = cause;
      setState('ended', said());
    }
  }
  if (REJOIN_CAUSES.has(cause) && endedBy !== 'leave' && still()) scheduleRejoin(roomId, userId);
  const receipt = await uploadStatistics({ token: ended.token, callId, roomId, userId }, cause, stats);
  if (!still() || !receipt) return;
  Object.assign(chorus, { statisticsId: receipt.statisticsId, uploaded: true });
  setState('ended', `${said()} Statistics uploaded.`);
}

/** The call reached `established`: a series of rejoins is over. */
function established() {
  if (call?.rejoin) chorus.rejoins += 1;
  if (call) call.rejoin = false;
  chorus.rejoinAttempt = 0;
  setState('established', 'In the call.');
}

/** A join that did not get through: report it and release the camera; a rejoin (`again` names
 *  its room and user) tries again later. */
async function fail(error, again = null) {
  console.error(error);
  chorus.error = error.message;
  const failed = call;
  if (failed) {
    failed.pc?.close();
    failed.stream?.getTracks().forEach((t) => t.stop());
    clearInterval(failed.slotTimer);
    for (const tile of failed.slotTiles.values()) tile.remove();
  }
  call = null;
  showCall(false);
  if (again) scheduleRejoin(again.roomId, again.userId);
  else setState('failed', `Could not join: ${error.message}`, true);
}

// -- page ---------------------------------------------------------------------------------------

function setState(state, message, isError = false) {
  chorus.state = state;
  $('status').textContent = message;
  $('status').classList.toggle('error', isError);
  const busy = ['joining', 'connecting', 'established', 'leaving', 'rejoining'].includes(state);
  for (const id of ['join', 'room', 'user']) $(id).disabled = busy;
}

function showCall(visible) {
  $('call').hidden = !visible;
  $('self-name').textContent = `${chorus.userId} (you)`;
  renderControls();
  if (!visible) $('roster').replaceChildren();
}

/** Prefills the form from `?room=&user=`, or a random user name so two tabs differ. */
function prefill() {
  const query = new URLSearchParams(location.search);
  $('room').value = query.get('room') || $('room').value;
  $('user').value = query.get('user') || `user-${Math.random().toString(36).slice(2, 8)}`;
}

function wireControls() {
  $('join-form').addEventListener('submit', (event) => {
    event.preventDefault();
    join($('room').value.trim(), $('user').value.trim());
  });
  const report = (error) => { chorus.error = error.message; $('status').textContent = error.message; };
  $('mute').addEventListener('click', () => patchSelf({ audioMuted: !chorus.audioMuted }).catch(report));
  $('pause').addEventListener('click', () => patchSelf({ videoPaused: !chorus.videoPaused }).catch(report));
  $('leave').addEventListener('click', () => leave());
  // Closing the tab hangs up at once (keepalive outlives the page) instead of a 30 s timeout.
  window.addEventListener('pagehide', () => {
    if (call && chorus.callId) api(participantPath(), { method: 'DELETE', token: call.token, keepalive: true })
      .catch(() => {});
  });
}

Object.assign(chorus, { join, leave });
prefill();
wireControls();
