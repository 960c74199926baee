package bench

import (
	"fmt"
	"strings"
)

// The sharded cluster's targets: the router costs a targeted session
// operation little, and capped shards add capacity.
const (
	tRouter  = "sessions ops/s through the router / directly on its one shard"
	tScaling = "sessions ops/s through the router, 3 capped shards / 1"
)

func shardedTargetDefs() []targetDef {
	return []targetDef{
		{tRouter, "≥ 0.7", atLeast(0.7), routerOverhead},
		{tScaling, "≥ 2.5", atLeast(2.5), shardScaling(func(r *ScalingRun) float64 { return r.Sessions.OpsPerSec })},
	}
}

func routerOverhead(m *ModeReport) (float64, string, bool) {
	if m.Sharded == nil {
		return 0, "", false
	}
	direct := func(r *SessionsResult) bool { return r.Server == directName }
	return roundsRatio(m.Sharded.Overhead, direct, opsPerSec, false, "/s")
}

// shardScaling is a workload's rate on the most shards over one shard's.
func shardScaling(f func(*ScalingRun) float64) func(*ModeReport) (float64, string, bool) {
	return func(m *ModeReport) (float64, string, bool) {
		if m.Sharded == nil || len(m.Sharded.Scaling) < 2 {
			return 0, "", false
		}
		runs := m.Sharded.Scaling
		one, most := runs[0], runs[len(runs)-1]
		if one.Sessions == nil || most.Sessions == nil || f(one) == 0 {
			return 0, "", false
		}
		return f(most) / f(one), fmt.Sprintf("%d shards at %.1f core each", most.Shards, m.Sharded.CoresPerShard), true
	}
}

func shardedRows(rep *Report) []row {
	t := func(name string) row {
		return row{label: "**" + name + "**", phase: PhaseSharded, cell: targetCell(rep, name)}
	}
	return []row{
		t(tRouter),
		{"CPU µs per operation in those rounds (medians): through the router, router + shard + clients / directly, shard + clients", PhaseSharded, overheadCPUCell},
		{"sessions ops/s through the router, 1 / 2 / 3 capped shards (the sessions clients for each shard; the median window)", PhaseSharded, scalingCell(func(r *ScalingRun) float64 { return r.Sessions.OpsPerSec })},
		{"every window of that workload, 1 / 2 / 3 shards", PhaseSharded, scalingRoundsCell},
		t(tScaling),
		{"the same from the sessions clients in all, 1 / 2 / 3 shards", PhaseSharded, scalingCell(fixedClientsRate)},
		{"control, unfiltered finds/s (every shard answers), 1 / 2 / 3 shards", PhaseSharded, scalingCell(func(r *ScalingRun) float64 { return r.Scans.OpsPerSec })},
		{"shards' periods throttled by their cap in the sessions runs", PhaseSharded, throttleCell},
	}
}

// overheadCPUCell splits the overhead rounds' CPU per operation between
// the router, the shard and the clients, through the router and directly.
func overheadCPUCell(m *ModeReport) string {
	if m.Sharded == nil {
		return missing
	}
	var router, behind, shard, routedClients, directClients []float64
	for _, r := range m.Sharded.Overhead {
		if r.Server == directName {
			shard = append(shard, r.ServerCPUPerOpUs)
			directClients = append(directClients, r.ClientCPUPerOpUs)
			continue
		}
		router = append(router, r.ServerCPUPerOpUs)
		behind = append(behind, r.BehindCPUPerOpUs)
		routedClients = append(routedClients, r.ClientCPUPerOpUs)
	}
	if len(router) == 0 || len(shard) == 0 {
		return missing
	}
	return fmt.Sprintf("%.1f + %.1f + %.1f / %.1f + %.1f", median(router), median(behind), median(routedClients),
		median(shard), median(directClients))
}

// fixedClientsRate is the fixed-client run's rate; one shard's is its
// only run.
func fixedClientsRate(r *ScalingRun) float64 {
	if r.SessionsFixedClients == nil {
		return r.Sessions.OpsPerSec
	}
	return r.SessionsFixedClients.OpsPerSec
}

func scalingCell(f func(*ScalingRun) float64) func(*ModeReport) string {
	return func(m *ModeReport) string {
		if m.Sharded == nil || len(m.Sharded.Scaling) == 0 {
			return missing
		}
		var parts []string
		for _, r := range m.Sharded.Scaling {
			if r.Sessions == nil || r.Scans == nil {
				return missing
			}
			parts = append(parts, fmtN(f(r)))
		}
		return strings.Join(parts, " / ")
	}
}

// scalingRoundsCell lists each cluster's windows, in the order run.
func scalingRoundsCell(m *ModeReport) string {
	if m.Sharded == nil || len(m.Sharded.Scaling) == 0 {
		return missing
	}
	var parts []string
	for _, r := range m.Sharded.Scaling {
		var rates []string
		for _, w := range r.SessionsRounds {
			rates = append(rates, fmtN(w.OpsPerSec))
		}
		if len(rates) == 0 {
			return missing
		}
		parts = append(parts, strings.Join(rates, ", "))
	}
	return strings.Join(parts, " / ")
}

func throttleCell(m *ModeReport) string {
	if m.Sharded == nil || len(m.Sharded.Scaling) == 0 {
		return missing
	}
	var parts []string
	for _, r := range m.Sharded.Scaling {
		parts = append(parts, fmt.Sprintf("%d: %s", r.Shards, fmtShares(r.Throttling)))
	}
	return strings.Join(parts, "; ")
}
