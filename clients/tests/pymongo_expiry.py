"""Run by integration/expiry_clients_test.go: python3 pymongo_expiry.py <uri>

The server runs with enableTestCommands, for the test clock. A session
store whose reads keep sessions alive (refreshOnRead) within an absolute
lifetime, checked by moving the server's clock.
"""
import datetime
import sys

import pymongo
from pymongo.errors import OperationFailure

client = pymongo.MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
client.drop_database("pyexpiry")
sessions = client.pyexpiry.sessions
sessions.create_index("lastSeen", expireAfterSeconds=1800, refreshOnRead=True)
sessions.create_index("createdAt", expireAfterSeconds=3600)
assert sessions.index_information()["lastSeen_1"]["refreshOnRead"] is True


def clock(secs):
    client.admin.command("setParameter", 1, mayflyClockOffsetSeconds=secs)


now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
sessions.insert_many([
    {"_id": "busy", "lastSeen": now, "createdAt": now},
    {"_id": "idle", "lastSeen": now, "createdAt": now},
])
for offset in (1000, 2000, 3000):
    clock(offset)
    s = sessions.find_one({"_id": "busy"})  # the read keeps it alive
    assert s is not None, offset
    seen = s["lastSeen"].replace(tzinfo=datetime.timezone.utc)
    assert seen >= now + datetime.timedelta(seconds=offset - 5), (offset, seen)
    left = sessions.count_documents({"_id": "idle"})  # refreshes nothing
    assert left == (1 if offset < 1800 else 0), (offset, left)
clock(3600)
assert sessions.find_one({"_id": "busy"}) is None, "absolute lifetime"

try:
    client.pyexpiry.command("collMod", "sessions", index={"name": "lastSeen_1", "refreshOnRead": "yes"})
    raise AssertionError("collMod refreshOnRead: 'yes' was accepted")
except OperationFailure as e:
    assert e.code == 14, e.details
print("pymongo expiry ok")
