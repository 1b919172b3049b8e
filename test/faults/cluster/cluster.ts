/**
 * What the cluster scenarios share: where the local cluster lives (deploy/local/cluster.sh), a
 * way to run that script, and the settings of their stack (fast retries and 503s, six partitions
 * so every broker leads some).
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { LiveStack } from "../../support/harness";
import { ROOT } from "../../support/paths";

export { ROOT };
export const CLUSTER_DIR = process.env.CLUSTER_DIR ?? join(ROOT, ".stack", "cluster");

/** Runs `deploy/local/cluster.sh ...args`; rejects with its output when it fails. */
export async function clusterSh(...args: string[]): Promise<void> {
  await promisify(execFile)("bash", [join(ROOT, "deploy", "local", "cluster.sh"), ...args], { env: process.env });
}

/** A LiveStack for a scenario on the cluster (the cluster's addresses come from run.sh's env). */
export function clusterStack(): LiveStack {
  return new LiveStack({
    KAFKA_TOPIC_PARTITIONS: "6",
    PRODUCE_TIMEOUT_MS: "10000",
    RETRY_AFTER_SECONDS: "1",
    SINK_RETRY_MIN_MS: "200",
    SINK_RETRY_MAX_MS: "2000",
    SINK_BATCH_WAIT_MS: "300",
  });
}
