"""Run by integration/changestream_clients_test.go: python3 pymongo_changestream.py <uri>

An abandoned cart expires and gives its items back to stock, through a
change stream.
"""
import datetime
import sys

import pymongo

client = pymongo.MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
db = client.pyshop
client.drop_database("pyshop")
db.create_collection("carts", changeStreamPreAndPostImages={"enabled": True})
carts, stock = db.carts, db.stock
carts.create_index("touched", expireAfterSeconds=1)
stock.insert_one({"_id": "apple", "qty": 10})
later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)

with carts.watch(max_await_time_ms=200) as all_changes:
    carts.insert_one({"_id": "c0", "items": [], "touched": later})
    carts.update_one({"_id": "c0"}, {"$set": {"n": 1}, "$unset": {"items": ""}})
    carts.delete_one({"_id": "c0"})
    ev = all_changes.next()
    assert ev["operationType"] == "insert" and ev["fullDocument"]["_id"] == "c0", ev
    ev = all_changes.next()
    desc = ev["updateDescription"]
    assert ev["operationType"] == "update" and desc["updatedFields"] == {"n": 1} and desc["removedFields"] == ["items"], ev
    ev = all_changes.next()
    assert ev["operationType"] == "delete" and "expired" not in ev, ev
    assert all_changes.resume_token == ev["_id"]

# The application. pymongo 3.11 predates fullDocumentBeforeChange, so the
# reservation lives in its own collection, keyed by cart: the expiry
# event's documentKey finds it.
expiries = [{"$match": {"operationType": "delete", "expired": {"$exists": True}}}]
with carts.watch(expiries, max_await_time_ms=500) as stream:
    now = datetime.datetime.now(datetime.timezone.utc)
    carts.insert_one({"_id": "c1", "touched": now})
    db.reservations.insert_one({"_id": "r1", "cart": "c1", "sku": "apple", "n": 3})
    stock.update_one({"_id": "apple"}, {"$inc": {"qty": -3}})
    ev = stream.next()
    assert ev["documentKey"] == {"_id": "c1"}, ev
    assert ev["expired"]["index"] == "touched_1" and ev["expired"]["expireAfterSeconds"] == 1, ev
    assert ev["wallTime"] >= ev["expired"]["expiredAt"], ev
    for r in db.reservations.find({"cart": ev["documentKey"]["_id"]}):
        stock.update_one({"_id": r["sku"]}, {"$inc": {"qty": r["n"]}})
        db.reservations.delete_one({"_id": r["_id"]})
assert stock.find_one({"_id": "apple"})["qty"] == 10
assert db.reservations.count_documents({}) == 0

# A warning before expiry: expiryWarningSeconds on the TTL index.
db.sessions.create_index("at", expireAfterSeconds=2, expiryWarningSeconds=1)
with db.sessions.watch([{"$match": {"operationType": "expiring"}}], max_await_time_ms=500) as warnings:
    # A date two seconds ahead: the warning pass's first run after the
    # index is made only opens its window, and a document already inside
    # it is not warned, so the date must stay ahead of that first run.
    at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=2)
    at = at.replace(microsecond=at.microsecond // 1000 * 1000)
    db.sessions.insert_one({"_id": "s1", "at": at})
    ev = warnings.next()
    assert ev["documentKey"] == {"_id": "s1"}, ev
    assert ev["expiring"]["index"] == "at_1" and ev["expiring"]["expireAfterSeconds"] == 2, ev
    assert ev["expiring"]["expiresAt"] == (at + datetime.timedelta(seconds=2)).replace(tzinfo=None), ev
    assert db.sessions.find_one({"_id": "s1"}) is not None
print("pymongo changestream ok")
