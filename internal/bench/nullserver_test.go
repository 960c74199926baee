package bench

import (
	"context"
	"testing"
	"time"
)

// The Go driver connects to the null server and every session operation
// gets an answer it accepts.
func TestNullServerAnswersTheDriver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	srvCtx, stop := context.WithCancel(ctx)
	go func() { done <- ServeNull(srvCtx, addr) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	var st *mongoStore
	for st == nil {
		if st, err = newMongoStore(ctx, addr, 2); err != nil {
			if ctx.Err() != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	defer st.close(ctx)
	now := time.Now()
	for name, op := range map[string]func() (bool, error){
		"touch":  func() (bool, error) { return st.touch(ctx, token(1), now) },
		"verify": func() (bool, error) { return st.verify(ctx, token(1)) },
		"login":  func() (bool, error) { return true, st.login(ctx, token(2), 7, now) },
		"logout": func() (bool, error) { return st.logout(ctx, token(2)) },
	} {
		if ok, err := op(); err != nil || !ok {
			t.Errorf("%s: %v, %v", name, ok, err)
		}
	}
}
