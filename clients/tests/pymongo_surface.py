"""Run by integration/surface_clients_test.go: python3 pymongo_surface.py <uri>

MongoDB 8.0 options that must not be silently ignored. Debian's pymongo
(3.11) predates the let and sort helpers, so the commands are sent as
drivers build them."""
import sys

import pymongo
from pymongo.errors import OperationFailure

client = pymongo.MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
db = client.test
c = db.pysurface
c.delete_many({})
c.insert_many([{"_id": i, "n": i, "tag": "a"} for i in (1, 2, 3)])

eq = {"$expr": {"$eq": ["$n", "$$target"]}}
found = db.command("find", "pysurface", filter=eq, let={"target": 2})["cursor"]["firstBatch"]
assert [d["_id"] for d in found] == [2], found
r = db.command("update", "pysurface", updates=[{"q": eq, "u": {"$set": {"hit": True}}}], let={"target": 1})
assert r["n"] == 1 and r["nModified"] == 1, r
assert c.find_one({"_id": 1})["hit"] is True
fam = db.command("findAndModify", "pysurface", query=eq, remove=True, let={"target": 3})
assert fam["value"]["_id"] == 3, fam
try:
    db.command("find", "pysurface", filter={"$expr": {"$eq": ["$n", "$$nope"]}})
    raise AssertionError("undefined variable accepted")
except OperationFailure as e:
    assert e.code == 17276, e.details

c.insert_one({"_id": 3, "n": 3, "tag": "a"})
r = db.command("update", "pysurface", updates=[{"q": {"tag": "a"}, "u": {"$set": {"top": True}}, "sort": {"n": -1}}])
assert r["nModified"] == 1, r
assert c.find_one({"top": True})["_id"] == 3
from pymongo.collation import Collation

names = client.test.pynames
names.delete_many({})
names.insert_many([{"_id": 1, "name": "ann"}, {"_id": 2, "name": "Ann"}, {"_id": 3, "name": "Bob"}])
ci = Collation(locale="en", strength=2)
assert [d["_id"] for d in names.find({"name": "ANN"}, collation=ci).sort("_id")] == [1, 2]
assert names.count_documents({"name": "ANN"}, collation=ci) == 2
assert [d["_id"] for d in names.find(collation=Collation(locale="en")).sort("name")] == [1, 2, 3]
assert names.update_many({"name": "ann"}, {"$set": {"a": 1}}, collation=ci).modified_count == 2
assert names.delete_one({"name": "BOB"}, collation=ci).deleted_count == 1
try:
    list(names.find(collation=Collation(locale="en", strength=9)))
    raise AssertionError("strength 9 accepted")
except OperationFailure as e:
    assert e.code == 51024, e.details
# a collection's default collation, and $group under it
client.test.drop_collection("pyci")
cin = client.test.create_collection("pyci", collation=ci)
cin.insert_many([{"_id": 1, "name": "ann"}, {"_id": 2, "name": "Ann"}, {"_id": 3, "name": "Bob"}])
assert cin.count_documents({"name": "ANN"}) == 2
assert cin.options()["collation"]["strength"] == 2, cin.options()
assert len(list(cin.aggregate([{"$group": {"_id": "$name"}}]))) == 2
assert cin.update_many({"name": "ANN"}, {"$set": {"a": 1}}).modified_count == 2
# 8.0 bulkWrite, as drivers send it
r = client.admin.command("bulkWrite", 1, ops=[
    {"insert": 0, "document": {"_id": 1}},
    {"insert": 1, "document": {"_id": 1}},
    {"update": 1, "filter": {"_id": 1}, "updateMods": {"$set": {"x": 1}}},
    {"insert": 0, "document": {"_id": 1}},
], nsInfo=[{"ns": "test.pybw"}, {"ns": "other.pybw"}], ordered=False)
assert r["nInserted"] == 2 and r["nModified"] == 1 and r["nErrors"] == 1, r
errors = [e for e in r["cursor"]["firstBatch"] if e["ok"] == 0]
assert errors[0]["idx"] == 3 and errors[0]["code"] == 11000, errors
# schema validation
from pymongo.errors import WriteError

client.test.drop_collection("pyvv")
vv = client.test.create_collection("pyvv", validator={"qty": {"$gt": 0}})
try:
    vv.insert_one({"qty": 0})
    raise AssertionError("invalid document accepted")
except WriteError as e:
    assert e.code == 121 and e.details["errInfo"]["details"]["operatorName"] == "$gt", e.details
vv.insert_one({"qty": 0}, bypass_document_validation=True)
# views
client.test.drop_collection("pyview")
client.test.create_collection("pyview", viewOn="pysurface", pipeline=[{"$match": {"tag": "a"}}])
assert len(list(client.test.pyview.find())) == 3
try:
    client.test.pyview.insert_one({"tag": "a"})
    raise AssertionError("insert into a view accepted")
except OperationFailure as e:
    assert e.code == 166, e.details
# tailable cursor on a capped collection
client.test.drop_collection("pycap")
cap = client.test.create_collection("pycap", capped=True, size=65536)
cap.insert_many([{"_id": 1}, {"_id": 2}])
tail = cap.find(cursor_type=pymongo.CursorType.TAILABLE_AWAIT).max_await_time_ms(100)
assert [next(tail)["_id"], next(tail)["_id"]] == [1, 2]
cap.insert_one({"_id": 3})
assert next(tail)["_id"] == 3
assert tail.alive
tail.close()
with client.start_session() as s:
    client.test.pysurface.find_one({}, session=s)
    listed = list(client.test.aggregate([{"$listLocalSessions": {"allUsers": True}}]))
    want = s.session_id["id"].as_uuid()
    assert any(d["_id"]["id"] == want for d in listed), listed
print("pymongo surface ok")
