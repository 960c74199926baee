package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"time"
)

// runChild runs job in a client child process: this binary with -role
// client, under taskset when cpu is not negative.
func runChild(ctx context.Context, cfg *Config, cpu int, job Job) (*JobResult, error) {
	in, err := json.Marshal(job)
	if err != nil {
		return nil, fmt.Errorf("encode %s job: %w", job.Kind, err)
	}
	argv := pinned(cpu, []string{cfg.Self, "-role", "client"})
	ctx, cancel := context.WithTimeout(ctx, jobTimeout(job)+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &out, cfg.Log
	runErr := cmd.Run()
	var res JobResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		if runErr != nil {
			return nil, fmt.Errorf("%s job: %w", job.Kind, runErr)
		}
		return nil, fmt.Errorf("%s job: bad result %q: %w", job.Kind, out.String(), err)
	}
	if res.Error != "" {
		return nil, fmt.Errorf("%s", res.Error)
	}
	if runErr != nil {
		return nil, fmt.Errorf("%s job: %w", job.Kind, runErr)
	}
	return &res, nil
}
