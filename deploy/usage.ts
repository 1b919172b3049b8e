/** The operator CLI's usage text (deploy/cli.ts prints it for an unknown command or a usage error). */
import { CELL_WIDTH } from "./commands/catalog";
import { REGULATIONS_USAGE } from "./commands/regulations-command";

/** What `cli` accepts, one command or form a line. */
export const USAGE = `usage: cli <command>
  ingest        run the ingest service
  sink          run the sink
  deliver       run the delivery to webhook destinations
  migrate       create Kafka topics and apply ClickHouse migrations
  dlq replay    send the dead letters there are now back to their topic, then end
  retention     drop the months of events and delete refused items past RETENTION_DAYS
  keys create <workspaceId>      a write key, honoured by every ingest within seconds; printed once
  keys list [<workspaceId>] [--json]   every key (admin topic and keys file): keyId, fingerprint, source, state
  keys revoke <workspaceId> <keyId>    refused by every ingest within seconds, the keys file's too
  keys create <workspaceId> --file | keys revoke <workspaceId> --file | keys revoke --file --key <writeKey>
                                 the same in WRITE_KEYS_FILE (keys kept in Git)
  tokens create <name> --operator | --workspace <workspaceId>   an admin token, printed once
  tokens list [--json] | tokens revoke <tokenId>
  audit [--workspace W] [--action A] [--actor A] [--since T] [--limit N]   the audit trail, JSON lines
${REGULATIONS_USAGE}
  users delete <workspaceId> <userId> [--suppress] [--by <who>]
                                 remove the user's rows (and of their linked anonymousIds) everywhere;
                                 --suppress also drops their later events (answered 2xx, not stored)
  users suppress <workspaceId> <userId> [--by <who>]     drop later events of the user, keep stored ones
  users unsuppress <workspaceId> <userId> [--by <who>]   store the user's events again
  catalog [workspaceId] [--json] the events and property keys that arrived, with types, counts, first/last seen;
                                 text cells cut at ${CELL_WIDTH} characters (…), --json gives the full values
  properties materialize <key> [--from properties|traits|context] [--type String|Float64|Int64|UInt8]
                                 a column prop_<key> (trait_, ctx_) computed at insert, filled for stored rows
                                 (no --type: the one JSON type the catalog saw for the key, else refused)
  properties dematerialize <key> [--from ...]   drop that column
  properties list                the materialized key columns
  destinations add <workspaceId> webhook <url> [--name N] [--header "K: V"]... [--secret-env VAR | --generate-secret]
               [--types t,..] [--events e,..] [--categories c,..] [--batch-size N] [--batch-wait-ms N] [--id ID]
                                 a webhook destination; prints its id (and a generated secret, once)
  destinations list [workspaceId] [--json]   destinations, without header values or secrets
  destinations pause|resume|remove <id>
  destinations test <id>         post one sample message as the delivery would, print the answer
  destinations replay-failures <id>   send the kept failures of a destination again
  destinations replay <id> --from <time> --to <time> [--after <position>] [--rate N] [--max-wait-s N]
                                 send the stored events received in [from, to) again, one per messageId
  plans draft <workspaceId>      a tracking plan drafted from the catalog (JSON on standard output)
  plans apply <workspaceId> FILE check FILE (each mistake named by its path) and publish it to every ingest
  plans show|remove <workspaceId>     the plan in force | no plan
  plans diff <workspaceId> FILE  what FILE would change
  plans check <workspaceId> --from <time> --to <time> [--plan FILE]
                                 how the stored events received in [from, to) fare against FILE or the plan in force`;
