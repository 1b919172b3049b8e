/**
 * The one Kafka client factory and the one admin helper of the project's processes and commands.
 */
// Before kafkajs loads, when no entry point (ingest/main.ts, sink/main.ts, deploy/cli.ts) did it first.
import "./stand-ins";
import { Kafka, logLevel, type Admin, type AdminConfig } from "kafkajs";
import type { KafkaConfig } from "../config";

/**
 * A kafkajs client for the brokers of `config`, its clientId `<KAFKA_CLIENT_ID>-<role>` (the role
 * names the process or command in the brokers' logs and quotas; the ingest, the main producer,
 * has none), logging at `level` (ERROR: kafkajs's retries of what we retry ourselves are not news).
 */
export function createKafka(config: KafkaConfig, role?: string, level: logLevel = logLevel.ERROR): Kafka {
  const clientId = role === undefined ? config.clientId : `${config.clientId}-${role}`;
  return new Kafka({ clientId, brokers: config.brokers, logLevel: level });
}

/**
 * Connects an admin client, runs `fn` with it, and disconnects whatever `fn` did. Throws what
 * connect or `fn` throws (Kafka unreachable, or `fn`'s own errors).
 */
export async function withAdmin<T>(kafka: Kafka, fn: (admin: Admin) => Promise<T>, options?: AdminConfig): Promise<T> {
  const admin = kafka.admin(options);
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.disconnect();
  }
}

/**
 * A connected admin client that lives as long as its process (the ingest's readiness probe, the
 * sink's lag, DLQ age and copies), with no kafkajs retries: each caller asks again on its own
 * interval, and a probe must fail fast. Its owner disconnects it at stop. Throws when Kafka is
 * unreachable (the process then exits and its supervisor restarts it).
 */
export async function openAdmin(kafka: Kafka): Promise<Admin> {
  const admin = kafka.admin({ retry: { retries: 0 } });
  await admin.connect();
  return admin;
}
