package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// goTool is the go command: $GOROOT/bin/go when `go run` set GOROOT,
// else the one on PATH.
func goTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// moduleRoot is the directory of the main module around the working
// directory.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, goTool(), "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == "/dev/null" {
		return "", fmt.Errorf("not inside the mayfly module (use -mayfly-bin)")
	}
	return filepath.Dir(gomod), nil
}

// buildMayfly builds ./cmd/mayfly into dir and returns the binary's path.
func buildMayfly(ctx context.Context, dir string) (string, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "mayfly")
	cmd := exec.CommandContext(ctx, goTool(), "build", "-o", bin, "./cmd/mayfly")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/mayfly: %w\n%s", err, out)
	}
	return bin, nil
}
