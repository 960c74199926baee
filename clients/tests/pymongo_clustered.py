"""Run by integration/expiry_clients_test.go: python3 pymongo_clustered.py <uri>

The server runs with enableTestCommands, for the test clock. A clustered
collection whose documents expire by their date _id, created as pymongo
users do, and a cache whose lruLimit collMod lowers.
"""
import datetime
import sys

import pymongo
from bson import ObjectId
from pymongo.errors import OperationFailure

client = pymongo.MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
client.drop_database("pyclustered")
db = client.pyclustered
events = db.create_collection(
    "events", clusteredIndex={"key": {"_id": 1}, "unique": True}, expireAfterSeconds=600)
info = next(db.list_collections(filter={"name": "events"}))
assert info["options"]["expireAfterSeconds"] == 600, info
assert "idIndex" not in info, info
assert events.index_information()["_id_"]["clustered"] is True


def clock(secs):
    client.admin.command("setParameter", 1, mayflyClockOffsetSeconds=secs)


now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
events.insert_many([{"_id": now, "n": 1}, {"_id": ObjectId(), "n": 2}])
assert events.count_documents({}) == 2
clock(600)
assert [d["n"] for d in events.find()] == [2], "the date _id expired, the ObjectId stays"
db.command("collMod", "events", expireAfterSeconds="off")
assert "expireAfterSeconds" not in next(db.list_collections(filter={"name": "events"}))["options"]

try:
    db.create_collection("bad", expireAfterSeconds=10)
    raise AssertionError("expireAfterSeconds without clusteredIndex")
except OperationFailure as e:
    assert e.code == 72, e

cache = db.cache
cache.create_index("usedAt", name="lru", lruLimit={"documents": 10})
cache.insert_many([{"_id": i, "usedAt": now + datetime.timedelta(seconds=i)} for i in range(10)])
reply = db.command("collMod", "cache", index={"name": "lru", "lruLimit": {"documents": 3}})
assert reply["lruLimit_old"] == {"documents": 10} and reply["lruLimit_new"] == {"documents": 3}, reply
assert sorted(d["_id"] for d in cache.find()) == [7, 8, 9]
print("pymongo clustered ok")
