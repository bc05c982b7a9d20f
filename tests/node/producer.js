#!/usr/bin/env node
// A Node.js upload service's side of LongParser Worker, written from docs/producers.md alone:
// submit one document with celery-node, hear that it is done from the completion event stream
// (a consumer group: XREADGROUP, then XACK), read its stored record.
//
//   node producer.js DOCUMENT.json [--timeout SECONDS] [--group NAME]
//
// DOCUMENT.json is a ChunkRequest (docs/inputs.md). Settings come from the same LONGPARSER_*
// variables the Python client reads (defaults as there). Prints one JSON object on stdout:
// {document_id, task_id, queue_list, job, event, pending_after_ack, record}; exit status 0 when
// the event and the record of this task were both read, 1 otherwise (the object says what is
// missing), 2 for a request refused before it was sent.
"use strict";

const crypto = require("crypto");
const fs = require("fs");
const zlib = require("zlib");
const celery = require("celery-node");
const Redis = require("ioredis");

const TASK_NAME = "longparser.chunk_document";
const DOCUMENT_ID = /^[A-Za-z0-9_][A-Za-z0-9._:@-]{0,199}$/; // schemas/requests.py DOCUMENT_ID_PATTERN

function setting(name, fallback) {
  const value = process.env[`LONGPARSER_${name}`];
  return value === undefined || value === "" ? fallback : value;
}

const brokerUrl = setting("BROKER_URL", "redis://127.0.0.1:6379/0");
const resultUrl = setting("RESULT_URL", brokerUrl);
const keyPrefix = setting("KEY_PREFIX", "longparser");
const celeryKeyPrefix = setting("CELERY_KEY_PREFIX", "");
const structuralQueue = setting("STRUCTURAL_QUEUE", "chunking");
const semanticQueue = setting("SEMANTIC_QUEUE", "semantic");
const resultTtl = Number(setting("RESULT_TTL", "86400"));
const maxPayloadBytes = Number(setting("MAX_PAYLOAD_BYTES", String(16 * 1024 * 1024)));

const resultKey = (id) => `${keyPrefix}:result:${id}`;
const jobKey = (id) => `${keyPrefix}:job:${id}`;
const eventsKey = `${keyPrefix}:events`;

function parseArgs(argv) {
  const args = { file: null, timeout: 60, group: "node-producer" };
  for (let i = 0; i < argv.length; i += 1) {
    if (argv[i] === "--timeout") args.timeout = Number(argv[(i += 1)]);
    else if (argv[i] === "--group") args.group = argv[(i += 1)];
    else args.file = argv[i];
  }
  if (!args.file || !(args.timeout > 0)) {
    throw new Error("usage: node producer.js DOCUMENT.json [--timeout SECONDS] [--group NAME]");
  }
  return args;
}

// A stream entry's fields arrive as a flat [name, value, name, value, ...] array.
function fields(flat) {
  const out = {};
  for (let i = 0; i < flat.length; i += 2) out[flat[i]] = flat[i + 1];
  return out;
}

// The chunks of a stored record; a large result is stored zlib-compressed and base64-encoded.
function recordResult(record) {
  if (record.result === null || record.encoding === undefined) return record.result;
  if (record.encoding !== "zlib+base64") throw new Error(`unknown record encoding ${record.encoding}`);
  return JSON.parse(zlib.inflateSync(Buffer.from(record.result, "base64")).toString("utf8"));
}

// Publish one task message with celery-node's protocol-2 message and its Redis broker, awaited:
// client.sendTask() publishes in the background and drops a failed LPUSH, so the job would be
// recorded for a message that never left.
async function publish(client, taskId, request) {
  const message = client.createTaskMessage(taskId, TASK_NAME, [request], {});
  await client.isReady();
  await client.broker.publish(message.body, "", client.conf.CELERY_QUEUE, message.headers, message.properties);
}

// Block on the consumer group until this task's completion event arrives; every entry read is
// acknowledged once looked at (an upload service would act on each before its XACK).
async function awaitEvent(store, group, consumer, taskId, deadline) {
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) return null;
    const reply = await store.xreadgroup("GROUP", group, consumer, "COUNT", 100, "BLOCK", left,
      "STREAMS", eventsKey, ">");
    if (!reply) continue;
    let found = null;
    for (const [, entries] of reply) {
      for (const [id, flat] of entries) {
        const event = fields(flat);
        await store.xack(eventsKey, group, id);
        if (event.task_id === taskId) found = { id, ...event };
      }
    }
    if (found) return found;
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const request = JSON.parse(fs.readFileSync(args.file, "utf8"));
  const documentId = request.document_id;
  if (typeof documentId !== "string" || !DOCUMENT_ID.test(documentId)) {
    console.error(`producer.js: document_id ${JSON.stringify(documentId)} does not match ${DOCUMENT_ID}`);
    return 2;
  }
  const size = Buffer.byteLength(JSON.stringify(request), "utf8");
  if (size > maxPayloadBytes) {
    console.error(`producer.js: request is ${size} bytes of JSON, over LONGPARSER_MAX_PAYLOAD_BYTES (${maxPayloadBytes})`);
    return 2;
  }
  // semantic boundaries and embed need a worker holding an encoder: the semantic queue
  const config = request.config || {};
  const semantic = config.use_semantic_chunking === true || (config.embed !== undefined && config.embed !== false);
  const queue = semantic ? semanticQueue : structuralQueue;

  const store = new Redis(resultUrl, { maxRetriesPerRequest: 3 });
  // ioredis' keyPrefix is kombu's global_keyprefix: the LPUSH goes to `<prefix><queue>` while the
  // message's routing key stays the bare queue name, as a Python producer's does.
  const client = celery.createClient(brokerUrl, brokerUrl, queue);
  client.conf.CELERY_BROKER_OPTIONS = { keyPrefix: celeryKeyPrefix, maxRetriesPerRequest: 3 };
  client.conf.CELERY_BACKEND_OPTIONS = { maxRetriesPerRequest: 3 };
  try {
    // The group exists before the task is sent, so its event cannot slip past it ("$": only
    // entries added from now on; MKSTREAM: the stream may not exist yet).
    try {
      await store.xgroup("CREATE", eventsKey, args.group, "$", "MKSTREAM");
    } catch (err) {
      if (!String(err.message).startsWith("BUSYGROUP")) throw err;
    }
    const taskId = crypto.randomUUID();
    await publish(client, taskId, request);
    const job = { task_id: taskId, queue, submitted_at: Math.round(Date.now()) / 1000 };
    await store.set(jobKey(documentId), JSON.stringify(job), "EX", resultTtl);

    const deadline = Date.now() + args.timeout * 1000;
    const event = await awaitEvent(store, args.group, `node-${process.pid}`, taskId, deadline);
    const [pendingAfterAck] = await store.xpending(eventsKey, args.group);
    const raw = await store.get(resultKey(documentId));
    const record = raw === null ? null : JSON.parse(raw);
    const result = record === null ? null : recordResult(record);
    const out = {
      document_id: documentId,
      task_id: taskId,
      queue_list: celeryKeyPrefix + queue,
      job,
      event,
      pending_after_ack: pendingAfterAck,
      record: record && {
        status: record.status,
        document_id: record.document_id,
        task_id: record.task_id,
        encoding: record.encoding === undefined ? null : record.encoding,
        error: record.error,
        diff: record.diff === undefined ? null : record.diff,
        chunk_ids: result ? result.chunks.map((chunk) => chunk.chunk_id) : [],
        chunk_texts: result ? result.chunks.map((chunk) => chunk.text) : [],
      },
    };
    process.stdout.write(`${JSON.stringify(out)}\n`);
    return event !== null && record !== null && record.task_id === taskId ? 0 : 1;
  } finally {
    await client.disconnect();
    store.disconnect();
  }
}

main().then(
  (code) => { process.exitCode = code; },
  (err) => { console.error(`producer.js: ${err.stack || err}`); process.exitCode = 1; },
);
