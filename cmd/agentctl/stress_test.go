package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentctl/agentctl/engine"
	"github.com/agentctl/agentctl/engine/store"
	"github.com/agentctl/agentctl/engine/store/sqlite"
	"github.com/agentctl/agentctl/internal/scenario"
	"github.com/agentctl/agentctl/spec"
)

// stressSpec has a tool that waits for approval and one that suspends
// itself; both leave one line per execution in ran.log.
const stressSpec = `
version: 1
models:
  a: {provider: scripted, turns: [{toolCalls: [{tool: gated}]}, {text: done}]}
  s: {provider: scripted, turns: [{toolCalls: [{tool: pausing}]}, {text: done}]}
tools:
  gated:
    exec: {command: [appendline, ran.log, "${{ run.id }}"]}
    requireApproval: true
  pausing:
    suspend: {when: "${{ resume == nil }}", payload: {message: "ok?"}}
    exec: {command: [appendline, ran.log, "${{ run.id }}"]}
agents:
  approver: {model: a, tools: [gated]}
  resumer: {model: s, tools: [pausing]}
`

// TestRaceStress: 8 processes decide the same calls at once, each in its
// own random order and with its own random choice of decision. Every
// call gets exactly one decision, the tool ran exactly for the calls
// whose winning decision let it, and every losing process exited 4.
func TestRaceStress(t *testing.T) {
	t.Parallel() // with the scenarios: each works in a directory of its own
	calls, procs := 100, 8
	if testing.Short() {
		calls = 20
	}
	dir := t.TempDir()
	// A throwaway database: its processes decide --as pN.
	if err := os.WriteFile(filepath.Join(dir, scenario.Marker), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(dir, "agentctl.db")
	ctx := context.Background()
	db, err := sqlite.Open(ctx, dbPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load([]spec.Source{{Name: "stress.yaml", Data: []byte(stressSpec)}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := engine.Compile(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := engine.New(db, engine.Config{})
	runs := make([]string, calls)
	kinds := make([]string, calls)
	for i := range runs {
		agent := "approver"
		if i%2 == 1 {
			agent = "resumer"
		}
		v, err := e.Start(ctx, g, engine.StartOptions{Agent: agent, Input: "go"})
		if err != nil || v.Status != store.Suspended {
			t.Fatalf("start: %v %v", v, err)
		}
		runs[i], kinds[i] = v.RunID, agent
	}
	db.Close()

	type outcome struct{ run, cmd, exit int }
	var mu sync.Mutex
	var outcomes []outcome
	var wg sync.WaitGroup
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(p), 42))
			for _, i := range rng.Perm(calls) {
				args := []string{"--db", dbPath}
				choice := rng.IntN(2)
				switch {
				case choice == 1:
					args = append(args, "decline", runs[i])
				case kinds[i] == "approver":
					args = append(args, "approve", runs[i])
				default:
					args = append(args, "resume", runs[i], "--data", "{}")
				}
				cmd := exec.Command("agentctl", append(args, "--as", fmt.Sprintf("p%d", p))...)
				cmd.Dir = dir
				out, err := cmd.CombinedOutput()
				code := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					code = ee.ExitCode()
				} else if err != nil {
					t.Error(err)
				}
				if code != 0 && code != 4 {
					t.Errorf("%s: exit %d: %s", strings.Join(args, " "), code, out)
				}
				mu.Lock()
				outcomes = append(outcomes, outcome{i, choice, code})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()

	db, err = sqlite.Open(ctx, dbPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	wins := map[int]int{}
	for _, o := range outcomes {
		if o.exit == 0 {
			wins[o.run]++
		}
	}
	log, _ := os.ReadFile(filepath.Join(dir, "ran.log"))
	executed := map[string]int{}
	for _, l := range strings.Fields(string(log)) {
		executed[l]++
	}
	for i, id := range runs {
		ds, err := db.Decisions(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 1 || wins[i] != 1 {
			t.Errorf("run %d: %d decisions recorded, %d processes won; want 1 and 1", i, len(ds), wins[i])
			continue
		}
		want := 0
		if ds[0].Action != store.Decline {
			want = 1
		}
		if executed[id] != want {
			t.Errorf("run %d (%s): the tool ran %d times after a %s", i, kinds[i], executed[id], ds[0].Action)
		}
	}
	if n := len(outcomes); n != calls*procs {
		t.Errorf("%d decisions attempted, want %d", n, calls*procs)
	}
}
