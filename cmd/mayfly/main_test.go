package main

import (
	"os"
	"runtime"
	"testing"
)

func TestOversubscribeDoublesGOMAXPROCSUnlessChosen(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	t.Setenv("GOMAXPROCS", "chosen") // the variable is restored after the test
	t.Run("chosen", func(t *testing.T) {
		if cores := oversubscribe(); cores != before || runtime.GOMAXPROCS(0) != before {
			t.Fatalf("cores %d, GOMAXPROCS %d: a chosen GOMAXPROCS (%d) must stay", cores, runtime.GOMAXPROCS(0), before)
		}
	})
	t.Run("default", func(t *testing.T) {
		if err := os.Unsetenv("GOMAXPROCS"); err != nil {
			t.Fatal(err)
		}
		if cores := oversubscribe(); cores != before || runtime.GOMAXPROCS(0) != threadsPerCore*before {
			t.Fatalf("cores %d, GOMAXPROCS %d: want %d and %d", cores, runtime.GOMAXPROCS(0), before, threadsPerCore*before)
		}
	})
}
