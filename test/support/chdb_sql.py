"""A current-ClickHouse session (chdb-core, in-process) spoken to over stdin/stdout, for tests and
the query benchmark: one JSON request per line, {"sql": "..."}; one JSON answer per line,
{"rows": [...]} (the statement's JSONEachRow output, [] for DDL and inserts) or {"error": "..."}.
argv[1], when given, is the session's data directory (kept after exit); else a temporary one.
"""
import json
import sys

from chdb import session


def main():
    s = session.Session(sys.argv[1]) if len(sys.argv) > 1 else session.Session()
    version = str(s.query("SELECT version()", "TabSeparated")).strip()
    print(json.dumps({"version": version}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            sql = json.loads(line)["sql"]
            text = str(s.query(sql, "JSONEachRow")).strip()
            rows = [json.loads(r) for r in text.splitlines() if r.strip()]
            print(json.dumps({"rows": rows}), flush=True)
        except Exception as error:  # every failure is an answer, the session stays up
            print(json.dumps({"error": str(error)}), flush=True)


if __name__ == "__main__":
    main()
