package integration

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/xdg-go/scram"

	"github.com/mayflydb/mayfly/internal/app"
	"github.com/mayflydb/mayfly/internal/auth"
)

// TestAuthNoSecretInLogs runs logins right and wrong, password changes and
// refused commands that carry passwords, with the log at debug level, and
// looks for every password (and the SCRAM-SHA-1 digest of each) in it.
func TestAuthNoSecretInLogs(t *testing.T) {
	logs := &logBuffer{}
	cfg := app.Config{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	s, _ := startAuthServer(t, cfg)
	root := connect(t, s)
	secrets := []string{rootPwd, "Fir5t-Secret", "Sec0nd-Secret", "Wr0ng-Secret", "Ref7sed-Secret"}
	createUser(t, root, "test", "sam", secrets[1], bson.A{"read"})
	runCmd(t, root.Database("test"), bson.D{{Key: "updateUser", Value: "sam"}, {Key: "pwd", Value: secrets[2]}})
	for _, mech := range []string{"SCRAM-SHA-1", "SCRAM-SHA-256"} {
		mustConnectAs(t, s, "sam", secrets[2], "test", mech)
		if _, err := connectAs(t, s, "sam", secrets[3], "test", mech); err == nil {
			t.Fatal("wrong password accepted")
		}
	}
	sam := mustConnectAs(t, s, "sam", secrets[2], "test", "")
	err := sam.Database("test").RunCommand(ctxT(t), bson.D{{Key: "createUser", Value: "x"}, {Key: "pwd", Value: secrets[4]}, {Key: "roles", Value: bson.A{}}}).Err()
	wantCode(t, err, 13, "pwd: \"xxx\"")
	if strings.Contains(err.Error(), secrets[4]) {
		t.Fatalf("the error shows the password: %v", err)
	}
	waitForLog(t, logs, "Authentication failed")
	text := logs.String()
	for _, sec := range secrets {
		for _, form := range []string{sec, auth.DigestSHA1("sam", sec), sha1Hex(sec)} {
			if strings.Contains(text, form) {
				t.Fatalf("log contains a secret (%q)", form)
			}
		}
	}
	// A failed attempt names the user and the client.
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "Authentication failed") {
			if !strings.Contains(line, "user=sam") || !strings.Contains(line, "remote=127.0.0.1:") {
				t.Fatalf("failed attempt without user or client: %s", line)
			}
			return
		}
	}
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// loginOnce opens a connection, authenticates and runs one find.
func loginOnce(ctx context.Context, addr string, cred auth.Credential) error {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	rt := auth.WireRoundTrip(nc)
	if err := auth.Authenticate(ctx, rt, cred); err != nil {
		return err
	}
	_, err = rt(ctx, "test", bson.D{{Key: "find", Value: "c"}, {Key: "limit", Value: 1}})
	return err
}

// timeLogins measures n logins (each with a command) by one client.
func timeLogins(t *testing.T, addr string, cred auth.Credential, n int) time.Duration {
	t.Helper()
	start := time.Now()
	for range n {
		if err := loginOnce(context.Background(), addr, cred); err != nil {
			t.Fatalf("login: %v", err)
		}
	}
	return time.Since(start)
}

// scramLogin runs one SCRAM-SHA-256 conversation on db with a client
// that keeps its derived key, and returns the server's last reply (nil if
// the conversation broke off).
func scramLogin(rt auth.RoundTrip, client *scram.Client, db string) bson.D {
	ctx := context.Background()
	conv := client.NewConversation()
	first, _ := conv.Step("")
	r, err := rt(ctx, db, bson.D{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: "SCRAM-SHA-256"},
		{Key: "payload", Value: bson.Binary{Data: []byte(first)}}, {Key: "options", Value: bson.D{{Key: "skipEmptyExchange", Value: true}}}})
	if err != nil {
		return nil
	}
	p, _ := lookupField(r, "payload").(bson.Binary)
	final, err := conv.Step(string(p.Data))
	if err != nil {
		return nil
	}
	r, err = rt(ctx, db, bson.D{{Key: "saslContinue", Value: 1}, {Key: "conversationId", Value: int32(1)},
		{Key: "payload", Value: bson.Binary{Data: []byte(final)}}})
	if err != nil {
		return nil
	}
	return r
}

func lookupField(d bson.D, key string) any {
	for _, e := range d {
		if e.Key == key {
			return e.Value
		}
	}
	return nil
}

// hammer logs in over and over on one connection, at least n times and
// until stop closes, and returns how many attempts the server refused
// with 18 and how many it made.
func hammer(t *testing.T, addr, user, pwd string, n int, stop chan struct{}) (refused, attempts int) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return 0, 0
	}
	defer nc.Close()
	rt := auth.WireRoundTrip(nc)
	// One SCRAM client keeps its derived key, so the attacker spends its
	// time on the server, not on key stretching of its own.
	client, err := scram.SHA256.NewClient(user, pwd, "")
	if err != nil {
		t.Error(err)
		return 0, 0
	}
	for ; attempts < n || !closed(stop); attempts++ {
		if lookupField(scramLogin(rt, client, "test"), "code") == int32(18) {
			refused++
		}
	}
	return refused, attempts
}

// besideHammer times logins while another client hammers.
func besideHammer(t *testing.T, addr string, good auth.Credential, logins int, user, pwd string) (time.Duration, int, int) {
	stop := make(chan struct{})
	var refused, attempts int
	done := make(chan struct{})
	go func() {
		defer close(done)
		refused, attempts = hammer(t, addr, user, pwd, 1000, stop)
	}()
	d := timeLogins(t, addr, good, logins)
	close(stop)
	<-done
	return d, refused, attempts
}

// TestAuthBruteForceDoesNotSlowOthers: a client trying 1000 wrong
// passwords on one connection slows another client's logins and commands
// no more than a client logging in 1000 times with the right one (on two
// cores the two clients and the server share the CPU either way), and
// every wrong attempt is refused.
func TestAuthBruteForceDoesNotSlowOthers(t *testing.T) {
	s, _ := startAuthServer(t, app.Config{Logger: slog.New(slog.NewTextHandler(&logBuffer{}, nil))})
	root := connect(t, s)
	createUser(t, root, "test", "victim", "victim-pw", bson.A{"read"})
	createUser(t, root, "test", "user", "user-pw", bson.A{"read"})
	addr := s.app.Addr().String()
	good := auth.Credential{User: "user", DB: "test", Password: "user-pw"}
	const logins = 40
	alone := timeLogins(t, addr, good, logins)
	control, refusedRight, _ := besideHammer(t, addr, good, logins, "victim", "victim-pw")
	attack, refusedWrong, attempts := besideHammer(t, addr, good, logins, "victim", "guess")
	if refusedRight != 0 || refusedWrong != attempts || attempts < 1000 {
		t.Fatalf("right password refused %d times; wrong ones refused %d of %d", refusedRight, refusedWrong, attempts)
	}
	t.Logf("%d logins: alone %v, beside 1000+ right logins %v, beside %d wrong passwords %v",
		logins, alone, control, attempts, attack)
	if attack > 2*control+200*time.Millisecond {
		t.Fatalf("wrong passwords slow others more than right ones: %v against %v", attack, control)
	}
}

// TestAuthProfilerNamesUserHidesPassword: profiled commands name their
// user, and a createUser's password shows as "xxx".
func TestAuthProfilerNamesUserHidesPassword(t *testing.T) {
	s, _ := startAuthServer(t, app.Config{})
	db := connect(t, s).Database("test")
	runCmd(t, db, bson.D{{Key: "profile", Value: 2}})
	createUser(t, db.Client(), "test", "pro", "Pr0filed-Secret", bson.A{})
	runCmd(t, db, bson.D{{Key: "profile", Value: 0}})
	cur, err := db.Collection("system.profile").Find(ctxT(t), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var entries []bson.D
	if err := cur.All(ctxT(t), &entries); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries {
		raw, _ := bson.Marshal(e)
		if strings.Contains(string(raw), "Pr0filed-Secret") {
			t.Fatalf("profiler entry shows the password: %v", e)
		}
		if cmd, ok := lookupField(e, "command").(bson.D); ok && len(cmd) > 0 && cmd[0].Key == "createUser" {
			found = true
			if lookupField(cmd, "pwd") != "xxx" || lookupField(e, "user") != "root@admin" {
				t.Fatalf("createUser entry = %v", e)
			}
		}
	}
	if !found {
		t.Fatalf("no createUser entry in %v", entries)
	}
}

// TestAuthCollModViewNeedsBoth: with access control on, collMod of a
// view must give viewOn and pipeline together, as on mongod (either alone
// could show more of the collection underneath than the user may read).
func TestAuthCollModViewNeedsBoth(t *testing.T) {
	s, _ := startAuthServer(t, app.Config{})
	db := connect(t, s).Database("test")
	runCmd(t, db, bson.D{{Key: "create", Value: "v"}, {Key: "viewOn", Value: "c"}, {Key: "pipeline", Value: bson.A{}}})
	err := db.RunCommand(ctxT(t), bson.D{{Key: "collMod", Value: "v"}, {Key: "pipeline", Value: bson.A{}}}).Err()
	wantCode(t, err, 72, "Must specify both 'viewOn' and 'pipeline' when modifying a view and auth is enabled")
	runCmd(t, db, bson.D{{Key: "collMod", Value: "v"}, {Key: "viewOn", Value: "d"}, {Key: "pipeline", Value: bson.A{}}})
}
