/**
 * The events topic's contract as the tests read it: the one schema file
 * (schemas/events-record.schema.json, JSON Schema draft 2020-12) loaded, its version, and a checker
 * compiled with Ajv and ajv-formats. A Kafka message of the topic is checked as the record the
 * schema describes: `{key, headers, value}`, key and header values as UTF-8 text, value parsed.
 * `contentSchema` is checked, not only noted: a JSON text field (context, properties, ...) must
 * parse and its value match the sub-schema (Ajv treats the keyword as an annotation by default).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import Ajv2020, { type ErrorObject, type ValidateFunction } from "ajv/dist/2020";
import addFormats from "ajv-formats";
import type { IHeaders } from "kafkajs";
import { ROOT } from "./paths";

/** Where the schema lives, from the repository root (docs/EVENTS-TOPIC.md points to the same file). */
export const RECORD_SCHEMA_PATH = "schemas/events-record.schema.json";

/** The parts of the schema the tests read by name; the rest goes to Ajv as it is. */
export interface RecordSchema {
  $id: string;
  /** The contract's major version, also the end of `$id` (`/v1`). */
  version: number;
  [keyword: string]: unknown;
}

/** A record of the events topic as the schema sees it. */
export interface TopicRecord {
  key: string | null;
  headers: Record<string, string | string[]>;
  /** The value parsed as JSON; its text when it is not JSON (then refused as not an object). */
  value: unknown;
}

/** Checks a record: [] when the schema accepts it, else one line per error (`/value/type must be ...`). */
export type RecordCheck = (record: TopicRecord) => string[];

/** Reads the schema file under `root` (the repository by default). Throws when it is missing or not JSON. */
export function loadRecordSchema(root = ROOT): RecordSchema {
  return JSON.parse(readFileSync(join(root, RECORD_SCHEMA_PATH), "utf8")) as RecordSchema;
}

/** The schema's version: its `version`, which `$id` must end with as `/v<version>`. Throws when they disagree. */
export function schemaVersion(schema: Pick<RecordSchema, "$id" | "version">): number {
  const { $id, version } = schema;
  if (!Number.isInteger(version) || version < 1) throw new Error(`version must be a positive integer, not ${String(version)}`);
  if (typeof $id !== "string" || !$id.endsWith(`/v${version}`)) throw new Error(`$id ${String($id)} does not end with /v${version}`);
  return version;
}

/** Whether `text` is JSON whose value `check` accepts. */
function decodes(text: string, check: ValidateFunction): boolean {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return false;
  }
  return check(value) === true;
}

/** One Ajv error as a line: where and what (`/value must have required property 'type'`), and a property not allowed. */
export function describeError(error: ErrorObject): string {
  const named = (error.params as { additionalProperty?: string }).additionalProperty;
  return `${error.instancePath || "/"} ${error.message ?? error.keyword}${named === undefined ? "" : ` (${named})`}`;
}

/**
 * Compiles `schema` (strict Ajv, every error collected, formats checked) into a RecordCheck.
 * `version` is registered as an annotation and `contentSchema` as a check of the decoded text.
 */
export function recordChecker(schema: RecordSchema): RecordCheck {
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false });
  addFormats(ajv);
  ajv.addKeyword({ keyword: "version", schemaType: "number" });
  ajv.removeKeyword("contentSchema");
  ajv.addKeyword({
    keyword: "contentSchema",
    schemaType: ["object", "boolean"],
    compile: (content: object | boolean) => {
      const check = ajv.compile(content);
      return (data: unknown) => typeof data !== "string" || decodes(data, check);
    },
  });
  const validate = ajv.compile(schema);
  return (record) => (validate(record) ? [] : (validate.errors ?? []).map(describeError));
}

/** A header value as text (kafkajs gives Buffers; an array stays an array). */
function headerText(value: IHeaders[string]): string | string[] {
  if (Array.isArray(value)) return value.map((v) => v.toString());
  return value === undefined ? "" : value.toString();
}

/** The TopicRecord of a message consumed from the topic. */
export function topicRecord(message: { key: Buffer | null; value: Buffer | null; headers?: IHeaders }): TopicRecord {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(message.headers ?? {})) headers[name] = headerText(value);
  const text = message.value === null ? null : message.value.toString("utf8");
  let value: unknown = text;
  try {
    if (text !== null) value = JSON.parse(text);
  } catch {
    // kept as text: the schema refuses a value that is not an object
  }
  return { key: message.key === null ? null : message.key.toString("utf8"), headers, value };
}
