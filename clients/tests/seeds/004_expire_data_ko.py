"""Seed 004, the pymongo part (pymongo 2.3 in the seed; 3.11 keeps save and
ensure_index). Run with the server URI; prints 'seed 004 pymongo ok'."""
import sys
import time
from datetime import datetime

import pymongo

connMongo = pymongo.MongoClient(sys.argv[1])
connMongo.myschema.tt_col.save( { 'a':1, 'b':2, 'dt': datetime.utcnow() } )
connMongo.myschema.tt_col.ensure_index( 'dt', pymongo.ASCENDING, expireAfterSeconds = 2 )
assert connMongo.myschema.tt_col.find_one()['a'] == 1
assert connMongo.myschema.tt_col.index_information()['dt_1']['expireAfterSeconds'] == 2

# The seed's trap: datetime.now() is local time, read as UTC. A local time
# ahead of UTC expires late, which is what the article explains; utcnow()
# expires on time.
deadline = time.time() + 4
while connMongo.myschema.tt_col.count_documents({}) > 0:
    assert time.time() < deadline, "document did not expire"
    time.sleep(0.05)
print('seed 004 pymongo ok')
