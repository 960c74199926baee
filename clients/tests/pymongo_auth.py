"""Run by integration/auth_clients_test.go: python3 pymongo_auth.py

Reads MAYFLY_HOST, MAYFLY_TLS_OPTS and MAYFLY_NOCERT_OPTS from the
environment; logs in over SCRAM-SHA-256 and SCRAM-SHA-1 and checks that a
wrong password, an unknown user and (over TLS) a missing client
certificate are refused.
"""
import os

import pymongo
from pymongo.errors import OperationFailure, PyMongoError

HOST = os.environ["MAYFLY_HOST"]
TLS = os.environ.get("MAYFLY_TLS_OPTS", "")
NOCERT = os.environ.get("MAYFLY_NOCERT_OPTS", "")


def uri(user, pwd, mech, opts=TLS):
    return ("mongodb://%s:%s@%s/test?authSource=test&authMechanism=%s&directConnection=true%s"
            % (user, pwd, HOST, mech, opts))


def must_fail(u, what):
    client = pymongo.MongoClient(u, serverSelectionTimeoutMS=3000)
    try:
        client.test.command("ping")
    except OperationFailure as e:
        assert e.code == 18, (what, e.details)
        assert "Authentication failed" in str(e), (what, str(e))
        return
    except PyMongoError as e:
        return e
    finally:
        client.close()
    raise AssertionError(what + " accepted")


for mech in ("SCRAM-SHA-256", "SCRAM-SHA-1"):
    client = pymongo.MongoClient(uri("app", "app-pw", mech), serverSelectionTimeoutMS=10000)
    c = client.test.pyauth
    c.insert_one({"mech": mech})
    assert c.count_documents({"mech": mech}) == 1
    status = client.test.command("connectionStatus")
    assert status["authInfo"]["authenticatedUsers"] == [{"user": "app", "db": "test"}], status
    client.close()
    err = must_fail(uri("app", "wrong-pw", mech), "wrong password")
    assert err is None, err
    err = must_fail(uri("nobody", "app-pw", mech), "unknown user")
    assert err is None, err

if TLS:
    client = pymongo.MongoClient(
        "mongodb://%s/?authMechanism=MONGODB-X509&authSource=%%24external&directConnection=true%s" % (HOST, TLS),
        serverSelectionTimeoutMS=10000)
    client.test.pyauth.insert_one({"x509": True})
    status = client.test.command("connectionStatus")
    assert status["authInfo"]["authenticatedUsers"] == [{"user": "CN=client", "db": "$external"}], status
    client.close()

if NOCERT:
    err = must_fail(uri("app", "app-pw", "SCRAM-SHA-256", NOCERT), "missing client certificate")
    assert err is not None, "missing certificate gave an authentication error instead of a TLS one"
    assert "certificate required" in str(err), str(err)
    print("no certificate:", type(err).__name__, err)
print("pymongo auth ok")
