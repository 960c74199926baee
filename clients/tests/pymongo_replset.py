"""Run by integration/replset_clients_test.go: python3 pymongo_replset.py <uri>
with the seed list of an initiated three-member set."""
import sys
import time

import pymongo
from pymongo.read_preferences import ReadPreference

client = pymongo.MongoClient(sys.argv[1], serverSelectionTimeoutMS=20000, retryWrites=True, w="majority")
assert client.admin.command("ismaster")["setName"] == "rs0"
db = client.test
db.tokens.create_index("expireAt", expireAfterSeconds=0)
db.tokens.insert_one({"_id": "tok", "expireAt": None})
assert db.tokens.find_one_and_update({"_id": "tok"}, {"$set": {"used": True}}, return_document=pymongo.ReturnDocument.AFTER)["used"]
secondary = db.get_collection("tokens", read_preference=ReadPreference.SECONDARY)
for _ in range(100):
    if secondary.find_one({"_id": "tok", "used": True}):
        break
    time.sleep(0.1)
else:
    raise AssertionError("a secondary read never saw the write")
assert client.primary is not None
assert len(client.secondaries) == 2, client.secondaries
print("pymongo replset ok")
