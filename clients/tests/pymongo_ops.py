"""pymongo's operator commands against Mayfly (lower-case command names
included): dbstats, collstats, serverStatus, top.
Run by integration/ops_clients_test.go with the server's URI."""
import sys

from pymongo import MongoClient

client = MongoClient(sys.argv[1])
db = client["pyops"]
db.drop_collection("c")
db.c.insert_many([{"_id": i, "k": i % 5} for i in range(50)])
db.c.create_index("k")

dbstats = db.command("dbstats")
assert dbstats["objects"] == 50 and dbstats["indexes"] == 2, dbstats
collstats = db.command("collstats", "c")
assert collstats["count"] == db.c.count_documents({}) == 50, collstats
assert collstats["indexSizes"]["k_1"] > 0, collstats
status = client.admin.command("serverStatus")
assert status["network"]["bytesIn"] > 0 and status["connections"]["current"] >= 1, status["network"]
top = client.admin.command("top")
assert top["totals"]["pyops.c"]["insert"]["count"] >= 1, top["totals"]
print("pymongo ops ok")
