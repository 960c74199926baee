package auth

import (
	"crypto/x509"
	"github.com/mayflydb/mayfly/internal/bsonutil"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// MechX509 authenticates a client by the certificate it presented over
// TLS, verified against --tlsCAFile; the user is the certificate's
// subject, defined in $external.
const MechX509 = "MONGODB-X509"

const externalDB = "$external"

// certConn is a connection that can name its client's verified
// certificate (server.Conn over TLS).
type certConn interface {
	PeerCertificate() *x509.Certificate
}

// authenticateX509 logs the connection in as the subject of its verified
// client certificate, as mongod's authenticate with MONGODB-X509.
func (m *Manager) authenticateX509(c Conn, db string, body bson.D) (bson.D, error) {
	if db != externalDB {
		return nil, mongoerr.New(mongoerr.BadValue, "X.509 authentication must always use the $external database.")
	}
	var cert *x509.Certificate
	if cc, ok := c.(certConn); ok {
		cert = cc.PeerCertificate()
	}
	if cert == nil {
		m.log.Info("Authentication failed", "db", db, "mechanism", MechX509, "remote", c.RemoteAddr(),
			"reason", "no verified client certificate")
		return nil, mongoerr.New(mongoerr.AuthenticationFailed, "No verified subject name available from client")
	}
	subject := cert.Subject.String()
	if u, ok := bsonutil.Field(body, "user"); ok && stringOf(u) != subject {
		m.log.Info("Authentication failed", "user", stringOf(u), "db", db, "mechanism", MechX509,
			"remote", c.RemoteAddr(), "reason", "user differs from the certificate's subject")
		return nil, mongoerr.New(mongoerr.AuthenticationFailed, "There is no x.509 client certificate matching the user.")
	}
	n := UserName{User: subject, DB: externalDB}
	if m.lookupUser(n) == nil {
		m.log.Info("Authentication failed", "user", subject, "db", db, "mechanism", MechX509,
			"remote", c.RemoteAddr(), "reason", "no such user")
		return nil, mongoerr.Newf(mongoerr.UserNotFound, "Could not find user \"%s\" for db \"%s\"", subject, externalDB)
	}
	if err := m.succeeded(c, sessionOf(c), &conversation{mech: MechX509, db: externalDB, user: subject}); err != nil {
		return nil, err
	}
	return bson.D{{Key: "dbname", Value: externalDB}, {Key: "user", Value: subject}}, nil
}
