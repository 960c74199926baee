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


def step(name):
    """Says on stderr where the script is, for a run that hangs."""
    print("step:", name, file=sys.stderr, flush=True)


now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
sessions.insert_many([
    {"_id": "busy", "lastSeen": now, "createdAt": now},
    {"_id": "idle", "lastSeen": now, "createdAt": now},
])
step("sessions kept alive by reads")
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
# A page cache of at most 3 pages: reads keep pages, inserts evict the
# least recently used.
clock(0)
pages = client.pyexpiry.pages
pages.create_index("usedAt", expireAfterSeconds=86400, refreshOnRead=True, lruLimit={"documents": 3})
assert pages.index_information()["usedAt_1"]["lruLimit"] == {"documents": 3}
start = datetime.datetime.now(datetime.timezone.utc)
for i in range(3):
    pages.insert_one({"_id": "/p%d" % i, "usedAt": start + datetime.timedelta(seconds=i)})
clock(3 * 3600)  # past the throttle, a tenth of a day
assert pages.find_one({"_id": "/p0"}) is not None  # /p0 is now the most recent
step("page cache eviction event")
with pages.watch([{"$match": {"operationType": "delete"}}], max_await_time_ms=200) as evictions:
    pages.insert_one({"_id": "/p3", "usedAt": start + datetime.timedelta(hours=3)})
    ev = evictions.next()
    assert ev["documentKey"]["_id"] == "/p1" and ev["evicted"] == {"index": "usedAt_1"}, ev
assert sorted(d["_id"] for d in pages.find()) == ["/p0", "/p2", "/p3"]
assert client.admin.command("serverStatus")["metrics"]["lru"]["evictedDocuments"] == 1
# A cart whose lines expire an hour after they were added, the cart
# staying: a stale line is never read, and the monitor removes it.
clock(0)
carts = client.pyexpiry.carts
carts.create_index("items.addedAt", expireAfterSeconds=3600, expireElements=True)
added = datetime.datetime.now(datetime.timezone.utc)
carts.insert_one({"_id": "ann", "items": [
    {"sku": "apple", "addedAt": added},
    {"sku": "pear", "addedAt": added + datetime.timedelta(hours=2)},
]})
step("cart line expiry event")
with carts.watch([{"$match": {"operationType": "update"}}], max_await_time_ms=200) as removals:
    clock(3601)
    assert [i["sku"] for i in carts.find_one({"_id": "ann"})["items"]] == ["pear"]
    assert carts.count_documents({"items.sku": "apple"}) == 0
    ev = removals.next()
    assert ev["expiredElements"] == {"index": "items.addedAt_1", "expireAfterSeconds": 3600}, ev
assert carts.count_documents({}) == 1
print("pymongo expiry ok")
