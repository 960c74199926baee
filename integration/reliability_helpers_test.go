package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// startMayfly runs the binary with extra flags (startBinary's fixed set
// plus args) and waits until it accepts connections. Unlike startBinary it
// does not fail the test on a slow start; the caller decides.
func startMayfly(t *testing.T, bin, dir, addr string, args ...string) (*process, error) {
	t.Helper()
	argv := append([]string{"--addr", addr, "--dbpath", dir, "--log-level", "warn"}, args...)
	cmd := exec.Command(bin, argv...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return &process{cmd: cmd, addr: addr}, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil, fmt.Errorf("server at %s did not start within 20s", addr)
}

// kill9 sends SIGKILL and reaps the process.
func (p *process) kill9() {
	_ = p.cmd.Process.Kill()
	_, _ = p.cmd.Process.Wait()
}

// quickClient connects to addr with a short operation timeout, so that
// clients of a killed server give up fast.
func quickClient(t *testing.T, addr string, timeout time.Duration) *mongo.Client {
	t.Helper()
	uri := fmt.Sprintf("mongodb://%s/?directConnection=true&retryWrites=false&retryReads=false", addr)
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetTimeout(timeout).
		SetServerSelectionTimeout(timeout).SetConnectTimeout(timeout))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

// ping runs ping on a fresh connection: the check, after every bad input,
// that the server still serves others.
func pingFresh(t *testing.T, addr string) {
	t.Helper()
	c := quickClient(t, addr, 5*time.Second)
	defer func() { _ = c.Disconnect(context.Background()) }()
	if err := c.Database("admin").RunCommand(ctxT(t), bson.D{{Key: "ping", Value: 1}}).Err(); err != nil {
		t.Fatalf("server stopped serving other connections: %v", err)
	}
}

// serverCode extracts the server error code from err, or 0.
func serverCode(err error) int32 {
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return ce.Code
	}
	var we mongo.WriteException
	if errors.As(err, &we) {
		if len(we.WriteErrors) > 0 {
			return int32(we.WriteErrors[0].Code)
		}
		if we.WriteConcernError != nil {
			return int32(we.WriteConcernError.Code)
		}
	}
	var se mongo.ServerError
	if errors.As(err, &se) {
		for _, code := range []int32{2, 9, 14, 40415, 59, 67, 10334, 50, 292} {
			if se.HasErrorCode(int(code)) {
				return code
			}
		}
		return -1
	}
	return 0
}
