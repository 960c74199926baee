"""Run by integration/timeseries_test.go: python3 pymongo_timeseries.py <uri>

The server runs with enableTestCommands, for the test clock. A user's
weather store: a time-series collection, measurements, a range aggregate
grouped by sensor, collMod of expireAfterSeconds, and old measurements
vanishing as the clock moves.
"""
import datetime
import sys

import pymongo
from bson import ObjectId
from pymongo.errors import OperationFailure

client = pymongo.MongoClient(sys.argv[1], serverSelectionTimeoutMS=10000)
client.drop_database("pyts")
db = client.pyts
db.create_collection(
    "weather",
    timeseries={"timeField": "ts", "metaField": "meta", "granularity": "hours"},
    expireAfterSeconds=86400,
)
weather = db.weather
now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
weather.insert_many([
    {"ts": now - datetime.timedelta(hours=h), "meta": {"sensor": s}, "temp": 10 + h}
    for h in (0, 6, 12, 18)
    for s in ("north", "south")
])
one = weather.find_one({"meta.sensor": "north"})
assert isinstance(one["_id"], ObjectId), one

try:
    weather.insert_one({"meta": {"sensor": "north"}, "ts": "noon"})
    raise AssertionError("a measurement without a date was accepted")
except OperationFailure as e:
    assert e.code == 2, e.details
    assert "'ts' must be present and contain a valid BSON UTC datetime value" in str(e), e.details

groups = list(weather.aggregate([
    {"$match": {"ts": {"$gte": now - datetime.timedelta(hours=13)}}},
    {"$group": {"_id": "$meta.sensor", "n": {"$sum": 1}, "avg": {"$avg": "$temp"}}},
    {"$sort": {"_id": 1}},
]))
assert [(g["_id"], g["n"], g["avg"]) for g in groups] == [("north", 3, 16.0), ("south", 3, 16.0)], groups

info = db.command("listCollections", filter={"name": "weather"})["cursor"]["firstBatch"][0]
assert info["type"] == "timeseries", info
assert info["options"]["timeseries"]["granularity"] == "hours", info
assert info["options"]["expireAfterSeconds"] == 86400, info

db.command("collMod", "weather", expireAfterSeconds=3600 * 15)
assert weather.count_documents({}) == 6, weather.count_documents({})


def clock(secs):
    client.admin.command("setParameter", 1, mayflyClockOffsetSeconds=secs)


clock(4 * 3600)  # the 12-hour-old measurements pass 15 hours
assert weather.count_documents({}) == 4, weather.count_documents({})
clock(16 * 3600)
assert weather.count_documents({}) == 0, weather.count_documents({})
weather.drop()
assert db.list_collection_names() == [], db.list_collection_names()
print("pymongo timeseries ok")
