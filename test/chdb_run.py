"""Runs DDL, inserts and queries on current ClickHouse in-process (chdb-core), for the tests.

Reads JSON from stdin: {"database", "ddl": [sql], "inserts": [[row, ...], ...], "queries": [sql]}.
Each insert is its own INSERT (JSONEachRow, ISO times parsed best-effort). Prints JSON:
{"version": "...", "results": [[row, ...], ...]}. Any failure exits non-zero with the message.
"""
import json
import sys

from chdb import session


def rows(result):
    text = str(result).strip()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def main():
    job = json.load(sys.stdin)
    s = session.Session()
    for sql in job["ddl"]:
        s.query(sql)
    table = f"`{job['database']}`.`events`"
    for batch in job["inserts"]:
        data = "\n".join(json.dumps(r) for r in batch)
        s.query(f"INSERT INTO {table} SETTINGS date_time_input_format='best_effort' FORMAT JSONEachRow\n{data}")
    s.query(f"USE `{job['database']}`")
    version = rows(s.query("SELECT version() AS v", "JSONEachRow"))[0]["v"]
    results = [rows(s.query(sql, "JSONEachRow")) for sql in job["queries"]]
    print(json.dumps({"version": version, "results": results}))


if __name__ == "__main__":
    main()
