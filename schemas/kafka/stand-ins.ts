/**
 * Four files of kafkajs 2.2.4 (its last release) replaced in Node's module cache by code that gives
 * the same answers at a fraction of the cost, on the path of every record our producers send.
 * kafkajs has no setting for any of them; the checksum and the Produce request are required the
 * first time a producer talks to a broker, the grouping and the framing when kafkajs loads, so this
 * module puts its stand-ins under their file names before then. Imported for its effect by schemas/kafka/client.ts, through which every process's
 * client is made. With another kafkajs version, or once the files are loaded, it changes nothing
 * (`standInState` says so, and the ingest logs it at start).
 *
 * - The record batch checksum. Kafka's record batch (magic 2) carries a CRC-32C (Castagnoli) of
 *   everything after its CRC field (Kafka protocol guide, "Record Batch"; KIP-98). kafkajs
 *   computes it one byte per loop turn: 352 µs for a 90 KB batch of 100 events here, 4-7 µs per
 *   event, the largest single item of the ingest's CPU in the batch phase
 *   (`BENCH_PROFILE_PHASE=batch npm run bench:profile`, 2026-11-29). hash-wasm's CRC-32 with the
 *   Castagnoli polynomial takes 60 µs for the same bytes. WebAssembly runs wherever Node runs, so
 *   the image's `npm ci --omit=optional` needs no platform binary (a native CRC took 22 µs but
 *   ships one package per platform as an optional dependency). Until the WebAssembly module is
 *   ready (a few ms after this module loads) kafkajs's own loop answers.
 * - Grouping a send's records by partition. kafkajs copies a partition's whole list for each
 *   record it adds (`[...current, message]`), so a send of n records over p partitions costs
 *   about n²/2p copies: 1.7-2.2 µs per event when the producer sends the records of concurrent
 *   requests together (kafkajs#1576, open since 2023, measured it on 20,000 records at 600x).
 *   The stand-in appends: the same partitions, the same records in the same order.
 * - The Produce request (versions 3-7 share v3's file) and the frame of every request: written
 *   once into a buffer of the exact size (produce-encoding.ts), where kafkajs copies each record
 *   value eight times into new zero-filled buffers grown by doubling.
 *
 * A wrong checksum cannot pass unseen: the broker refuses the batch (CORRUPT_MESSAGE), and every
 * integration test produces through both stand-ins; the unit tests compare each with kafkajs's own.
 */
import Module from "node:module";
import { createCRC32, type IHasher } from "hash-wasm";
import { frameRequest, produceRequest } from "./produce-encoding";

/** The kafkajs release whose files these stand in for. */
export const KAFKAJS_VERSION = "2.2.4";

/** kafkajs's files: those replaced, the loop the checksum falls back on, and their first users. */
export const KAFKAJS_FILES = {
  crc32c: "kafkajs/src/protocol/recordBatch/crc32C/index.js",
  crc32cLoop: "kafkajs/src/protocol/recordBatch/crc32C/crc32C.js",
  recordBatch: "kafkajs/src/protocol/recordBatch/v0/index.js",
  grouping: "kafkajs/src/producer/groupMessagesPerPartition.js",
  sendMessages: "kafkajs/src/producer/sendMessages.js",
  produceRequest: "kafkajs/src/protocol/requests/produce/v3/request.js",
  framing: "kafkajs/src/protocol/request.js",
  connection: "kafkajs/src/network/connection.js",
} as const;

/** The Castagnoli polynomial, reversed (as CRC-32C tables use it; RFC 3720 §B.4). */
const CASTAGNOLI = 0x82f63b78;

// eslint-disable-next-line @typescript-eslint/no-require-imports -- a file of kafkajs's, not its public API
const kafkajsLoop = require(KAFKAJS_FILES.crc32cLoop) as (buffer: Buffer) => number;

let hasher: IHasher | undefined;

/**
 * Where this process's record batch checksums come from and how its sends are grouped:
 * "wasm" / "pending" (the WebAssembly module loading; kafkajs's loop meanwhile) / "kafkajs"
 * (not replaced: another kafkajs version, or its file loaded first, or no WebAssembly); the
 * grouping "linear" or "kafkajs".
 */
export interface StandInState {
  crc32c: "wasm" | "pending" | "kafkajs";
  grouping: "linear" | "kafkajs";
  /** Produce requests (versions 3-7) written into one buffer (produce-encoding.ts), or by kafkajs's encoders. */
  produce: "one-buffer" | "kafkajs";
  /** Every request's frame made with one copy of its body (produce-encoding.ts frameRequest), or kafkajs's two. */
  framing: "one-copy" | "kafkajs";
}
const state: StandInState = { crc32c: "kafkajs", grouping: "kafkajs", produce: "kafkajs", framing: "kafkajs" };

/** A copy of StandInState (for the startup log and the tests). */
export function standInState(): StandInState {
  return { ...state };
}

/**
 * CRC-32C of `buffer`, unsigned 32-bit (what kafkajs's crc32C module returns): hash-wasm's when
 * it is ready, kafkajs's loop before. Never throws for a Buffer.
 */
export function crc32c(buffer: Uint8Array): number {
  if (hasher === undefined) return kafkajsLoop(buffer as Buffer);
  hasher.init();
  hasher.update(buffer);
  const digest = hasher.digest("binary");
  return ((digest[0]! << 24) | (digest[1]! << 16) | (digest[2]! << 8) | digest[3]!) >>> 0;
}

/** What kafkajs's partitioner is given, per record. */
interface PartitionerArgs<M> {
  topic: string;
  partitionMetadata: readonly unknown[];
  message: M;
}

/**
 * A send's records by the partition `partitioner` picks for each, in their order: what kafkajs's
 * groupMessagesPerPartition returns (an object keyed by partition; empty without metadata), in
 * time linear in the records.
 */
export function groupByPartition<M>(args: {
  topic: string;
  partitionMetadata: readonly unknown[];
  messages: readonly M[];
  partitioner: (args: PartitionerArgs<M>) => number;
}): Record<number, M[]> {
  const { topic, partitionMetadata, messages, partitioner } = args;
  const grouped: Record<number, M[]> = {};
  if (partitionMetadata.length === 0) return grouped;
  for (const message of messages) (grouped[partitioner({ topic, partitionMetadata, message })] ??= []).push(message);
  return grouped;
}

/** Puts `exports` in the module cache as kafkajs's `file`, unless `user` (which requires it) has loaded. */
function standIn(file: string, user: string, exports: unknown): boolean {
  const path = require.resolve(file);
  if (require.cache[require.resolve(user)] !== undefined) return require.cache[path]?.exports === exports;
  const stand = new Module(path);
  stand.filename = path;
  stand.loaded = true;
  stand.exports = exports;
  require.cache[path] = stand;
  return true;
}

/**
 * The WebAssembly CRC-32C, loaded once per process whether or not kafkajs takes it (crc32c uses
 * it as soon as it is ready). Resolves to false when it cannot be used: no WebAssembly (a runtime
 * started with --jitless), or a wrong check value (RFC 3720 §B.4: "123456789" -> E3069283).
 */
export const crc32cReady: Promise<boolean> = createCRC32(CASTAGNOLI).then(
  (ready) => {
    ready.init();
    ready.update("123456789");
    if (ready.digest("hex") !== "e3069283") return false;
    hasher = ready;
    return true;
  },
  () => false,
);

/**
 * Puts the one-buffer Produce request in place of kafkajs's v3 file (versions 4-7 require it),
 * unless that file has loaded. kafkajs's own factory is loaded first, for the requests the stand-in
 * leaves to it (produce-encoding.ts produceRequest).
 */
function standInProduce(): boolean {
  const path = require.resolve(KAFKAJS_FILES.produceRequest);
  if (require.cache[path] !== undefined) return false;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- kafkajs's file, kept for what the stand-in does not take
  const kafkajs = require(path) as Parameters<typeof produceRequest>[0];
  delete require.cache[path];
  produceStandIn = produceRequest(kafkajs, crc32c);
  return standIn(KAFKAJS_FILES.produceRequest, KAFKAJS_FILES.produceRequest, produceStandIn);
}

/** The Produce request factory put in kafkajs's place, once installed (for the tests). */
export let produceStandIn: ReturnType<typeof produceRequest> | undefined;

/** Installs the stand-ins, once per process. */
function install(): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- kafkajs's package.json
  if ((require("kafkajs/package.json") as { version: string }).version !== KAFKAJS_VERSION) return;
  if (standIn(KAFKAJS_FILES.grouping, KAFKAJS_FILES.sendMessages, groupByPartition)) state.grouping = "linear";
  if (standIn(KAFKAJS_FILES.framing, KAFKAJS_FILES.connection, frameRequest)) state.framing = "one-copy";
  if (standIn(KAFKAJS_FILES.crc32c, KAFKAJS_FILES.recordBatch, crc32c)) {
    state.crc32c = "pending";
    void crc32cReady.then((usable) => (state.crc32c = usable ? "wasm" : "kafkajs"));
  }
  if (standInProduce()) state.produce = "one-buffer";
}

install();
