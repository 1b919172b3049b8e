/**
 * A workspace's tracking plan applied to the messages of a request (schemas/plans.ts), after they
 * are validated and before their records are built. Flag: the message is stored with its
 * violations (the events row's `violations` column). Block: it is refused as an invalid item is
 * (kept in rejected_messages, each reason naming the path), never costing the messages beside
 * it. Omit: it is stored without its unplanned properties or traits, and says so among its
 * violations. Also the book of every workspace's plan, filled by following the plans topic.
 * Pure but for the follower; nothing throws on a message.
 */
import type { Kafka } from "kafkajs";
import type { Logger } from "pino";
import type { Message } from "../../schemas/messages";
import { followCompacted, type Following } from "../../schemas/kafka/follow";
import { CompiledPlan, parsePlan, type PlanVerdict, type Violation } from "../../schemas/plans";
import type { RejectedItem } from "./validate";

/** The outcomes a plan gives a message, as the metric counts them. */
export type PlanOutcome = Exclude<PlanVerdict["outcome"], "ok">;

/** Every workspace's compiled plan, by workspaceId. */
export class PlanBook {
  private readonly plans = new Map<string, CompiledPlan>();

  /** The compiled plan of `workspaceId`, or undefined (no plan: nothing is checked). */
  get(workspaceId: string): CompiledPlan | undefined {
    return this.plans.get(workspaceId);
  }

  /** Sets (or, with undefined, removes) a workspace's plan. */
  set(workspaceId: string, plan: CompiledPlan | undefined): void {
    if (plan === undefined) this.plans.delete(workspaceId);
    else this.plans.set(workspaceId, plan);
  }

  /** Workspaces with a plan. */
  get size(): number {
    return this.plans.size;
  }
}

/**
 * Reads the plans topic whole into `book`, then follows it (schemas/kafka/follow.ts). A record
 * whose key is not its plan's workspace, or that is not a plan, is logged and leaves the
 * workspace's plan as it was (an operator's bad record never lifts a plan). Each schema is
 * compiled when a message first needs it (CompiledPlan.lazy), not as the record is read. Throws when the topic
 * cannot be read to its end in time (the ingest does not start).
 */
export async function followPlans(kafka: Kafka, topic: string, clientId: string, book: PlanBook, log: Logger): Promise<Following> {
  const following = await followCompacted(kafka, { topic, groupPrefix: `${clientId}-plans`, label: "plans", log }, (key, value) => {
    if (value === null) return book.set(key, undefined);
    const plan = parsePlan(value);
    if (plan === undefined || plan.workspaceId !== key) return log.warn({ topic, workspaceId: key }, "plans: record ignored");
    try {
      book.set(key, CompiledPlan.lazy(plan));
      log.info({ workspaceId: key, version: plan.version }, "plan applied");
    } catch (error) {
      log.warn({ err: error, workspaceId: key, version: plan.version }, "plans: a plan that does not compile, ignored");
    }
  });
  log.info({ topic, workspaces: book.size }, "plans read");
  return following;
}

/** The events row's form of a message's violations: each as JSON text. */
export function violationTexts(violations: readonly Violation[]): string[] {
  return violations.map((v) => JSON.stringify({ path: v.path, keyword: v.keyword, message: v.message }));
}

/** What a plan made of a request's messages: those stored (with their violations, in order) and those refused beside the others. */
export interface Planned<T extends { messages: Message[]; rejected: RejectedItem[] }> {
  sorted: T;
  /** Per message of `sorted.messages`: its violations as row text, or undefined. */
  violations: (string[] | undefined)[];
  /** Messages by outcome (flag, block, omit). */
  counts: Partial<Record<PlanOutcome, number>>;
}

/**
 * Applies `plan` to `sorted`'s messages: blocked ones move to the refused items (each violation a
 * reason `<path>: <message> (tracking plan v<version>)`), omitted ones are replaced by their copy
 * without the unplanned keys, and every stored one's violations are listed. Without a plan,
 * `sorted` as it is.
 */
export function applyPlan<T extends { messages: Message[]; rejected: RejectedItem[] }>(
  sorted: T,
  plan: CompiledPlan | undefined,
): Planned<T> {
  if (plan === undefined) return { sorted, violations: [], counts: {} };
  const messages: Message[] = [];
  const violations: (string[] | undefined)[] = [];
  const rejected = [...sorted.rejected];
  const counts: Partial<Record<PlanOutcome, number>> = {};
  const version = `tracking plan v${plan.plan.version}`;
  for (const message of sorted.messages) {
    const verdict = plan.check(message);
    if (verdict.outcome === "ok") {
      messages.push(message);
      violations.push(undefined);
      continue;
    }
    counts[verdict.outcome] = (counts[verdict.outcome] ?? 0) + 1;
    if (verdict.outcome === "block") {
      const issues = verdict.violations.map((v) => ({ path: v.path, expected: `${v.message} (${version})` }));
      rejected.push({ index: rejected.length, item: message, issues });
      continue;
    }
    messages.push(verdict.outcome === "omit" ? (verdict.message as unknown as Message) : message);
    violations.push(violationTexts(verdict.violations));
  }
  if (messages.length === sorted.messages.length && counts.flag === undefined && counts.omit === undefined)
    return { sorted, violations: [], counts };
  return { sorted: { ...sorted, messages, rejected }, violations, counts };
}
