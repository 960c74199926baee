package bench

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// Machine describes where the bench ran.
type Machine struct {
	NProc    int    `json:"nproc"`
	CPUModel string `json:"cpu_model"`
	Kernel   string `json:"kernel"`
	Go       string `json:"go"`
	Redis    string `json:"redis"`
	// LoadAvg is /proc/loadavg when the run started: other work on the
	// machine skews every figure.
	LoadAvg string `json:"loadavg"`
}

func detectMachine(redisBin string) Machine {
	m := Machine{NProc: runtime.NumCPU(), Go: runtime.Version(), CPUModel: cpuModel()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	m.LoadAvg = loadAvg()
	if out, err := exec.Command(redisBin, "--version").Output(); err == nil {
		m.Redis = strings.TrimSpace(string(out))
	}
	return m
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
