"""Run by integration/clients_test.go: python3 pymongo_crud.py <uri>"""
import sys

import pymongo
from pymongo.errors import DuplicateKeyError, OperationFailure

client = pymongo.MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
db = client.test
c = db.py
c.delete_many({})
c.insert_many([{"_id": i, "k": i % 2, "v": "x" * i} for i in range(10)])
assert [d["_id"] for d in c.find({"k": 1}).sort("_id", pymongo.DESCENDING)] == [9, 7, 5, 3, 1]
r = c.update_many({"k": 0}, {"$set": {"even": True}})
assert r.matched_count == 5 and r.modified_count == 5, r.raw_result
assert c.count_documents({"even": True}) == 5
assert c.count_documents({}) == 10
total = list(c.aggregate([{"$group": {"_id": "$k", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}]))
assert total == [{"_id": 0, "n": 5}, {"_id": 1, "n": 5}], total
assert c.find_one_and_update({"_id": 4}, {"$inc": {"k": 5}}, return_document=pymongo.ReturnDocument.AFTER)["k"] == 5
assert c.delete_one({"_id": 0}).deleted_count == 1
try:
    c.insert_one({"_id": 1})
    raise AssertionError("duplicate key accepted")
except DuplicateKeyError as e:
    assert e.code == 11000
try:
    db.command("frobnicate")
    raise AssertionError("unknown command accepted")
except OperationFailure as e:
    assert e.code == 59, e.details
assert "py" in db.list_collection_names()
c.drop()
assert "py" not in db.list_collection_names()
print("pymongo ok")
