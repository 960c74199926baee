"""Run by integration/changestream_clients_test.go: python3 pymongo_expanded_events.py <uri>

A database stream with showExpandedEvents reports a collection's create
and its createIndexes, as mongod 8.0 does. pymongo 3.11 predates the
watch() option, so the stream is opened with $changeStream directly.
"""
import sys

import pymongo

client = pymongo.MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
client.drop_database("pyddl")
db = client.pyddl

with db.aggregate([{"$changeStream": {"showExpandedEvents": True}}], maxAwaitTimeMS=500) as stream:
    db.create_collection("orders")
    db.orders.insert_one({"_id": 1, "sku": "apple"})
    db.orders.create_index([("sku", pymongo.ASCENDING)], unique=True)
    info = db.command("listCollections", filter={"name": "orders"})["cursor"]["firstBatch"][0]
    uuid = info["info"]["uuid"]

    ev = stream.next()
    assert ev["operationType"] == "create", ev
    assert ev["ns"] == {"db": "pyddl", "coll": "orders"}, ev
    assert ev["nsType"] == "collection", ev
    assert ev["operationDescription"] == {"idIndex": {"v": 2, "key": {"_id": 1}, "name": "_id_"}}, ev
    assert ev["collectionUUID"] == uuid, (ev, uuid)
    assert list(ev.keys()) == ["_id", "operationType", "clusterTime", "collectionUUID", "wallTime", "ns",
                               "operationDescription", "nsType"], list(ev.keys())

    ev = stream.next()
    assert ev["operationType"] == "insert" and ev["collectionUUID"] == uuid, ev

    ev = stream.next()
    assert ev["operationType"] == "createIndexes", ev
    assert ev["operationDescription"] == {"indexes": [{"v": 2, "key": {"sku": 1}, "name": "sku_1", "unique": True}]}, ev
    assert ev["collectionUUID"] == uuid, ev
    assert "documentKey" not in ev and "nsType" not in ev, ev
print("pymongo expanded events ok")
