"""Writes test/fixtures/geo-test.mmdb, the country database the enrichment tests read where exact
answers matter: a few documentation and well-known networks mapped to fixed countries, in both
record shapes the ingest reads (ip-location-db's `country_code`, MaxMind's `country.iso_code`).
Run: python3 test/support/test-mmdb.py (needs mmdb-writer and netaddr from PyPI)."""
import os
import sys

from mmdb_writer import MMDBWriter
from netaddr import IPSet

NETWORKS = [
    ("81.2.69.0/24", {"country_code": "GB"}),
    ("198.51.100.0/24", {"country_code": "FR"}),
    ("203.0.113.0/24", {"country": {"iso_code": "JP"}}),
    ("2001:db8::/32", {"country_code": "DE"}),
]

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "fixtures", "geo-test.mmdb")
writer = MMDBWriter(ip_version=6, ipv4_compatible=True, database_type="test-country", description="segment-ingest test data")
for network, record in NETWORKS:
    writer.insert_network(IPSet([network]), record)
writer.to_db_file(out)
print(out)
