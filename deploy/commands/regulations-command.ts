/**
 * `cli regulations ...` (regulations.ts, regulations-run.ts):
 *   create <workspaceId> <TYPE> <userId>... [--by <who>]
 *                 a regulation of Segment's TYPE for the userIds, run here and waited for:
 *                 prints its regulateId first, then its final status
 *   list [<workspaceId>] [--status S,..] [--type T,..] [--json]   newest first
 *   show <regulateId> [--json]
 * Resolves with the exit code: 0 done (FINISHED, or listed/shown), 1 FAILED or no such
 * regulation, 2 a usage error or a refused request. Throws what Kafka or ClickHouse throw when the
 * admin topic cannot be read or written.
 */
import { parseArgs } from "node:util";
import { readAdmin } from "../../schemas/admin/book";
import type { RegulationRecord, RegulationStatus, RegulationType } from "../../schemas/admin/records";
import type { Output } from "./destinations";
import {
  createRegulation,
  listRegulations,
  regulationStatus,
  REGULATION_STATUSES,
  REGULATION_TYPES,
  type RegulationFilter,
  type RegulationsContext,
} from "./regulations";
import { runRegulation } from "./regulations-run";

/** The usage lines of `regulations`, as deploy/usage.ts lists commands. */
export const REGULATIONS_USAGE = `  regulations create <workspaceId> <TYPE> <userId>... [--by <who>]
                                 a Segment regulation (TYPE: SUPPRESS_WITH_DELETE, DELETE_ONLY, SUPPRESS_ONLY,
                                 UNSUPPRESS) run now: prints its regulateId, then FINISHED or FAILED
  regulations list [<workspaceId>] [--status S,..] [--type T,..] [--json]   regulations, newest first
  regulations show <regulateId> [--json]   one regulation: status, progress, error`;

/** Runs `regulations <action> ...` (see the module comment). */
export async function regulationsCommand(args: string[], ctx: RegulationsContext, io: Output): Promise<number> {
  const [action, ...rest] = args;
  const usage = (text: string) => (io.err(`regulations: ${text}\n${REGULATIONS_USAGE}\n`), 2);
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(rest);
  } catch (error) {
    return usage((error as Error).message);
  }
  const { values, positionals } = parsed;
  switch (action) {
    case "create":
      return create(positionals, values.by ?? (ctx.config.operator && `cli:${ctx.config.operator}`), ctx, io, usage);
    case "list": {
      if (positionals.length > 1) return usage("list takes at most one workspaceId");
      const filter = filterOf(values.status, values.type);
      if (typeof filter === "string") return usage(filter);
      const listed = listRegulations(await read(ctx), positionals[0], filter);
      io.out(values.json ? `${JSON.stringify(listed, null, 2)}\n` : listText(listed));
      return 0;
    }
    case "show": {
      if (positionals.length !== 1) return usage("show <regulateId>");
      const found = regulationStatus(await read(ctx), positionals[0]!);
      if (!found.ok) return (io.err(`regulations: ${found.error}\n`), 1);
      io.out(values.json ? `${JSON.stringify(found.value, null, 2)}\n` : showText(found.value));
      return 0;
    }
    default:
      return usage(`unknown action ${JSON.stringify(action ?? "")}`);
  }
}

function parse(args: string[]) {
  return parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: { by: { type: "string" }, json: { type: "boolean" }, status: { type: "string" }, type: { type: "string" } },
  });
}

/** `create`: checks, publishes, runs and waits; exit 0 FINISHED, 1 FAILED, 2 refused. */
async function create(
  positionals: string[],
  by: string | undefined,
  ctx: RegulationsContext,
  io: Output,
  usage: (text: string) => number,
): Promise<number> {
  const [workspaceId, regulationType, ...subjectIds] = positionals;
  if (!workspaceId || !regulationType || subjectIds.length === 0) return usage("create <workspaceId> <TYPE> <userId>...");
  if (!by) return usage("--by <who> is required: no login name to record as the requester");
  const made = await createRegulation(ctx, { regulationType, subjectType: "USER_ID", subjectIds }, workspaceId, by);
  if (!made.ok) return usage(made.field === undefined ? made.error : `${made.field}: ${made.error}`);
  io.out(`${made.value.regulateId}\n`);
  const last = await runRegulation(ctx, made.value);
  io.out(`${statusLine(last)}\n`);
  if (last.error !== undefined) io.err(`regulations: ${last.error}\n`);
  return last.overallStatus === "FINISHED" ? 0 : 1;
}

/** `--status` and `--type` as a filter, or what is wrong with them. */
function filterOf(status: string | undefined, types: string | undefined): RegulationFilter | string {
  const filter: RegulationFilter = {};
  if (status !== undefined) {
    const list = status.split(",");
    const bad = list.find((s) => !(REGULATION_STATUSES as readonly string[]).includes(s));
    if (bad !== undefined) return `--status ${JSON.stringify(bad)}: one of ${REGULATION_STATUSES.join(", ")}`;
    filter.status = list as RegulationStatus[];
  }
  if (types !== undefined) {
    const list = types.split(",");
    const bad = list.find((t) => !(REGULATION_TYPES as readonly string[]).includes(t));
    if (bad !== undefined) return `--type ${JSON.stringify(bad)}: one of ${REGULATION_TYPES.join(", ")}`;
    filter.types = list as RegulationType[];
  }
  return filter;
}

/** The admin topic as it is now. */
function read(ctx: RegulationsContext) {
  return readAdmin(ctx.kafka, ctx.config.kafka.adminTopic, `${ctx.config.kafka.clientId}-cli`, ctx.log);
}

/** `FINISHED 3/3`: the status and the subjects done of all. */
export function statusLine(r: RegulationRecord): string {
  return `${r.overallStatus} ${r.finished}/${r.subjectIds.length}`;
}

/** One line per regulation, tab-separated, after a header line. */
export function listText(records: RegulationRecord[]): string {
  const header = ["regulateId", "workspaceId", "regulationType", "status", "createdAt", "createdBy"].join("\t");
  const lines = records.map((r) => [r.regulateId, r.workspaceId, r.regulationType, statusLine(r), r.createdAt, r.createdBy].join("\t"));
  return `${[header, ...lines].join("\n")}\n`;
}

/** Most subjectIds `show` prints before it says how many more there are. */
const SHOWN_SUBJECTS = 20;

/** One `field<TAB>value` line per field of the regulation. */
export function showText(r: RegulationRecord): string {
  const shown = r.subjectIds.slice(0, SHOWN_SUBJECTS).join(", ");
  const more = r.subjectIds.length > SHOWN_SUBJECTS ? ` … (${r.subjectIds.length - SHOWN_SUBJECTS} more; --json lists all)` : "";
  const fields: [string, string | undefined][] = [
    ["regulateId", r.regulateId],
    ["workspaceId", r.workspaceId],
    ["regulationType", r.regulationType],
    ["subjectType", r.subjectType],
    ["subjectIds", shown + more],
    ["overallStatus", statusLine(r)],
    ["error", r.error],
    ["createdAt", r.createdAt],
    ["createdBy", r.createdBy],
    ["updatedAt", r.updatedAt],
  ];
  return fields
    .filter((f) => f[1] !== undefined)
    .map(([k, v]) => `${k}\t${v}`)
    .join("\n")
    .concat("\n");
}
